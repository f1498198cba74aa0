#!/usr/bin/env bash
# nested_runtime (issue #31, piece A; docs/nested.md): the runtime side of
# `--nested`, as root and as the unprivileged user nsboxtest, with an image
# that has podman (NESTED_IMAGE: the CI image once it is in the store,
# `make ci-image`; until then the spike's layout).
#   - podman run --rm of the busybox fixture inside, its container mapped
#     0 -> 0, 1.. -> 1.. (the sandbox's ids, through nsbox's newuidmap);
#   - /etc/subuid is nsbox's "root:1:N-1";
#   - the idmap service (runtime/idmap_service.h): maps root and the range
#     for uid 0; refuses a non-root user asking for uid 0 or a range, a pid
#     not its own, a pid in no nested user namespace, ids the sandbox does
#     not have, garbage, a silent client, an overlong line and a flood; init
#     survives each and serves the next request;
#   - /proc is plain in nested mode, and the kernel still refuses writes to
#     /proc/sys and /proc/sysrq-trigger;
#   - without --nested: unshare -Ur, mount and podman fail as before, and
#     there is no idmap socket;
#   - each rule of seccomp-profiles/nested-additions.json is needed: without
#     it (NSBOX_TEST_NESTED_PROFILE, a test-only override of the nested
#     profile) podman run --rm (--network none for open_tree's) fails with
#     the error the rule's comment names;
#   - --nested with --seccomp-profile is refused, and so is a rootless user
#     with a single id (nobody: no /etc/subuid range), naming the fix.
SUITE=nested_runtime
. "$(dirname "$0")/../lib.sh"

# The image: NSBOX_NESTED_IMAGE, else the CI image's layout (CI_LAYOUT,
# tests/lib.sh: tests/run.sh builds it for the nested* suites), else the
# spike's (which lacks the engine's configuration: added below).
CI_LAYOUT=${CI_LAYOUT:-${NSBOX_CI_LAYOUT:-/var/cache/nsbox/ci-image/oci}}
if [ -n "${NSBOX_NESTED_IMAGE:-}" ]; then
	IMG=$NSBOX_NESTED_IMAGE
elif [ -e "$CI_LAYOUT/index.json" ]; then
	IMG=oci:$CI_LAYOUT:latest
else
	IMG=oci:/work/spike31/oci2:latest
fi
BB=$F/oci/busybox
CONF=$T/conf
DROPS=$T/drops
mkdir -p "$CONF" "$DROPS" "$T/root" "$T/rl"
chown nsboxtest: "$T/rl"
# The engine's configuration for the spike's image (the CI image has its own).
cat >"$CONF/containers.conf" <<'EOF'
[containers]
netns="host"
cgroups="disabled"
log_driver="k8s-file"
[engine]
cgroup_manager="cgroupfs"
events_logger="file"
runtime="crun"
EOF
cat >"$CONF/storage.conf" <<'EOF'
[storage]
driver = "overlay"
graphroot = "/var/lib/containers/storage"
runroot = "/run/containers/storage"
rootless_storage_path = "/var/lib/containers/storage"
[storage.options.overlay]
mount_program = ""
EOF
chmod -R a+rX "$CONF"
VOLS=(-v "$BB:/img")
[ "$IMG" = oci:/work/spike31/oci2:latest ] && VOLS+=(-v "$CONF/containers.conf:/etc/containers/containers.conf"
	-v "$CONF/storage.conf:/etc/containers/storage.conf")

as_root() { "$NSBOX" --store "$T/root/store" "$@"; }
as_user() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort ${NSBOX_TEST_NESTED_PROFILE:+NSBOX_TEST_NESTED_PROFILE=$NSBOX_TEST_NESTED_PROFILE} \
		"$NSBOX" --store "$T/rl/store" "$@"
}
# Root's memory is a cgroup's; rootless here it is RLIMIT_AS (best effort),
# which Go's reservations would trip.
LIMITS_root=(--memory 2g)
LIMITS_user=(--memory 64g --pids 4096)

# The local engine, not the API that CONTAINER_HOST names (a nested box of
# an image with podman has it set): podman-remote takes no oci: transport.
PODMAN='unset CONTAINER_HOST
podman pull -q oci:/img:latest >/dev/null 2>/tmp/pull.err || tail -3 /tmp/pull.err
podman run --rm oci:/img:latest sh -c "echo hello-nested; cat /proc/self/uid_map"'
# A network namespace of the container's own (no tun needed): crun binds /sys.
NONE='unset CONTAINER_HOST
podman pull -q oci:/img:latest >/dev/null 2>/tmp/pull.err || tail -3 /tmp/pull.err
podman run --rm --network none oci:/img:latest sh -c "ls -d /sys/fs && echo hello-nested"'

