#!/usr/bin/env python3
"""E2B's two SDK test suites (js/tests and python/tests of
e2b-dev/code-interpreter) ported to nsbox's MCP tools, one case per E2B
test, each named after its source (SUITE/js/tests/charts/bar.test.ts;
SUITE/python/tests/sync/test_basic.py::test_basic for a file of several).
The cases are in cases_*.py (lab.py has the mapping from the E2B SDK to the
tools); the tests with no MCP meaning are data in not_applicable.py, printed
as notes with their reasons; those whose feature is not built yet are in
not_yet.py (noted while they fail, a FAIL once they pass).  Each case has its own `nsbox serve` (stdio;
HTTP for reconnect) and sandboxes of the default image; E2B_JOBS (4) cases
run at once.  The last lines count passed, failed and not applicable.

Environment: NSBOX (build/nsbox), NSBOX_STORE (/var/lib/nsbox), SUITE
(e2b), E2B_JOBS, ONLY (a regular expression: only the cases it finds)."""
import concurrent.futures
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lab  # noqa: E402
import cases_core  # noqa: E402,F401 -- registers its cases
import cases_charts  # noqa: E402,F401
import cases_sandbox  # noqa: E402,F401
from not_applicable import NOT_APPLICABLE  # noqa: E402
from not_yet import NOT_YET  # noqa: E402

nt = lab.nt


def the_cases():
    """(name, function) of every case, names unique and none also listed
    as not applicable."""
    out, seen = [], set()
    for names, fn in lab.CASES:
        for n in names:
            if n in seen or n in NOT_APPLICABLE:
                raise SystemExit(f"e2b_port: {n} is registered twice")
            if n in NOT_YET and not NOT_YET[n]:
                raise SystemExit(f"e2b_port: {n} is not yet without a reason")
            seen.add(n)
            out.append((n, fn))
    return out


def run_one(name, fn):
    """One case in a Lab of its own: None (passed) or the reason."""
    box = lab.Lab()
    lab.LAST.ex = None
    t0 = time.monotonic()
    try:
        fn(box)
        why = None
    except nt.Check as e:
        why = str(e) + lab.last_cell()
    except Exception as e:  # noqa: BLE001 -- an unexpected answer is a failure
        why = f"{type(e).__name__}: {e}" + lab.last_cell()
    finally:
        try:
            box.close()
        except Exception as e:  # noqa: BLE001
            why = why or f"closing: {type(e).__name__}: {e}"
    return why, time.monotonic() - t0


def main():
    nt.configure(default_suite="e2b")
    cases = the_cases()
    only = os.environ.get("ONLY")
    if only:
        cases = [c for c in cases if re.search(only, c[0])]
    jobs = int(os.environ.get("E2B_JOBS") or 4)
    t0 = time.monotonic()
    passed = failed = not_yet = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, n, fn): n for n, fn in cases}
        for f in concurrent.futures.as_completed(futures):
            why, secs = f.result()
            name = futures[f]
            if name in NOT_YET:
                if why is not None:
                    nt.note(f"not yet: e2b/{name}: {NOT_YET[name]} (fails: {why[:200]})")
                    not_yet += 1
                    continue
                why = "passes: take it off tests/e2b/not_yet.py"
            nt.report(name, why)
            passed += why is None
            failed += why is not None
    for n, reason in sorted(NOT_APPLICABLE.items()):
        nt.note(f"not applicable: e2b/{n}: {reason}")
    nt.note(f"e2b: {passed} passed, {failed} failed, {not_yet} not yet (not_yet.py), "
            f"{len(NOT_APPLICABLE)} not applicable "
            f"({passed + failed + not_yet + len(NOT_APPLICABLE)} E2B tests) in "
            f"{time.monotonic() - t0:.0f} s")
    nt.finish()


if __name__ == "__main__":
    main()
