# The disk layer's quota kind (runtime/disk.h): a store on ext4 mounted with
# prjquota, root's sandboxes bounded by a project quota on their upper and
# work directories.  Run by tests/integration/disk.sh, in the cgroup v2 VM
# (whose kernel has quota_v2; this host's has not) or on a host that can
# mount prjquota.  busybox sh: no python.
#   disk-quota-guest.sh IMG-OR-DIR NSBOX IMAGE
# IMG-OR-DIR: an ext4 image with project quotas (mounted here with prjquota)
# or a directory where one is mounted already; it holds store/ with IMAGE.
SRC=$1
NSBOX_BIN=$2
IMG=$3
SUITE=disk/quota
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
MiB=1048576
SLACK=$((4 * MiB))
if [ -f "$SRC" ]; then
	modprobe loop 2>/dev/null
	modprobe quota_v2 2>/dev/null
	M=/mnt/q
	mkdir -p $M
	mount -o loop,prjquota "$SRC" $M || { fail setup "cannot mount $SRC with prjquota"; finish; }
else
	M=$SRC
fi
S=$M/store
nsbox() { "$NSBOX_BIN" --store "$S" "$@"; }
# The probe's field KEY from the line of CHECK on stdin.
jf() { grep "\"check\":\"$2\"" | tail -1 | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -1; }
free_of() { df -k -P "$1" | awk 'NR == 2 {print $4 * 1024}'; }
host_bound() { # NAME LIMIT: checked while the sandbox held what it wrote
	# (DURING is empty when no sandbox was made: nothing was bounded.)
	[ -n "$DURING" ] || { fail "$1_host_bound" "nothing held: create failed or the probe never ran ($(echo "$OUT" | tail -1 | cut -c1-200))"; return; }
	echo "# quota/$1: store fs free before $((BEFORE / MiB)) MiB, with the sandbox full $((DURING / MiB)) MiB, limit $(($2 / MiB)) MiB"
	[ "$DURING" -ge $((BEFORE - $2 - SLACK)) ] && pass "$1_host_bound" || fail "$1_host_bound" "dropped $(((BEFORE - DURING) / MiB)) MiB"
}
# held CMD: a quota sandbox of 64 MiB runs CMD; the store's filesystem is
# measured while it still holds what CMD wrote, then it is removed.  Sets
# BEFORE, OUT, RC, DURING.
inodes_of() { df -i -P "$1" | awk 'NR == 2 {print $4}'; }
held() {
	BEFORE=$(free_of $M) IN0=$(inodes_of $M)
	OUT= RC=125 DURING= IN1=$IN0
	id=$(NSBOX_DISK_BACKEND=quota nsbox create --disk 64M "$IMG") || return
	OUT=$(nsbox exec "$id" -- sh -c "$1")
	RC=$?
	# measured only when the probe ran (a line of its own): else nothing was held
	echo "$OUT" | grep -q '"check":' && DURING=$(free_of $M) IN1=$(inodes_of $M)
	nsbox rm "$id" >/dev/null
}
# settled: run removes its sandbox in the background; wait for it.
settled() {
	for _ in $(seq 100); do
		[ -z "$(ls "$S/sandboxes" 2>/dev/null | grep -E '^[0-9a-f]{32}$')" ] && return 0
		sleep 0.1
	done
	return 1
}
full() { [ "$1" = ENOSPC ] || [ "$1" = EDQUOT ]; }

