# Runs inside the cgroup v2 VM (booted by tests/hostile/run.sh): the hostile
# cases that need a real cgroup v2 hierarchy or kernel features this host's
# kernel lacks (kexec, modules, sysrq, kcore).  Arguments: IMAGE (a digest
# prefix in /store.img's root store).  busybox sh only: no python here.
IMG=$1
CG=/sys/fs/cgroup
SUITE=hostile/vm
# The case table: every name this guest prints, each once and in every run
# (tests/hostile/counts.py reads it for the expected count; a name not in
# it is refused: tests/lib/guest.sh).
CASES="kernel_features_present_but_filtered sysrq_trigger_read_only kcore_masked
proc_masked_files_empty kernel_surface_settled thread_bomb_pids_max thread_bomb_settled
shm_fill_charged_to_sandbox_memory shm_fill_settled memory_balloon_oom_confined
memory_balloon_settled inode_exhaustion_tmp_capped inode_settled
disk_fill_tmpfs_enospc_not_oom disk_fill_tmpfs_host_bound disk_tmpfs_memory_still_bounded
disk_fill_settled outlive_timeout_cgroup_emptied rootless_delegated_fork_and_thread_bomb
rootless_disk_fill_tmpfs_enospc_not_oom"
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
# jf KEY [CHECK]: a JSON field from stdin (numbers, booleans, short strings),
# from the line of CHECK when given.
jf() {
	if [ -n "${2:-}" ]; then grep "\"check\":\"$2\"" | tail -1; else cat; fi |
		sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -1
}

modprobe loop 2>/dev/null
mkdir -p /mnt/store
mount -o loop /store.img /mnt/store || { fail setup "cannot mount /store.img"; finish; }
nsbox() { /usr/local/bin/nsbox --store /mnt/store/root "$@"; }
# running ERE: a process whose command line matches (this guest's busybox
# has no pgrep applet).
running() { ps -o args | grep -v -e grep -e '^ps ' | grep -qE -- "$1"; }
# After every case: nothing of the sandbox left (cgroup gone, no process).
# (`run` removes its cgroup in a detached process: give it up to 10 s.)
clean() { [ -z "$(ls "$CG/nsbox" 2>/dev/null | grep -E '^[0-9a-f]{32}$')" ] && ! running '(^|/)probe '; }
# settled NAME: a test of its own (one line, PASS or FAIL, every run).
settled() {
	if wait_until 10 clean; then
		pass "$1"
	else
		fail "$1" "left behind: $(ls "$CG/nsbox" 2>/dev/null | tr '\n' ' ') $(ps -o pid,args | grep -E '(^| |/)probe ' | grep -v grep | tr '\n' ';')"
	fi
}

# -- kernel surface on a kernel that has the features -----------------------------
# The guest kernel has kexec, modules, sysrq and kcore: a host baseline (the
# probe run directly as root) shows the calls reach the kernel, so EPERM in
# the sandbox is the filter's answer, not a missing feature.
calls="kexec_load kexec_file_load init_module finit_module delete_module iopl ioperm syslog acct swapon"
base=$(probe $calls 2>/dev/null)
in=$(nsbox run "$IMG" -- probe $calls sysrq_write kcore_read proc_masked)
reached=0 blocked=0 bad=
for c in $calls; do
	v=$(echo "$base" | jf verdict "$c")
	e=$(echo "$in" | jf errname "$c")
	[ "$v" = reached ] || [ "$v" = succeeded ] && reached=$((reached + 1))
	[ "$e" = EPERM ] && blocked=$((blocked + 1)) || bad="$bad $c=$e"
done
if [ "$blocked" = 10 ] && [ "$reached" -ge 8 ]; then
	pass kernel_features_present_but_filtered
else
	fail kernel_features_present_but_filtered "reached on the bare guest: $reached, EPERM in the sandbox: $blocked;$bad"
fi
# sysrq-trigger exists here: read-only in the sandbox.  kcore: /dev/null.
v=$(echo "$in" | jf verdict sysrq_write)
[ "$v" = blocked ] && [ -e /proc/sysrq-trigger ] && pass sysrq_trigger_read_only || fail sysrq_trigger_read_only "$(echo "$in" | grep sysrq)"
t=$(echo "$in" | jf type kcore_read)
[ "$t" = chr ] && [ -e /proc/kcore ] && pass kcore_masked || fail kcore_masked "$(echo "$in" | grep kcore_read)"
masked=$(echo "$in" | grep '"check":"proc_masked"')
leaky=$(echo "$masked" | grep -o '"path":"[^"]*","exists":true,"type":"file","bytes":[1-9][0-9]*')
if [ -n "$masked" ] && [ -z "$leaky" ]; then pass proc_masked_files_empty; else fail proc_masked_files_empty "${leaky:-no proc_masked line}"; fi
settled kernel_surface_settled

