#!/usr/bin/env bash
# File watches (issue #28, docs/services.md "File watches"): resources/
# subscribe and notifications/resources/updated over stdio and HTTP, the
# 2026-07-28 resourceSubscriptions, coalescing, limits, the symlink swap to
# a host directory (tests/services/watch.py), as root and as the rootless
# user nsboxtest; then the official TypeScript SDK client subscribing
# (tests/mcp/watch.test.mjs).
SUITE=watch
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
U=nsboxtest

LOGS=$T/logs
mkdir -p "$LOGS"
S=$T/store
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	fail setup "cannot pull oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
run_client root env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE/root" \
	timeout 600 python3 "$ROOT/tests/services/watch.py"

# Rootless: the binary and a store of the user's own.
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chmod 755 "$T" && chown "$U": "$RL"
as_user() { runuser -u "$U" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/$U \
	NSBOX_LIMITS=best-effort "$@"; }
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	run_client rootless runuser -u "$U" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/$U \
		NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" SUITE="$SUITE/rootless" \
		timeout 600 python3 "$ROOT/tests/services/watch.py"
else
	fail rootless_setup "cannot pull as $U: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
as_user rm -rf "$RL/store"

# The TypeScript SDK (tests/mcp/node_modules, set up by tests/mcp/setup.sh).
run_client sdk env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE/sdk" node "$ROOT/tests/mcp/watch.test.mjs"
finish
