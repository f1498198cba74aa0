#!/usr/bin/env bash
# Background processes over MCP (issue #28, docs/services-bg.md):
# process_start, run_command {background}, process_list, process_logs and
# its cursor, process_signal, process_wait, the limits, and processes that
# end with their sandbox and session (tests/services/bg.py), over stdio and
# HTTP, as root and as the rootless user nsboxtest.  The CLI's exec -d and
# logs are the suite bg_cli.
SUITE=bg
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
LOGS=$T/logs
mkdir -p "$LOGS" && chmod 755 "$T"
run_client bg env NSBOX="$NSBOX" NSBOX_FIXTURES="$F" TMPDIR="$T" timeout 600 \
	python3 "$ROOT/tests/services/bg.py"
finish
