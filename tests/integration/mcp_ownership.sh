#!/usr/bin/env bash
# Sandbox ownership in the server (issue #10): tools racing sandbox_stop on
# one id, sessions ending while calls run, cancellation of a long copy_in;
# over stdio and HTTP (tests/mcp/ownership.py).  Under ASan (make test) the
# same run is the ASan/UBSan check of the server's sandbox records.
SUITE=mcp_ownership
. "$(dirname "$0")/../lib.sh"

S=$T/store
H=$T/host
mkdir -p "$H"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	fail setup "cannot pull oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
env NSBOX="$NSBOX" SUITE="$SUITE" timeout 900 python3 "$ROOT/tests/mcp/ownership.py" "$S" "$H" \
	>"$T/out" 2>"$T/err"
rc=$?
grep -E '^(PASS: |FAIL: |# )' "$T/out"
nfail=$(grep -c '^FAIL: ' "$T/out")
_failures=$((_failures + nfail))
if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
	fail client "exited $rc without a FAIL line: $(tail -3 "$T/err" | tr '\n' ' ')"
fi
finish
