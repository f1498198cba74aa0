#!/usr/bin/env bash
# `nsbox serve --http`: MCP Streamable HTTP, as root on this host, with real
# sandboxes from the python and busybox fixtures.  Two clients (the MCP
# conformance suite has a suite of its own: conformance.sh):
#   - tests/conformance/http_raw.py: raw HTTP for status codes, DNS
#     rebinding, tokens, tenancy, SSE routing, cancellation, DELETE, huge
#     bodies, many and stalled connections, session expiry;
#   - tests/conformance/sdk_http.mjs: the official SDK client
#     (StreamableHTTPClientTransport);
#   - the legacy HTTP+SSE transport (GET /sse, POST /messages): the SDK's
#     SSEClientTransport through the whole workflow (tests/mcp/sse_legacy.mjs)
#     and raw HTTP for its refusals, plus the priming event of 2025-11-25
#     (tests/conformance/sse_raw.py).
#   - tests/conformance/stateless_http.py: raw 2026-07-28 requests without
#     a session (headers, statuses, cancellation by closing the stream) and
#     tenants (two tokens: handles, sessions, caps, idle sandboxes).
# Plus: refusing a non-loopback address without a token, and SIGTERM ending
# every session and its sandboxes with exit status 0.  Every server listens
# on 127.0.0.1 port 0 (a free port it prints) and is killed on exit.
# Needs node and npm (tests/conformance/setup.sh runs `npm ci`, and installs
# a private Node 22 when the system's is older).
SUITE=mcp_http
. "$(dirname "$0")/../lib.sh"

CONF=$ROOT/tests/conformance
S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"
SERVERS=()

# Kills what is left of every server (SIGTERM, then SIGKILL after 10 s).
stop_all_servers() {
	local p i
	for p in "${SERVERS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for i in $(seq 50); do
		for p in "${SERVERS[@]}"; do
			kill -0 "$p" 2>/dev/null && break
			p=
		done
		[ -z "${p:-}" ] && break
		sleep 0.2
	done
	for p in "${SERVERS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
}
trap 'stop_all_servers; pkill -f "^sleep 424[0-9]\$" 2>/dev/null; cleanup_test_dir' EXIT

# start_server NAME ADDRESS [ARGS...]: `nsbox serve --http ADDRESS ARGS` on
# the suite's store (serve_http, tests/lib.sh).
start_server() {
	local name=$1 address=$2
	shift 2
	serve_http "$name" "$NSBOX" --store "$S" serve --http "$address" "$@"
}

markers_gone() {
	local i
	for i in $(seq 50); do
		pgrep -f "$1" >/dev/null || return 0
		sleep 0.2
	done
	return 1
}

# ---- setup

# tests/mcp/sse_legacy.mjs takes the SDK from tests/mcp: its own set-up, run
# before env.sh puts Node 22 first (its stamp records node's version, and
# mcp_stdio installs it with the system's node).
if ! out=$("$ROOT/tests/mcp/setup.sh" 2>&1); then
	fail setup "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
if ! out=$("$CONF/setup.sh" 2>&1); then
	fail setup "tests/conformance/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
# The Node 22 setup.sh chose (a private one where the system's is older).
. "$CONF/env.sh"
echo "# node $(node --version)"
if ! out=$("$NSBOX" serve --help 2>&1) || ! printf '%s' "$out" | grep -q -- --http; then
	fail setup "\`nsbox serve --help\` does not offer --http: $(printf '%s' "$out" | head -2 | tr '\n' ' ')"
	finish
fi
for img in python busybox; do
	if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/$img:latest" 2>&1); then
		fail setup "cannot pull oci:$F/oci/$img:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		finish
	fi
done

# ---- a server without a token: raw HTTP, SDK

start_server main 127.0.0.1:0 || finish
MAIN=$PID
URL=http://localhost:$PORT/mcp
run_client raw timeout 600 python3 "$CONF/http_raw.py" main "$PORT"
run_client sdk env MCP_URL="$URL" timeout 600 node "$CONF/sdk_http.mjs"
run_client resources timeout 300 python3 "$ROOT/tests/mcp/resources.py" http "$PORT"
run_client sse_raw timeout 600 python3 "$CONF/sse_raw.py" main "$PORT"
run_client sse_sdk env MCP_SSE_URL="http://localhost:$PORT/sse" timeout 600 \
	node "$ROOT/tests/mcp/sse_legacy.mjs"
if kill -0 "$MAIN" 2>/dev/null; then
	pass main_server_alive
else
	fail main_server_alive "the server died: $(tail -3 "$LOGS/main.log" | tr '\n' ' ')"
fi

# ---- a server with a token

TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"
if start_server token 127.0.0.1:0 --token-file "$T/token"; then
	run_client token timeout 120 python3 "$CONF/http_raw.py" token "$PORT" "$TOKEN"
	run_client sse_token timeout 120 python3 "$CONF/sse_raw.py" token "$PORT" "$TOKEN"
	run_client sse_sdk_token env MCP_SSE_URL="http://localhost:$PORT/sse" MCP_TOKEN="$TOKEN" \
		SUITE="$SUITE/token" timeout 300 node "$ROOT/tests/mcp/sse_legacy.mjs"
	stop_server "$PID"
fi

# ---- tenants (two tokens) and the stateless 2026-07-28 path

