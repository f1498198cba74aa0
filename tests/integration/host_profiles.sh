#!/usr/bin/env bash
# The host profiles of docs/hosts.md that the other suites do not already
# prove, each with the words `nsbox doctor` and the refusing commands share
# (common/hostcheck.c):
#   - here: AppArmor's unprivileged-userns restriction, through the test
#     hook NSBOX_SYSCTL_ROOT (no Debian kernel has that sysctl: Ubuntu's
#     patch), the shipped profile compiled by an AppArmor 4 parser, no
#     /etc/subuid range, hybrid cgroups rootless;
#   - in the qemu/TCG VM (tests/vm/run.sh), three boots: Debian 12's 6.1
#     kernel with user namespaces disabled by each sysctl in turn (root and
#     tester); Debian 11's 5.10 kernel (refusals naming the feature);
#     bookworm-backports' 6.12 with AppArmor on: a profile denying userns
#     is refused in nsbox's words, the shipped profile loads and nsbox runs
#     under it.
# Under ASan the guests run the ASan binary too (tests/vm/run.sh fails a
# boot whose output holds a sanitizer report): 68 s in all on 2026-11-29.
SUITE=host_profiles
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

BB=oci:$T/bb:latest
cp -r "$F/oci/busybox" "$T/bb"
install -m 755 "$NSBOX" "$T/nsbox"
chmod -R a+rX "$T"
one() { tr '\n' ' ' | cut -c1-500; }
# as USER CMD...: a clean environment, as the rootless suites do.
as() {
	local u=$1
	shift
	runuser -u "$u" -- env -i PATH=/usr/bin:/bin HOME="/home/$u" "$@"
}
S2=$T/store2 # nsboxtest2: no /etc/subuid range
mkdir -m 700 "$S2" && chown nsboxtest2: "$S2"
as nsboxtest2 "$T/nsbox" --store "$S2" pull --quiet "$BB" >/dev/null || fail setup "pull as nsboxtest2"
mkdir -m 700 "$T/store1" && chown nsboxtest: "$T/store1"
n2() { as nsboxtest2 "$T/nsbox" --store "$S2" "$@"; }

# ---- AppArmor's restriction (Ubuntu 23.10+), through a fake sysctl tree ---------
FAKE=$T/sysctl
mkdir -p "$FAKE/kernel" "$FAKE/user"
echo 1 >"$FAKE/kernel/apparmor_restrict_unprivileged_userns"
echo 1 >"$FAKE/kernel/unprivileged_userns_clone"
echo 15000 >"$FAKE/user/max_user_namespaces"
echo unconfined >"$FAKE/apparmor-label"
chmod -R a+rX "$FAKE"
ns2f() { as nsboxtest2 NSBOX_SYSCTL_ROOT="$FAKE" "$@"; }
doctor=$(ns2f "$T/nsbox" --store "$S2" doctor 2>&1)
drc=$?
cause=$(printf '%s\n' "$doctor" | sed -n 's/^FAIL  user namespaces  *//p')
fix=$(printf '%s\n' "$doctor" | grep -A1 '^FAIL  user namespaces' | sed -n 's/^ *fix: //p')
if [ $drc = 1 ] && printf '%s' "$cause" | grep -qF 'kernel.apparmor_restrict_unprivileged_userns=1' &&
	printf '%s' "$fix" | grep -qF "profile nsbox $T/nsbox flags=(unconfined)" &&
	printf '%s' "$fix" | grep -qF 'sudo apparmor_parser -r /etc/apparmor.d/nsbox' &&
	printf '%s' "$doctor" | grep -qF -- '--isolation=landlock'; then
	pass apparmor_doctor_fails_with_install_line
else
	fail apparmor_doctor_fails_with_install_line "rc=$drc $(printf '%s' "$doctor" | one)"
