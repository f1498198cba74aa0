#!/usr/bin/env bash
# context_fork (issue #29, docs/context-fork.md): copy-on-write forks of
# python code contexts in real sandboxes of the default image
# (tests/mcp/context_fork.py: state carried and independent both ways,
# process group, interrupt and kill of the fork, reseed, fork of a fork and
# of the default context, threads, busy source, javascript refusal, not
# found across sandboxes and sessions, a forged pid, the context limit), as
# root (plus the pids limit) and as the rootless test user nsboxtest
# (best-effort limits: this host delegates it no cgroup).
SUITE=context_fork
. "$(dirname "$0")/../lib.sh"

MCP=$ROOT/tests/mcp
LOGS=$T/logs
mkdir -p "$LOGS"
IMG=localhost/nsbox-default:latest

if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$T/build.log"); then
	fail setup "images/default/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi

# -- root --------------------------------------------------------------------
S=$T/store
seed_default_store "$S"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$LAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	fail setup "cannot pull the default image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
run_client root env NSBOX="$NSBOX" NSBOX_STORE="$S" CF_LIMITS=1 timeout 300 \
	python3 "$MCP/context_fork.py"

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
	run_client rootless runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/home/nsboxtest NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" \
		SUITE="$SUITE/rootless" timeout 300 python3 "$MCP/context_fork.py"
else
	fail rootless_setup "cannot pull the default image as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
