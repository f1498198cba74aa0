# Runs inside the cgroup v2 VM (booted by tests/integration/vm_cgroup_v2.sh):
# nsbox on a real cgroup v2 hierarchy, as root and as a delegated
# unprivileged user.  Arguments: IMAGE (a digest prefix in both stores).
# /store.img is an ext4 image with /root (root's store) and /tester (the
# tester user's store, single-id rootless layout).
IMG=$1
CG=/sys/fs/cgroup
SUITE=vm_cgroup_v2
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
# jq-less JSON field: "key": value (numbers, booleans, short strings)
jf() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -1; }

modprobe loop 2>/dev/null
mkdir -p /mnt/store
if ! mount -o loop /store.img /mnt/store; then
	fail setup "cannot mount /store.img"
	finish
fi
S=/mnt/store/root
nsbox() { /usr/local/bin/nsbox --store "$S" "$@"; }

out=$(nsbox doctor 2>&1)
if [ $? = 0 ] && echo "$out" | grep -q 'cgroup v2 under'; then pass doctor_full_isolation_v2; else fail doctor_full_isolation_v2 "$(echo "$out" | tr '\n' ' ')"; fi

j=$(nsbox run --json "$IMG" -- true)
[ "$(echo "$j" | jf limits)" = "cgroup v2: memory" ] && pass limits_in_force_cgroup_v2 || fail limits_in_force_cgroup_v2 "$j"

# memory.max: OOM confined to the sandbox and reported.
j=$(nsbox run --json --memory 32m --disk 16m "$IMG" -- probe mem 256)
if [ "$(echo "$j" | jf oom_killed)" = true ] && [ "$(echo "$j" | jf status)" = oom ]; then
	pass memory_oom_confined_and_reported
else
	fail memory_oom_confined_and_reported "$(echo "$j" | cut -c1-300)"
fi
j=$(nsbox run --json --memory 128m "$IMG" -- probe mem 24)
peak=$(echo "$j" | jf memory_peak_bytes)
if [ "${peak:-0}" -ge 25165824 ] && [ "$(echo "$j" | jf oom_killed)" = false ]; then pass memory_peak_reported; else fail memory_peak_reported "$j"; fi

# pids.max holds against a fork bomb.
j=$(nsbox run --pids 16 "$IMG" -- probe fork 500)
forked=$(echo "$j" | jf forked)
if [ -n "$forked" ] && [ "$forked" -lt 16 ] && echo "$j" | grep -q EAGAIN; then
	pass pids_limit_holds_fork_bomb
else
	fail pids_limit_holds_fork_bomb "$j"
fi

# cpu.max throttles: 0.25 CPU for a 2 s spin.
j=$(nsbox run --cpus 0.25 "$IMG" -- probe spin 2)
pm=$(echo "$j" | jf cpu_permille)
if [ -n "$pm" ] && [ "$pm" -le 400 ]; then pass cpu_max_throttles; else fail cpu_max_throttles "$j"; fi

# running ERE: a process whose command line matches (this guest's busybox
# has no pgrep applet).
running() { ps -o args | grep -v -e grep -e '^ps ' | grep -qE -- "$1"; }
procs_at_least() { [ "$(wc -l <"$CG/nsbox/$2/cgroup.procs")" -ge "$1" ]; }
# Process markers (tests/markers.md: this guest's are 4290-4299).
# A timeout kills everything in the sandbox, daemons included; rm kills
# and removes the cgroup.  Before it: init, the daemon, sh and its two
# sleeps are all in the cgroup.
id=$(nsbox create "$IMG")
nsbox exec "$id" -- probe daemon 4290 >/dev/null
nsbox exec "$id" -- sh -c 'setsid sleep 4291 & sleep 4292 & wait' >/dev/null &
wait_until 30 procs_at_least 5 "$id"
before=$(wc -l <"$CG/nsbox/$id/cgroup.procs")
nsbox exec --timeout 1 "$id" -- sleep 4293 >/dev/null
# The kill is sent when the timeout fires; a process may take a moment to
# die on a loaded TCG guest: up to 2 s.
for _ in $(seq 20); do
	after=$(wc -l <"$CG/nsbox/$id/cgroup.procs")
	[ "$after" = 1 ] && break
	sleep 0.1
done
if [ "$before" -ge 5 ] && [ "$after" = 1 ]; then pass timeout_kills_everything_but_init; else fail timeout_kills_everything_but_init "before=$before after=$after"; fi
nsbox exec "$id" -- probe daemon 4290 >/dev/null
wait_until 30 running '^probe daemon 4290$'
seen=$(ps -o args | grep -cx 'probe daemon 4290')
nsbox rm "$id" >/dev/null
if [ "$seen" = 1 ] && [ ! -d "$CG/nsbox/$id" ] && ! running '^sleep 429[0-3]$' && ! running '^probe daemon'; then
	pass rm_kills_all_and_removes_cgroup
else
	fail rm_kills_all_and_removes_cgroup "cgroup or processes left"
fi

# run: nothing outlives the command's sandbox.  The probe reports its
# daemon's pid and the shell got past starting the sleep; then, within
# 10 s (run removes its cgroup in a detached process), nothing is left.
out=$(nsbox run "$IMG" -- sh -c 'probe daemon 4290; setsid sleep 4294 & echo started')
left_none() {
	! running '^probe daemon' && ! running '^sleep 4294$' && [ -z "$(ls "$CG/nsbox" | grep -E '^[0-9a-f]{32}$')" ]
}
if echo "$out" | grep -q '"daemon_pid": *[1-9]' && echo "$out" | grep -qx started && wait_until 10 left_none; then
	pass run_leaves_no_process_or_cgroup
