#!/usr/bin/env bash
# The disk layer (issue #11, section 1; runtime/disk.h): every sandbox's
# writable layer has a kernel-enforced total bound.  Filling it fails with
# ENOSPC inside, the store's filesystem loses at most the limit, nothing is
# OOM-killed.  Root and rootless on this host (the tmpfs kind); the quota
# kind where project quotas can be mounted: on this host when its kernel
# can (it has no CONFIG_QFMT_V2), else in the cgroup v2 VM, whose kernel
# can (tests/vm/disk-quota-guest.sh).
#
# The store sits on a filesystem of its own (a loop-mounted ext4 image), so
# its free space moves only with what these sandboxes write: other tests on
# the machine do not blur the host-side bound.  Every fill prints the store
# filesystem's free space before and after, and the limit.
SUITE=disk
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
U=nsboxtest
MiB=$((1 << 20))
SLACK=$((4 * MiB)) # the upper layer's directories, the sandbox's state files

PROBE=$T/probe # (its own: suites run side by side)
"$ROOT/tests/probe/build.sh" "$PROBE" ||
	{ fail setup "cannot build the probe"; finish; }
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bb" "$PROBE:/usr/local/bin/probe"
chmod -R a+rX "$T"
BB=oci:$T/bb:latest

MNT=$T/fs
unmount_all() {
	for m in "$MNT" "$T/qfs"; do mountpoint -q "$m" 2>/dev/null && umount -l "$m"; done
	cleanup_test_dir
}
trap unmount_all EXIT
truncate -s 2G "$T/fs.img"
mkfs.ext4 -q -F "$T/fs.img" && mkdir -p "$MNT" && mount -o loop "$T/fs.img" "$MNT" ||
	{ fail setup "cannot mount a loop ext4 for the store"; finish; }
chmod 755 "$MNT"
S=$MNT/store
nsbox() { "$NSBOX" --store "$S" "$@"; }
nsbox pull --quiet "$BB" >/dev/null || { fail setup "pull"; finish; }

# free DIR: bytes available to unprivileged users on DIR's filesystem.
free_of() { python3 -c 'import os,sys; s=os.statvfs(sys.argv[1]); print(s.f_bavail*s.f_frsize)' "$1"; }
# host_bound NAME BEFORE DURING LIMIT: the store's filesystem lost at most
# LIMIT+SLACK while the sandbox held what it wrote.  DURING is empty when
# no sandbox was made or it wrote nothing (held): then there was nothing to
# bound, and that is a failure, not a pass.
host_bound() {
	local name=$1 before=$2 during=$3 limit=$4
	if [ -z "$during" ]; then
		fail "${name}_host_bound" "no measurement: ${HELD_WHY:-the sandbox was not made or wrote nothing}"
		return
	fi
	echo "# $name: store fs free before $((before / MiB)) MiB, with the sandbox full $((during / MiB)) MiB, limit $((limit / MiB)) MiB"
	if [ "$during" -ge $((before - limit - SLACK)) ]; then
		pass "${name}_host_bound"
	else
		fail "${name}_host_bound" "free space dropped $(((before - during) / MiB)) MiB, limit $((limit / MiB)) MiB"
	fi
}
# held N CREATE-ARGS(N) CMD: a sandbox created with the N arguments runs CMD
# (sh -c, exec --json); the store's filesystem is measured while it still
# holds what CMD wrote, then it is removed.  Sets BEFORE, J (the record)
# and DURING; DURING stays empty (and HELD_WHY says why) when the sandbox
# could not be made or its probe wrote nothing: no bound was tested.
# NSB: how to call nsbox (root or the rootless user).
NSB=(nsbox)
held() {
	local n=$1 id
	shift
	BEFORE=$(free_of "$MNT")
	J='{}' DURING= HELD_WHY=
	if id=$("${NSB[@]}" create "${@:1:n}" "$BB" 2>"$T/held.err"); then
		J=$("${NSB[@]}" exec --json --timeout 300 "$id" -- sh -c "${*:n+1:1}")
		if [ "$(jq_py "$J" 'w.get("bytes", 0) > 0')" = True ]; then
			DURING=$(free_of "$MNT")
		else
			HELD_WHY="the probe wrote nothing: $(printf '%s' "$J" | head -c 300)"
		fi
		"${NSB[@]}" rm "$id" >/dev/null
	else
		HELD_WHY="create failed: $(head -c 300 "$T/held.err")"
	fi
}
# jq_py JSON EXPR: a Python expression over the record r (and w, the probe
# line of action "write" in its stdout, when there is one).
jq_py() {
	printf '%s' "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
lines = [json.loads(l) for l in r.get("stdout", "").splitlines() if l.startswith("{")]
p = {d["check"]: d for d in lines}
w = p.get("write", {})
print(eval(sys.argv[1]))' "$2" 2>/dev/null
}

