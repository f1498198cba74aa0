#!/usr/bin/env bash
# Files by signed URL over HTTP (issue #15): GET/PUT /files/TOKEN against a
# real `nsbox serve --http` with python sandboxes (tests/mcp/file_urls.py):
# 64 MiB out and in byte-exact, and the hostile cases of docs/security.md
# ("Files by URL").
SUITE=file_urls
. "$(dirname "$0")/../lib.sh"

S=$T/store
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	fail setup "cannot pull oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
env NSBOX="$NSBOX" SUITE="$SUITE" timeout 900 python3 "$ROOT/tests/mcp/file_urls.py" "$S" \
	>"$T/out" 2>"$T/err"
rc=$?
grep -E '^(PASS: |FAIL: |# )' "$T/out"
nfail=$(grep -c '^FAIL: ' "$T/out")
_failures=$((_failures + nfail))
if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
	fail client "exited $rc without a FAIL line: $(tail -3 "$T/err" | tr '\n' ' ')"
fi
finish
