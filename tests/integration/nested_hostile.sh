#!/usr/bin/env bash
# nested_hostile (issue #31, docs/nested.md "Hostile cases"): a nested
# sandbox (`nsbox create --nested`, the CI image localhost/nsbox-ci with
# podman) whose nested containers attack their way out, and a sandbox
# without nested that still refuses all of it.  Each case names its attack
# and asserts it fails for the right reason (the errno, the message, or the
# host-side fact it could not change).  Root and the unprivileged user
# nsboxtest (best-effort limits: no delegated cgroup on this host).
#
# The nested containers are `podman run --privileged` of a busybox image
# with the probe (tests/probe) handed in with --nested-image: the strongest
# position a nested engine gives, all capabilities of a user namespace
# nested in the sandbox's.  What holds each case: the sandbox's user
# namespace (not the host's) owns everything the nested one can touch; the
# nested seccomp profile (seccomp-profiles/nested.json) still refuses the
# kernel surface it does not add; the sandbox's cgroup, disk and rlimits
# bound what its children use; its network namespace holds only lo and the
# broker.  The idmap service's own hostile cases are nested_runtime's.
# Markers: 4340-4349 (tests/markers.md).
SUITE=nested_hostile
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
U=nsboxtest
MiB=$((1 << 20))
# CI_LAYOUT (lib.sh): the CI image's layout, built by tests/run.sh (cached).
[ -d "$CI_LAYOUT" ] || "$ROOT/images/ci/build.sh" >"$T/ci-build.log" 2>&1 ||
	{ fail setup "no CI image layout at $CI_LAYOUT and images/ci/build.sh failed: $(tail -3 "$T/ci-build.log" | tr '\n' ' ')"; finish; }
CI=localhost/nsbox-ci:latest
BBREF=localhost/nsbox-hostile-bb:latest
PROBE=$T/probe
"$ROOT/tests/probe/build.sh" "$PROBE" ||
	{ fail setup "cannot build the probe"; finish; }
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bb" "$PROBE:/usr/local/bin/probe"
BB=oci:$T/bb:latest

# -- the host's side: canaries, two listeners (one allowed, one not) -------------
CANARY=HOSTCANARY$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
PEER=PEERCANARY$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
mkdir -p "$T/host" "$T/www"
echo "$CANARY" >"$T/host/canary.txt"
echo ALLOWED-OK >"$T/www/index.html"
echo DENIED-REACHED >"$T/www/denied.html"
chmod -R a+rX "$T"
bin_sums() { sha256sum "$(dirname "$NSBOX")"/nsbox* | sha256sum; }
BIN_SUMS=$(bin_sums)
CORE_PATTERN=$(cat /proc/sys/kernel/core_pattern)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(free_port)
PD=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$PA" --directory "$T/www" >"$T/srv-a.log" 2>&1 &
SRV_A=$!
python3 -m http.server --bind 127.0.0.1 "$PD" --directory "$T/www" >"$T/srv-d.log" 2>&1 &
SRV_D=$!
IDS=()
NSB=()
cleanup() {
	local id
	for id in "${IDS[@]}"; do "${NSB[@]}" rm "$id" >/dev/null 2>&1; done
	kill "$SRV_A" "$SRV_D" 2>/dev/null
	cleanup_test_dir
}
trap cleanup EXIT
wait_until 10 sh -c "curl -s http://127.0.0.1:$PA/ | grep -q ALLOWED-OK && curl -s http://127.0.0.1:$PD/ | grep -q ALLOWED-OK" ||
	{ fail setup "the host's listeners did not start"; finish; }

# has TEXT ERE, lacks TEXT STRING: whether TEXT matches (grep -E), or does
# not contain STRING; short TEXT: its tail, one line, for a FAIL's reason.
has() { printf '%s' "$1" | grep -qE -- "$2"; }
lacks() { ! printf '%s' "$1" | grep -qF -- "$2"; }
short() { printf '%s' "$1" | tail -c 400 | tr '\n' ' '; }
# probe_field OUT CHECK EXPR: EXPR (Python, over the probe line r) for CHECK's line.
probe_field() {
	printf '%s' "$1" | python3 -c '
import json, sys
for l in sys.stdin:
    try: r = json.loads(l)
    except ValueError: continue
    if isinstance(r, dict) and r.get("check") == sys.argv[1]:
        print(eval(sys.argv[2])); break
else: print("missing")' "$2" "$3"
}
jq_py() { printf '%s' "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" 2>/dev/null || echo "bad-json"; }