stamp() { echo "# $(date +%T) $*" >&2; }
suite() {
	local who=$1 run=$2 n out id rid
	local -n limits="LIMITS_$who"
	if [ "$who" = root ]; then n=65536; else n=65537; fi

	# -- the workflow --------------------------------------------------
	out=$($run run --nested "${limits[@]}" "${VOLS[@]}" "$IMG" -- sh -c "cat /etc/subuid /etc/subgid; $PODMAN; $NONE" 2>&1)
	if [ "$(printf '%s\n' "$out" | grep -c '^hello-nested$')" = 2 ] &&
		printf '%s\n' "$out" | grep -Eq "^ +1 +1 +$((n - 1))$"; then
		pass "${who}_podman_run_rm_maps_the_sandbox_ids"
	else
		fail "${who}_podman_run_rm_maps_the_sandbox_ids" "$(printf '%s' "$out" | tail -4 | tr '\n' ' ')"
	fi
	if [ "$(printf '%s\n' "$out" | grep -c "^root:1:$((n - 1))$")" = 2 ]; then
		pass "${who}_subuid_subgid_are_nsbox_s"
	else
		fail "${who}_subuid_subgid_are_nsbox_s" "$(printf '%s' "$out" | head -2 | tr '\n' ' ')"
	fi

	stamp "$who: the idmap service"
	# -- the idmap service ---------------------------------------------
	if ! id=$($run create --nested "${limits[@]}" "$IMG" 2>"$T/create.err"); then
		fail "${who}_create" "$(tail -2 "$T/create.err" | tr '\n' ' ')"
		return
	fi
	out=$($run exec "$id" -- sh -c "unshare -U sleep 30 & sleep 0.3
		newuidmap \$! 0 0 1 1 1 $((n - 1)) && newgidmap \$! 0 0 1 1 1 $((n - 1)) &&
		cat /proc/\$!/uid_map /proc/\$!/gid_map; kill \$!" 2>&1)
	if [ "$(printf '%s\n' "$out" | grep -Ec "^ +1 +1 +$((n - 1))$")" = 2 ] &&
		[ "$(printf '%s\n' "$out" | grep -Ec '^ +0 +0 +1$')" = 2 ]; then
		pass "${who}_idmap_maps_root_and_range_for_uid0"
	else
		fail "${who}_idmap_maps_root_and_range_for_uid0" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
	out=$($run exec --user 1000:1000 "$id" -- sh -c 'unshare -U sleep 30 & sleep 0.3
		newuidmap $! 0 0 1; echo "uid0=$?"; newuidmap $! 0 1000 2; echo "range=$?"
		newuidmap $! 0 1000 1; echo "own=$?"; newgidmap $! 0 1000 1; echo "gown=$?"; kill $!' 2>&1)
	if printf '%s' "$out" | grep -q 'uid0=1' && printf '%s' "$out" | grep -q 'range=1' &&
		printf '%s' "$out" | grep -q 'may map only its own uid' &&
		printf '%s' "$out" | grep -q 'own=0' && printf '%s' "$out" | grep -q 'gown=0'; then
		pass "${who}_idmap_user_gets_only_its_own_id"
	else
		fail "${who}_idmap_user_gets_only_its_own_id" "$(printf '%s' "$out" | tr '\n' ' ')"
	fi
	# A nested process of root's, then user 1000 asks for it (and for init).
	$run exec -d "$id" -- unshare -U sleep 60 >/dev/null 2>&1
	sleep 0.5
	rid=$($run exec "$id" -- sh -c 'for p in /proc/[0-9]*; do u=$(readlink $p/ns/user) &&
		[ -n "$u" ] && [ "$u" != "$(readlink /proc/self/ns/user)" ] && echo ${p#/proc/} && break; done' 2>/dev/null)
	out=$($run exec --user 1000:1000 "$id" -- sh -c "newuidmap ${rid:-2} 0 1000 1; echo rc=\$?; newuidmap 1 0 1000 1; echo rc=\$?" 2>&1)
	if [ -n "$rid" ] && [ "$(printf '%s' "$out" | grep -c 'rc=1')" = 2 ] &&
		printf '%s' "$out" | grep -Eq 'no process [0-9]+ of yours|is not yours'; then
		pass "${who}_idmap_refuses_a_pid_not_its_own"
	else
		fail "${who}_idmap_refuses_a_pid_not_its_own" "pid ${rid:-none}: $(printf '%s' "$out" | tr '\n' ' ')"
	fi
	out=$($run exec "$id" -- sh -c "sleep 30 & newuidmap \$! 0 0 1; echo rc=\$?; kill \$!
		unshare -U sleep 30 & sleep 0.3; newuidmap \$! 0 0 1 1 1 $n; echo big=\$?; kill \$!" 2>&1)
	if printf '%s' "$out" | grep -q 'rc=1' && printf '%s' "$out" | grep -q 'not in a user namespace made directly' &&
		printf '%s' "$out" | grep -q 'big=1' && printf '%s' "$out" | grep -q 'ids the sandbox does not have'; then
		pass "${who}_idmap_refuses_no_nested_userns_and_foreign_ids"
	else
		fail "${who}_idmap_refuses_no_nested_userns_and_foreign_ids" "$(printf '%s' "$out" | tr '\n' ' ')"
	fi
	out=$($run exec "$id" -- python3 -c '
import socket
def ask(data, wait=True):
    s = socket.socket(socket.AF_UNIX); s.connect("/run/nsbox/idmap.sock")
    if data: s.send(data)
    return s.recv(200).decode() if wait else s
print("garbage:", ask(b"\x00\xffgarbage\n"), end="")
print("extra:", ask(b"uid 2 0 0 1\njunk"), end="")
print("zero:", ask(b"uid 2 0 0 0\n"), end="")
print("silent:", ask(b""), end="")
print("long:", ask(b"A" * 600), end="")
held = [ask(None, False) for _ in range(20)]
print("flood:", held[-1].recv(200).decode(), end="")
for s in held: s.close()
' 2>&1)
	if printf '%s' "$out" | grep -q '^garbage: error: the request starts' &&
		printf '%s' "$out" | grep -q '^extra: error: no request line' &&
		printf '%s' "$out" | grep -q "^zero: error: an extent's count is 0" &&
		printf '%s' "$out" | grep -q '^silent: error: no request line within 2 s' &&
		printf '%s' "$out" | grep -q '^long: error: no request line' &&
		printf '%s' "$out" | grep -q '^flood: error: busy'; then
		pass "${who}_idmap_refuses_garbage_silence_and_floods"
	else
		fail "${who}_idmap_refuses_garbage_silence_and_floods" "$(printf '%s' "$out" | tr '\n' ' ')"
	fi
	sleep 2.5 # the held handlers' deadline
	out=$($run exec "$id" -- sh -c "unshare -U sleep 30 & sleep 0.3; newuidmap \$! 0 0 1 1 1 $((n - 1)); echo rc=\$?; kill \$!" 2>&1)
	if printf '%s' "$out" | grep -q '^rc=0$'; then
		pass "${who}_init_survives_and_serves_again"
	else
		fail "${who}_init_survives_and_serves_again" "$(printf '%s' "$out" | tr '\n' ' ')"
	fi
	# Each a file that exists (this kernel may lack CONFIG_MAGIC_SYSRQ: then
	# there is no sysrq-trigger to write, which the check allows), written
	# back with its own value, refused with EACCES by the kernel (not by a
	# mount: grep shows /proc is one plain mount).
	out=$($run exec "$id" -- sh -c 'grep -c " /proc" /proc/self/mountinfo
		for f in kernel/panic kernel/core_pattern vm/swappiness vm/overcommit_memory; do
			v=$(cat /proc/sys/$f) && (printf "%s\n" "$v" >/proc/sys/$f) 2>&1 | grep -q "Permission denied" && echo "refused $f"
		done
		if [ -e /proc/sysrq-trigger ]; then (echo h >/proc/sysrq-trigger) 2>&1 | grep -q "Permission denied" && echo "refused trigger"
		else echo "refused trigger (none)"; fi' 2>&1)
	if [ "$(printf '%s\n' "$out" | head -1)" = 1 ] && [ "$(printf '%s' "$out" | grep -c '^refused ')" = 5 ]; then
		pass "${who}_plain_proc_still_refuses_sysctl_and_sysrq"
	else
		fail "${who}_plain_proc_still_refuses_sysctl_and_sysrq" "$(printf '%s' "$out" | tr '\n' ' ')"
	fi
	$run rm "$id" >/dev/null 2>&1

	stamp "$who: without --nested"
	# -- without --nested: as today ------------------------------------
	out=$($run run "${limits[@]}" "${VOLS[@]}" "$IMG" -- sh -c "unshare -Ur true; echo unshare=\$?
		mount -t tmpfs x /mnt 2>/dev/null; echo mount=\$?; ls /run/nsbox/idmap.sock 2>/dev/null; echo sock=\$?
		grep -c '^root:1:' /etc/subuid 2>/dev/null; grep -c ' /proc/' /proc/self/mountinfo
		$PODMAN; echo podman=\$?" 2>&1)
	if printf '%s' "$out" | grep -q 'unshare=[1-9]' && printf '%s' "$out" | grep -q 'mount=[1-9]' &&
		printf '%s' "$out" | grep -q 'sock=[1-9]' && printf '%s' "$out" | grep -q 'podman=[1-9]' &&
		! printf '%s' "$out" | grep -q '^hello-nested$'; then
		pass "${who}_without_nested_all_refused_as_before"
	else
		fail "${who}_without_nested_all_refused_as_before" "$(printf '%s' "$out" | tail -5 | tr '\n' ' ')"
	fi
}

stamp "root: podman"
suite root as_root
stamp "user: podman"
suite user as_user
stamp "the drops"

# -- each addition of the nested profile is needed (root: the filter is the
# same rootless) ------------------------------------------------------------
python3 - "$ROOT/seccomp-profiles" "$DROPS" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1] + "/nested.json"))
for r in json.load(open(sys.argv[1] + "/nested-additions.json"))["rules"]:
    out = dict(d)
    out["syscalls"] = [x for x in d["syscalls"] if x.get("comment") != r["comment"]]
    assert len(out["syscalls"]) == len(d["syscalls"]) - 1
    json.dump(out, open("%s/drop-%s.json" % (sys.argv[2], r["names"][0]), "w"))
EOF
declare -A WANT=(
	[clone]='cannot clone: Operation not permitted'
	[unshare]='creating mount namespace before pivot: operation not permitted'
	[setns]='cannot set user namespace'
	[mount]='mount /var/lib/containers/storage/overlay.*operation not permitted'
	[umount2]='while unmounting old root after pivot: operation not permitted'
	# (with /dev/net/tun, slirp4netns's own sandbox pivots first)
	[pivot_root]='after fallback to chroot: operation not permitted|slirp4netns failed: .*cannot pivot_root to /tmp'
	[sethostname]='sethostname: Operation not permitted'
	[keyctl]='create keyring .*Operation not permitted'
	[open_tree]='open_tree `/sys`: Operation not permitted'
)
for rule in clone unshare setns mount umount2 pivot_root sethostname keyctl open_tree; do
	cmd=$PODMAN
	[ "$rule" = open_tree ] && cmd=$NONE
	out=$(NSBOX_TEST_NESTED_PROFILE=$DROPS/drop-$rule.json as_root run --nested "${LIMITS_root[@]}" "${VOLS[@]}" "$IMG" -- sh -c "$cmd" 2>&1)
	if printf '%s' "$out" | grep -Eq -- "${WANT[$rule]}" && ! printf '%s\n' "$out" | grep -q '^hello-nested$'; then
		pass "drop_${rule}_fails_podman_with_its_named_error"
	else
		fail "drop_${rule}_fails_podman_with_its_named_error" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
done
printf '{"defaultAction":"SCMP_ACT_ALLOW"}' >"$T/allow.json"
out=$(as_root run --nested --seccomp-profile "$T/allow.json" "$IMG" -- echo ran 2>&1)
if printf '%s' "$out" | grep -q 'not with --seccomp-profile' && ! printf '%s' "$out" | grep -q '^ran$'; then
	pass nested_with_seccomp_profile_refused
else
	fail nested_with_seccomp_profile_refused "$(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
# A rootless user without an /etc/subuid range (nobody): one id, refused
# with the fix named.
mkdir -p "$T/nobody" && chown nobody "$T/nobody"
out=$(runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME="$T/nobody" NSBOX_LIMITS=best-effort \
	"$NSBOX" --store "$T/nobody/store" run --nested "oci:$BB:latest" -- echo ran 2>&1)
if printf '%s' "$out" | grep -q 'usermod --add-subuids 100000-165535 --add-subgids 100000-165535 nobody' &&
	! printf '%s' "$out" | grep -q '^ran$'; then
	pass rootless_single_id_refused_with_the_fix
else
	fail rootless_single_id_refused_with_the_fix "$(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
stamp end
finish
