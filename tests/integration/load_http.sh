#!/usr/bin/env bash
# Load on `nsbox serve --http` over loopback, as root, with real sandboxes
# from the python and busybox fixtures (tests/load/load_http.py does the
# work and says what each phase asserts):
#   - LOAD_SESSIONS (20) sessions, each its own process, for LOAD_SECONDS
#     (45; `make load` runs 300): sandboxes kept and one-shot, commands,
#     code, file tools, stops, DELETE; some sessions push past the caps;
#   - afterwards: no error but the caps' exact refusals, every output as
#     expected, and the server's fds, threads and sandbox processes back to
#     what they were after a warm-up, its VmRSS within a stated bound;
#   - the server-wide cap filled on purpose;
#   - a slowloris client and a flooding client beside a well-behaved
#     session; the per-address (64) and total (256) connection caps;
#   - SIGTERM: exit status 0, no sandbox process left.
# The server runs with explicit caps and a short --idle-timeout (a testing
# option, not in --help; the default is 60 s) so that closing a silent
# connection is seen in seconds.  Figures are printed as `# ...` lines.
SUITE=load_http
. "$(dirname "$0")/../lib.sh"

S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"
SECONDS_LOAD=${LOAD_SECONDS:-45}
SESSIONS=${LOAD_SESSIONS:-20}
MAX_SANDBOXES=3
MAX_TOTAL=36
IDLE_TIMEOUT=5
PID=

trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; cleanup_test_dir' EXIT

for img in python busybox; do
	if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/$img:latest" 2>&1); then
		fail setup "cannot pull oci:$F/oci/$img:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		finish
	fi
done

"$NSBOX" --store "$S" serve --http 127.0.0.1:0 --max-sandboxes "$MAX_SANDBOXES" \
	--max-total-sandboxes "$MAX_TOTAL" --idle-timeout "$IDLE_TIMEOUT" \
	>"$LOGS/server.out" 2>"$LOGS/server.log" &
PID=$!
PORT=
for i in $(seq 100); do
	PORT=$(sed -n 's|^nsbox: serving MCP on http://.*:\([0-9]*\)/mcp .*|\1|p' "$LOGS/server.log" | head -1)
	[ -n "$PORT" ] && break
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.2
done
if [ -z "$PORT" ]; then
	fail setup "the server did not start: $(tail -3 "$LOGS/server.log" | tr '\n' ' ')"
	finish
fi

# The driver's PASS/FAIL and `#` lines pass through; a crash without a FAIL
# line becomes one.
timeout $((SECONDS_LOAD + 600)) python3 "$ROOT/tests/load/load_http.py" run --port "$PORT" \
	--pid "$PID" --store "$S" --seconds "$SECONDS_LOAD" --sessions "$SESSIONS" \
	--max-sandboxes "$MAX_SANDBOXES" --max-total "$MAX_TOTAL" \
	--idle-timeout "$IDLE_TIMEOUT" --ids "$T/ids" \
	2>"$LOGS/driver.stderr" | tee "$LOGS/driver.out" | grep -E --line-buffered '^(PASS: |FAIL: |# )'
rc=${PIPESTATUS[0]}
nfail=$(grep -c '^FAIL: ' "$LOGS/driver.out")
_failures=$((_failures + nfail))
if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
	fail driver "exited $rc without a FAIL line: $(tail -3 "$LOGS/driver.stderr" | tr '\n' ' ')"
fi

# SIGTERM: every session ends, the spare stops, exit status 0.
stop_server "$PID"
if [ "$STOP_RC" = 124 ]; then
	fail sigterm_exit_0 "still running 60 s after SIGTERM"
elif [ "$STOP_RC" = 0 ]; then
	pass sigterm_exit_0
else
	fail sigterm_exit_0 "exit status $STOP_RC: $(tail -3 "$LOGS/server.log" | tr '\n' ' ')"
fi
PID=

# No process is left in any sandbox of the load (each has the cgroup
# nsbox/ID; ids are random, other tests' sandboxes never match).
# The driver records every sandbox id it made: none recorded means the
# check would look at nothing, a failure.
if [ ! -s "$T/ids" ]; then
	fail no_sandbox_process_after_stop "the driver recorded no sandbox id ($T/ids empty)"
else
	left=$(grep -lF -f "$T/ids" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')
	if [ -z "$left" ]; then
		pass no_sandbox_process_after_stop
	else
		fail no_sandbox_process_after_stop "processes in the load's sandboxes: $left"
	fi
fi
left=$(ls "$S/sandboxes" 2>/dev/null | grep -cE '^[0-9a-f]{32}$')
if [ "$left" = 0 ]; then
	pass no_sandbox_state_after_stop
else
	fail no_sandbox_state_after_stop "$left state directories in $S/sandboxes"
fi
if [ "$_failures" -gt 0 ]; then
	echo "# server.log: $(grep -v 'MCP session\|sandbox .* created' "$LOGS/server.log" | tail -3 | tr '\n' ' ')"
fi
finish
