#!/usr/bin/env bash
# A fleet's server side (issue #16, docs/tools.md "Fleet"), against real
# `nsbox serve --http` servers with busybox and python sandboxes, driven by
# raw HTTP (tests/mcp/health_fleet.py):
#   - --node-id: session and sandbox ids NODE.<32 hex> (2025-11-25 sessions
#     and 2026-07-28 stateless calls, resource URIs, file URLs); another
#     node's prefix is unknown (404, "no sandbox"); bad names refused;
#   - /healthz and /readyz: bodies and codes, no token and any Host, failing
#     on a broken or missing store and without an image, not on a node at
#     its sandbox cap, the sandbox check run at most once per 30 s however
#     many probes;
#   - SIGTERM drains: readyz 503, no new session or sandbox, the running
#     call finishes with its result, existing sandboxes served, exit 0,
#     nothing left behind; the grace cancels a call that outlives it; a
#     second signal ends the server at once.
SUITE=drain
. "$(dirname "$0")/../lib.sh"

S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"
SERVERS=()
CLIENT=$ROOT/tests/mcp/health_fleet.py
trap 'for p in "${SERVERS[@]}"; do kill -KILL "$p" 2>/dev/null; done; cleanup_test_dir' EXIT

# start_server NAME STORE [-d] ARGS...: `nsbox [-d] --store STORE serve
# --http 127.0.0.1:0 ARGS` (serve_http, tests/lib.sh).
start_server() {
	local name=$1 store=$2 flags=()
	shift 2
	if [ "${1:-}" = -d ]; then
		flags=(-d)
		shift
	fi
	serve_http "$name" "$NSBOX" "${flags[@]}" --store "$store" serve --http 127.0.0.1:0 "$@"
}

# client NAME ARGS...: health_fleet.py ARGS (run_client, tests/lib.sh).
client() {
	local name=$1
	shift
	run_client "$name" timeout 300 python3 "$CLIENT" "$@"
}

