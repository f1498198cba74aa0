#!/usr/bin/env bash
# Kernels without the newer system calls, simulated: tests/old_kernel/enosys
# runs nsbox with the named calls failing with ENOSYS (a seccomp filter that
# every process of the sandbox inherits), and each fallback or error of
# common/syscalls.h is checked.
#   - no pidfd_open/pidfd_send_signal/clone3 (Linux < 5.3): sandboxes are
#     created with clone, run, and removed by pid; as an unprivileged user
#     with best-effort limits no cgroup kill hides a missed stop, so init
#     must be gone (or a zombie) after rm;
#   - no seccomp(2) (Linux < 3.17): the filter goes in with prctl;
#   - no open_tree or mount_setattr (Linux < 5.12): creation as root fails
#     with an error that names the kernel idmapped mounts need.
SUITE=old_kernel
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

ENOSYS=$T/enosys
cc -O2 -Wall -Wextra -Werror -o "$ENOSYS" "$ROOT/tests/old_kernel/enosys.c" -lseccomp || {
	fail setup "cannot build tests/old_kernel/enosys.c"
	finish
}
cp -r "$F/oci/busybox" "$T/bb"
install -m 755 "$NSBOX" "$T/nsbox"
chmod -R a+rX "$T"
BB=oci:$T/bb:latest
S=$T/store
NOPIDFD=pidfd_open,pidfd_send_signal,clone3
nsbox() { "$T/nsbox" --store "$S" "$@"; }
nsbox pull --quiet "$BB" >/dev/null || fail setup "cannot pull $BB"

# dead PID: gone, or a zombie waiting for its reaper.
dead() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
state_field() { sed -n "s/^$2=//p" "$1/state"; }

# -- no pidfd, no clone3: root, cgroup backend of this host ---------------------
id=$("$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S" create "$BB")
dir=$S/sandboxes/$id
pid=$(state_field "$dir" pid)
cg=$(state_field "$dir" pids)$(state_field "$dir" v2)
out=$("$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S" exec "$id" -- echo exec-ok 2>&1)
[ "$out" = exec-ok ] && pass nopidfd_root_exec || fail nopidfd_root_exec "id=$id $out"
"$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S" rm "$id" >/dev/null
if [ -n "$pid" ] && dead "$pid" && [ ! -e "$dir" ] && { [ -z "$cg" ] || [ ! -e "$cg" ]; }; then
	pass nopidfd_root_rm
else
	fail nopidfd_root_rm "pid=$pid dir=$(ls -d "$dir" 2>&1) cgroup=$cg"
fi
out=$("$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S" run "$BB" -- echo run-ok 2>&1)
[ "$out" = run-ok ] && pass nopidfd_root_run || fail nopidfd_root_run "$out"

# -- no pidfd, no clone3: unprivileged, best effort (no cgroup to kill init) ----
as2() { runuser -u nsboxtest2 -- env -i PATH=/usr/bin:/bin HOME=/home/nsboxtest2 NSBOX_LIMITS=best-effort "$@"; }
S2=$T/store2
mkdir -m 700 "$S2" && chown nsboxtest2: "$S2"
as2 "$T/nsbox" --store "$S2" pull --quiet "$BB" >/dev/null || fail setup "cannot pull $BB as nsboxtest2"
id=$(as2 "$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S2" create "$BB" 2>/dev/null)
dir=$S2/sandboxes/$id
pid=$(state_field "$dir" pid)
out=$(as2 "$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S2" exec "$id" -- echo exec-ok 2>&1)
[ "$out" = exec-ok ] && pass nopidfd_rootless_exec || fail nopidfd_rootless_exec "id=$id $out"
as2 "$ENOSYS" $NOPIDFD "$T/nsbox" --store "$S2" rm "$id" >/dev/null
if [ -n "$pid" ] && dead "$pid" && [ ! -e "$dir" ]; then
	pass nopidfd_rootless_rm_stops_init
else
	fail nopidfd_rootless_rm_stops_init "pid=$pid $(ps -o pid=,stat=,comm= -p "$pid") dir=$(ls -d "$dir" 2>&1)"
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
fi

# -- no seccomp(2): prctl(PR_SET_SECCOMP) installs the same filter ---------------
# One filter more than the enosys filter alone: nsbox's.
plain=$("$ENOSYS" kexec_load "$T/nsbox" --store "$S" run "$BB" -- sh -c 'grep Seccomp_filters /proc/self/status' 2>&1)
viaprctl=$("$ENOSYS" seccomp "$T/nsbox" --store "$S" run "$BB" -- sh -c 'grep Seccomp_filters /proc/self/status' 2>&1)
if [ -n "$plain" ] && [ "$plain" = "$viaprctl" ] && [ "${plain##*[[:space:]]}" -ge 2 ]; then
	pass noseccomp_prctl_filter
else
	fail noseccomp_prctl_filter "with seccomp(2): '$plain'; without: '$viaprctl'"
fi

# -- no mount API: the error names the kernel needed ------------------------------
for call in open_tree mount_setattr; do
	out=$("$ENOSYS" $call "$T/nsbox" --store "$S" run "$BB" -- true 2>&1)
	rc=$?
	if [ $rc = 125 ] && printf '%s' "$out" | grep -q 'idmapped mounts need Linux 5.12+'; then
		pass "no_${call}_names_kernel"
	else
		fail "no_${call}_names_kernel" "rc=$rc $out"
	fi
done
finish
