#!/usr/bin/env bash
# The user-level proof of issue #28 (docs/services.md): a Flask app, a
# vite-style dev server with its hot-reload WebSocket and a long test run,
# each started in the background in a sandbox of the default image through
# `nsbox serve --http`, the apps exposed and opened in Debian's headless
# Chromium (tests/services/browser.py, over the DevTools protocol), then a
# Node app through `nsbox serve` over stdio and its 127.0.0.1 URL; and
# ComputeSDK's provider probes (tests/services/computesdk.mjs) over both.  As root,
# then as the rootless user nsboxtest (its server; Chromium is the host
# user's browser either way).  The screenshots are kept in
# build/test-logs/services/ (NSBOX_TEST_LOGS).
# Needs `chromium` (tests/deps.sh) and the default image
# (images/default/build.sh, cached).
SUITE=services
. "$(dirname "$0")/../lib.sh"

LOGS=$T/logs
mkdir -p "$LOGS"
SERVERS=()
IMG=localhost/nsbox-default:latest
SHOTS=${NSBOX_TEST_LOGS:-$ROOT/build/test-logs}/services
mkdir -p "$SHOTS/root" "$SHOTS/rootless" 2>/dev/null || { SHOTS=$LOGS; mkdir -p "$SHOTS/root" "$SHOTS/rootless"; }
stop_all() {
	local p
	for p in "${SERVERS[@]}"; do kill -0 "$p" 2>/dev/null && stop_server "$p"; done
	SERVERS=()
}
trap 'stop_all; cleanup_test_dir' EXIT

if ! command -v chromium >/dev/null 2>&1; then
	fail setup "no chromium (make deps installs it)"
	finish
fi
if ! out=$("$ROOT/tests/mcp/setup.sh" 2>&1); then
	fail setup "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$LOGS/build.log"); then
	fail setup "images/default/build.sh failed: $(tail -5 "$LOGS/build.log" | tr '\n' ' ')"
	finish
fi

# -- root ------------------------------------------------------------------------
S=$T/store
seed_default_store "$S"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$LAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	fail setup "cannot pull the default image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
if serve_http root "$NSBOX" --store "$S" serve --http 127.0.0.1:0; then
	run_client root env MCP_PORT="$PORT" SHOTS="$SHOTS/root" \
		STDIO_CMD="[\"$NSBOX\", \"--store\", \"$S\", \"serve\"]" \
		timeout 600 python3 "$ROOT/tests/services/browser.py"
	# ComputeSDK's provider probes over HTTP, then over stdio.
	run_client computesdk env MCP_URL="http://localhost:$PORT/mcp" \
		timeout 300 node "$ROOT/tests/services/computesdk.mjs"
	stop_all
fi
run_client computesdk_stdio env SUITE="$SUITE/stdio" NSBOX="$NSBOX" NSBOX_STORE="$S" \
	timeout 300 node "$ROOT/tests/services/computesdk.mjs"

# -- rootless --------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
USER_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest NSBOX_LIMITS=best-effort)
as_user() { runuser -u nsboxtest -- "${USER_ENV[@]}" "$@"; }
seed_default_store "$RL/store" nsboxtest
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$LAYOUT:latest" 2>&1) &&
	out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	# runuser itself in the background (not the function as_user: killing
	# the subshell that runs a function leaves runuser and the server behind)
	if serve_http rootless runuser -u nsboxtest -- "${USER_ENV[@]}" "$RL/nsbox" --store "$RL/store" \
		serve --http 127.0.0.1:0; then
		stdio=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' runuser -u nsboxtest -- \
			"${USER_ENV[@]}" "$RL/nsbox" --store "$RL/store" serve)
		run_client rootless env SUITE="$SUITE/rootless" MCP_PORT="$PORT" SHOTS="$SHOTS/rootless" STDIO_CMD="$stdio" \
			timeout 600 python3 "$ROOT/tests/services/browser.py"
		run_client computesdk_rootless env SUITE="$SUITE/rootless" MCP_URL="http://localhost:$PORT/mcp" \
			timeout 300 node "$ROOT/tests/services/computesdk.mjs"
		stop_all
	fi
else
	fail rootless_setup "cannot pull the default image as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
# The rootless store holds subordinate-id files: removed as its owner.
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