else
	fail run_leaves_no_process_or_cgroup "$(echo "$out" | tr '\n' ' ' | cut -c1-200); $(ls "$CG/nsbox" | tr '\n' ' ')"
fi

# Pause and resume on cgroup v2's freezer (issue #29, docs/pause.md):
# cgroup.freeze set and "frozen 1" in cgroup.events, no CPU used while
# paused, exec resumes it, rm of a paused sandbox kills and removes it.
frozen() { grep -q '^frozen 1' "$CG/nsbox/$1/cgroup.events"; }
cpu_us() { sed -n 's/^usage_usec //p' "$CG/nsbox/$1/cpu.stat"; }
id=$(nsbox create "$IMG")
nsbox exec -d "$id" -- sh -c 'while :; do :; done' >/dev/null
sleep 1
nsbox pause "$id" >/dev/null
c1=$(cpu_us "$id")
sleep 1
c2=$(cpu_us "$id")
if frozen "$id" && [ "$(cat "$CG/nsbox/$id/cgroup.freeze")" = 1 ] && [ "$c1" = "$c2" ] &&
	nsbox ps | grep -q "^$id .* paused "; then
	pass pause_v2_freezes
else
	fail pause_v2_freezes "events: $(tr '\n' ' ' <"$CG/nsbox/$id/cgroup.events") cpu $c1 -> $c2; $(nsbox ps | grep "$id")"
fi
out=$(nsbox exec "$id" -- echo awake 2>&1)
c3=$(cpu_us "$id")
sleep 0.5
c4=$(cpu_us "$id")
if [ "$out" = awake ] && ! frozen "$id" && [ "$c4" -gt "$c3" ]; then pass pause_v2_exec_resumes; else fail pause_v2_exec_resumes "exec: $out; cpu $c3 -> $c4"; fi
nsbox pause "$id" >/dev/null
nsbox rm "$id" >/dev/null
if [ ! -d "$CG/nsbox/$id" ] && ! running 'while :'; then pass pause_v2_rm_paused; else fail pause_v2_rm_paused "cgroup or loop left"; fi

# Rootless, in a cgroup delegated to the user (what systemd's Delegate=yes
# gives): nsbox moves itself into a leaf and enforces the same limits.
# As systemd does it: the delegated cgroup has the controllers enabled for
# its children, and the user's processes live in a leaf below it.
mkdir "$CG/tester"
echo "+memory +pids +cpu" >"$CG/tester/cgroup.subtree_control"
chown -R tester:tester "$CG/tester"
# Each nsbox in a scope of its own, as `systemd-run --user --scope -p
# Delegate=yes nsbox ...` gives it.
T=/mnt/store/tester
chown -R tester:tester "$T" /mnt/store
tnsbox() {
	local scope
	scope=$(mktemp -d -p "$CG/tester" scope.XXXXXX) && chown -R tester:tester "$scope"
	sh -c 'echo $$ > "$1/cgroup.procs" && exec su -s /bin/sh tester -c "$0"' \
		"/usr/local/bin/nsbox --store $T $*" "$scope"
}
out=$(tnsbox doctor 2>&1)
if echo "$out" | grep -q 'cgroup v2 under /sys/fs/cgroup/tester/scope' && echo "$out" | grep -q 'full isolation'; then
	pass rootless_delegated_doctor
else
	fail rootless_delegated_doctor "$(echo "$out" | tr '\n' ' ' | cut -c1-400)"
fi
j=$(tnsbox run --json --memory 32m --disk 16m "$IMG" -- probe mem 256 2>&1)
if [ "$(echo "$j" | jf oom_killed)" = true ] && echo "$j" | grep -q '"limits": *"cgroup v2'; then
	pass rootless_delegated_memory_limit
else
	fail rootless_delegated_memory_limit "$(echo "$j" | cut -c1-400)"
fi
j=$(tnsbox run --json --pids 16 "$IMG" -- probe fork 500 2>&1)
if echo "$j" | grep -q EAGAIN; then pass rootless_delegated_pids_limit; else fail rootless_delegated_pids_limit "$(echo "$j" | cut -c1-300)"; fi

# Rootless with a delegated cgroup: pause works, as nsbox doctor says.
tid=$(tnsbox create "$IMG" 2>&1)
out=$(tnsbox pause "$tid" 2>&1)
tcg=$(dirname "$(grep -l . "$CG"/tester/scope.*/nsbox/"$tid"/cgroup.events 2>/dev/null | head -1)" 2>/dev/null)
if [ "$out" = "$tid" ] && [ -n "$tcg" ] && grep -q '^frozen 1' "$tcg/cgroup.events" &&
	[ "$(tnsbox exec "$tid" -- echo awake 2>&1)" = awake ]; then
	pass rootless_delegated_pause
else
	fail rootless_delegated_pause "pause: $out; cgroup: $tcg $(cat "$tcg/cgroup.events" 2>/dev/null | tr '\n' ' ')"
fi
tnsbox rm "$tid" >/dev/null 2>&1

umount /mnt/store
finish
