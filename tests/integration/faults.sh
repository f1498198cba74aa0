#!/usr/bin/env bash
# Faults: the MCP server killed outright while busy, and a full disk.
#
# 1. `nsbox serve` (stdio) killed with SIGKILL while it holds a kept sandbox
#    running a long command, a one-shot run in progress and a sandbox on a
#    persistent workspace: no sandbox process survives; the next start
#    removes the dead sandboxes' state directories, cgroups and mounts; the
#    workspace keeps its files (tests/faults/server_kill.py).  As root
#    (cgroup v1 here) and as nsboxtest (NSBOX_LIMITS=best-effort).  The CLI
#    case (`nsbox run` killed) is in sandbox.sh.
# 2. A store on a 24 MiB ext4 image (loop-mounted, no reserved blocks):
#    pulls that run out of space while skopeo writes a blob and while nsbox
#    unpacks a layer fail with a clear ENOSPC error, list no image and leave
#    no staging tree; the same store on a larger filesystem takes both.  Then
#    writes in a sandbox and through write_file on a workspace that fills
#    the filesystem (tests/faults/full_disk_writes.py).
SUITE=faults
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

FAULTS=$ROOT/tests/faults
# Process markers (tests/markers.md: faults' are sleep 4300-4319): MARK=430
# as root (sleep 4301, 4302), 431 rootless (4311, 4312).
# run_py NAME CMD...: runs a helper, passes its PASS/FAIL/# lines through
# and turns a crash without a FAIL line into one.
run_py() {
	local name=$1 rc nfail
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	grep -E '^(PASS: |FAIL: |# )' "$T/$name.out"
	nfail=$(grep -c '^FAIL: ' "$T/$name.out")
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$name" "exited $rc without a FAIL line: $(tail -3 "$T/$name.err" | tr '\n' ' ')"
	fi
}
# pull_sh STORE [NSBOX-COMMAND...]: the busybox fixture, named so that
# language "sh" finds it.
pull_sh() {
	local store=$1
	shift
	"${@:-$NSBOX}" --store "$store" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null &&
		"${@:-$NSBOX}" --store "$store" tag "oci:$F/oci/busybox:latest" busybox
}

# show_log NAME FILE: the end of a server's stderr when NAME failed.
show_log() {
	if grep -q '^FAIL: ' "$T/$1.out" && [ -s "$2" ]; then
		tail -5 "$2" | sed 's/^/# stderr: /'
	fi
}

# -- 1. the server killed, as root ------------------------------------------------
S=$T/store
printf '#!/bin/sh\nexec "%s" "$@" 2>>"%s"\n' "$NSBOX" "$T/serve-root.log" >"$T/serve-root"
chmod 755 "$T/serve-root"
if pull_sh "$S"; then
	run_py server_kill env NSBOX="$T/serve-root" NSBOX_STORE="$S" SUITE="$SUITE/root" \
		MARK=430 timeout 300 python3 "$FAULTS/server_kill.py"
	show_log server_kill "$T/serve-root.log"
else
	fail root/setup "cannot pull the busybox fixture"
fi

