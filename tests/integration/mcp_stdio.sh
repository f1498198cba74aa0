#!/usr/bin/env bash
# `nsbox serve` as an MCP server over stdio, as root on this host (cgroup v1
# controllers).  Two clients: tests/mcp/stdio.test.mjs drives it with the
# official TypeScript SDK (Client + StdioClientTransport), and
# tests/mcp/raw_protocol.py speaks raw newline-delimited JSON-RPC for the bad
# inputs no SDK sends (tests/mcp/modern.py likewise for the 2026-07-28
# revision, which no SDK speaks yet).  Both print the PASS/FAIL lines passed through here.
# Needs node >= 18 and npm (tests/mcp/setup.sh runs `npm ci` when needed).
SUITE=mcp_stdio
. "$(dirname "$0")/../lib.sh"

MCP=$ROOT/tests/mcp
S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"
nsbox() { "$NSBOX" --store "$S" "$@"; }

if ! out=$("$MCP/setup.sh" 2>&1); then
	fail setup "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
if ! out=$("$NSBOX" serve --help 2>&1); then
	fail setup "\`nsbox serve --help\` failed: $(printf '%s' "$out" | head -2 | tr '\n' ' ')"
	finish
fi
for img in python busybox; do
	if ! out=$(nsbox pull --quiet "oci:$F/oci/$img:latest" 2>&1) ||
		! out=$(nsbox tag "oci:$F/oci/$img:latest" "$img" 2>&1); then
		fail setup "cannot pull and tag oci:$F/oci/$img:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		finish
	fi
done

# run_client NAME CMD...: runs a test program, passes its PASS/FAIL/# lines
# through, and turns a crash without a FAIL line into one.
run_client() {
	local name=$1 rc nfail
	shift
	env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE" MCP_LOG_DIR="$LOGS" "$@" \
		2>"$LOGS/$name.stderr" | tee "$LOGS/$name.out" | grep -E --line-buffered '^(PASS: |FAIL: |SKIP: |# )'
	rc=${PIPESTATUS[0]}
	nfail=$(grep -c '^FAIL: ' "$LOGS/$name.out")
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$name" "exited $rc without a FAIL line: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	elif [ "$rc" -eq 0 ] && ! grep -q '^PASS: ' "$LOGS/$name.out"; then
		fail "$name" "ran no test: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	fi
}

# serve's options (mcp/config.c, one table): a bad value is a usage error
# (exit 2) naming the option; a value past what the member holds is
# clamped, never undefined; --help lists every option but the hidden one.
serve_option() { # NAME WANT_STATUS PATTERN ARGS...
	local name=$1 want=$2 pattern=$3 out rc
	shift 3
	out=$("$NSBOX" --store "$S" serve "$@" 2>&1 </dev/null)
	rc=$?
	if [ "$rc" -eq "$want" ] && printf '%s' "$out" | grep -Eq -- "$pattern"; then
		pass "serve_options/$name"
	else
		fail "serve_options/$name" "exit $rc (want $want), output: $(printf '%s' "$out" | head -3 | tr '\n' ' ')"
	fi
}
serve_option zero_memory 2 'memory takes a positive number' --memory 0
serve_option nan_cpus 2 'cpus takes a positive number' --cpus nan
serve_option zero_max_disk 2 'max-disk takes a positive number' --max-disk 0
serve_option bad_max_workspace 2 'max-workspace takes a positive number' --max-workspace lots
serve_option unknown 2 'unknown option.*--bogus' --bogus
serve_option http_only 2 'go with --http' --session-timeout 5
serve_option huge_values_clamped 0 'max-total-sandboxes' --memory 1e300 --max-pids 1e12 \
	--http 127.0.0.1:0 --session-timeout 1e30 --help
help=$("$NSBOX" serve --help 2>&1)
missing=$(for o in image limits memory cpus pids timeout disk workspace-size max-memory max-cpus \
	max-pids max-timeout max-disk max-workspace max-sandboxes max-total-sandboxes allow-host-dir allow-net http token-file allow-host session-timeout; do
	printf '%s' "$help" | grep -q -- "--$o " || echo "$o"; done)
if [ -z "$missing" ] && ! printf '%s' "$help" | grep -q -- --idle-timeout; then
	pass "serve_options/help_lists_every_option"
else
	fail "serve_options/help_lists_every_option" "missing: $missing"
fi

run_client sdk timeout 900 node "$MCP/stdio.test.mjs"
run_client raw timeout 600 python3 "$MCP/raw_protocol.py"
run_client resources timeout 600 python3 "$MCP/resources.py" stdio
run_client resources_sdk timeout 300 node "$MCP/resources.test.mjs"
run_client modern timeout 600 python3 "$MCP/modern.py"
run_client files timeout 600 python3 "$MCP/file_tools.py"
run_client host timeout 300 python3 "$MCP/host_copy.py"
run_client workspaces timeout 300 python3 "$MCP/workspaces.py"
run_client disk timeout 300 python3 "$MCP/disk.py"
run_client commit timeout 300 python3 "$MCP/commit.py"
run_client net timeout 300 python3 "$MCP/net.py"
run_client tasks timeout 300 python3 "$MCP/tasks.py"
# Rootless too (best-effort limits: this host delegates no cgroup v2).
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && chmod 755 "$T" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
runuser -u nsboxtest -- "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$F/oci/python:latest" >/dev/null 2>&1
runuser -u nsboxtest -- "$RL/nsbox" --store "$RL/store" tag "oci:$F/oci/python:latest" python >/dev/null 2>&1
run_client workspaces_rootless timeout 300 runuser -u nsboxtest -- env NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" \
	NSBOX_LIMITS=best-effort SUITE="$SUITE/rootless" python3 "$MCP/workspaces.py"
# The measured workspace budget rootless: the walk in the user namespace.
run_client disk_rootless timeout 300 runuser -u nsboxtest -- env NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" NSBOX_ASAN="${NSBOX_ASAN:-}" \
	NSBOX_LIMITS=best-effort SUITE="$SUITE/rootless" python3 "$MCP/disk.py"
run_client commit_rootless timeout 300 runuser -u nsboxtest -- env NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" NSBOX_ASAN="${NSBOX_ASAN:-}" \
	NSBOX_LIMITS=best-effort SUITE="$SUITE/rootless" python3 "$MCP/commit.py"
# The egress allow-list rootless: the broker runs as the user.
run_client net_rootless timeout 300 runuser -u nsboxtest -- env NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" NSBOX_ASAN="${NSBOX_ASAN:-}" \
	NSBOX_LIMITS=best-effort SUITE="$SUITE/rootless" python3 "$MCP/net.py"

# Every server is gone by now, and so must be every sandbox process.
left=$(pgrep -f 'sleep 313[1-5]' | tr '\n' ' ')
if [ -n "$left" ]; then
	fail no_leftover_processes "marker sleeps still run: $(ps -o pid=,args= -p "${left// /,}" 2>/dev/null | tr '\n' ';')"
	# shellcheck disable=SC2086
	kill -9 $left 2>/dev/null
else
	pass no_leftover_processes
fi
if ps_out=$(nsbox ps 2>&1) && [ "$(printf '%s\n' "$ps_out" | grep -cv '^ID ')" -gt 0 ]; then
	echo "# nsbox ps after the sessions ended: $(printf '%s' "$ps_out" | tr '\n' ';')"
fi
if [ "$_failures" -gt 0 ]; then
	for f in "$LOGS"/serve-*.log; do
		[ -s "$f" ] && echo "# $(basename "$f"): $(tail -2 "$f" | tr '\n' ' ')"
	done
fi
finish