# -- root, tmpfs (the store's filesystem has no project quotas) ---------------------
# A 200 MiB write stops with ENOSPC within the 64 MiB; dd says so too; the
# sandbox sees a 64 MiB filesystem; the host's filesystem lost nothing.
held 2 --disk 64M 'df -k / | tail -1; probe write /workspace/f 200; rm /workspace/f
	dd if=/dev/zero of=/workspace/g bs=1M count=200 2>&1 | grep -c "No space left"'
j=$J
host_bound tmpfs_fill "$BEFORE" "$DURING" $((64 * MiB))
got=$(jq_py "$j" '(w.get("errname"), w.get("bytes", 0) > 60 << 20 and w.get("bytes", 1 << 40) <= 64 << 20, r["oom_killed"], r["status"], r["stdout"].split()[1], r["stdout"].strip().splitlines()[-1], "disk: 64 MiB total (tmpfs" in r["limits"])')
[ "$got" = "('ENOSPC', True, False, 'ok', '65536', '1', True)" ] && pass tmpfs_fill_enospc_at_64m ||
	fail tmpfs_fill_enospc_at_64m "(errname, bytes in (60, 64] MiB, oom, status, df size KiB, dd ENOSPC, note) = $got :: $(printf '%s' "$j" | head -c 600)"
echo "# tmpfs_fill: $(jq_py "$j" 'w')"

# The tmpfs's pages are memory: under --memory 64M a 128 MiB disk still
# fills to ENOSPC, because the cgroup's limit is raised by the disk's size.
held 4 --memory 64M --disk 128M 'probe write /workspace/f 200'
j=$J
host_bound tmpfs_memory_fill "$BEFORE" "$DURING" $((128 * MiB))
got=$(jq_py "$j" '(w.get("errname"), w.get("bytes", 0) > 120 << 20 and w.get("bytes", 1 << 40) <= 128 << 20, r["oom_killed"], r["status"], r["signal"], "memory limit raised to 192 MiB" in r["limits"])')
[ "$got" = "('ENOSPC', True, False, 'ok', 0, True)" ] && pass tmpfs_fill_under_memory_limit_enospc_not_oom ||
	fail tmpfs_fill_under_memory_limit_enospc_not_oom "(errname, bytes in (120, 128] MiB, oom, status, signal, note) = $got :: $(printf '%s' "$j" | head -c 600)"
# ... and the memory limit itself still holds for anonymous memory.
j=$(nsbox run --json --memory 64M --disk 128M "$BB" -- probe mem 512)
got=$(jq_py "$j" '(r["oom_killed"], r["status"])')
[ "$got" = "(True, 'oom')" ] && pass tmpfs_disk_does_not_lift_memory_limit || fail tmpfs_disk_does_not_lift_memory_limit "$got"

# The default is 1 GiB: the sandbox's df says so, the note too.
j=$(nsbox run --json "$BB" -- sh -c 'df -k / | tail -1')
got=$(jq_py "$j" '(r["stdout"].split()[1], "disk: 1024 MiB total (tmpfs" in r["limits"])')
[ "$got" = "('1048576', True)" ] && pass default_disk_1g || fail default_disk_1g "$got :: $(jq_py "$j" 'r["limits"]')"

