# Runs inside the VM (booted by tests/integration/vm_landlock.sh): with
# unprivileged user namespaces disabled, the tester user gets no sandbox in
# namespaces mode and a confined one with --isolation=landlock.  Argument:
# IMAGE (a digest prefix in the tester's store on /store.img).
IMG=$1
SUITE=vm_landlock
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
jf() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -1; }
# Process markers (tests/markers.md: vm_landlock's are 4280-4289), whole
# command lines: procs ERE counts them, nprocs N ERE holds when N run.
procs() { ps -o args | grep -cxE "$1"; }
nprocs() { [ "$(procs "$2")" = "$1" ]; }

modprobe loop 2>/dev/null
mkdir -p /mnt/store
mount -o loop /store.img /mnt/store || { fail setup "cannot mount /store.img"; finish; }
S=/mnt/store/tester
t() { as-tester /usr/local/bin/nsbox --store "$S" "$@"; }
ll() { t run --isolation=landlock "$@"; }

# The host profile: Debian's switch (the locked-down CI runner's state).
# tester's own unshare(CLONE_NEWUSER) (the probe, run directly) works
# before and fails with EPERM after.
before=$(as-tester /usr/local/bin/probe unshare_user 2>&1)
echo 0 >/proc/sys/kernel/unprivileged_userns_clone
after=$(as-tester /usr/local/bin/probe unshare_user 2>&1)
if [ "$(echo "$before" | jf ret)" = 0 ] && [ "$(echo "$after" | jf errname)" = EPERM ]; then
	pass userns_disabled_for_users
else
	fail userns_disabled_for_users "unshare -U for tester: before $before; after $after"
fi
echo "landlock-vm-secret" >/home/tester/secret && chown tester /home/tester/secret && chmod 600 /home/tester/secret
echo "root-secret" >/root-secret && chmod 644 /root-secret

# namespaces mode refuses; landlock mode is never chosen for the user.
# (--limits=best-effort: past the cgroup check, to the namespaces.)
out=$(t run --limits=best-effort "$IMG" -- true 2>&1)
rc=$?
if [ $rc = 125 ] && echo "$out" | grep -qi 'namespace'; then pass namespaces_mode_refuses; else fail namespaces_mode_refuses "rc=$rc $out"; fi
if ! echo "$out" | grep -q 'isolation=landlock: the image'; then pass landlock_never_chosen_silently; else fail landlock_never_chosen_silently "$out"; fi

out=$(t doctor 2>&1)
if echo "$out" | grep -Eq '^info +landlock isolation +available .*Landlock ABI 2 ' &&
	echo "$out" | grep -q 'missing: signal scoping' && echo "$out" | grep -q 'missing: Landlock truncate'; then
	pass doctor_reports_abi2_and_gaps
else
	fail doctor_reports_abi2_and_gaps "$(echo "$out" | grep -A14 landlock | tr '\n' ' ')"
fi

j=$(ll --json x -- sh -c 'echo hi >f && cat f' 2>/dev/null)
if [ "$(echo "$j" | jf status)" = ok ] && echo "$j" | grep -q '"stdout": *"hi' && echo "$j" | grep -q '"mode": *"landlock"'; then
	pass landlock_runs_writes_own_dir
else
	fail landlock_runs_writes_own_dir "$j"
fi
if echo "$j" | grep -q 'signal scoping (Landlock ABI < 6' && echo "$j" | grep -q 'Landlock truncate control'; then
	pass result_lists_abi2_gaps
else
	fail result_lists_abi2_gaps "$(echo "$j" | cut -c1-600)"
fi

