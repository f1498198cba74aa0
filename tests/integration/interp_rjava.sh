#!/usr/bin/env bash
# The R and Java persistent interpreters (docs/interpreters.md, "R" and
# "Java") end to end: the test image (Debian bookworm minbase, r-base-core,
# openjdk-17-jdk-headless; tests/rjava_image/build.sh, built once and
# cached: about 1.5 min and 233 MB compressed on a fresh machine) pulled into
# a store of the suite's own, then tests/mcp/interp_r_java.py against
# `nsbox serve`, as root and as the rootless test user nsboxtest.  Prints "# " lines with the build and pull times.
SUITE=interp_rjava
. "$(dirname "$0")/../lib.sh"

MCP=$ROOT/tests/mcp
S=$T/store
IMG=localhost/nsbox-test-rjava:latest

start=$SECONDS
if ! LAYOUT=$("$ROOT/tests/rjava_image/build.sh" 2>"$T/build.log"); then
	fail build "tests/rjava_image/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi
echo "# layout $LAYOUT (built or reused in $((SECONDS - start)) s; $(du -sm "$LAYOUT" | cut -f1) MB compressed)"
start=$SECONDS
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$LAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	fail setup "cannot pull the test image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
echo "# pull (unpack) $((SECONDS - start)) s"

LOGS=$T/logs
mkdir -p "$LOGS"
run_client rjava env NSBOX="$NSBOX" NSBOX_STORE="$S" IMAGE="$IMG" timeout 300 python3 "$MCP/interp_r_java.py"

# -- rootless (best-effort limits: RLIMIT_AS bounds the JVM) -------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
as_user() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" "$@"
}
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$LAYOUT:latest" 2>&1) &&
	out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	# (run_client runs a command through env: as_user's words spelled out)
	run_client rjava_rootless runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/home/nsboxtest NSBOX_LIMITS=best-effort NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" \
		SUITE="$SUITE/rootless" IMAGE="$IMG" timeout 300 python3 "$MCP/interp_r_java.py"
else
	fail rootless_setup "cannot pull the test image as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
# The rootless store holds subordinate-id files: removed as its owner.
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