TOKEN_A=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
TOKEN_B=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '# two tenants, one named\nalice %s\n\n%s\n' "$TOKEN_A" "$TOKEN_B" >"$T/tokens"
chmod 600 "$T/tokens"
if start_server tenants 127.0.0.1:0 --token-file "$T/tokens" --max-sandboxes-per-tenant 2; then
	run_client stateless timeout 600 python3 "$CONF/stateless_http.py" main "$PORT" "$TOKEN_A" "$TOKEN_B"
	stop_server "$PID"
	if [ "$STOP_RC" -ne 0 ]; then
		fail stateless_sigterm "exit status $STOP_RC: $(tail -3 "$LOGS/tenants.log" | tr '\n' ' ')"
	elif ! markers_gone '^sleep 4245$'; then
		fail stateless_sigterm "a tenant session's sandbox survives the server"
	else
		pass stateless_sigterm
	fi
fi
if start_server stateless_idle 127.0.0.1:0 --token-file "$T/tokens" --stateless-idle-timeout 3; then
	run_client stateless_idle timeout 120 python3 "$CONF/stateless_http.py" idle "$PORT" "$TOKEN_A"
	stop_server "$PID"
fi
printf 'alice %s\nalice %s\n' "$TOKEN_A" "$TOKEN_B" >"$T/tokens_dup"
printf '%s extra words\n' "$TOKEN_A" >"$T/tokens_3"
printf '# nothing\n\n' >"$T/tokens_none"
chmod 600 "$T"/tokens_*
expect_fail token_file_duplicate_name 'line 2: the tenant name alice twice' \
	"$NSBOX" --store "$S" serve --http 127.0.0.1:0 --token-file "$T/tokens_dup"
expect_fail token_file_three_fields 'line 1: more than NAME and TOKEN' \
	"$NSBOX" --store "$S" serve --http 127.0.0.1:0 --token-file "$T/tokens_3"
expect_fail token_file_empty 'holds no token' \
	"$NSBOX" --store "$S" serve --http 127.0.0.1:0 --token-file "$T/tokens_none"

# ---- addresses and tokens refused at start

expect_fail non_loopback_needs_token 'not a loopback address.*token' \
	env -u NSBOX_TOKEN "$NSBOX" --store "$S" serve --http 0.0.0.0:0
expect_fail non_loopback_v6_needs_token 'not a loopback address.*token' \
	env -u NSBOX_TOKEN "$NSBOX" --store "$S" serve --http '[::]:0'
expect_fail token_too_short 'too short' \
	env NSBOX_TOKEN=short "$NSBOX" --store "$S" serve --http 127.0.0.1:0
if NSBOX_TOKEN=$TOKEN start_server any_address 0.0.0.0:0; then
	out=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/mcp" \
		-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
		-H 'Accept: application/json' \
		-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' 2>&1)
	if [ "$out" = 200 ]; then
		pass non_loopback_with_token
	else
		fail non_loopback_with_token "initialize with the token on 0.0.0.0: $out"
	fi
	stop_server "$PID"
fi

# ---- unused sessions end

if start_server expire 127.0.0.1:0 --session-timeout 2; then
	run_client expire timeout 120 python3 "$CONF/http_raw.py" expire "$PORT"
	stop_server "$PID"
fi

# ---- a legacy SSE stream outlives the idle and session timeouts (keep-alives)

if start_server sse_idle 127.0.0.1:0 --session-timeout 2 --idle-timeout 2; then
	run_client sse_idle timeout 120 python3 "$CONF/sse_raw.py" idle "$PORT"
	stop_server "$PID"
fi

# ---- SIGTERM: every session ends, its sandboxes stop, exit status 0 (the
# held calls outlive a 1 s drain and are cancelled: tests/integration/drain.sh
# has the drain itself)

if start_server sigterm 127.0.0.1:0 --shutdown-grace 1; then
	run_client hold timeout 120 python3 "$CONF/http_raw.py" hold "$PORT"
	start=$SECONDS
	stop_server "$PID"
	if [ "$STOP_RC" -ne 0 ]; then
		fail sigterm_exit_0 "exit status $STOP_RC after SIGTERM: $(tail -3 "$LOGS/sigterm.log" | tr '\n' ' ')"
	elif ! markers_gone '^sleep 424[78]$'; then
		fail sigterm_exit_0 "sandbox processes survive the server: $(pgrep -af '^sleep 424[78]$' | tr '\n' ';')"
	else
		pass sigterm_exit_0
		echo "# SIGTERM to exit: $((SECONDS - start)) s"
	fi
fi

# ---- reconnect (--reconnect-idle): servers of its own, two tenants
run_client reconnect env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE/reconnect" \
	timeout 300 python3 "$ROOT/tests/mcp/reconnect.py"

stop_server "$MAIN"
if [ "$STOP_RC" -eq 0 ]; then
	pass main_server_sigterm
else
	fail main_server_sigterm "exit status $STOP_RC: $(tail -3 "$LOGS/main.log" | tr '\n' ' ')"
fi

# Every server is gone by now, and so must be every sandbox process.
if markers_gone '^sleep 424[0-9]$'; then
	pass no_leftover_processes
else
	fail no_leftover_processes "marker sleeps still run: $(pgrep -af '^sleep 424[0-9]$' | tr '\n' ';')"
fi
# Servers killed outright leave state for the next start to clean (by
# design); a start must then leave none behind.
"$NSBOX" --store "$S" serve </dev/null >/dev/null 2>&1
left=$(ls "$S/sandboxes" 2>/dev/null | grep -cE '^[0-9a-f]{32}$')
if [ "$left" = 0 ]; then
	pass no_leftover_sandboxes
else
	fail no_leftover_sandboxes "$left state directories after a cleanup start: $("$NSBOX" --store "$S" ps 2>&1 | tr '\n' ';')"
fi
if [ "$_failures" -gt 0 ]; then
	for f in "$LOGS"/*.log; do
		[ -s "$f" ] && echo "# $(basename "$f"): $(tail -2 "$f" | tr '\n' ' ')"
	done
fi
finish
