#!/usr/bin/env bash
# The zygote (issue #29, docs/warm.md): one-shot execute_code served by an
# interpreter pre-started in a spare sandbox, through `nsbox serve` with the
# default image (tests/mcp/zygote.py: each language warm, a warm result
# equal to a fresh process's, no state between calls, timeout/OOM/env/
# stdin/network, --warm-import, a killed zygote or spare, the spares'
# growth, bound and idle trim), as root and as the rootless test user
# nsboxtest (best-effort limits: this host delegates no cgroup v2).  The
# default image's layout is built or reused from its cache
# (images/default/build.sh) and pulled into stores of the suite's own.
SUITE=zygote
. "$(dirname "$0")/../lib.sh"

LOGS=$T/logs
mkdir -p "$LOGS" && chmod 755 "$T"
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
run_client root env NSBOX="$NSBOX" NSBOX_STORE="$S" timeout 600 python3 "$ROOT/tests/mcp/zygote.py"

# -- rootless ------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
AS_USER=(runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest
	NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store")
as_user() { "${AS_USER[@]}" "$@"; }
seed_default_store "$RL/store" nsboxtest
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$LAYOUT:latest" 2>&1) &&
	out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	run_client rootless "${AS_USER[@]}" SUITE="$SUITE/rootless" timeout 600 python3 "$ROOT/tests/mcp/zygote.py"
else
	fail rootless_setup "cannot pull the default image as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
# The rootless store holds subordinate-id files: removed as its owner.
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
