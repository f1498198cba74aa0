#!/usr/bin/env bash
# sandbox_fork and the checkpoint tools (issue #29, docs/fork.md): children
# with the parent's files and a fresh identity, their isolation from the
# parent, checkpoints taken, listed, restored after a restart, bounded and
# deleted, tampered checkpoints refused, another tenant's hidden
# (tests/mcp/fork.py), as root and as the rootless user nsboxtest.
SUITE=fork
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
LOGS=$T/logs
mkdir -p "$LOGS" && chmod 755 "$T"
run_client fork env NSBOX="$NSBOX" NSBOX_FIXTURES="$F" TMPDIR="$T" timeout 600 \
	python3 "$ROOT/tests/mcp/fork.py"
finish
