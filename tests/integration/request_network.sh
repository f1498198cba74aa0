#!/usr/bin/env bash
# request_network (issue #30, "Asking the user"; docs/tools.md): the model
# asks, the server sends elicitation/create to the client, the user's
# answer (once, sandbox, no; decline, cancel, an error, no answer) decides
# what a sandbox may reach, within the operator's ceiling only.  Driven by
# the official TypeScript SDK client with an elicitation handler, over stdio
# and Streamable HTTP, plus raw stdio for hostile answers, a cancelled
# call and a 2026-07-28 request (tests/mcp/request_network.mjs); as root
# and as the rootless user nsboxtest.  Each grant is checked for real: a
# command in the sandbox reaches (or not) a local HTTP server through the
# operator's mapped rule api.test=127.0.0.1:PORT.
SUITE=request_network
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
U=nsboxtest

LOGS=$T/logs
mkdir -p "$LOGS"
if ! out=$("$ROOT/tests/mcp/setup.sh" 2>&1); then
	fail setup "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
S=$T/store
seed_default_store "$S"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	fail setup "cannot pull oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
run_client root env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE/root" \
	timeout 300 node "$ROOT/tests/mcp/request_network.mjs"

# Rootless: the binary and a store of the user's own.
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chmod 755 "$T" && chown "$U": "$RL"
as_user() { runuser -u "$U" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/$U \
	NSBOX_LIMITS=best-effort "$@"; }
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	run_client rootless runuser -u "$U" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/$U \
		NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" SUITE="$SUITE/rootless" \
		timeout 300 node "$ROOT/tests/mcp/request_network.mjs"
else
	fail rootless_setup "cannot pull as $U: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
as_user rm -rf "$RL/store"
finish