# Confinement, errno as the oracle (busybox's messages carry strerror).
out=$(ll x -- cat /home/tester/secret 2>&1)
if echo "$out" | grep -q 'Permission denied' && ! echo "$out" | grep -q landlock-vm-secret; then pass own_home_secret_unreadable; else fail own_home_secret_unreadable "$out"; fi
out=$(ll x -- cat /root-secret 2>&1)
if echo "$out" | grep -q 'Permission denied'; then pass world_readable_file_outside_unreadable; else fail world_readable_file_outside_unreadable "$out"; fi
out=$(ll x -- sh -c 'echo x >/tmp/escape' 2>&1)
if echo "$out" | grep -q 'Permission denied' && [ ! -e /tmp/escape ]; then pass write_tmp_refused; else fail write_tmp_refused "$out"; fi
out=$(ll x -- ls "$S/images" 2>&1)
if echo "$out" | grep -q 'Permission denied'; then pass store_unreadable; else fail store_unreadable "$out"; fi
out=$(ll x -- probe socket_inet socket_netlink 2>&1)
if [ "$(echo "$out" | grep -c '"errname":"EACCES"')" = 2 ]; then pass sockets_refused; else fail sockets_refused "$out"; fi
# busybox's setsid ignores setsid()'s failure: what counts is that the
# process it starts stays in the session and dies with a timeout.
# Both are seen running before the timeout, none after it.
ll --timeout 5 x -- sh -c 'setsid sleep 4281 & sleep 4282' >/dev/null 2>&1 &
run=$!
wait_until 30 nprocs 2 'sleep 428[12]'
seen=$(procs 'sleep 428[12]')
wait $run
wait_until 10 nprocs 0 'sleep 428[12]'
left=$(ps -o pid,args | grep -xE ' *[0-9]+ sleep 428[12]')
if [ "$seen" = 2 ] && [ -z "$left" ]; then pass setsid_child_killed_by_timeout; else fail setsid_child_killed_by_timeout "seen $seen of 2; left: $left"; fi

# A timeout kills what tried to leave: double forks, nohup.  (This guest's
# busybox has no nohup applet: SIGHUP ignored, then exec, is what it does.)
ll --timeout 5 x -- sh -c '(sleep 4283 &); (trap "" HUP; exec sleep 4284) >/dev/null 2>&1 & sleep 4285' >/dev/null 2>&1 &
run=$!
wait_until 30 nprocs 3 'sleep 428[345]'
seen=$(procs 'sleep 428[345]')
wait $run
wait_until 10 nprocs 0 'sleep 428[345]'
left=$(ps -o pid,args | grep -xE ' *[0-9]+ sleep 428[345]')
if [ "$seen" = 3 ] && [ -z "$left" ]; then pass timeout_kills_everything; else fail timeout_kills_everything "seen $seen of 3; left: $left"; fi
# ABI 2 has no signal scoping: a command can SIGSTOP the sandbox's init
# (its parent).  The host kills the session itself on a timeout and wakes
# init, so the timeout still holds and is reported.
start=$(date +%s)
ll --json --timeout 3 x -- sh -c 'kill -STOP $PPID; sleep 4286' >/tmp/stopped.json 2>&1 &
run=$!
wait_until 30 nprocs 1 'sleep 4286'
seen=$(procs 'sleep 4286')
wait $run
j=$(cat /tmp/stopped.json)
wait_until 10 nprocs 0 'sleep 4286'
left=$(ps -o pid,args | grep -xE ' *[0-9]+ sleep 4286')
if [ "$seen" = 1 ] && [ "$(echo "$j" | jf status)" = timeout ] && [ -z "$left" ] && [ $(($(date +%s) - start)) -lt 30 ]; then
	pass stopped_init_timeout_still_kills
else
	fail stopped_init_timeout_still_kills "seen $seen; left=$left $(echo "$j" | cut -c1-200)"
fi
# A memory bound without cgroups: RLIMIT_AS.
out=$(ll --memory 32m x -- probe mem 128 2>&1)
if echo "$out" | grep -q 'allocation failed'; then pass memory_rlimit_holds; else fail memory_rlimit_holds "$(echo "$out" | tail -2)"; fi

# The gap the result names is real at ABI 2: the sandbox can signal the
# user's other processes (said, not hidden).
as-tester sleep 4287 &
wait_until 30 nprocs 1 'sleep 4287'
hp=$(ps -o pid,args | grep -xE ' *[0-9]+ sleep 4287' | awk '{print $1}' | head -1)
out=$(ll x -- kill -0 "$hp" 2>&1)
if [ $? = 0 ]; then pass abi2_signal_gap_is_real_and_reported; else fail abi2_signal_gap_is_real_and_reported "$out"; fi
kill "$hp" 2>/dev/null

# root still works with namespaces (the sysctl only binds users).
out=$(/usr/local/bin/nsbox --store /tmp/rootstore run --isolation=landlock x -- id -u 2>/dev/null)
if [ "$out" = 65534 ]; then pass root_landlock_runs_as_nobody; else fail root_landlock_runs_as_nobody "$out"; fi
finish
