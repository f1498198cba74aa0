#!/usr/bin/env bash
# The stateful interpreters (docs/interpreters.md) end to end: `nsbox serve`
# with the default image, driven by the official MCP SDK client
# (tests/mcp/interp.test.mjs: state, restart, timeout, OOM, exit, figures,
# pandas, JavaScript and TypeScript, fresh, progress, cancellation, the
# write/run/image workflow) and by hostile cells (tests/mcp/interp_hostile.py:
# isolation equal to a command's, the drivers' mount, channel tampering,
# floods, daemons, fork bombs, sandbox_stop mid-cell, two sessions), as root
# and as the rootless test user nsboxtest (best-effort limits: this host
# delegates no cgroup v2).  The default image's layout is built or reused
# from its cache (images/default/build.sh) and pulled into stores of the
# suite's own.  Needs node >= 18 and npm (tests/mcp/setup.sh).
SUITE=interp
. "$(dirname "$0")/../lib.sh"

MCP=$ROOT/tests/mcp
LOGS=$T/logs
mkdir -p "$LOGS"
IMG=localhost/nsbox-default:latest

if ! out=$("$MCP/setup.sh" 2>&1); then
	fail setup "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$T/build.log"); then
	fail setup "images/default/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi

# run_client NAME CMD...: runs a test program, passes its PASS/FAIL/# lines
# through, and turns a crash without a FAIL line into one (as mcp_stdio.sh).
run_client() {
	local name=$1 rc nfail
	shift
	"$@" 2>"$LOGS/$name.stderr" | tee "$LOGS/$name.out" | grep -E --line-buffered '^(PASS: |FAIL: |# )'
	rc=${PIPESTATUS[0]}
	nfail=$(grep -c '^FAIL: ' "$LOGS/$name.out")
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$name" "exited $rc without a FAIL line: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	elif [ "$rc" -eq 0 ] && ! grep -q '^PASS: ' "$LOGS/$name.out"; then
		fail "$name" "ran no test: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	fi
}

# -- root --------------------------------------------------------------------
S=$T/store
seed_default_store "$S"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$LAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	fail setup "cannot pull the default image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
root_env=(env NSBOX="$NSBOX" NSBOX_STORE="$S")
run_client sdk "${root_env[@]}" SUITE="$SUITE" timeout 600 node "$MCP/interp.test.mjs"
run_client hostile "${root_env[@]}" SUITE="$SUITE/hostile" timeout 600 python3 "$MCP/interp_hostile.py"
run_client contexts "${root_env[@]}" SUITE="$SUITE/contexts" timeout 300 python3 "$MCP/contexts.py"
run_client streaming "${root_env[@]}" SUITE="$SUITE/streaming" timeout 300 python3 "$MCP/streaming.py"
run_client results "${root_env[@]}" SUITE="$SUITE/results" timeout 300 python3 "$MCP/interp_results.py"
run_client notebook "${root_env[@]}" SUITE="$SUITE/notebook" timeout 300 python3 "$MCP/interp_notebook_driver.py"
run_client js_driver "${root_env[@]}" SUITE="$SUITE/js_driver" timeout 300 python3 "$MCP/interp_js_driver.py"

# -- rootless ------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
as_user() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" "$@"
}
seed_default_store "$RL/store" nsboxtest
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$LAYOUT:latest" 2>&1) &&
	out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	run_client sdk_rootless as_user SUITE="$SUITE/rootless" timeout 600 node "$MCP/interp.test.mjs"
	run_client hostile_rootless as_user SUITE="$SUITE/rootless/hostile" timeout 600 python3 "$MCP/interp_hostile.py"
else
	fail rootless_setup "cannot pull the default image as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
# The rootless store holds subordinate-id files: removed as its owner.
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
