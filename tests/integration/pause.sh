#!/usr/bin/env bash
# Pause and resume (issue #29, docs/pause.md).  The CLI here: nsbox pause,
# ps's state, exec and cp resuming a paused sandbox, a double pause and a
# resume of a running one refused, rm of a paused sandbox (a frozen v1
# group takes its SIGKILL only once thawed), doctor's freezer line; as
# root with the host's v1 freezer, and as the rootless user nsboxtest
# (no delegated cgroup here: pause refuses with the reason and the fix,
# and the sandbox keeps running).  Then the server (tests/services/
# pause.py): the tools, the state in sandbox_list, transparent resume,
# races with calls and stops, and auto-pause's idle rule, as root and
# rootless.  cgroup v2's freezer is checked in a VM guest (suite
# vm_cgroup_v2).
SUITE=pause
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

LOGS=$T/logs
mkdir -p "$LOGS"
S=$T/store
PS=$T/pstore
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/busybox:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$PS" pull --quiet "oci:$F/oci/python:latest" 2>&1); then
	fail setup "cannot pull the fixtures: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
N=("$NSBOX" --store "$S")

# ---- the CLI, root ----
id=$("${N[@]}" create "oci:$F/oci/busybox:latest" 2>/dev/null)
"${N[@]}" exec -d "$id" -- sh -c 'i=0; while true; do i=$((i+1)); echo $i >/tmp/c.new; mv /tmp/c.new /tmp/c; sleep 0.05; done' >/dev/null
sleep 0.5
fz=/sys/fs/cgroup/freezer/nsbox/$id/freezer.state
check cli_pause "${N[@]}" pause "$id"
st=$(cat "$fz" 2>/dev/null)
[ "$st" = FROZEN ] && pass cli_frozen_on_host || fail cli_frozen_on_host "freezer.state: '$st'"
"${N[@]}" ps | grep -q "^$id .* paused " && pass cli_ps_paused || fail cli_ps_paused "$("${N[@]}" ps | grep "$id")"
expect_fail cli_double_pause "already paused" "${N[@]}" pause "$id"
c1=$("${N[@]}" exec "$id" -- cat /tmp/c 2>&1)
sleep 0.5
c2=$("${N[@]}" exec "$id" -- cat /tmp/c 2>&1)
if [ "$(cat "$fz" 2>/dev/null)" = THAWED ] && [ "$c2" -gt "$c1" ] 2>/dev/null; then
	pass cli_exec_resumes
else
	fail cli_exec_resumes "freezer $(cat "$fz" 2>/dev/null), counter $c1 then $c2"
fi
expect_fail cli_resume_running "not paused" "${N[@]}" resume "$id"
"${N[@]}" pause "$id" >/dev/null
check cli_resume "${N[@]}" resume "$id"
"${N[@]}" pause "$id" >/dev/null
pid=$("${N[@]}" ps | awk -v id="$id" '$1 == id {print $2}')
start=$(date +%s)
# Gone, or a zombie its reaper has not collected yet.
init_gone() { ! grep -qv '^Z' <(sed -n 's/^State:\t//p' "/proc/$pid/status" 2>/dev/null); }
if "${N[@]}" rm "$id" >/dev/null 2>&1 && [ $(($(date +%s) - start)) -lt 10 ] &&
	[ ! -e "/sys/fs/cgroup/freezer/nsbox/$id" ] && wait_until 5 init_gone; then
	pass cli_rm_paused
else
	fail cli_rm_paused "rm took $(($(date +%s) - start)) s; freezer group $(ls -d /sys/fs/cgroup/freezer/nsbox/$id 2>&1); init $pid: $(grep State /proc/$pid/status 2>&1)"
fi
out=$("${N[@]}" doctor 2>&1)
printf '%s\n' "$out" | grep -Eq '^ok +freezer ' && pass cli_doctor_root ||
	fail cli_doctor_root "$(printf '%s\n' "$out" | grep freezer)"

# ---- the CLI, rootless ----
U=nsboxtest
US=$T/ustore
mkdir -p "$US" && chown "$U:$U" "$US"
as_u() { runuser -u "$U" -- env -i PATH=/usr/bin:/bin HOME=/home/$U NSBOX_LIMITS=best-effort "$NSBOX" --store "$US" "$@"; }
as_u pull --quiet "oci:$F/oci/busybox:latest" >/dev/null 2>&1
uid=$(as_u create "oci:$F/oci/busybox:latest" 2>/dev/null)
expect_fail cli_rootless_pause_refused "cannot be paused here, so it keeps running: .*delegated.*Delegate=yes" as_u pause "$uid"
out=$(as_u exec "$uid" -- echo alive 2>&1)
[ "$out" = alive ] && as_u ps | grep -q "^$uid .* running " && pass cli_rootless_keeps_running ||
	fail cli_rootless_keeps_running "exec: $out; ps: $(as_u ps | grep "$uid")"
out=$(as_u doctor 2>&1)
printf '%s\n' "$out" | grep -Eq '^warn +freezer .*delegated' && pass cli_doctor_rootless ||
	fail cli_doctor_rootless "$(printf '%s\n' "$out" | grep -A1 freezer)"
as_u rm "$uid" >/dev/null 2>&1

# ---- the server ----
mkdir -p "$T/work" && chmod 755 "$T" "$T/work"
run_client server env NSBOX="$NSBOX" SUITE="$SUITE" WORK="$T/work" \
	timeout 600 python3 "$ROOT/tests/services/pause.py" "$PS"
finish