# -- resources under cgroup v2 --------------------------------------------------------
j=$(nsbox run --json --pids 32 "$IMG" -- probe threads 100000)
n=$(echo "$j" | sed 's/\\"/"/g' | jf ret threads)
if [ -n "$n" ] && [ "$n" -lt 32 ] && echo "$j" | grep -q EAGAIN; then pass thread_bomb_pids_max; else fail thread_bomb_pids_max "$j"; fi
settled thread_bomb_settled

# /dev/shm pages are charged to the sandbox's memory: a 60 MiB shm under a
# 32 MiB limit (48 MiB with the 16 MiB disk's share: the tmpfs disk raises
# the limit by its size) ends in an OOM kill the result reports, nothing
# else dies.
# Under ASan (NSBOX_ASAN=1) this case runs the uninstrumented binary
# (nsbox-plain, hostile/run.sh): the ASan build's init holds 16 MiB
# (production's about 1), and the shm's pages belong to no process, so the
# OOM killer would pick init, the largest, and the sandbox die instead.  The
# memory bound is a security bound and is not widened for ASan.
shm_nsbox=/usr/local/bin/nsbox
[ "${NSBOX_ASAN:-0}" = 1 ] && shm_nsbox=/usr/local/bin/nsbox-plain
j=$("$shm_nsbox" --store /mnt/store/root run --json --memory 32m --disk 16m "$IMG" -- probe write /dev/shm/x 60)
if [ "$(echo "$j" | jf oom_killed)" = true ] && [ "$(echo "$j" | jf status)" = oom ]; then
	pass shm_fill_charged_to_sandbox_memory
else
	fail shm_fill_charged_to_sandbox_memory "$(echo "$j" | cut -c1-300)"
fi
settled shm_fill_settled

# (memory.max is 64 + 16 MiB: the disk's share.)
j=$(nsbox run --json --memory 64m --disk 16m "$IMG" -- probe mem 4096)
peak=$(echo "$j" | jf memory_peak_bytes)
if [ "$(echo "$j" | jf oom_killed)" = true ] && [ "${peak:-0}" -le $((80 << 20)) ] && [ "${peak:-0}" -gt $((32 << 20)) ]; then
	pass memory_balloon_oom_confined
else
	fail memory_balloon_oom_confined "$(echo "$j" | cut -c1-300)"
fi
settled memory_balloon_settled

# Inode exhaustion: /tmp's inode cap (one per 4 KiB of its size), memory charged.
out=$(nsbox run --memory 256m "$IMG" -- sh -c 'i=0; while true > /tmp/f$i 2>/dev/null; do i=$((i+1)); done; echo $i')
[ "$out" = 65535 ] && pass inode_exhaustion_tmp_capped || fail inode_exhaustion_tmp_capped "$out files"
settled inode_settled

# The disk layer under cgroup v2 (tmpfs kind: this store has no project
# quotas).  Its pages are the sandbox's memory: with --memory 64m --disk
# 128M, memory.max is raised to 192 MiB, and filling the disk ends in ENOSPC
# at 128 MiB, never an OOM kill (memory.events oom_kill 0).  The guest's
# store filesystem loses nothing.
MiB=1048576
free_of() { df -k -P "$1" | awk 'NR == 2 {print $4 * 1024}'; }
before=$(free_of /mnt/store)
id=$(nsbox create --memory 64m --disk 128M "$IMG")
out=$(nsbox exec "$id" -- sh -c 'probe write /workspace/f 200; echo alive')
max=$(cat "$CG/nsbox/$id/memory.max" 2>&1)
ooms=$(awk '$1 == "oom_kill" {print $2}' "$CG/nsbox/$id/memory.events" 2>&1)
after=$(free_of /mnt/store)
nsbox rm "$id" >/dev/null
e=$(echo "$out" | jf errname write)
b=$(echo "$out" | jf bytes write)
echo "# disk_fill_tmpfs_v2: $e after $b bytes; memory.max $max, oom_kill $ooms; store fs free before $((before / MiB)) MiB, after $((after / MiB)) MiB, limit 128 MiB"
if [ "$e" = ENOSPC ] && [ "${b:-0}" -gt $((120 * MiB)) ] && [ "${b:-0}" -le $((128 * MiB)) ] &&
	[ "$max" = $((192 * MiB)) ] && [ "$ooms" = 0 ] && echo "$out" | grep -qx alive; then
	pass disk_fill_tmpfs_enospc_not_oom
else
	fail disk_fill_tmpfs_enospc_not_oom "errname=$e bytes=$b memory.max=$max oom_kill=$ooms: $(echo "$out" | tail -2 | tr '\n' ' ')"