# wait_exit PID SECONDS: waits for the server; sets EXIT_RC (124: still
# running, killed) and EXIT_S (how long it took).
wait_exit() {
	local pid=$1 max=$2 i start=$SECONDS
	for i in $(seq $((max * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		EXIT_RC=124
	else
		wait "$pid"
		EXIT_RC=$?
	fi
	EXIT_S=$((SECONDS - start))
}

markers_gone() {
	local i
	for i in $(seq 50); do
		pgrep -f "$1" >/dev/null || return 0
		sleep 0.2
	done
	return 1
}

# No sandbox state left in store $1 (a clean stop removes every sandbox).
no_sandbox_left() {
	[ "$(ls "$1/sandboxes" 2>/dev/null | grep -cE '^[0-9a-f]{32}$')" = 0 ]
}

# ---- setup

for img in python busybox; do
	if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/$img:latest" 2>&1); then
		fail setup "cannot pull oci:$F/oci/$img:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		finish
	fi
done
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"

# ---- node ids refused at start

expect_usage() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 2 ] && printf '%s' "$out" | grep -q 'DNS label'; then
		pass "$name"
	else
		fail "$name" "exit $rc: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi
}
expect_usage node_id_upper_case_refused "$NSBOX" --store "$S" serve --http 127.0.0.1:0 --node-id Nsbox-0
expect_usage node_id_dot_refused "$NSBOX" --store "$S" serve --http 127.0.0.1:0 --node-id a.b
expect_usage node_id_too_long_refused "$NSBOX" --store "$S" serve --http 127.0.0.1:0 \
	--node-id abcdefghijklmnopqrstuvwxyz0123456
expect_usage node_id_env_checked env NSBOX_NODE_ID=-x "$NSBOX" --store "$S" serve --http 127.0.0.1:0
out=$(env NSBOX_NODE_ID=from-env "$NSBOX" --store "$S" serve --print-config --node-id from-flag 2>&1)
if printf '%s' "$out" | grep -qx 'node-id = from-flag' &&
	env NSBOX_NODE_ID=from-env "$NSBOX" --store "$S" serve --print-config 2>&1 | grep -qx 'node-id = from-env'; then
	pass node_id_flag_over_env
else
	fail node_id_flag_over_env "$out"
fi

# ---- node ids, probes (with a token: the probes need none)

if start_server ids "$S" -d --node-id nsbox-0 --token-file "$T/token"; then
	client ids ids "$PORT" "$TOKEN" nsbox-0
	client probes probes "$PORT" "$TOKEN" nsbox-0 "$LOGS/ids.log"
	# No call runs (a session and a sandbox are left open): SIGTERM ends
	# it at once, and stops the sandbox.
	kill -TERM "$PID"
	wait_exit "$PID" 30
	if [ "$EXIT_RC" -eq 0 ] && [ "$EXIT_S" -le 5 ] && no_sandbox_left "$S"; then
		pass idle_sigterm_exits_at_once
	else
		fail idle_sigterm_exits_at_once "exit $EXIT_RC after $EXIT_S s: $(tail -2 "$LOGS/ids.log" | tr '\n' ' ')"
	fi
fi

# ---- the store broken, the store without an image

if start_server broken "$S"; then
	client broken broken "$PORT" "$S"
	kill -TERM "$PID"
	wait_exit "$PID" 30
fi
if start_server noimage "$T/empty"; then
	client noimage noimage "$PORT"
	kill -TERM "$PID"
	wait_exit "$PID" 30
fi

if start_server cap "$S" --max-total-sandboxes 1; then
	client cap cap "$PORT"
	kill -TERM "$PID"
	wait_exit "$PID" 30
fi

# ---- SIGTERM: drain, the running call finishes, exit 0, nothing left

if start_server drain "$S" --node-id nsbox-2 --shutdown-grace 30; then
	client drain drain "$PORT" "$PID" nsbox-2
	wait_exit "$PID" 40
	if [ "$EXIT_RC" -ne 0 ]; then
		fail drain_exit_0 "exit status $EXIT_RC: $(tail -3 "$LOGS/drain.log" | tr '\n' ' ')"
	elif [ "$EXIT_S" -gt 10 ]; then
		fail drain_exit_0 "it took $EXIT_S s after its last call (the grace is 30 s, no call ran)"
	elif ! grep -q 'no call is running' "$LOGS/drain.log"; then
		fail drain_exit_0 "no drain in the log: $(tail -3 "$LOGS/drain.log" | tr '\n' ' ')"
	else
		pass drain_exit_0
	fi
	if no_sandbox_left "$S" && ! pgrep -f "nsbox --store $S serve" >/dev/null; then
		pass drain_nothing_left
	else
		fail drain_nothing_left "left: $(ls "$S/sandboxes" | tr '\n' ' ') $(pgrep -af "nsbox --store $S serve" | tr '\n' ';')"
	fi
fi

# ---- the grace ends a call that outlives it

if start_server grace "$S" --shutdown-grace 2; then
	start=$SECONDS
	client grace grace "$PORT" "$PID" 4251
	wait_exit "$PID" 30
	took=$((SECONDS - start))
	if [ "$EXIT_RC" -ne 0 ]; then
		fail grace_exit_0 "exit status $EXIT_RC: $(tail -3 "$LOGS/grace.log" | tr '\n' ' ')"
	elif ! grep -q 'the grace is over' "$LOGS/grace.log"; then
		fail grace_exit_0 "the log does not say the grace ended: $(tail -2 "$LOGS/grace.log" | tr '\n' ' ')"
	elif [ "$took" -gt 20 ]; then
		fail grace_exit_0 "it took $took s with a 2 s grace"
	else
		pass grace_exit_0
	fi
	if markers_gone '^sleep 4251$' && no_sandbox_left "$S"; then
		pass grace_nothing_left
	else
		fail grace_nothing_left "$(pgrep -af '^sleep 4251$' | tr '\n' ';') $(ls "$S/sandboxes" | tr '\n' ' ')"
	fi
fi

# ---- a second signal ends it at once

if start_server second "$S" --shutdown-grace 60; then
	client second second "$PORT" "$PID" 4252
	wait_exit "$PID" 10
	if [ "$EXIT_RC" = 124 ]; then
		fail second_signal_exits_at_once "still running 10 s after the second SIGTERM"
	elif ! grep -q 'second signal' "$LOGS/second.log"; then
		fail second_signal_exits_at_once "exit $EXIT_RC: $(tail -2 "$LOGS/second.log" | tr '\n' ' ')"
	else
		pass second_signal_exits_at_once
	fi
	if markers_gone '^sleep 4252$'; then
		pass second_signal_no_process_left
	else
		fail second_signal_no_process_left "$(pgrep -af '^sleep 4252$' | tr '\n' ';')"
	fi
fi

# ---- a router's bounds: --max-sessions and --max-connections-per-ip
# (behind a router every client has the router's address, docs/deploy.md)

init_body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
initialize() { # PORT: the HTTP status of one initialize
	curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data "$init_body" "http://127.0.0.1:$1/mcp"
}
if start_server bounds "$S" --max-sessions 2 --max-connections-per-ip 3; then
	codes="$(initialize "$PORT") $(initialize "$PORT") $(initialize "$PORT")"
	[ "$codes" = "200 200 503" ] && pass max_sessions_bounds_sessions || fail max_sessions_bounds_sessions "codes: $codes"
	# Three idle connections held open: a fourth from the same address is
	# closed at once (libmicrohttpd's per-IP limit: EOF or a reset, never an
	# answer, never a hang); once one of the three closes, a new one is
	# served.  A wedged server fails both ends.
	out=$(python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])

