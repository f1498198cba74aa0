# Runs inside the VM (tests/vm/run.sh boots it for tests/vm/selftest.sh):
# proves that the guest enforces cgroup v2 limits and can do what a
# container runtime does.  One line per check: PASS: vm/<name> or
# FAIL: vm/<name>: <reason>.  Exits 1 if any check failed.
# Needs /usr/local/bin/hog (tests/vm/hog.c, static) and, for vm/dynamic-elf,
# /usr/local/bin/hog-dyn (the same, dynamically linked).
CG=/sys/fs/cgroup
SUITE=vm
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
# field FILE KEY: the value of KEY in a flat-keyed cgroup file.
field() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
one_line() { tr '\n' ' ' | cut -c1-200; }

# ---- cgroup v2 controllers ---------------------------------------------------
ctl=$(cat $CG/cgroup.controllers)
sub=$(cat $CG/cgroup.subtree_control)
missing=
for c in memory pids cpu; do
	case " $ctl " in *" $c "*) ;; *) missing="$missing $c" ;; esac
	case " $sub " in *" $c "*) ;; *) missing="$missing +$c" ;; esac
done
fstype=$(awk -v m=$CG '$2 == m { print $3 }' /proc/mounts)
if [ -z "$missing" ] && [ "$fstype" = cgroup2 ]; then
	pass controllers
else
	fail controllers "controllers '$ctl', subtree_control '$sub', missing:$missing, fs $fstype"
fi

# ---- memory.max: a 256 MB hog in a 32 MB cgroup is OOM-killed -----------------
mkdir $CG/hog
echo 32M >$CG/hog/memory.max
if [ -e $CG/hog/memory.swap.max ]; then
	echo 0 >$CG/hog/memory.swap.max
	swapmax=$(cat $CG/hog/memory.swap.max)
else
	swapmax=absent
fi
# (braces: the shell's own "Killed" notice stays out of the log)
{
	out=$(sh -c "echo \$\$ >$CG/hog/cgroup.procs && exec hog mem 256" 2>&1)
	rc=$?
} 2>/dev/null
kills=$(field $CG/hog/memory.events oom_kill)
if [ "$rc" = 137 ] && [ "$kills" = 1 ] && [ "$swapmax" = 0 ]; then
	pass memory-oom-kill
else
	fail memory-oom-kill "exit $rc (want 137), oom_kill '$kills' (want 1), memory.swap.max '$swapmax'; $(echo "$out" | tail -2 | one_line)"
fi
peak=$(cat $CG/hog/memory.peak 2>/dev/null || echo n/a)
echo "# memory.max 32M: hog exit $rc, memory.events: $(one_line <$CG/hog/memory.events), peak $peak"
rmdir $CG/hog

# ---- pids.max: a fork loop stops at the limit ---------------------------------
mkdir $CG/forks
echo 10 >$CG/forks/pids.max
out=$(sh -c "echo \$\$ >$CG/forks/cgroup.procs && exec hog fork 50" 2>&1)
rc=$?
hits=$(field $CG/forks/pids.events max)
if [ "$rc" = 0 ] && [ "${hits:-0}" -gt 0 ]; then
	pass pids-max
else
	fail pids-max "exit $rc, pids.events max '$hits'; $(echo "$out" | one_line)"
fi
echo "# pids.max 10: $out; pids.events max $hits"
rmdir $CG/forks

# ---- cgroup.kill ----------------------------------------------------------------
mkdir $CG/victims
if [ -e $CG/victims/cgroup.kill ]; then
	sleep 1000 &
	pid=$!
	echo $pid >$CG/victims/cgroup.procs
	echo 1 >$CG/victims/cgroup.kill
	wait $pid 2>/dev/null
	rc=$?
	procs=$(cat $CG/victims/cgroup.procs)
	populated=$(field $CG/victims/cgroup.events populated)
	if [ "$rc" = 137 ] && [ -z "$procs" ] && [ "$populated" = 0 ]; then
		pass cgroup-kill
	else
		fail cgroup-kill "sleep exit $rc (want 137), procs '$procs', populated '$populated'"
	fi
else
	fail cgroup-kill "no cgroup.kill file"
fi
rmdir $CG/victims