fi
[ "$after" -ge $((before - 128 * MiB - 4 * MiB)) ] && pass disk_fill_tmpfs_host_bound ||
	fail disk_fill_tmpfs_host_bound "free $((before / MiB)) -> $((after / MiB)) MiB"
# Raising the limit does not unbound anonymous memory: a balloon past
# memory.max is an OOM kill, reported.
j=$(nsbox run --json --memory 64m --disk 128M "$IMG" -- probe mem 1024)
if [ "$(echo "$j" | jf oom_killed)" = true ] && [ "$(echo "$j" | jf status)" = oom ]; then
	pass disk_tmpfs_memory_still_bounded
else
	fail disk_tmpfs_memory_still_bounded "$(echo "$j" | cut -c1-300)"
fi
settled disk_fill_settled

# Processes that try to outlive a timeout: everything in the cgroup but init
# dies.  All four (the setsid and nohup sleeps, the daemon, the last sleep)
# are seen running before the timeout fires.  (Process markers,
# tests/markers.md: hostile's are 3140-3149.)
id=$(nsbox create "$IMG")
# (the image's busybox has no nohup: SIGHUP ignored, then exec, as nohup does)
nsbox exec --timeout 5 "$id" -- sh -c 'setsid sleep 3146 & (trap "" HUP; exec sleep 3147) >/dev/null 2>&1 & probe daemon 3149 >/dev/null; sleep 3148' >/dev/null &
ex=$!
four() { [ "$(ps -o args | grep -cxE 'sleep 314[678]|probe daemon 3149')" = 4 ]; }
wait_until 30 four
seen=$(ps -o args | grep -cxE 'sleep 314[678]|probe daemon 3149')
wait $ex
procs=$(wc -l <"$CG/nsbox/$id/cgroup.procs")
nsbox rm "$id" >/dev/null
if [ "$seen" = 4 ] && [ "$procs" = 1 ] && [ ! -d "$CG/nsbox/$id" ] && ! running '^(sleep 314[678]|probe daemon 3149)$'; then
	pass outlive_timeout_cgroup_emptied
else
	fail outlive_timeout_cgroup_emptied "seen $seen of 4, procs=$procs"
fi

# The same fork bomb as the delegated rootless user (cgroup v2 scope).
mkdir "$CG/tester"
echo "+memory +pids +cpu" >"$CG/tester/cgroup.subtree_control"
chown -R tester:tester "$CG/tester"
T=/mnt/store/tester
chown -R tester:tester "$T" /mnt/store
scope=$(mktemp -d -p "$CG/tester" scope.XXXXXX) && chown -R tester:tester "$scope"
j=$(sh -c 'echo $$ > "$1/cgroup.procs" && exec su -s /bin/sh tester -c "$0"' \
	"/usr/local/bin/nsbox --store $T run --json --pids 32 $IMG -- probe fork 100000 threads 100000" "$scope" 2>&1)
if echo "$j" | grep -q '"limits": *"cgroup v2' && [ "$(echo "$j" | grep -o EAGAIN | wc -l)" -ge 2 ]; then
	pass rootless_delegated_fork_and_thread_bomb
else
	fail rootless_delegated_fork_and_thread_bomb "$(echo "$j" | cut -c1-300)"
fi

# A disk fill as the delegated rootless user: tmpfs, the same bound.
scope=$(mktemp -d -p "$CG/tester" scope.XXXXXX) && chown -R tester:tester "$scope"
out=$(sh -c 'echo $$ > "$1/cgroup.procs" && exec su -s /bin/sh tester -c "$0"' \
	"/usr/local/bin/nsbox --store $T run --memory 64m --disk 128M $IMG -- probe write /workspace/f 200" "$scope" 2>&1)
e=$(echo "$out" | jf errname write)
b=$(echo "$out" | jf bytes write)
ooms=$(awk '$1 == "oom_kill" {print $2}' "$scope/memory.events" 2>&1)
echo "# rootless_disk_fill_tmpfs_v2: $e after $b bytes, oom_kill in the scope $ooms"
if [ "$e" = ENOSPC ] && [ "${b:-0}" -gt $((120 * MiB)) ] && [ "${b:-0}" -le $((128 * MiB)) ] && [ "$ooms" = 0 ]; then
	pass rootless_disk_fill_tmpfs_enospc_not_oom
else
	fail rootless_disk_fill_tmpfs_enospc_not_oom "$(echo "$out" | tail -2 | cut -c1-300)"
fi

# (run removes its sandbox in a detached process: let the last one finish.)
for _ in $(seq 50); do umount /mnt/store 2>/dev/null && break; sleep 0.1; done
finish