# NSBOX_DISK_BACKEND=tmpfs forces the kind even where quota might work.
j=$(NSBOX_DISK_BACKEND=tmpfs nsbox run --json --disk 64M "$BB" -- true)
got=$(jq_py "$j" '"disk: 64 MiB total (tmpfs" in r["limits"]')
[ "$got" = True ] && pass backend_tmpfs_forced || fail backend_tmpfs_forced "$(jq_py "$j" 'r["limits"]')"

# --disk unlimited: no total bound, the note says so, and the write lands
# on the store's filesystem (which the other cases' bound would catch).
held 2 --disk unlimited 'probe write /workspace/f 80'
j=$J
echo "# unlimited: store fs free before $((BEFORE / MiB)) MiB, with the sandbox holding 80 MiB $((DURING / MiB)) MiB"
got=$(jq_py "$j" '(w.get("errname"), w.get("bytes"), "no total limit" in r["limits"], "MiB total" in r["limits"])')
[ "$got" = "('', 83886080, True, False)" ] && [ "$DURING" -le $((BEFORE - 80 * MiB)) ] && pass unlimited_says_no_total_limit ||
	fail unlimited_says_no_total_limit "(errname, bytes, 'no total limit', 'MiB total') = $got, free $((BEFORE / MiB)) -> $((DURING / MiB)) MiB :: $(jq_py "$j" 'r["limits"]')"

expect_usage() { # NAME CMD...: exit 2 (a usage error), nothing created
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" = 2 ] && pass "$name" || fail "$name" "rc=$rc $out"
}
expect_usage disk_size_nonsense_refused nsbox run --disk lots "$BB" -- true
expect_usage disk_size_negative_refused nsbox run --disk -5M "$BB" -- true

# A kept sandbox: filled by one exec, it still answers the next; a later
# write still fails; rm gives everything back.
before=$(free_of "$MNT")
id=$(nsbox create --disk 64M "$BB")
nsbox exec "$id" -- probe write /workspace/f 200 >"$T/c1.jsonl"
out=$(nsbox exec "$id" -- sh -c 'echo more >> /workspace/f && echo wrote; echo alive' 2>&1)
# (the bound is measured only when the probe wrote: else nothing was held)
wrote=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline()).get("bytes", 0))' "$T/c1.jsonl" 2>/dev/null)
HELD_WHY="id '$id', the probe wrote '${wrote:-nothing}'"
during=
[ -n "$id" ] && [ "${wrote:-0}" -gt 0 ] && during=$(free_of "$MNT")
host_bound create_fill "$before" "$during" $((64 * MiB))
nsbox rm "$id" >/dev/null
e=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["errname"])' "$T/c1.jsonl" 2>&1)
if [ "$e" = ENOSPC ] && printf '%s' "$out" | grep -q 'No space left' && printf '%s' "$out" | grep -qx alive &&
	! printf '%s' "$out" | grep -qx wrote; then
	pass create_exec_fill_then_refused
else
	fail create_exec_fill_then_refused "first=$e then: $out"
fi
after=$(free_of "$MNT")
[ ! -d "$S/sandboxes/$id" ] && [ "$after" -ge $((before - SLACK)) ] && pass create_rm_gives_space_back ||
	fail create_rm_gives_space_back "state left or free $((before / MiB)) -> $((after / MiB)) MiB"

# -- root, quota ---------------------------------------------------------------------
# Forcing the quota kind where the store's filesystem has no project quotas
# fails, and says why: it never falls back silently.
out=$(NSBOX_DISK_BACKEND=quota nsbox run --disk 64M "$BB" -- true 2>&1)
rc=$?
[ "$rc" = 125 ] && printf '%s' "$out" | grep -qi 'quota' && pass backend_quota_forced_without_quotas_fails ||
	fail backend_quota_forced_without_quotas_fails "rc=$rc $out"

# Can this kernel mount ext4 with prjquota at all?
truncate -s 64M "$T/q0.img"
mkdir -p "$T/qfs"
quota_here=0
if mkfs.ext4 -q -F -O quota,project -E quotatype=prjquota "$T/q0.img" && mount -o loop,prjquota "$T/q0.img" "$T/qfs" 2>/dev/null; then
	quota_here=1
	umount "$T/qfs"