# nx CMD: runs CMD (sh -c) in the nested sandbox; OUT its stdout+stderr, RC its status.
nx() {
	OUT=$(timeout 240 "${NSB[@]}" exec "$NID" -- sh -c "$1" 2>&1)
	RC=$?
}
# pr CMD: the same in a `podman run --rm --privileged` of the busybox image,
# on the sandbox's own network (a bridge needs /dev/net/tun: tried on its own
# below).
PR_BASE="podman run --rm --privileged --network host"
PR="$PR_BASE $BBREF"
pr() { nx "$PR sh -c '$1'"; }
alive() { [ "$("${NSB[@]}" exec "$NID" -- echo alive 2>/dev/null)" = alive ]; }

# run_mode MODE STORE NSBOX...: every case with nsbox called as NSBOX...;
# the mode's sandboxes are removed when it ends, whatever it reached.
run_mode() {
	local id
	run_cases "$@"
	for id in "${IDS[@]}"; do "${NSB[@]}" rm "$id" >/dev/null 2>&1; done
	IDS=()
}

run_cases() {
	local m=$1 S=$2 NID PID_PEER id out rc j before during mem=384m balloon=2048 cap=700
	shift 2
	# best-effort memory is RLIMIT_AS, an address-space bound that Go
	# programs (podman) need gigabytes of before they allocate anything.
	[ "$m" = rootless ] && mem=2g balloon=4096 cap=2100
	NSB=("$@" --store "$S")
	"${NSB[@]}" pull --quiet "$BB" >/dev/null && "${NSB[@]}" tag "$BB" "$BBREF" >/dev/null &&
		"${NSB[@]}" pull --quiet "oci:$CI_LAYOUT:latest" >/dev/null 2>"$T/$m-pull.err" &&
		"${NSB[@]}" tag "oci:$CI_LAYOUT:latest" "$CI" >/dev/null 2>>"$T/$m-pull.err" ||
		{ fail "$m/setup" "pull: $(tail -3 "$T/$m-pull.err" | tr '\n' ' ')"; return; }

	# The peer: a plain sandbox with a canary file and a marked process.
	PID_PEER=$("${NSB[@]}" create "$BB" 2>"$T/$m-peer.err") || { fail "$m/setup" "peer: $(cat "$T/$m-peer.err")"; return; }
	IDS+=("$PID_PEER")
	"${NSB[@]}" exec "$PID_PEER" -- sh -c "echo $PEER >/workspace/peer-canary.txt" &&
		"${NSB[@]}" exec -d "$PID_PEER" -- sleep 4341 >/dev/null || { fail "$m/setup" "peer exec"; return; }
	local peer_file peer_pid
	wait_until 10 pgrep -xf 'sleep 4341' >/dev/null
	peer_pid=$(pgrep -xf 'sleep 4341' | head -1)
	peer_file=/proc/$peer_pid/root/workspace/peer-canary.txt
	grep -qxF "$PEER" "$peer_file" 2>/dev/null || { fail "$m/setup" "the peer's canary is not at $peer_file"; return; }
	echo "# $m: peer $PID_PEER, its canary on the host at ${peer_file:-?}, its sleep is host pid ${peer_pid:-?}"

	# The nested sandbox: limits small enough to reach, egress to PA only.
	out=$("${NSB[@]}" create --nested --nested-image "$BBREF" --memory "$mem" --pids 160 --disk 256m \
		--net "127.0.0.1:$PA,allowed.test=127.0.0.1:$PA" "$CI" 2>"$T/$m-nested.err")
	if [ $? -ne 0 ] || [ -z "$out" ]; then
		fail "$m/setup" "create --nested: $(tail -3 "$T/$m-nested.err" | tr '\n' ' ')"
		return
	fi
	NID=$(printf '%s\n' "$out" | tail -1)
	IDS+=("$NID")
	TUN=$(timeout 60 "${NSB[@]}" exec "$NID" -- sh -c 'test -c /dev/net/tun && echo yes || echo no' 2>/dev/null)
	echo "# $m: nested sandbox $NID (/dev/net/tun: $TUN): $(tr '\n' ' ' <"$T/$m-nested.err")"
	nx "podman image exists $BBREF && echo present"
	[ "$OUT" = present ] || { fail "$m/setup" "$BBREF not in the nested storage: $(short "$OUT")"; return; }

	# -- confinement of a --privileged nested container -----------------------------
	# Attack: read the host's files by their host paths, and nsbox's store,
	# in the container's root and in the sandbox's (bound whole at /sb).
	SB="$PR_BASE -v /:/sb $BBREF"
	nx "$SB sh -c 'for r in \"\" /sb; do cat \$r$T/host/canary.txt; ls \$r$T \$r$S; cat \$r$S/refs.json; done;
		find / /sb -xdev -type f -size -64k 2>/dev/null | xargs grep -l $CANARY 2>/dev/null; echo end'"
	if lacks "$OUT" "$CANARY" && [ "$(printf '%s' "$OUT" | grep -cE "canary.txt'?: No such file")" = 2 ] &&
		[ "$(printf '%s' "$OUT" | grep -cE "refs.json'?: No such file")" = 2 ] && has "$OUT" end; then
		pass "$m/privileged_cannot_read_host_paths_or_store"
	else
		fail "$m/privileged_cannot_read_host_paths_or_store" "$(short "$OUT")"
	fi
	# Attack: write a file at a host path (the container makes the directory
	# in its own root; the host's stays without it).
	nx "$SB sh -c 'echo pwned >/sb$T/host/planted.txt; echo sb=\$?; mkdir -p $T/host && echo pwned >$T/host/planted.txt && echo wrote-in-own-root'"
	if [ ! -e "$T/host/planted.txt" ] && has "$OUT" "sb=[1-9]" && has "$OUT" wrote-in-own-root; then
		pass "$m/privileged_cannot_write_host_paths"
	else
		fail "$m/privileged_cannot_write_host_paths" "planted: $(ls "$T/host") :: $(short "$OUT")"
	fi
	# Attack: the peer sandbox's files (its upper layer's host path) and
	# processes (its marked sleep, by host pid and by command line).
	pr "cat ${peer_file:-/nonexistent}; kill -9 $peer_pid; echo kill=\$?; for p in /proc/[0-9]*; do tr \"\\0\" \" \" <\$p/cmdline; echo; done | grep -x \"sleep 4341\"; find / -xdev -type f 2>/dev/null | xargs grep -l $PEER 2>/dev/null; echo end"
	if lacks "$OUT" "$PEER" && has "$OUT" "kill=1" && lacks "$OUT" "sleep 4341" && has "$OUT" end &&
		[ "$("${NSB[@]}" exec "$PID_PEER" -- cat /workspace/peer-canary.txt)" = "$PEER" ] &&
		kill -0 "$peer_pid"; then
		pass "$m/privileged_cannot_touch_peer_sandbox"
	else
		fail "$m/privileged_cannot_touch_peer_sandbox" "peer_file=$peer_file peer_pid=$peer_pid :: $(short "$OUT")"
	fi
	# Attack: host paths in the mount table (a leak that names the store).
	pr "cat /proc/self/mountinfo /proc/1/mountinfo"
	if [ "$RC" = 0 ] && lacks "$OUT" "$S" && lacks "$OUT" "$T"; then
		pass "$m/privileged_mountinfo_names_no_host_path"
	else
		fail "$m/privileged_mountinfo_names_no_host_path" "rc=$RC $(printf '%s' "$OUT" | grep -F -e "$S" -e "$T" | head -3 | tr '\n' ' ')"
	fi
	# Attack: devices: a host disk, kernel memory, the kernel log; mknod of
	# a block device (8:0, sda) and reading it.
	pr "ls /dev | sed s/^/dev:/; mknod /tmp/sda b 8 0; echo mknod=\$?; head -c 512 /tmp/sda | wc -c; mount -t ext4 /dev/sda1 /mnt; echo mount=\$?"
	if has "$OUT" "dev:null" && ! printf '%s' "$OUT" | grep -qxE 'dev:(sd[a-z].*|vd[a-z].*|nvme.*|mem|kmem|kmsg|port|fuse)' &&
		has "$OUT" "mknod=1" && has "$OUT" "mount=[1-9]" && has "$OUT" "Operation not permitted"; then
		pass "$m/privileged_no_host_devices_mknod_refused"
	else
		fail "$m/privileged_no_host_devices_mknod_refused" "$(short "$OUT")"
	fi

	# -- mounts made inside never show outside ----------------------------------------
	# Attack: a tmpfs over /workspace/x in a nested mount namespace (the
	# container sees /workspace bound at /w), made shared, left mounted.
	nx "mkdir -p /workspace/x && $PR_BASE -v /workspace:/w $BBREF sh -c 'mount --make-rshared / ; mount -t tmpfs none /w/x && echo MOUNTED >/w/x/marker && mount --make-shared /w/x && cat /w/x/marker && sleep 4342' >/tmp/inner.log 2>&1 &
		for i in \$(seq 100); do grep -q MOUNTED /tmp/inner.log && break; sleep 0.2; done; cat /tmp/inner.log"
	if has "$OUT" MOUNTED; then
		nx "ls -A /workspace/x; grep -c ' /workspace/x ' /proc/self/mountinfo"
		local view=$OUT
		rm -rf "$T/$m-cp"
		"${NSB[@]}" cp "$NID:/workspace/x" "$T/$m-cp" >/dev/null 2>&1
		if [ "$view" = 0 ] && [ ! -e "$T/$m-cp/marker" ] && ! grep -qE 'workspace/x|/w/x' /proc/mounts /proc/self/mountinfo; then
			pass "$m/inner_mount_not_in_sandbox_or_host"
		else
			fail "$m/inner_mount_not_in_sandbox_or_host" "sandbox view: $(short "$view"); cp: $(ls "$T/$m-cp" 2>&1)"
		fi
	else
		fail "$m/inner_mount_not_in_sandbox_or_host" "the inner mount was not made: $(short "$OUT")"
	fi
	nx "podman stop -a -t 0 >/dev/null 2>&1; podman rm -a -f >/dev/null 2>&1; echo stopped"

	# -- the nested engine cannot raise the sandbox's limits ---------------------------
	# Attack: a fork bomb (forks until refused) in a nested container.
	pr "/usr/local/bin/probe fork 2000"
	local forked errname
	forked=$(probe_field "$OUT" fork 'r["ret"]')
	[[ $forked =~ ^[0-9]+$ ]] || forked=-1
	errname=$(probe_field "$OUT" fork 'r["errname"]')
	if [ "$errname" = EAGAIN ] && [ "$forked" -ge 0 ] && [ "$forked" -lt 160 ] 2>/dev/null && alive; then
		pass "$m/fork_bomb_bounded_by_sandbox_pids"
	else
		fail "$m/fork_bomb_bounded_by_sandbox_pids" "forked=$forked errno=$errname (pids 160) :: $(short "$OUT")"
	fi
	echo "# $m: fork bomb in a nested container: $forked forks before $errname (the sandbox's pids: 160)"
	# Attack: a memory balloon past the sandbox's memory limit.
	j=$("${NSB[@]}" exec --json --timeout 200 "$NID" -- $PR /usr/local/bin/probe mem "$balloon" 2>/dev/null)
	local oom mb
	oom=$(jq_py "$j" 'r["oom_killed"]')
	mb=$(printf '%s' "$(jq_py "$j" 'r["stdout"]')" | python3 -c '
import json, sys
mb = 0
for l in sys.stdin:
    try: r = json.loads(l)
    except ValueError: continue
    if not isinstance(r, dict): continue
    mb = max(mb, r.get("mb", 0) or 0)
print(mb)')
	echo "# $m: memory balloon: reached $mb MiB; oom_killed $oom; limits: $(jq_py "$j" 'r["limits"]')"
	if [ "$m" = root ]; then
		# cgroup v1 memory (384m, raised by the tmpfs disk's 256m): killed, reported.
		if [ "$oom" = True ] && [ "$mb" -lt "$cap" ] && alive; then
			pass "$m/memory_balloon_oom_killed_and_reported"
		else
			fail "$m/memory_balloon_oom_killed_and_reported" "oom_killed=$oom mb=$mb :: $(short "$j")"
		fi
	else
		# best-effort: RLIMIT_AS refuses the allocation before the limit.
		if has "$j" 'ENOMEM' && [ "$mb" -lt "$cap" ] && alive; then
			pass "$m/memory_balloon_refused_by_rlimit"
		else
			fail "$m/memory_balloon_refused_by_rlimit" "oom_killed=$oom mb=$mb :: $(short "$j")"
		fi
	fi
	# Attack: fill the nested storage (the container's overlay upper layer,
	# under /var/lib/containers) past the sandbox's disk bound.
	before=$(df -B1 --output=avail "$S" | tail -1)
	nx "df -B1 --output=size /var/lib/containers | tail -1; $PR sh -c '/usr/local/bin/probe write /fill 1024; rm -f /fill'"
	during=$(df -B1 --output=avail "$S" | tail -1)
	local wrote size
	wrote=$(probe_field "$OUT" write 'r["bytes"]')
	[[ $wrote =~ ^[0-9]+$ ]] || wrote=0
	errname=$(probe_field "$OUT" write 'r["errname"]')
	size=$(printf '%s\n' "$OUT" | head -1)
	[[ $size =~ ^[0-9]+$ ]] || size=0
	echo "# $m: disk fill in a nested container: $((${wrote:-0} / MiB)) MiB then $errname; /var/lib/containers size $((${size:-0} / MiB)) MiB; the store's filesystem lost $(((before - during) / MiB)) MiB"
	if [ "$errname" = ENOSPC ] && [ "${wrote:-0}" -le $((256 * MiB)) ] && [ "$during" -ge $((before - 300 * MiB)) ] && alive; then
		pass "$m/disk_fill_enospc_at_sandbox_disk_bound"
	else
		fail "$m/disk_fill_enospc_at_sandbox_disk_bound" "wrote=$wrote errno=$errname size=$size :: $(short "$OUT")"
	fi
	nx "podman rm -a -f >/dev/null 2>&1; podman system prune -f >/dev/null 2>&1; echo ok"

	# -- the egress policy holds for nested containers --------------------------------
	# Attack: reach the host's loopback listener PD (not in --net), an
	# arbitrary address, and a name not on the list; PA is the allowed control.
	local T1='t(){ r=$(printf "GET /$3 HTTP/1.0\r\nHost: $1\r\n\r\n" | nc -w 3 $1 $2 2>&1 | tail -1); echo "$r <- $1:$2"; }'
	nx "podman run --rm --network host $BBREF sh -c '$T1; t 127.0.0.1 $PA; t 127.0.0.1 $PD denied.html; t 192.0.2.1 $PD denied.html; t allowed.test $PA; t denied.test $PA'"
	if has "$OUT" "ALLOWED-OK <- 127.0.0.1:$PA" && has "$OUT" "refused <- 127.0.0.1:$PD" &&
		lacks "$OUT" DENIED-REACHED && has "$OUT" " <- 192.0.2.1:$PD" &&
		has "$OUT" "ALLOWED-OK <- allowed.test:$PA" && has "$OUT" "bad address 'denied.test'"; then
		pass "$m/egress_host_network_only_allowed"
	else
		fail "$m/egress_host_network_only_allowed" "$(short "$OUT")"
	fi
	nx "podman run --rm --network slirp4netns:allow_host_loopback=true $BBREF sh -c '$T1; t 10.0.2.2 $PA; t 10.0.2.2 $PD denied.html; t allowed.test $PA; t denied.test $PA'"
	if [ "$TUN" = no ]; then
		# No /dev/net/tun: slirp4netns cannot start; no bridge exists to escape by.
		if has "$OUT" "tun"; then pass "$m/egress_bridge_network_only_allowed"; else fail "$m/egress_bridge_network_only_allowed" "no tun, yet: $(short "$OUT")"; fi
	elif has "$OUT" "ALLOWED-OK <- 10.0.2.2:$PA" && has "$OUT" "refused <- 10.0.2.2:$PD" && lacks "$OUT" DENIED-REACHED &&
		has "$OUT" "ALLOWED-OK <- allowed.test:$PA" && has "$OUT" "bad address 'denied.test'"; then
		pass "$m/egress_bridge_network_only_allowed"
	else
		fail "$m/egress_bridge_network_only_allowed" "$(short "$OUT")"
	fi

	# -- /dev/fuse abuse ---------------------------------------------------------------
	nx "test -e /dev/fuse; echo sandbox_fuse=\$?; mknod /tmp/fuse c 10 229; echo sandbox_mknod=\$?;
		$PR sh -c 'test -e /dev/fuse; echo fuse=\$?; mknod /tmp/fuse c 10 229; echo mknod=\$?; mkdir /m; mount -t fuse -o fd=0,rootmode=40000,user_id=0,group_id=0 none /m; echo mount=\$?' </dev/null;
		podman run --rm --network host --device /dev/fuse $BBREF true; echo device=\$?"
	if has "$OUT" "sandbox_fuse=1" && has "$OUT" "sandbox_mknod=1" && has "$OUT" "fuse=1" && has "$OUT" "mknod=1" &&
		has "$OUT" "mount=[1-9]" && has "$OUT" "device=[1-9]" && has "$OUT" "/dev/fuse"; then
		pass "$m/dev_fuse_absent_mknod_and_mount_fail"
	else
		fail "$m/dev_fuse_absent_mknod_and_mount_fail" "$(short "$OUT")"
	fi

	# -- kernel surface from the nested root --------------------------------------------
	pr "echo $CORE_PATTERN >/proc/sys/kernel/core_pattern; echo core=\$?; echo 1 >/proc/sys/vm/drop_caches; echo drop=\$?; echo h >/proc/sysrq-trigger; echo sysrq=\$?; /usr/local/bin/probe proc_sys_write sysrq_write init_module finit_module bpf perf_event_open userfaultfd io_uring_setup keyctl add_key request_key kexec_load open_by_handle_at"
	local c v bad=
	for c in proc_sys_write sysrq_write init_module finit_module bpf perf_event_open userfaultfd io_uring_setup kexec_load; do
		v=$(probe_field "$OUT" "$c" 'r["verdict"]')
		case "$v" in blocked | absent) ;; *) bad="$bad $c=$v" ;; esac
	done
	if [ -z "$bad" ] && has "$OUT" "core=1" && has "$OUT" "drop=1" && has "$OUT" "sysrq=[1-9]" &&
		[ "$(cat /proc/sys/kernel/core_pattern)" = "$CORE_PATTERN" ]; then
		pass "$m/nested_root_kernel_surface_refused"
	else
		fail "$m/nested_root_kernel_surface_refused" "not blocked:${bad:- none} :: $(short "$OUT")"
	fi
	for c in keyctl add_key request_key; do
		v=$(probe_field "$OUT" "$c" 'r["errname"]')
		[ "$v" = ENOSYS ] || bad="$bad $c=$v"
	done
	if [ -z "$bad" ]; then pass "$m/nested_keyctl_enosys"; else fail "$m/nested_keyctl_enosys" "$bad"; fi
	# Attack: CVE-2019-5736's class: overwrite the runtime through
	# /proc/self/exe and every exe the nested root can see, and the
	# newuidmap/newgidmap nsbox puts in the sandbox (from the sandbox and
	# from a container that binds the sandbox's /usr/bin).
	nx "echo x >>/usr/bin/newuidmap; echo uid=\$?; echo x >>/usr/bin/newgidmap; echo gid=\$?;
		$PR sh -c 'for e in /proc/self/exe /proc/[0-9]*/exe; do echo x >>\$e && echo WROTE \$e; done; echo end' 2>&1;
		$PR_BASE -v /usr/bin:/sb $BBREF sh -c 'echo x >>/sb/newuidmap; echo binduid=\$?'"
	if has "$OUT" "uid=[1-9]" && has "$OUT" "gid=[1-9]" && has "$OUT" "binduid=[1-9]" && lacks "$OUT" WROTE && has "$OUT" end &&
		[ "$(bin_sums)" = "$BIN_SUMS" ]; then
		pass "$m/exe_overwrite_leaves_host_binaries"
	else
		fail "$m/exe_overwrite_leaves_host_binaries" "$(short "$OUT")"
	fi
	if alive; then pass "$m/sandbox_answers_after_all"; else fail "$m/sandbox_answers_after_all" "no answer"; fi
	"${NSB[@]}" rm "$NID" >/dev/null 2>&1

	# -- a sandbox without nested refuses all of it, as before ---------------------------
	id=$("${NSB[@]}" create --memory "$mem" -v "$PROBE:/probe" "$CI" 2>"$T/$m-plain.err") || { fail "$m/setup" "plain create: $(cat "$T/$m-plain.err")"; return; }
	IDS+=("$id")
	out=$("${NSB[@]}" exec "$id" -- sh -c 'unshare -U true; echo rc=$?; unshare -Urm true; echo rc=$?' 2>&1)
	if has "$out" "unshare failed: Operation not permitted" && ! has "$out" "rc=0"; then
		pass "$m/plain_unshare_refused"
	else
		fail "$m/plain_unshare_refused" "$(short "$out")"
	fi
	out=$("${NSB[@]}" exec "$id" -- sh -c 'mount -t tmpfs none /mnt; echo rc=$?' 2>&1)
	if has "$out" "rc=32" && has "$out" "(permission denied|must be superuser|Operation not permitted)"; then
		pass "$m/plain_mount_refused"
	else
		fail "$m/plain_mount_refused" "$(short "$out")"
	fi
	out=$("${NSB[@]}" exec "$id" -- /probe clone_newuser clone3 unshare_mnt setns pivot_root 2>&1)
	bad=
	for c in clone_newuser unshare_mnt setns pivot_root; do
		v=$(probe_field "$out" "$c" 'r["verdict"]')
		[ "$v" = blocked ] || bad="$bad $c=$v"
	done
	v=$(probe_field "$out" clone3 'r.get("newuser", {}).get("errname")')
	case "$v" in EPERM | ENOSYS) ;; *) bad="$bad clone3_newuser=$v" ;; esac
	if [ -z "$bad" ]; then pass "$m/plain_namespace_syscalls_refused"; else fail "$m/plain_namespace_syscalls_refused" "$bad"; fi
	# podman stops at its start: no /sys/fs/cgroup in a plain sandbox (an
	# empty one is nested mode's); what it would do next is refused above.
	out=$("${NSB[@]}" exec "$id" -- sh -c 'podman run --rm busybox true; echo rc=$?; test -e /sys/fs/cgroup; echo cgroupfs=$?' 2>&1)
	if ! has "$out" "rc=0" && has "$out" "cgroupfs=1" &&
		has "$out" "(no such file or directory|Operation not permitted|newuidmap|cannot clone|cannot re-exec|user namespace)"; then
		pass "$m/plain_podman_refused"
	else
		fail "$m/plain_podman_refused" "$(short "$out")"
	fi
	echo "# $m: podman in a plain sandbox: $(printf '%s' "$out" | grep -v '^rc=\|^cgroupfs=' | tail -1)"
	"${NSB[@]}" rm "$id" "$PID_PEER" >/dev/null 2>&1
}

# -- root ---------------------------------------------------------------------------------
t0=$(date +%s)
run_mode root "$T/store" "$NSBOX"
echo "# root took $(($(date +%s) - t0)) s"

# -- rootless (nsboxtest: /etc/subuid 300000:65536, best-effort limits) --------------------
t0=$(date +%s)
mkdir -p "$T/rl" && chown "$U": "$T/rl" && chmod 700 "$T/rl"
run_mode rootless "$T/rl" runuser -u "$U" -- env -i PATH=/usr/bin:/bin HOME=/home/$U NSBOX_LIMITS=best-effort "$NSBOX"
echo "# rootless took $(($(date +%s) - t0)) s"
finish
