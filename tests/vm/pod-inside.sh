#!/bin/sh
# Runs inside the nsbox container (started by crun in the cgroup v2 VM, see
# tests/vm/guest-pod.sh): what nsbox reports and does under one pod-like
# configuration, VARIANT.  Prints PASS/FAIL lines.
V=$1
# The sandbox image: the entrypoint imports the preloaded layout into the
# store on first start (the first variant, "full").
IMG=localhost/nsbox-default
SUITE=pod/$V
# tests/lib/guest.sh, which tests/integration/pod.sh puts beside this script.
. "${GUEST_LIB:-/pod/guest.sh}"
# expect NAME TEXT ERE
expect() { if printf '%s\n' "$2" | grep -qE -- "$3"; then pass "$1"; else fail "$1" "$2"; fi; }
jf() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -1; }
# A failed sandbox: nsbox's own failure (exit 125), with these words.
refused() {
	out=$(nsbox run "$IMG" -- true 2>&1)
	rc=$?
	if [ $rc = 125 ] && printf '%s' "$out" | grep -qE -- "$2"; then pass "$1"; else fail "$1" "exit $rc: $out"; fi
}

case $V in
drop-*) ;;
*) doc=$(nsbox-entrypoint doctor 2>&1) ;;
esac

case $V in
full | sysadmin)
	expect doctor_cgroups_v2 "$doc" '^ok +cgroups +cgroup v2 under /sys/fs/cgroup'
	expect doctor_container_ok "$doc" '^ok +container +in a user namespace'
	expect doctor_ids_shared_reported "$doc" '^warn +id ranges +root in a user namespace .*mapping 65536 ids: sandboxes share them'
	# Namespaces: the sandbox's pid, net, mount, uts namespaces are not the
	# container's.
	mine="$(readlink /proc/self/ns/pid /proc/self/ns/net /proc/self/ns/mnt /proc/self/ns/uts | tr '\n' ' ')"
	theirs=$(nsbox run "$IMG" -- sh -c 'for n in pid net mnt uts; do readlink /proc/self/ns/$n; done | tr "\n" " "; echo; ls /proc | grep -c "^[0-9]"' 2>&1)
	ok=1
	for ns in pid net mnt uts; do
		a=$(echo "$mine" | tr ' ' '\n' | grep "^$ns:")
		b=$(echo "$theirs" | head -1 | tr ' ' '\n' | grep "^$ns:")
		{ [ -n "$b" ] && [ "$a" != "$b" ]; } || ok=0
	done
	[ $ok = 1 ] && pass namespaces_pid_net_mnt_uts_own || fail namespaces_pid_net_mnt_uts_own "container: $mine sandbox: $theirs"
	n=$(echo "$theirs" | sed -n 2p)
	[ -n "$n" ] && [ "$n" -le 4 ] && pass pid_namespace_sees_only_its_processes || fail pid_namespace_sees_only_its_processes "$theirs"
	# The sandbox shares the container's ids (doctor says so): what keeps
	# it from nsbox's store and processes is its own mount and pid
	# namespaces, and nsbox's own seccomp filter, which stays on.
	out=$(nsbox run "$IMG" -- sh -c 'ls /var/lib/nsbox/blobs 2>&1 | head -1; grep Seccomp: /proc/self/status; grep -c . /proc/1/cmdline' 2>&1)
	expect store_not_visible_in_sandbox "$out" 'No such file or directory'
	expect nsbox_seccomp_filter_on_in_sandbox "$out" 'Seccomp:[[:space:]]+2'
	j=$(nsbox run --json "$IMG" -- true 2>&1)
	expect limits_in_force_cgroup_v2 "$j" '"limits": *"cgroup v2'
	j=$(nsbox run --pids 16 "$IMG" -- probe fork 500 2>&1)
	forked=$(echo "$j" | jf forked)
	if [ -n "$forked" ] && [ "$forked" -lt 16 ] && echo "$j" | grep -q EAGAIN; then pass pids_limit_holds; else fail pids_limit_holds "$j"; fi
	j=$(nsbox run --json --memory 32m --disk 16m "$IMG" -- probe mem 256 2>&1)
	[ "$(echo "$j" | jf oom_killed)" = true ] && pass memory_limit_oom_reported || fail memory_limit_oom_reported "$j"
	# no internal processes: nsbox moved itself into a leaf; sandboxes under nsbox/
	expect leaf_cgroup "$(cat /sys/fs/cgroup/nsbox/cgroup.subtree_control; ls /sys/fs/cgroup)" 'memory'
	if [ "$V" = full ]; then
		# The image's default command: serve --http (here on loopback).
		nsbox-entrypoint serve --http 127.0.0.1:8080 2>/tmp/serve.err &
		spid=$!
		line=
		for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
			line=$(bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080 && printf "GET /mcp HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && head -1 <&3' 2>/dev/null) && [ -n "$line" ] && break
			sleep 0.5
		done
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		expect serve_http_answers "$line $(cat /tmp/serve.err)" '^HTTP/1\.[01] [0-9]{3}'
	fi
	;;
cgroup-ro)
	expect doctor_cgroups_degraded "$doc" '^FAIL +cgroups +no usable cgroup: cgroups degraded: /sys/fs/cgroup is mounted read-only'
	expect doctor_cgroups_fix "$doc" "fix: make the container's cgroupfs writable"
	refused run_refused_without_limits 'no usable cgroup|cgroup'
	out=$(nsbox run --limits=best-effort "$IMG" -- echo SANDBOX-RAN 2>&1)
	expect best_effort_runs_and_says_so "$out" 'best-effort'
	expect best_effort_runs "$out" '^SANDBOX-RAN$'
	;;
masked)
	expect doctor_proc_masked "$doc" '^FAIL +container +/proc cannot be mounted for sandboxes \(the container.s /proc has masked paths\)'
	expect doctor_proc_fix "$doc" 'procMount: Unmasked'
	refused run_refused 'cannot mount /proc: Operation not permitted'
	;;
default-seccomp)
	expect doctor_clone_refused "$doc" '^FAIL +container +the container.s seccomp profile or LSM refuses clone with namespace flags'
	# doctor's words (common/hostcheck.c): the probe finds the refusal first
	refused run_refused 'this process cannot create a user namespace \(refused: a seccomp filter'
	;;
default-sysadmin)
	expect doctor_pivot_root_refused "$doc" "^FAIL +container +the container.s seccomp profile refuses pivot_root"
	refused run_refused 'pivot_root: Operation not permitted'
	;;
drop-clone) refused run_refused "cannot create the sandbox's namespaces" ;;
drop-unshare) refused run_refused 'unshare\(2\) is refused' ;;
drop-mount) refused run_refused 'cannot mount the sandbox' ;;
drop-umount2) refused run_refused 'cannot detach the old root' ;;
drop-pivot_root) refused run_refused 'pivot_root: Operation not permitted' ;;
drop-sethostname) refused run_refused 'cannot set the hostname' ;;
*) fail unknown_variant "$V" ;;
esac
finish
