#!/usr/bin/env python3
"""judge.py on made-up results: it must fail what it should fail.

Prints PASS/FAIL lines (suite conformance, names judge/...).  Each case
writes checks.json files into a fresh directory, runs judge.py as the suite
does and compares its exit status and lines with what they must be.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import judge  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(suite="conformance", prefix="judge/")


def ok(cid="c"):
    return {"id": cid, "status": "SUCCESS"}


def bad(cid, status="FAILURE", msg="broken"):
    return {"id": cid, "status": status, "errorMessage": msg}


def run(run_name, scenarios):
    """Writes {scenario: checks or None} and judges them: (status, lines)."""
    with tempfile.TemporaryDirectory() as d:
        for name, checks in scenarios.items():
            sub = os.path.join(d, "server-%s-2026-11-26T02-12-50-675Z" % name)
            os.mkdir(sub)
            if checks is not None:
                with open(os.path.join(sub, "checks.json"), "w") as f:
                    json.dump(checks, f)
        p = subprocess.run([sys.executable, os.path.join(HERE, "judge.py"), run_name, d],
                           capture_output=True, text=True)
        return p.returncode, p.stdout.splitlines()


def all_pass(run_name):
    return {n: [ok()] for n in judge.APPLIES[run_name]}


def line_for(lines, run_name, scenario):
    tag = "conformance/%s/%s" % (run_name, scenario)
    return [l for l in lines if tag + ":" in l or l.endswith(tag)]


# Every applicable scenario passing: status 0, one PASS each.
for r in judge.APPLIES:
    rc, lines = run(r, all_pass(r))
    passes = [l for l in lines if l.startswith("PASS: ")]
    nt.result("all_pass_" + r, rc == 0 and len(passes) == len(judge.APPLIES[r]),
              "rc %d, %d PASS lines of %d: %s" % (rc, len(passes), len(judge.APPLIES[r]), lines[:3]))

# A warning fails the scenario.
s = all_pass("stable")
s["server-sse-polling"] = [ok(), bad("server-sse-retry-field", "WARNING")]
rc, lines = run("stable", s)
nt.result("warning_fails", rc == 1 and any(l.startswith("FAIL: conformance/stable/server-sse-polling:")
                                       for l in lines), "rc %d: %s" % (rc, lines))

# An excused check with the suite's own message is excused ...
s = all_pass("2026-07-28")
s["server-stateless"] = [ok(), bad("sep-2575-server-no-log-without-loglevel", msg=(
    "Not testable: server does not list the diagnostic tool 'test_logging_tool' in tools/list, "
    "so the no-log-without-logLevel requirement could not be exercised"))]
rc, lines = run("2026-07-28", s)
nt.result("excused_passes", rc == 0 and "PASS: conformance/2026-07-28/server-stateless" in lines,
          "rc %d: %s" % (rc, line_for(lines, "2026-07-28", "server-stateless")))

# ... but the same check failing for another reason fails.
s["server-stateless"] = [ok(), bad("sep-2575-server-no-log-without-loglevel", msg=(
    "Server dispatched a notifications/message payload chunk even though ..."))]
rc, lines = run("2026-07-28", s)
nt.result("excused_other_message_fails", rc == 1 and any(
    l.startswith("FAIL: conformance/2026-07-28/server-stateless:") for l in lines),
    "rc %d: %s" % (rc, line_for(lines, "2026-07-28", "server-stateless")))

# An excuse belongs to its scenario only.
s = all_pass("2026-07-28")
s["caching"] = [bad("sep-2575-server-no-log-without-loglevel", msg=(
    "Not testable: server does not list the diagnostic tool 'test_logging_tool'"))]
rc, lines = run("2026-07-28", s)
nt.result("excuse_scoped_to_scenario", rc == 1, "rc %d: %s" % (rc, line_for(lines, "2026-07-28", "caching")))

# A scenario that proved nothing fails: no checks at all, or only excused
# ones (no SUCCESS), or only INFO lines.
s = all_pass("2026-07-28")
s["server-stateless"] = []
rc, lines = run("2026-07-28", s)
nt.result("no_checks_fails", rc == 1 and any(
    l.startswith("FAIL: conformance/2026-07-28/server-stateless: 1 problem(s): no check succeeded") for l in lines),
    "rc %d: %s" % (rc, line_for(lines, "2026-07-28", "server-stateless")))
s["server-stateless"] = [bad("sep-2575-server-no-log-without-loglevel", msg=(
    "Not testable: server does not list the diagnostic tool 'test_logging_tool' in tools/list, "
    "so the no-log-without-logLevel requirement could not be exercised")), {"id": "x", "status": "INFO"}]
rc, lines = run("2026-07-28", s)
nt.result("only_excused_fails", rc == 1 and any(
    l.startswith("FAIL: conformance/2026-07-28/server-stateless: 1 problem(s): no check succeeded") for l in lines),
    "rc %d: %s" % (rc, line_for(lines, "2026-07-28", "server-stateless")))

# An applicable scenario that did not run, or threw, fails.
s = all_pass("2025-11-25")
del s["resources-list"]
s["tools-list"] = None
rc, lines = run("2025-11-25", s)
nt.result("missing_and_thrown_fail", rc == 1 and
          any(l.startswith("FAIL: conformance/2025-11-25/resources-list: did not run") for l in lines) and
          any(l.startswith("FAIL: conformance/2025-11-25/tools-list: the scenario threw") for l in lines),
          "rc %d: %s" % (rc, lines))

# A scenario not classified fails; one that does not apply is a comment.
s = all_pass("stable")
s["tools-call-image"] = [bad("tools-call-image")]
s["brand-new-scenario"] = [ok()]
rc, lines = run("stable", s)
nt.result("unclassified_fails", rc == 1 and any(
    l.startswith("FAIL: conformance/stable/brand-new-scenario:") for l in lines), "rc %d: %s" % (rc, lines))
nt.result("not_applicable_is_comment", any(
    l.startswith("# conformance/stable/tools-call-image: does not apply") for l in lines) and not any(
    l.startswith(("PASS: conformance/stable/tools-call-image", "FAIL: conformance/stable/tools-call-image"))
    for l in lines), "%s" % lines)

# The tables agree with each other.
overlap = [n for r in judge.APPLIES for n in judge.APPLIES[r] if n in judge.NOT_APPLICABLE]
nt.result("tables_disjoint", not overlap, "both applicable and not: %s" % overlap)
excused_elsewhere = [e[0] for e in judge.EXCUSED
                     if not any(e[0] in judge.APPLIES[r] for r in judge.APPLIES)]
nt.result("excuses_in_applicable_scenarios", not excused_elsewhere, "%s" % excused_elsewhere)

nt.finish()
