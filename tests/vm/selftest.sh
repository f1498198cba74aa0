#!/usr/bin/env bash
# Proves the VM harness (tests/vm/setup.sh, tests/vm/run.sh): boots
# tests/vm/selftest-guest.sh, which checks cgroup v2 enforcement (memory.max
# OOM kill, pids.max, cpu.max, cgroup.kill), overlayfs as root and in a user
# namespace, pivot_root, seccomp and dynamically linked binaries; then checks
# run.sh's own protocol: the script's exit status, the timeout (124) and a
# guest that dies without a status (125).
# Prints PASS: vm/<name> / FAIL: vm/<name>: <reason> lines and "# " notes
# (timings), tests/lib.sh's; exits 1 if anything failed.
# NSBOX_VM_SELFTEST_NSBOX=0 leaves build/nsbox out of the guest.
SUITE=vm
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/vm
RUN=$HERE/run.sh
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
oneline() { tr -d '\r' | tail -n "${1:-3}" | tr '\n' ' ' | cut -c1-300; }
t0=$(now)

# ---- setup, helpers ------------------------------------------------------------
if ! "$HERE/setup.sh" >"$T/setup.log" 2>&1; then
	fail setup "tests/vm/setup.sh failed: $(oneline 3 <"$T/setup.log")"
	finish
fi
# shellcheck disable=SC1091
. "${NSBOX_VM_CACHE:-/var/cache/nsbox/vm}/vm.env"
echo "# kernel $NSBOX_VM_KPKG $NSBOX_VM_KVERSION"
if ! cc -static -O2 -Wall -Wextra -o "$T/hog" "$HERE/hog.c" 2>"$T/cc.log" ||
	! cc -O2 -Wall -Wextra -o "$T/hog-dyn" "$HERE/hog.c" 2>>"$T/cc.log"; then
	fail build-hog "$(oneline 3 <"$T/cc.log")"
	finish
fi
adds=(--add "$T/hog:/usr/local/bin/hog" --add "$T/hog-dyn:/usr/local/bin/hog-dyn")
if [ "${NSBOX_VM_SELFTEST_NSBOX:-1}" = 1 ] && [ -x "$ROOT/build/nsbox" ]; then
	adds+=(--add "$ROOT/build/nsbox:/usr/local/bin/nsbox")
fi

# ---- the guest checks ---------------------------------------------------------------
t1=$(now)
# 150 s, not run.sh's default 300 (the suite's whole budget): a boot takes
# 10-60 s here; one that hangs then fails as boot, with its kernel log's
# tail, instead of leaving the suite killed with nothing said (CI run Q).
"$RUN" -v --timeout 150 --kernel-log "$T/kernel.log" "${adds[@]}" -- "$HERE/selftest-guest.sh" 2>"$T/guest.err" |
	tee "$T/guest.out" | grep --line-buffered -E '^(PASS|FAIL|#)'
rc=${PIPESTATUS[0]}
t2=$(now)
guest_fails=$(grep -c '^FAIL: ' "$T/guest.out")
guest_passes=$(grep -c '^PASS: ' "$T/guest.out")
_failures=$((_failures + guest_fails))
if [ "$rc" -eq 0 ] && [ "$guest_passes" -gt 0 ] && grep -qx 'NSBOX_VM_EXIT=0' "$T/guest.out"; then
	pass boot
elif [ "$rc" -ne 0 ] && [ "$guest_fails" -gt 0 ] && grep -qx "NSBOX_VM_EXIT=$rc" "$T/guest.out"; then
	pass boot # the guest ran and reported its failures
else
	fail boot "run.sh exit $rc; $(oneline 4 <"$T/guest.err"); kernel log: $([ -r "$T/kernel.log" ] && oneline 3 <"$T/kernel.log")"
fi
sed -n 's/^vm: /# vm: /p' "$T/guest.err"
echo "# selftest boot: $(elapsed "$t1" "$t2") s including the initramfs build"

# ---- run.sh's protocol: the script's status -----------------------------------------
# shellcheck disable=SC2016 # (expanded in the guest)
printf 'echo "hello from $(hostname) args:$#:$1:$2"\nexit 3\n' >"$T/status.sh"
"$RUN" -- "$T/status.sh" 'a b' "it's" >"$T/status.out" 2>"$T/status.err"
rc=$?
if [ "$rc" = 3 ] && grep -qx "hello from nsbox-vm args:2:a b:it's" "$T/status.out" &&
	grep -qx 'NSBOX_VM_EXIT=3' "$T/status.out"; then
	pass harness-exit-status
else
	fail harness-exit-status "exit $rc (want 3); out: $(oneline 3 <"$T/status.out"); err: $(oneline 3 <"$T/status.err")"
fi

# ---- the timeout kills qemu and exits 124 ---------------------------------------------
# 40 s: the guest must boot and start the script first (seconds unloaded; a
# fresh-clone run here, under a load of 30 on 2 cores, had not printed one
# kernel message after 10 s).
mkdir "$T/tmp"
echo 'echo sleeping; sleep 600' >"$T/sleep.sh"
ta=$(now)
TMPDIR=$T/tmp "$RUN" --timeout 40 -- "$T/sleep.sh" >"$T/sleep.out" 2>"$T/sleep.err"
rc=$?
tb=$(now)
took=$(elapsed "$ta" "$tb")
# No process may still hold the run's files (its qemu has -initrd there).
left=
for p in /proc/[0-9]*; do
	if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF "$T/tmp/"; then
		left="$left ${p#/proc/}"
	fi
done
if [ "$rc" = 124 ] && grep -qx sleeping "$T/sleep.out" && [ -z "$left" ] &&
	awk -v t="$took" 'BEGIN { exit !(t < 55) }' && [ -z "$(ls -A "$T/tmp")" ]; then
	pass harness-timeout
else
	fail harness-timeout "exit $rc (want 124) after $took s; processes left:${left:-none}; out: $(oneline 2 <"$T/sleep.out"); err: $(oneline 2 <"$T/sleep.err")"
fi

# ---- a guest that dies without a status: 125 ----------------------------------------------
echo 'echo crashing; echo c >/proc/sysrq-trigger; sleep 30' >"$T/crash.sh"
"$RUN" --timeout 60 -- "$T/crash.sh" >"$T/crash.out" 2>"$T/crash.err"
rc=$?
if [ "$rc" = 125 ] && grep -qx crashing "$T/crash.out" && ! grep -q '^NSBOX_VM_EXIT=' "$T/crash.out"; then
	pass harness-no-status
else
	fail harness-no-status "exit $rc (want 125); out: $(oneline 2 <"$T/crash.out"); err: $(oneline 2 <"$T/crash.err")"
fi

echo "# vm selftest total: $(elapsed "$t0" "$(now)") s"
finish
