#!/usr/bin/env bash
# Exposed ports over MCP (issue #28, docs/services.md "Exposed ports"):
# port_expose, port_list and port_close, the preview proxy of
# `nsbox serve --http` (path and host modes, keep-alive, chunked bodies,
# WebSocket) and the 127.0.0.1 URL over stdio (tests/services/preview.py),
# as root and then as the rootless user nsboxtest.  The hostile cases are
# in the hostile suite (tests/hostile/services_cases.py).
SUITE=services_preview
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

LOGS=$T/logs
mkdir -p "$LOGS"
S=$T/store
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	fail setup "cannot pull oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
mkdir -p "$T/work" && chmod 755 "$T" "$T/work"
run_client preview env NSBOX="$NSBOX" SUITE="$SUITE" WORK="$T/work" \
	timeout 900 python3 "$ROOT/tests/services/preview.py" "$S"
finish