fi
QIMG=$T/q.img
truncate -s 192M "$QIMG"
mkdir -p "$T/qsrc"
"$NSBOX" --store "$T/qsrc/store" pull --quiet "$BB" >/dev/null && "$NSBOX" --store "$T/qsrc/store" tag "$BB" diskbb
rm -rf "$T/qsrc/store/sandboxes" "$T/qsrc/store/cache"
if ! mkfs.ext4 -q -F -O quota,project -E quotatype=prjquota -d "$T/qsrc" "$QIMG"; then
	fail quota/setup "mkfs.ext4 with project quotas (e2fsprogs)"
elif [ "$quota_here" = 1 ]; then
	mount -o loop,prjquota "$QIMG" "$T/qfs" || fail quota/setup "mount prjquota"
	out=$(GUEST_LIB=$ROOT/tests/lib/guest.sh sh "$ROOT/tests/vm/disk-quota-guest.sh" "$T/qfs" "$NSBOX" diskbb 2>&1)
	rc=$?
	umount "$T/qfs"
else
	echo "# this kernel cannot mount ext4 with project quotas (no CONFIG_QFMT_V2): the quota kind runs in the VM"
	out=$("$ROOT/tests/vm/run.sh" --suite "$SUITE" --mem 1024 --timeout 400 --module loop --module quota_v2 \
		--add "$NSBOX:/usr/local/bin/nsbox" --data "$QIMG:/q.img" \
		-- "$ROOT/tests/vm/disk-quota-guest.sh" /q.img /usr/local/bin/nsbox diskbb 2>&1)
	rc=$?
fi
# Every case of tests/vm/disk-quota-guest.sh prints one line: 15, and
# nothing_left_store_unmounts where the guest mounts the image itself (the
# VM): 16.  A guest that printed fewer (or nothing: no boot) is a FAIL.
printf '%s\n' "${out:-}" | grep -E '^(PASS|FAIL|#)'
n=$(printf '%s\n' "${out:-}" | grep -cE '^(PASS|FAIL): disk/quota/')
_failures=$((_failures + $(printf '%s\n' "${out:-}" | grep -c '^FAIL: ')))
want=16
[ "$quota_here" = 1 ] && want=15
[ "$n" = "$want" ] || fail quota/guest_ran_every_case "$n of $want results (exit ${rc:-none}): $(printf '%s' "${out:-no output}" | tail -5 | tr '\n' ' ')"

# -- rootless: tmpfs ---------------------------------------------------------------
install -m 755 "$NSBOX" "$T/nsbox"
mkdir -p "$MNT/rl" && chown "$U" "$MNT/rl"
as() { runuser -u "$U" -- env -i PATH=/usr/bin:/bin HOME=/home/$U NSBOX_LIMITS=best-effort "$@"; }
as "$T/nsbox" --store "$MNT/rl" pull --quiet "$BB" >/dev/null || fail rootless/setup "pull"
NSB=(as "$T/nsbox" --store "$MNT/rl")
held 2 --disk 64M 'df -k / | tail -1; probe write /workspace/f 200'
j=$J
host_bound rootless_fill "$BEFORE" "$DURING" $((64 * MiB))
got=$(jq_py "$j" '(w.get("errname"), w.get("bytes", 0) > 60 << 20 and w.get("bytes", 1 << 40) <= 64 << 20, r["stdout"].split()[1], "disk: 64 MiB total (tmpfs" in r["limits"])')
[ "$got" = "('ENOSPC', True, '65536', True)" ] && pass rootless_tmpfs_fill_enospc_at_64m ||
	fail rootless_tmpfs_fill_enospc_at_64m "(errname, bytes in (60, 64] MiB, df KiB, note) = $got :: $(printf '%s' "$j" | head -c 600)"
echo "# rootless_fill: $(jq_py "$j" 'w')"
out=$(as env NSBOX_DISK_BACKEND=quota "$T/nsbox" --store "$MNT/rl" run --disk 64M "$BB" -- true 2>&1)
rc=$?
[ "$rc" = 125 ] && printf '%s' "$out" | grep -qi 'quota' && pass rootless_backend_quota_refused ||
	fail rootless_backend_quota_refused "rc=$rc $out"

finish
