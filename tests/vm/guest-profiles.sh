# Runs inside the VM (booted by tests/integration/host_profiles.sh): host
# profiles this host cannot show, as root and as the unprivileged tester.
#   guest-profiles.sh sysctls IMAGE   Debian 12's 6.1 kernel: user namespaces
#                                     disabled by each sysctl in turn
#   guest-profiles.sh oldkernel IMAGE Debian 11's 5.10 kernel: refusals that
#                                     name the missing feature and its kernel
#   guest-profiles.sh apparmor IMAGE  bookworm-backports' 6.12 kernel (AppArmor
#                                     on, with upstream userns mediation but
#                                     without Ubuntu's restriction sysctl):
#                                     contrib/apparmor/nsbox (at /opt/nsbox.aa)
#                                     loaded by AppArmor 4.1's parser (/opt/aa)
# /store.img is an ext4 image with /root (root's store) and /tester (the
# tester's single-id store), as tests/vm/guest-nsbox.sh has it.  Rootless
# runs use --limits=best-effort: the cgroup root is not delegated here, and
# cgroups are vm_cgroup_v2's subject, not this one's.
MODE=$1
IMG=$2
SUITE=host_profiles/vm
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
one() { tr '\n' ' ' | cut -c1-600; }

modprobe loop 2>/dev/null
mkdir -p /mnt/store
if ! mount -o loop /store.img /mnt/store; then
	fail setup "cannot mount /store.img"
	finish
fi
chown -R tester:tester /mnt/store/tester
R() { /usr/local/bin/nsbox --store /mnt/store/root "$@"; }
Tn() { as-tester /usr/local/bin/nsbox --store /mnt/store/tester "$@"; }

# doctor_gap WHO CHECK: doctor's FAIL line for CHECK: "cause" and "fix"
# into GAP_CAUSE and GAP_FIX (empty when doctor has no such FAIL).
doctor_gap() {
	local out
	if [ "$1" = root ]; then out=$(R doctor 2>&1); else out=$(Tn doctor 2>&1); fi
	DOCTOR_RC=$?
	DOCTOR_OUT=$out
	GAP_CAUSE=$(printf '%s\n' "$out" | sed -n "s/^FAIL  $2  *//p" | head -1)
	GAP_FIX=$(printf '%s\n' "$out" | grep -A1 "^FAIL  $2 " | sed -n 's/^ *fix: //p' | head -1)
}

# refuses NAME WANT_RC NEEDLE OUT RC: the command failed with WANT_RC and its
# error has doctor's cause and fix (GAP_*) and NEEDLE.
refuses() {
	local name=$1 want=$2 needle=$3 out=$4 rc=$5
	if [ "$rc" = "$want" ] && [ -n "$GAP_CAUSE" ] &&
		printf '%s' "$out" | grep -qF -- "$GAP_CAUSE" &&
		printf '%s' "$out" | grep -qF -- "$GAP_FIX" &&
		printf '%s' "$out" | grep -qF -- "$needle"; then
		pass "$name"
	else
		fail "$name" "rc=$rc (want $want) cause='$GAP_CAUSE' out=$(printf '%s' "$out" | one)"
	fi
}

# the three commands that make sandboxes, as WHO, each refused with doctor's
# words; NEEDLE must be in each refusal too.
three_refuse() {
	local who=$1 prefix=$2 needle=$3 out rc
	local run=R
	[ "$who" = tester ] && run=Tn
	out=$($run run --limits=best-effort "$IMG" -- echo ran 2>&1)
	rc=$?
	refuses "${prefix}_run_refuses_same_words" 125 "$needle" "$out" $rc
	out=$($run create --limits=best-effort "$IMG" 2>&1)
	rc=$?
	refuses "${prefix}_create_refuses_same_words" 1 "$needle" "$out" $rc
	out=$($run serve </dev/null 2>&1)
	rc=$?
	refuses "${prefix}_serve_refuses_at_start" 1 "$needle" "$out" $rc
}

userns_ok() { # NAME: after doctor_gap, doctor found user namespaces usable
	if [ -z "$GAP_CAUSE" ] && printf '%s\n' "$DOCTOR_OUT" | grep -q '^ok    user namespaces'; then
		pass "$1"
	else
		fail "$1" "$(printf '%s' "$DOCTOR_OUT" | one)"
	fi
}

