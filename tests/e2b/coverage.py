#!/usr/bin/env python3
"""By hand, not a suite: checks that the port covers E2B's tests exactly,
every test of js/tests and python/tests in a snapshot of
e2b-dev/code-interpreter once, as a case or as not applicable, and nothing
else.  The name of a test is its file's path, with ::TITLE (JS) or
::test_name[PARAM] (pytest) for a file of several.

    tests/e2b/coverage.py GIT_DIR     (a clone or a bare snapshot)"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab  # noqa: E402
import cases_charts  # noqa: E402,F401
import cases_core  # noqa: E402,F401
import cases_sandbox  # noqa: E402,F401
from not_applicable import NOT_APPLICABLE  # noqa: E402

JS_TEST = re.compile(r"""(?:sandboxTest|secureSandboxTest|test|Deno\.test)"""
                     r"""(?:\.skipIf\([^)]*\))?\(\s*['"]([^'"]+)['"]""")
PY_TEST = re.compile(r"((?:@pytest\.mark\.parametrize\([^\n]*\)\n)?)(?:async )?def (test_\w+)")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def tests_of(path, src):
    if path.endswith(".ts"):
        return JS_TEST.findall(src)
    if path.endswith("performance.py"):
        return ["(script)"]
    out = []
    for m in PY_TEST.finditer(src):
        if m.group(1):
            params = re.search(r"\[(.*)\]", m.group(1)).group(1)
            out += [f"{m.group(2)}[{p.strip()}]" for p in params.split(",")]
        else:
            out.append(m.group(2))
    return out


def main():
    repo = sys.argv[1]
    want = set()
    for path in git(repo, "ls-tree", "-r", "--name-only", "HEAD").split():
        if re.match(r"(js|python)/tests/", path):
            tests = tests_of(path, git(repo, "show", "HEAD:" + path))
            want |= {path} if len(tests) == 1 else {f"{path}::{t}" for t in tests}
    names = [n for ns, _ in lab.CASES for n in ns]
    have = set(names) | set(NOT_APPLICABLE)
    print(f"E2B tests {len(want)}; cases {len(names)}, not applicable {len(NOT_APPLICABLE)}")
    for n in sorted(want - have):
        print("not ported:", n)
    for n in sorted(have - want):
        print("no such E2B test:", n)
    sys.exit(0 if want == have and len(names) == len(set(names)) else 1)


if __name__ == "__main__":
    main()