def healthz(timeout=5):
    """'served', 'closed' (EOF or reset before any byte) or 'timeout'."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        got = s.recv(64)
        # any HTTP answer is the connection served (its status is the
        # probe's business, not this test's)
        return "served" if got.startswith(b"HTTP/1.1 ") else "closed" if got == b"" else "other %r" % got
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    except socket.timeout:
        return "timeout"
    finally:
        s.close()

held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
# the server has taken all three (each is idle: it waits for a request)
deadline = time.time() + 10
fourth = healthz()
held[0].close()
fifth = "timeout"
while time.time() < deadline:
    fifth = healthz()
    if fifth == "served":
        break
    time.sleep(0.1)
for h in held[1:]:
    h.close()
print(fourth, fifth)
PY
)
	[ "$out" = "closed served" ] && pass max_connections_per_ip_bounds ||
		fail max_connections_per_ip_bounds "the fourth connection, then one after a close: $out (want: closed served)"
	kill -TERM "$PID"
fi
# A full table makes room by ending a session its tenant abandoned
# (mcp/http/sessions.c): never one with a sandbox, never another tenant's.
python3 -c 'import secrets; print("alice", secrets.token_hex(16)); print("bob", secrets.token_hex(16))' >"$T/tokens"
if start_server room "$S" --max-sessions 3 --token-file "$T/tokens"; then
	run_client session_room timeout 120 python3 "$ROOT/tests/mcp/session_room.py" "$PORT" "$T/tokens"
	kill -TERM "$PID"
fi
out=$("$NSBOX" --store "$S" serve --max-connections-per-ip 3 </dev/null 2>&1)
case $out in *"go with --http"*) pass max_connections_needs_http ;; *) fail max_connections_needs_http "$out" ;; esac

# ---- every server is gone, and so is every sandbox process

for p in "${SERVERS[@]}"; do
	kill -0 "$p" 2>/dev/null && kill -TERM "$p"
done
for p in "${SERVERS[@]}"; do
	wait_exit "$p" 40
done
if markers_gone '^sleep 425[0-9]$'; then
	pass no_leftover_processes
else
	fail no_leftover_processes "$(pgrep -af '^sleep 425[0-9]$' | tr '\n' ';')"
fi
if [ "$_failures" -gt 0 ]; then
	for f in "$LOGS"/*.log; do
		[ -s "$f" ] && echo "# $(basename "$f"): $(tail -2 "$f" | tr '\n' ' ')"
	done
fi
finish