works() { # NAME WHO: a sandbox runs
	local out
	if [ "$2" = root ]; then
		out=$(R run "$IMG" -- echo ran 2>/tmp/works.err)
	else
		out=$(Tn run --limits=best-effort "$IMG" -- echo ran 2>/tmp/works.err)
	fi
	[ "$out" = ran ] && pass "$1" || fail "$1" "$out $(one </tmp/works.err)"
}

sysctls() {
	local clone=/proc/sys/kernel/unprivileged_userns_clone max=/proc/sys/user/max_user_namespaces
	works baseline_root_runs root
	works baseline_tester_runs tester
	if ! [ -w $clone ]; then
		fail setup "this kernel has no kernel.unprivileged_userns_clone"
		return
	fi
	# Debian's switch: unprivileged users only.
	echo 0 >$clone
	doctor_gap tester 'user namespaces'
	if [ "$DOCTOR_RC" = 1 ] && printf '%s' "$GAP_CAUSE" | grep -qF 'kernel.unprivileged_userns_clone=0' &&
		[ "${GAP_FIX#sudo sysctl -w kernel.unprivileged_userns_clone=1}" != "$GAP_FIX" ] &&
		printf '%s' "$DOCTOR_OUT" | grep -qF -- '--isolation=landlock'; then
		pass clone0_tester_doctor_fails_naming_sysctl_and_fix
	else
		fail clone0_tester_doctor_fails_naming_sysctl_and_fix "rc=$DOCTOR_RC $(printf '%s' "$DOCTOR_OUT" | one)"
	fi
	three_refuse tester clone0_tester '--isolation=landlock'
	works clone0_root_still_runs root
	doctor_gap root 'user namespaces'
	userns_ok clone0_root_doctor_userns_ok
	echo 1 >$clone

	# The namespace count: 0 stops root too, and nsbox says so.
	old=$(cat $max)
	echo 0 >$max
	doctor_gap tester 'user namespaces'
	if [ "$DOCTOR_RC" = 1 ] && printf '%s' "$GAP_CAUSE" | grep -qF 'user.max_user_namespaces=0' &&
		[ "${GAP_FIX#sudo sysctl -w user.max_user_namespaces=}" != "$GAP_FIX" ]; then
		pass max0_tester_doctor_fails_naming_sysctl_and_fix
	else
		fail max0_tester_doctor_fails_naming_sysctl_and_fix "rc=$DOCTOR_RC $(printf '%s' "$DOCTOR_OUT" | one)"
	fi
	three_refuse tester max0_tester '--isolation=landlock'
	doctor_gap root 'user namespaces'
	if [ "$DOCTOR_RC" = 1 ] && printf '%s' "$GAP_CAUSE" | grep -qF 'for root too'; then
		pass max0_root_doctor_fails_too
	else
		fail max0_root_doctor_fails_too "rc=$DOCTOR_RC $(printf '%s' "$DOCTOR_OUT" | one)"
	fi
	three_refuse root max0_root '--isolation=landlock'
	echo "$old" >$max
	works restored_tester_runs tester
}

oldkernel() {
	local out rc
	# root: idmapped mounts (5.12).
	doctor_gap root kernel
	if [ "$DOCTOR_RC" = 1 ] && printf '%s' "$GAP_CAUSE" | grep -qF 'idmapped mounts need Linux 5.12' &&
		printf '%s' "$GAP_CAUSE" | grep -qF "$(uname -r)"; then
		pass old_root_doctor_names_feature_and_kernel
	else
		fail old_root_doctor_names_feature_and_kernel "rc=$DOCTOR_RC $(printf '%s' "$DOCTOR_OUT" | one)"
	fi
	three_refuse root old_root 'Linux 5.12'
	# tester: overlayfs in a user namespace (5.11).
	doctor_gap tester kernel
	if [ "$DOCTOR_RC" = 1 ] && printf '%s' "$GAP_CAUSE" | grep -qF 'overlayfs in a user namespace needs Linux 5.11'; then
		pass old_tester_doctor_names_feature_and_kernel
	else
		fail old_tester_doctor_names_feature_and_kernel "rc=$DOCTOR_RC $(printf '%s' "$DOCTOR_OUT" | one)"
	fi
	three_refuse tester old_tester 'Linux 5.11'
	# Never weaker silently: no sandbox was left behind by the refusals.
	left=$(ls /mnt/store/root/sandboxes /mnt/store/tester/sandboxes 2>/dev/null | grep -cE '^[0-9a-f]{32}$')
	[ "$left" = 0 ] && pass old_no_sandbox_made || fail old_no_sandbox_made "$left sandboxes"
}

