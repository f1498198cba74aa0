#!/usr/bin/env bash
# The stateful interpreters' drivers (mcp/interp/drivers/), run directly on
# this host's python3 and node as nsbox runs them in a sandbox: the protocol
# on a socketpair at fd 0, output on pipes, SIGINT to the process group.
# tests/interp/drivers_test.py does the work and prints the PASS/FAIL lines
# passed through here, and '# ' lines with the drivers' costs.  Needs the
# packages of tests/deps.sh: python3-matplotlib, python3-pandas,
# node-typescript and node >= 18.
SUITE=interp_drivers
. "$(dirname "$0")/../lib.sh"

env SUITE="$SUITE" timeout 900 python3 "$ROOT/tests/interp/drivers_test.py" 2>"$T/stderr" | tee "$T/out" |
	grep -E --line-buffered '^(PASS: |FAIL: |# )'
rc=${PIPESTATUS[0]}
nfail=$(grep -c '^FAIL: ' "$T/out")
_failures=$((_failures + nfail))
if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
	fail harness "exited $rc without a FAIL line: $(tail -3 "$T/stderr" | tr '\n' ' ')"
elif ! grep -q '^PASS: ' "$T/out"; then
	fail harness "ran no test: $(tail -3 "$T/stderr" | tr '\n' ' ')"
fi
finish