# Chosen without asking: root, and the store's filesystem has project quotas.
j=$(nsbox run --json --disk 64M "$IMG" -- true)
echo "$j" | grep -q 'disk: 64 MiB total (project quota' && pass auto_picks_quota ||
	fail auto_picks_quota "$(echo "$j" | grep -o '"limits": *"[^"]*"')"

# A 200 MiB write stops within 64 MiB; df inside shows the project's limit;
# the store's filesystem loses at most that, and gets it back.
settled
held 'df -k / | tail -1; probe write /workspace/f 200'
host_bound fill $((64 * MiB))
e=$(echo "$OUT" | jf errname write)
b=$(echo "$OUT" | jf bytes write)
size=$(echo "$OUT" | head -1 | awk '{print $2}')
echo "# quota/fill: $e after ${b:-?} bytes; df inside: $size KiB"
if full "$e" && [ "${b:-0}" -gt $((60 * MiB)) ] && [ "${b:-0}" -le $((64 * MiB)) ] && [ "$RC" = 0 ]; then
	pass fill_stops_at_64m
else
	fail fill_stops_at_64m "rc=$RC errname=$e bytes=$b"
fi
[ "$size" = 65536 ] && pass df_inside_shows_limit || fail df_inside_shows_limit "df: $(echo "$OUT" | head -1)"
after=$(free_of $M)
[ "$after" -ge $((BEFORE - SLACK)) ] && pass space_back_after_rm || fail space_back_after_rm "free $((BEFORE / MiB)) -> $((after / MiB)) MiB"

# Inodes: one per 4 KiB of the size (16384 for 64 MiB), empty files or not;
# the store's filesystem loses at most that many.
held 'mkdir /workspace/d && probe files /workspace/d 100000'
n=$(echo "$OUT" | jf ret files)
e=$(echo "$OUT" | jf errname files)
echo "# quota/inodes: $n empty files, then $e; store fs free inodes $IN0, with the sandbox full $IN1"
full "$e" && [ "${n:-0}" -gt 16000 ] && [ "${n:-99999}" -le 16384 ] && [ -n "$DURING" ] && [ "$IN1" -ge $((IN0 - 16384 - 64)) ] &&
	pass empty_files_inode_bound || fail empty_files_inode_bound "$n files, $e; inodes $IN0 -> $IN1"
held 'mkdir /workspace/d && probe smallfiles /workspace/d 100000'
n=$(echo "$OUT" | jf ret smallfiles)
e=$(echo "$OUT" | jf errname smallfiles)
host_bound smallfiles $((64 * MiB))
echo "# quota/smallfiles: $n files of 4 KiB, then $e"
full "$e" && [ "${n:-99999}" -le 16384 ] && [ "${n:-0}" -gt 14000 ] && pass small_files_bound ||
	fail small_files_bound "$n files of 4 KiB, $e"

# A sparse file: the apparent size is free, the blocks count.
held 'probe sparse /workspace/s 200'
host_bound sparse $((64 * MiB))
e=$(echo "$OUT" | jf errname sparse)
b=$(echo "$OUT" | jf bytes sparse)
echo "# quota/sparse: $e after $b bytes"
full "$e" && [ "${b:-0}" -gt $((56 * MiB)) ] && [ "${b:-0}" -le $((64 * MiB)) ] && pass sparse_high_offsets_bound ||
	fail sparse_high_offsets_bound "$e after $b bytes: $OUT"

# Hard links: counted once; 40 MiB linked 500 times leaves 24 MiB to fill.
held 'probe write /workspace/big 40 links /workspace/big 500 write /workspace/rest 200'
host_bound links $((64 * MiB))
l=$(echo "$OUT" | jf ret links)
e=$(echo "$OUT" | jf errname write)
b=$(echo "$OUT" | grep '"path":"/workspace/rest"' | jf bytes write)
echo "# quota/links: $l links, then $e after $b bytes"
full "$e" && [ "$l" = 500 ] && [ "${b:-0}" -gt $((16 * MiB)) ] && [ "${b:-0}" -le $((24 * MiB)) ] && pass hard_links_counted_once ||
	fail hard_links_counted_once "links=$l then $e after $b bytes"

# The sandbox cannot take its files out of the project: setting a project
# id (or clearing the inherit flag) is allowed only from the initial user
# namespace (EINVAL elsewhere; EPERM if not the owner); the fill that
# follows stays bounded.
out=$(NSBOX_DISK_BACKEND=quota nsbox run --disk 64M "$IMG" -- sh -c 'touch /workspace/x && probe projid /workspace/x 0 projid /workspace 0 write /workspace/x 200')
p1=$(echo "$out" | grep '"path":"/workspace/x"' | jf errname projid)
p2=$(echo "$out" | grep '"path":"/workspace"' | jf errname projid)
e=$(echo "$out" | jf errname write)
echo "# quota/projid: on a file $p1, on /workspace $p2, then the fill: $e"
refused() { [ "$1" = EINVAL ] || [ "$1" = EPERM ]; }
refused "$p1" && refused "$p2" && full "$e" && pass project_id_cannot_be_changed ||
	fail project_id_cannot_be_changed "$out"

# A persistent workspace gets a project of its own for life, with its
# budget as a hard limit: the write fails inside (the kernel's bound, not
# nsbox's measurement), the record says "quota", the store's filesystem
# loses at most the budget, and a later sandbox on it finds it still full.
BEFORE=$(free_of $M)
j=$(nsbox run --json --workspace wq --workspace-size 32M "$IMG" -- probe write /workspace/f 100)
DURING=$(free_of $M)
e=$(echo "$j" | grep -o '"errname\\*":\\*"[A-Z]*' | grep -o '[A-Z]*$' | tail -1)
kind=$(echo "$j" | grep -o '"workspace_disk": *"[a-z]*"' | grep -o '[a-z]*"$' | tr -d '"')
echo "# quota/workspace: $kind, the write: ${e:-?}; store fs free $((BEFORE / MiB)) -> $((DURING / MiB)) MiB, budget 32 MiB"
[ "$kind" = quota ] && full "$e" && [ "$DURING" -ge $((BEFORE - 32 * MiB - SLACK)) ] &&
	pass workspace_quota_enforced_by_kernel || fail workspace_quota_enforced_by_kernel "$(echo "$j" | cut -c1-400)"
ids=$(ls "$S/workspaces/.projids/ids" 2>/dev/null | tr '\n' ' ')
j=$(nsbox run --json --workspace wq --workspace-size 32M "$IMG" -- probe write /workspace/g 8)
e=$(echo "$j" | grep -o '"errname\\*":\\*"[A-Z]*' | grep -o '[A-Z]*$' | tail -1)
ids2=$(ls "$S/workspaces/.projids/ids" 2>/dev/null | tr '\n' ' ')
[ -n "$ids" ] && [ "$ids" = "$ids2" ] && full "$e" && pass workspace_project_kept_for_life ||
	fail workspace_project_kept_for_life "ids '$ids' then '$ids2'; the next write: ${e:-none}"
rm -rf "$S/workspaces/wq"

# Nothing is left holding the store's filesystem: no sandbox state, no
# mount, no process; it unmounts.
if [ -f "$SRC" ]; then
	settled
	left=$(ls "$S/sandboxes" 2>/dev/null | grep -E '^[0-9a-f]{32}$' | tr '\n' ' ')
	mnts=$(grep -c " $M/" /proc/mounts)
	if umount $M 2>/tmp/umount.err; then
		pass nothing_left_store_unmounts
	else
		sleep 2
		umount $M 2>/dev/null && again=" (unmounted 2 s later)" || again=
		fail nothing_left_store_unmounts "$(cat /tmp/umount.err)$again; sandboxes left: $left; mounts below: $mnts; $(ps -o pid,args | grep -v ']$' | tail -5 | tr '\n' ';')"
	fi
fi
finish