fi
same_words() { # NAME WANT_RC CMD...: refused with doctor's cause and fix
	local name=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc = "$want" ] && [ -n "$cause" ] && printf '%s' "$out" | grep -qF -- "$cause" &&
		printf '%s' "$out" | grep -qF -- "$fix" && printf '%s' "$out" | grep -qF -- '--isolation=landlock'; then
		pass "$name"
	else
		fail "$name" "rc=$rc (want $want) $(printf '%s' "$out" | one)"
	fi
}
same_words apparmor_run_refuses_same_words 125 ns2f "$T/nsbox" --store "$S2" run --limits=best-effort "$BB" -- true
same_words apparmor_create_refuses_same_words 1 ns2f "$T/nsbox" --store "$S2" create --limits=best-effort "$BB"
same_words apparmor_serve_refuses_at_start 1 ns2f "$T/nsbox" --store "$S2" serve </dev/null
# The restriction spares root (CAP_SYS_ADMIN) ...
out=$(NSBOX_SYSCTL_ROOT=$FAKE "$T/nsbox" --store "$T/rootstore" run "$BB" -- echo ran 2>&1)
[ "$out" = ran ] && pass apparmor_root_unaffected || fail apparmor_root_unaffected "$(printf '%s' "$out" | one)"
# ... and a process that a profile confines (the label AppArmor gives nsbox
# under contrib/apparmor/nsbox) is let through to the real probe.
echo 'nsbox (unconfined)' >"$FAKE/apparmor-label"
out=$(ns2f "$T/nsbox" --store "$S2" run --limits=best-effort "$BB" -- echo ran 2>/dev/null)
d=$(ns2f "$T/nsbox" --store "$S2" doctor 2>&1 | grep '^ok    user namespaces')
[ "$out" = ran ] && [ -n "$d" ] && pass apparmor_profile_label_runs || fail apparmor_profile_label_runs "$out / $d"
echo unconfined >"$FAKE/apparmor-label"
# The values decide, not the hook: with the restriction off it runs.
echo 0 >"$FAKE/kernel/apparmor_restrict_unprivileged_userns"
out=$(ns2f "$T/nsbox" --store "$S2" run --limits=best-effort "$BB" -- echo ran 2>/dev/null)
[ "$out" = ran ] && pass apparmor_restriction_off_runs || fail apparmor_restriction_off_runs "$out"
echo 1 >"$FAKE/kernel/apparmor_restrict_unprivileged_userns"

# Root of a user namespace (nsbox as root in a rootless container) is not
# exempt from kernel.unprivileged_userns_clone=0; root of the host is.
F2=$T/sysctl-clone0
mkdir -p "$F2/kernel" "$F2/user" && echo 0 >"$F2/kernel/unprivileged_userns_clone"
in_ns=$(NSBOX_SYSCTL_ROOT=$F2 unshare --user --map-root-user "$T/nsbox" --store "$T/nsstore" doctor 2>&1 |
	grep '^FAIL  user namespaces')
on_host=$(NSBOX_SYSCTL_ROOT=$F2 "$T/nsbox" --store "$T/rootstore" doctor 2>&1 | grep '^ok    user namespaces')
if printf '%s' "$in_ns" | grep -qF 'kernel.unprivileged_userns_clone=0' && [ -n "$on_host" ]; then
	pass clone0_exempts_host_root_only
else
	fail clone0_exempts_host_root_only "in userns: '$in_ns' on host: '$on_host'"
fi

# The one-line install writes the shipped profile (for this binary's path).
line=$(printf '%s' "$fix" | sed 's/ | sudo tee .*//')
gen=$(cd "$T" && sh -c "$line")
want=$(grep -v '^#' "$ROOT/contrib/apparmor/nsbox" | sed "s|/usr/local/bin/nsbox|$T/nsbox|")
[ -n "$gen" ] && [ "$gen" = "$want" ] && pass apparmor_install_line_is_shipped_profile ||
	fail apparmor_install_line_is_shipped_profile "$(printf '%s' "$gen" | one) != $(printf '%s' "$want" | one)"