# ---- cpu.max: a spinning process is throttled -------------------------------------
mkdir $CG/spin
echo "20000 100000" >$CG/spin/cpu.max
sh -c "echo \$\$ >$CG/spin/cgroup.procs && exec hog spin 1"
throttled=$(field $CG/spin/cpu.stat nr_throttled)
usage=$(field $CG/spin/cpu.stat usage_usec)
if [ "${throttled:-0}" -gt 0 ] && [ "${usage:-999999999}" -lt 600000 ]; then
	pass cpu-max
else
	fail cpu-max "nr_throttled '$throttled', usage_usec '$usage' for 1 s at 20%"
fi
echo "# cpu.max 20%: 1 s of spinning used ${usage} us of CPU, throttled $throttled times"
rmdir $CG/spin

# ---- overlayfs as root -----------------------------------------------------------------
d=/tmp/ov-root
mkdir -p $d/lower $d/upper $d/work $d/merged
echo lower >$d/lower/file
if out=$(mount -t overlay overlay -o lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work $d/merged 2>&1) &&
	[ "$(cat $d/merged/file)" = lower ] && echo new >$d/merged/new && [ -f $d/upper/new ]; then
	pass overlay-root
else
	fail overlay-root "$(echo "$out" | one_line) (overlay in /proc/filesystems: $(grep -c overlay /proc/filesystems))"
fi
umount $d/merged 2>/dev/null

# ---- the unprivileged user -------------------------------------------------------------
# shellcheck disable=SC2016 # (expanded by tester's shell)
out=$(as-tester sh -c 'echo $(id -u):$(id -g) $HOME $(pwd)' 2>&1)
if [ "$out" = "1000:1000 /home/tester /home/tester" ] &&
	grep -qx 'tester:100000:65536' /etc/subuid && grep -qx 'tester:100000:65536' /etc/subgid; then
	pass as-tester
else
	fail as-tester "as-tester said '$out'"
fi

# ---- overlayfs in a user namespace as tester: busybox unshare -Urm -----------------------
d=/tmp/ov-bb
mkdir -p $d/lower $d/upper $d/work $d/merged
echo lower >$d/lower/file
chown -R 1000:1000 $d
if out=$(as-tester unshare -Urm sh -c "
	mount -t overlay overlay -o lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work $d/merged &&
	echo new >$d/merged/new && cat $d/merged/file && id -u" 2>&1) &&
	[ "$(echo "$out" | tr '\n' ' ')" = "lower 0 " ] && [ -f $d/upper/new ]; then
	pass overlay-userns-unshare
else
	fail overlay-userns-unshare "$(echo "$out" | one_line)"
fi

# ---- the same with unshare(2) in C ------------------------------------------------------
d=/tmp/ov-c
mkdir -p $d/lower $d/upper $d/work $d/merged
chown -R 1000:1000 $d
if out=$(as-tester hog userns-overlay $d 2>&1) && [ -f $d/upper/written ]; then
	pass overlay-userns-syscall
else
	fail overlay-userns-syscall "$(echo "$out" | one_line)"
fi

# ---- pivot_root (the guest's / is a real mount, not the initramfs rootfs) -----------------
mkdir -p /tmp/pivot
if out=$(hog pivot /tmp/pivot 2>&1); then
	pass pivot-root
else
	fail pivot-root "$(echo "$out" | one_line)"
fi

# ---- seccomp ------------------------------------------------------------------------------
acts=$(cat /proc/sys/kernel/seccomp/actions_avail 2>/dev/null)
missing=
for a in kill_process kill_thread errno trap user_notif log allow; do
	case " $acts " in *" $a "*) ;; *) missing="$missing $a" ;; esac
done
if [ -z "$missing" ]; then
	pass seccomp
else
	fail seccomp "actions_avail '$acts' lacks$missing"
fi

# ---- a dynamically linked binary runs (run.sh copied its libraries) ------------------------
if [ -x /usr/local/bin/hog-dyn ]; then
	if out=$(hog-dyn spin 0 2>&1); then
		pass dynamic-elf
	else
		fail dynamic-elf "$(echo "$out" | one_line)"
	fi
fi
if [ -x /usr/local/bin/nsbox ]; then
	if out=$(nsbox --help 2>&1) && echo "$out" | grep -qi '^usage: nsbox'; then
		pass nsbox-runs
	else
		fail nsbox-runs "$(echo "$out" | one_line)"
	fi
fi

echo "# guest: kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo) RAM, uptime $(cut -d' ' -f1 /proc/uptime) s"
finish
