#!/usr/bin/env bash
# The official MCP conformance suite against `nsbox serve --http`, under
# Node 22 (tests/conformance/setup.sh), three runs, each against a server
# of its own (0.1.16 never ends its sessions):
#   - stable:     @modelcontextprotocol/conformance 0.1.16, every server
#                 scenario it lists, one at a time (2025-11-25 wire);
#   - 2025-11-25: 0.2.0-alpha.12 --requirements 2025-11-25;
#   - 2026-07-28: 0.2.0-alpha.12 --requirements 2026-07-28 (stateless wire).
# tests/conformance/judge.py reads each scenario's checks and prints one
# PASS/FAIL line per scenario that applies to nsbox: any FAILURE or WARNING
# fails it, except the few checks it excuses by id and message because they
# need the reference server's own diagnostic tools.  A scenario that does
# not apply (it needs the reference server's tools, prompts or resources)
# still runs and gets a "# ... does not apply: reason" line; one nobody has
# classified fails (tests/conformance/judge_test.py proves the judge on
# made-up results first).  Plus: each server is still alive after its run
# and exits 0 on SIGTERM.  Needs node and npm (setup.sh runs `npm ci` and
# installs a private Node 22 when the system's is older).
SUITE=conformance
. "$(dirname "$0")/../lib.sh"

CONF=$ROOT/tests/conformance
LOGS=$T/logs
RESULTS=$T/results
mkdir -p "$LOGS" "$RESULTS"
SERVER=

trap '[ -n "$SERVER" ] && kill -KILL "$SERVER" 2>/dev/null; cleanup_test_dir' EXIT

# start_server NAME: `nsbox serve --http 127.0.0.1:0` on a store of its own;
# waits (at most 20 s) for the port it prints.  Sets SERVER and URL;
# returns 1 when it does not come up.
start_server() {
	local name=$1 port i
	"$NSBOX" --store "$T/store-$name" serve --http 127.0.0.1:0 >"$LOGS/$name.server.out" 2>"$LOGS/$name.server.log" &
	SERVER=$!
	for i in $(seq 100); do
		port=$(sed -n 's|^nsbox: serving MCP on http://.*:\([0-9]*\)/mcp .*|\1|p' "$LOGS/$name.server.log" | head -1)
		if [ -n "$port" ]; then
			# localhost: dns-rebinding-protection runs only on a localhost URL.
			URL=http://localhost:$port/mcp
			return 0
		fi
		kill -0 "$SERVER" 2>/dev/null || break
		sleep 0.2
	done
	fail "$name/server" "the server did not start: $(tail -3 "$LOGS/$name.server.log" | tr '\n' ' ')"
	SERVER=
	return 1
}

# stop_server NAME: the server must have lived through the run and must
# exit 0 on SIGTERM within 20 s.
stop_server() {
	local name=$1 i rc
	if ! kill -0 "$SERVER" 2>/dev/null; then
		wait "$SERVER"
		fail "$name/server_alive" "the server died (status $?): $(tail -3 "$LOGS/$name.server.log" | tr '\n' ' ')"
		SERVER=
		return
	fi
	pass "$name/server_alive"
	kill -TERM "$SERVER"
	for i in $(seq 100); do
		kill -0 "$SERVER" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$SERVER" 2>/dev/null
	wait "$SERVER"
	rc=$?
	SERVER=
	if [ "$rc" -eq 0 ]; then
		pass "$name/server_sigterm"
	else
		fail "$name/server_sigterm" "exit status $rc after SIGTERM: $(tail -3 "$LOGS/$name.server.log" | tr '\n' ' ')"
	fi
}

# judge RUN LOG: passes judge.py's lines through and counts its FAILs.
judge() {
	local run=$1 log=$2 out rc nfail
	out=$(python3 "$CONF/judge.py" "$run" "$RESULTS/$run" "$log" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	nfail=$(printf '%s\n' "$out" | grep -c '^FAIL: ')
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$run/judge" "judge.py exited $rc without a FAIL line: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
}

# ---- the judge itself, on made-up results

out=$(python3 "$CONF/judge_test.py" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E '^(PASS|FAIL): '
nfail=$(printf '%s\n' "$out" | grep -c '^FAIL: ')
_failures=$((_failures + nfail))
if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
	fail judge/selftest "judge_test.py exited $rc: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
fi

# ---- setup

if ! out=$("$CONF/setup.sh" 2>&1); then
	fail setup "tests/conformance/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
. "$CONF/env.sh"
if ! conformance_node_ok; then
	fail setup "node $(node --version 2>&1) in PATH is older than 22"
	finish
fi
STABLE=$CONF/node_modules/conformance-stable/dist/index.js
NEXT=$CONF/node_modules/conformance-next/dist/index.js
version() { node -p "require('$CONF/node_modules/$1/package.json').version"; }
echo "# node $(node --version), conformance $(version conformance-stable) (stable) and $(version conformance-next) (next)"

# ---- stable: each scenario of 0.1.16, those that apply first (the server
# keeps every session the suite opens, at most 64)

if start_server stable; then
	scenarios=$(node "$STABLE" list 2>&1 | sed -n '/^Server scenarios/,/^$/s/^  - \([^ ]*\).*/\1/p')
	if [ -z "$scenarios" ]; then
		fail stable/list "\`conformance list\` printed no server scenario: $(node "$STABLE" list 2>&1 | head -3 | tr '\n' ' ')"
	fi
	applies=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import judge; print(" ".join(judge.APPLIES["stable"]))' "$CONF")
	ordered=$(for s in $scenarios; do [[ " $applies " == *" $s "* ]] && echo "$s"; done
		for s in $scenarios; do [[ " $applies " == *" $s "* ]] || echo "$s"; done)
	for s in $ordered; do
		echo "== $s" >>"$LOGS/stable.out"
		timeout 120 node "$STABLE" server --url "$URL" --scenario "$s" -o "$RESULTS/stable" >>"$LOGS/stable.out" 2>&1
	done
	judge stable "$LOGS/stable.out"
	stop_server stable
fi

# ---- next: the prerelease, once per requirement set

for rev in 2025-11-25 2026-07-28; do
	if start_server "$rev"; then
		timeout 900 node "$NEXT" server --url "$URL" --requirements "$rev" -o "$RESULTS/$rev" >"$LOGS/$rev.out" 2>&1
		echo "# $rev: $(sed 's/\x1b\[[0-9;]*m//g' "$LOGS/$rev.out" | grep -E '^Total: ' | tail -1) (the suite's own count, every scenario)"
		judge "$rev" "$LOGS/$rev.out"
		stop_server "$rev"
	fi
done

if [ "$_failures" -gt 0 ]; then
	for f in "$LOGS"/*.server.log; do
		[ -s "$f" ] && echo "# $(basename "$f"): $(tail -2 "$f" | tr '\n' ' ')"
	done
fi
finish
