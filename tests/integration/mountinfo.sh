#!/usr/bin/env bash
# No sandbox's mountinfo names a host path, but the volumes the user asked
# for (issue #24): tests/integration/mountinfo.py reads /proc/self/mountinfo
# in a one-shot, a kept, a networked and a workspace sandbox (CLI) and in an
# MCP kept sandbox's interpreter cell (nsbox's drivers mounted) and command,
# as root and as the unprivileged nsboxtest (best-effort limits: this host
# delegates no cgroup v2), with a `-v` volume as the positive control.
SUITE=mountinfo
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

LOGS=$T/logs
mkdir -p "$LOGS"
IMG=localhost/mountinfo-python:latest
cp -r "$F/oci/python" "$T/py"
mkdir -p "$T/vol"
echo control >"$T/vol/f"
chmod -R a+rX "$T"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PROG=$ROOT/tests/integration/mountinfo.py
# counted MODE: the program reported every case (a crash midway is a FAIL).
counted() {
	local n
	n=$(grep -c -E "^(PASS|FAIL): $SUITE/$1/" "$LOGS/$1.client")
	[ "$n" = 11 ] || fail "$1/count" "$n results, 11 expected"
}

# -- root ------------------------------------------------------------------
# The binary's directory is one of the paths that may not show: a copy in
# the test's own directory (the build directory is in the repository's).
S=$T/store
install -m 755 "$NSBOX" "$T/nsbox"
if out=$("$T/nsbox" --store "$S" pull --quiet "oci:$T/py:latest" 2>&1) &&
	out=$("$T/nsbox" --store "$S" tag "oci:$T/py:latest" "$IMG" 2>&1); then
	run_client root env NSBOX="$T/nsbox" NSBOX_STORE="$S" MI_IMAGE="$IMG" MI_VOLUME="$T/vol" \
		MI_TMP="$T" MI_PORT="$PORT" MI_MODE=root timeout 600 python3 "$PROG"
	counted root
else
	fail root_setup "cannot pull the python fixture: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi

# -- rootless --------------------------------------------------------------
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
as_user() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort "$@"
}
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$T/py:latest" 2>&1) &&
	out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$T/py:latest" "$IMG" 2>&1); then
	# as_user is a function: run_client runs it through bash.
	run_client rootless bash -c "$(declare -f as_user); as_user \"\$@\"" as_user \
		SUITE="$SUITE" NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" MI_IMAGE="$IMG" \
		MI_VOLUME="$T/vol" MI_TMP="$T" MI_PORT="$PORT" MI_MODE=rootless timeout 600 python3 "$PROG"
	counted rootless
else
	fail rootless_setup "cannot pull the python fixture as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
# The rootless store holds subordinate-id files: removed as its owner.
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