# The label of a running nsbox (serve, held open by a fifo) as WHO=tester.
serve_label() {
	local pid
	rm -f /tmp/serve.fifo && mkfifo /tmp/serve.fifo
	as-tester /usr/local/bin/nsbox --store /mnt/store/tester serve </tmp/serve.fifo >/dev/null 2>&1 &
	exec 7>/tmp/serve.fifo
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		pid=$(pidof nsbox) && break
		sleep 0.2
	done
	cat "/proc/$pid/attr/current" 2>/dev/null
	exec 7>&-
	wait
}

apparmor() {
	local L=/opt/aa/usr/lib/x86_64-linux-gnu out
	aa() {
		: >/tmp/aa.conf
		"$L/ld-linux-x86-64.so.2" --library-path "$L" /opt/aa/usr/sbin/apparmor_parser \
			--config-file /tmp/aa.conf --base /opt/aa/etc/apparmor.d -I /opt/aa/etc/apparmor.d -r "$1"
	}
	mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
	if ! [ -e /sys/kernel/security/apparmor/profiles ]; then
		fail setup "AppArmor is not enabled in this kernel"
		return
	fi
	echo "NOTE: kernel.apparmor_restrict_unprivileged_userns $([ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ] && echo exists || echo 'does not exist (Ubuntu only)')"
	# A profile that confines nsbox and denies it user namespaces: the real
	# kernel refuses, and nsbox names the profile.
	printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' \
		'profile nsbox /usr/local/bin/nsbox {' '  all,' '  deny userns,' '}' >/tmp/deny.aa
	if aa /tmp/deny.aa >/tmp/aa.out 2>&1; then
		doctor_gap tester 'user namespaces'
		if [ "$DOCTOR_RC" = 1 ] && printf '%s' "$GAP_CAUSE" | grep -qF 'AppArmor profile confining nsbox (nsbox (enforce))' &&
			printf '%s' "$GAP_FIX" | grep -qF 'userns,'; then
			pass aa_deny_doctor_names_profile
		else
			fail aa_deny_doctor_names_profile "rc=$DOCTOR_RC $(printf '%s' "$DOCTOR_OUT" | one)"
		fi
		three_refuse tester aa_deny '--isolation=landlock'
	else
		fail aa_deny_loads "$(one </tmp/aa.out)"
	fi
	# The shipped profile replaces it: nsbox runs under it, unconfined but
	# allowed user namespaces.
	if aa /opt/nsbox.aa >/tmp/aa.out 2>&1 && grep -qx 'nsbox (unconfined)' /sys/kernel/security/apparmor/profiles; then
		pass aa_shipped_profile_loads_in_kernel
	else
		fail aa_shipped_profile_loads_in_kernel "$(one </tmp/aa.out) $(one </sys/kernel/security/apparmor/profiles)"
	fi
	out=$(serve_label)
	[ "$out" = 'nsbox (unconfined)' ] && pass aa_shipped_profile_attaches || fail aa_shipped_profile_attaches "label '$out'"
	doctor_gap tester 'user namespaces'
	userns_ok aa_shipped_doctor_userns_ok
	works aa_shipped_tester_runs tester
}

echo "kernel: $(uname -r); userns sysctls: $(cd /proc/sys && ls -d kernel/*userns* user/max_user_namespaces 2>/dev/null | tr '\n' ' ')"
case $MODE in
sysctls) sysctls ;;
oldkernel) oldkernel ;;
apparmor) apparmor ;;
*) fail setup "unknown mode $MODE" ;;
esac
umount /mnt/store 2>/dev/null || umount -l /mnt/store
finish