# Both compile with an AppArmor 4 parser (Debian 12's 3.0.8 does not know
# `userns,`; Debian 13's 4.1 does): trixie's apparmor and libc6, unpacked
# into a cache through a private apt list, the parser run by that libc's
# loader.  -Q -K: compile only, no kernel load (this host has no AppArmor).
AAC=${NSBOX_APPARMOR_CACHE:-/var/cache/nsbox/apparmor}
aa_fetch() {
	[ -x "$AAC/root/usr/sbin/apparmor_parser" ] && return 0
	local o=(-o "Dir::Etc::sourcelist=$AAC/apt/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$AAC/apt/lists" -o "Dir::Cache=$AAC/apt/cache")
	mkdir -p "$AAC/apt/lists/partial" "$AAC/apt/cache/archives/partial" "$AAC/debs" &&
		echo "deb http://deb.debian.org/debian trixie main" >"$AAC/apt/sources.list" &&
		chown -R _apt "$AAC/apt" "$AAC/debs" 2>/dev/null
	apt-get "${o[@]}" update >"$AAC/apt.log" 2>&1 &&
		(cd "$AAC/debs" && apt-get "${o[@]}" download apparmor libc6 >>"$AAC/apt.log" 2>&1) || return 1
	rm -rf "$AAC/root.new" && mkdir "$AAC/root.new" &&
		for d in "$AAC"/debs/*.deb; do dpkg -x "$d" "$AAC/root.new" || return 1; done &&
		rm -rf "$AAC/root" && mv "$AAC/root.new" "$AAC/root" && rm -rf "$AAC"/debs/*.deb "$AAC/apt/lists"
}
aa_parse() { # PROFILE: compile it
	local r=$AAC/root L=$AAC/root/usr/lib/x86_64-linux-gnu
	: >"$T/aa.conf"
	"$L/ld-linux-x86-64.so.2" --library-path "$L" "$r/usr/sbin/apparmor_parser" --config-file "$T/aa.conf" \
		--base "$r/etc/apparmor.d" -I "$r/etc/apparmor.d" -Q -K \
		--policy-features "$r/usr/share/apparmor-features/features" "$1"
}
if aa_fetch; then
	printf '%s\n' "$gen" >"$T/nsbox.generated"
	sed 's/  userns,/  usernz,/' "$ROOT/contrib/apparmor/nsbox" >"$T/nsbox.typo"
	if aa_parse "$ROOT/contrib/apparmor/nsbox" >"$T/aa.out" 2>&1 && aa_parse "$T/nsbox.generated" >>"$T/aa.out" 2>&1 &&
		! aa_parse "$T/nsbox.typo" >>"$T/aa.out" 2>&1; then
		pass apparmor_profile_compiles_with_apparmor4
	else
		fail apparmor_profile_compiles_with_apparmor4 "$(one <"$T/aa.out")"
	fi
else
	fail apparmor_profile_compiles_with_apparmor4 "cannot fetch trixie's apparmor: $(tail -3 "$AAC/apt.log" 2>/dev/null | one)"
fi

# ---- no /etc/subuid range: one mapped id, and doctor says what a range adds --------
d=$(n2 doctor 2>&1 | grep -A1 '^warn  subordinate ids')
if printf '%s' "$d" | grep -qF 'one mapped id' && printf '%s' "$d" | grep -qF 'a range of 65536 would keep the owners' &&
	printf '%s' "$d" | grep -qF 'usermod --add-subuids'; then
	pass nosubuid_doctor_says_what_range_adds
else
	fail nosubuid_doctor_says_what_range_adds "$(printf '%s' "$d" | one)"
fi
out=$(n2 run --limits=best-effort "$BB" -- sh -c 'id -u; stat -c %u:%g /home/app/hello.txt' 2>/dev/null)
[ "$out" = "$(printf '0\n0:0')" ] && pass nosubuid_runs_with_single_id || fail nosubuid_runs_with_single_id "$(printf '%s' "$out" | one)"
d=$(as nsboxtest "$T/nsbox" --store "$T/store1" doctor 2>&1 | grep '^ok    subordinate ids')
printf '%s' "$d" | grep -qE '65536 ids from /etc/subuid' && pass subuid_doctor_counts_range || fail subuid_doctor_counts_range "$d"

# ---- hybrid cgroups, rootless (this host): best-effort only when asked ------------
if [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/unified ]; then
	out=$(n2 run "$BB" -- true 2>&1)
	rc=$?
	[ $rc = 125 ] && printf '%s' "$out" | grep -qF -- '--limits=best-effort' &&
		pass hybrid_rootless_refuses_without_flag || fail hybrid_rootless_refuses_without_flag "rc=$rc $(printf '%s' "$out" | one)"
	j=$(n2 run --json --limits=best-effort "$BB" -- true 2>/dev/null)
	if printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["exit_code"] == 0, r
assert r["limits"].startswith("best-effort: memory as RLIMIT_AS"), r
assert "no cpu limit" in r["limits"], r'; then
		pass hybrid_rootless_best_effort_says_its_limits
	else
		fail hybrid_rootless_best_effort_says_its_limits "$(printf '%s' "$j" | one)"
	fi
else
	fail hybrid_setup "this host is not hybrid (docs/hosts.md assumes the CI host is)"
fi

# ---- the VM: sysctls on Debian 12's kernel, then Debian 11's 5.10 --------------
mkdir -p "$T/disk"
"$NSBOX" --store "$T/disk/root" pull --quiet "$BB" >/dev/null || { fail setup "pull"; finish; }
img=$("$NSBOX" --store "$T/disk/root" images --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["digest"][7:19])')
cp -a "$T/disk/root" "$T/disk/tester"
rm -rf "$T/disk/tester/sandboxes" "$T/disk/tester/cache"
chown -R 1000:1000 "$T/disk/tester"
mke2fs -q -t ext4 -d "$T/disk" "$T/store.img" 64M || { fail setup "mke2fs"; finish; }
vm() { # NAME COUNT [--kernel K] MODE: boot; the guest prints exactly COUNT results
	local name=$1 want=$2 n rc
	shift 2
	"$ROOT/tests/vm/run.sh" --suite "$SUITE" --mem 768 --timeout 240 --module loop "${@:1:$#-1}" \
		--add "$NSBOX:/usr/local/bin/nsbox" --data "$T/store.img:/store.img" \
		-- "$ROOT/tests/vm/guest-profiles.sh" "${@: -1}" "$img" >"$T/$name.out" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|kernel:|NOTE:)' "$T/$name.out"
	n=$(grep -cE '^(PASS|FAIL): host_profiles/vm/' "$T/$name.out")
	[ "$n" = "$want" ] || fail "${name}_guest_ran_every_check" "$n of $want results (exit $rc): $(tail -5 "$T/$name.out" | one)"
}
# (each boot's checks: tests/vm/guest-profiles.sh's sysctls, oldkernel and
# apparmor; its results are host_profiles/vm/NAME)
vm vm_sysctls 17 sysctls
vm vm_oldkernel 9 --kernel bullseye oldkernel
# (without cx16: Debian's 6.12 cloud kernel double-faulted at SLUB's
# cmpxchg16b on %gs under TCG, in about one boot of three with -cpu max;
# none in 10 since)
if [ -x "$AAC/root/usr/sbin/apparmor_parser" ]; then
	vm vm_apparmor 8 --kernel bookworm-backports --cpu max,-cx16 --data "$AAC/root:/opt/aa" \
		--data "$ROOT/contrib/apparmor/nsbox:/opt/nsbox.aa" apparmor
else
	fail vm_apparmor_guest_ran_every_check "no AppArmor 4 parser in $AAC (its fetch failed above): the boot did not run"
fi
finish