# -- 1. the same, rootless: a copy of nsbox that nsboxtest can run, and a
# wrapper that execs it as nsboxtest (setpriv, unlike runuser, does not stay
# as the parent: the helper's SIGKILL must reach nsbox itself).
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
cat >"$RL/serve" <<EOF
#!/bin/sh
exec setpriv --reuid=nsboxtest --regid=nsboxtest --init-groups \\
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest NSBOX_LIMITS=best-effort \\
	${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} ${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \\
	"$RL/nsbox" "\$@" 2>>"$RL/serve.log"
EOF
chmod 755 "$RL/serve"
if pull_sh "$RL/store" "$RL/serve"; then
	run_py server_kill_rootless env NSBOX="$RL/serve" NSBOX_STORE="$RL/store" SUITE="$SUITE/rootless" \
		MARK=431 ROOTLESS=1 timeout 300 python3 "$FAULTS/server_kill.py"
	show_log server_kill_rootless "$RL/serve.log"
else
	fail rootless/setup "cannot pull the busybox fixture as nsboxtest"
fi

# -- 2. a full disk ----------------------------------------------------------------
# Images: busybox plus a 48 MiB text file (a 2.4 MB layer: it fits, its
# unpacked file does not), and busybox plus 32 MiB of random bytes (the
# blob itself does not fit).
python3 - "$T/text" <<'PYEOF'
import sys
line = b"".join(b"%08d the quick brown fox jumps over the lazy dog\n" % i for i in range(1000))
with open(sys.argv[1], "wb") as f:
    for _ in range((48 << 20) // len(line) + 1):
        f.write(line)
PYEOF
head -c 32M /dev/urandom >"$T/random"
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bigtext" "$T/text:/big.txt" &&
	python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bigblob" "$T/random:/random.bin" ||
	{ fail disk/setup "cannot build the images"; finish; }
rm -f "$T/text" "$T/random"
IMG=$T/disk.img MNT=$T/disk
mkdir -p "$MNT"
truncate -s 24M "$IMG" && mke2fs -q -t ext4 -m 0 "$IMG" && mount -o loop "$IMG" "$MNT" ||
	{ fail disk/setup "cannot mount a loop ext4 image"; finish; }
# Unmounted however the suite ends (lib.sh's trap removes $T after).
trap 'umount -l "$MNT" 2>/dev/null; cleanup_test_dir' EXIT
DS=$MNT/store
nsbox_d() { "$NSBOX" --store "$DS" "$@"; }
images_json() { nsbox_d images --json 2>&1 | tr -d ' \n'; }
staging() { ls -A "$DS/tmp" 2>/dev/null | tr '\n' ' '; }

for case in unpack:bigtext blob:bigblob; do
	what=${case%%:*} img=${case#*:}
	out=$(nsbox_d pull --quiet "oci:$T/$img:latest" 2>&1)
	rc=$?
	if [ $rc = 1 ] && printf '%s' "$out" | grep -qi 'no space left on device' &&
		[ "$(printf '%s\n' "$out" | grep -c '^nsbox: error: ')" = 1 ]; then
		pass "disk/pull_enospc_${what}_clear_error"
	else
		fail "disk/pull_enospc_${what}_clear_error" "rc=$rc: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi
	if [ "$(images_json)" = "[]" ] && [ -z "$(ls -A "$DS/images")" ] && [ -z "$(staging)" ]; then
		pass "disk/pull_enospc_${what}_leaves_nothing"
	else
		fail "disk/pull_enospc_${what}_leaves_nothing" "images: $(images_json); images/: $(ls -A "$DS/images" | tr '\n' ' '); tmp/: $(staging)"
	fi
done
out=$(nsbox_d prune 2>&1)
if [ $? = 0 ] && [ -z "$(staging)" ] && [ "$(images_json)" = "[]" ]; then
	pass disk/prune_after_enospc
else
	fail disk/prune_after_enospc "$out; tmp/: $(staging)"
fi
# A larger filesystem (160 MiB) takes the same store, as the failed pulls
# left it, and then both images.  (A second image rather than growing the
# first: the kernel refuses to grow one this small online, and offline
# growth races the loop device's release after umount.)
IMG2=$T/disk2.img MNT2=$T/disk2
mkdir -p "$MNT2"
truncate -s 160M "$IMG2" && mke2fs -q -t ext4 -m 0 "$IMG2" && mount -o loop "$IMG2" "$MNT2" &&
	cp -a "$DS" "$MNT2/store" && umount "$MNT" ||
	{ fail disk/setup "cannot move the store to a larger filesystem"; finish; }
trap 'umount -l "$MNT2" 2>/dev/null; cleanup_test_dir' EXIT
MNT=$MNT2 DS=$MNT2/store
out=$({ nsbox_d pull --quiet "oci:$T/bigtext:latest" && nsbox_d pull --quiet "oci:$T/bigblob:latest"; } 2>&1 >/dev/null)
if [ $? = 0 ] && [ "$(nsbox_d images --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 2 ] &&
	[ "$(stat -c %s "$(rootfs_of "$DS" "oci:$T/bigtext:latest")/big.txt")" = 50350000 ] &&
	[ -z "$(staging)" ]; then
	pass disk/pull_works_with_more_space
else
	fail disk/pull_works_with_more_space "$out; images: $(images_json); tmp/: $(staging); $(df -k "$MNT" | tail -1)"
fi
nsbox_d rmi "oci:$T/bigtext:latest" "oci:$T/bigblob:latest" >/dev/null && nsbox_d prune >/dev/null
if pull_sh "$DS"; then
	run_py full_disk_writes env NSBOX="$NSBOX" NSBOX_STORE="$DS" SUITE="$SUITE/disk" \
		timeout 300 python3 "$FAULTS/full_disk_writes.py"
else
	fail disk/setup "cannot pull busybox onto the image"
fi
finish
