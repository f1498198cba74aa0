#!/usr/bin/env bash
# The disk options of the command line (issue #11, section 1): --disk SIZE
# or unlimited on run and create, --workspace NAME with --workspace-size,
# NSBOX_DISK_BACKEND, and the disk fields of the --json result record.  As
# root and, for the measured workspace budget, as an unprivileged user.
# (The disk layer itself, its kinds and what a sandbox cannot do to it, is
# tests/integration/disk.sh.)
SUITE=disk_flags
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

S=$T/store
BB=oci:$F/oci/busybox:latest
nsbox() { "$NSBOX" --store "$S" "$@"; }
nsbox pull --quiet "$BB" >/dev/null
MiB=1048576

# field JSON KEY: the value of KEY in a result record ("None" for null).
field() { printf '%s' "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$2"; }

# -- options and help --------------------------------------------------------
out=$(nsbox run --help)
if [ $? = 0 ] && printf '%s' "$out" | grep -q -- '--disk SIZE|unlimited' &&
	printf '%s' "$out" | grep -q -- '--workspace-size'; then
	pass run_help_lists_disk_options
else
	fail run_help_lists_disk_options "$out"
fi
for bad in 0 -1 10x lots; do
	out=$(nsbox run --disk "$bad" "$BB" -- true 2>&1)
	rc=$?
	if [ $rc != 2 ] || ! printf '%s' "$out" | grep -q 'bad --disk'; then
		fail bad_disk_is_usage_error "--disk $bad: exit $rc: $out"
		break
	fi
done
[ $rc = 2 ] && pass bad_disk_is_usage_error
out=$(nsbox create --workspace-size nope "$BB" 2>&1)
[ $? = 2 ] && printf '%s' "$out" | grep -q 'bad --workspace-size' && pass bad_workspace_size_is_usage_error ||
	fail bad_workspace_size_is_usage_error "$out"
out=$(nsbox exec --disk 1g someid -- true 2>&1)
[ $? = 2 ] && printf '%s' "$out" | grep -q 'set by run or create' && pass exec_takes_no_disk_options ||
	fail exec_takes_no_disk_options "$out"
out=$(nsbox run --workspace ../x "$BB" -- true 2>&1)
[ $? = 2 ] && printf '%s' "$out" | grep -q 'workspace takes a name' && pass bad_workspace_name_is_usage_error ||
	fail bad_workspace_name_is_usage_error "$out"

# -- NSBOX_DISK_BACKEND -------------------------------------------------------
out=$(NSBOX_DISK_BACKEND=zfs nsbox run "$BB" -- true 2>&1)
rc=$?
[ $rc = 125 ] && printf '%s' "$out" | grep -q 'NSBOX_DISK_BACKEND is "zfs": it takes auto, tmpfs or quota' &&
	pass bad_backend_is_an_error || fail bad_backend_is_an_error "exit $rc: $out"
out=$(NSBOX_DISK_BACKEND=tmpfs nsbox run --json --disk 32m "$BB" -- true)
[ "$(field "$out" disk)" = tmpfs ] && [ "$(field "$out" disk_limit_bytes)" = $((32 * MiB)) ] &&
	pass backend_tmpfs_forced || fail backend_tmpfs_forced "$out"

# -- the record ---------------------------------------------------------------
out=$(nsbox run --json --disk unlimited "$BB" -- true)
if [ "$(field "$out" disk)" = none ] && [ "$(field "$out" disk_limit_bytes)" = None ] &&
	printf '%s' "$(field "$out" limits)" | grep -q 'no total limit'; then
	pass disk_unlimited_is_none
else
	fail disk_unlimited_is_none "$out"
fi
out=$(nsbox run --json "$BB" -- true)
kind=$(field "$out" disk)
[ "$kind" != none ] && [ "$(field "$out" disk_limit_bytes)" = $((1024 * MiB)) ] &&
	printf '%s' "$(field "$out" limits)" | grep -q '1024 MiB total' &&
	pass default_disk_1g || fail default_disk_1g "$out"
# Usage grows by what the sandbox writes (a detached sandbox, two execs).
id=$(nsbox create --disk 64m "$BB")
a=$(nsbox exec --json "$id" -- true)
b=$(nsbox exec --json "$id" -- sh -c 'dd if=/dev/zero of=/workspace/ten bs=1M count=10 2>/dev/null')
ua=$(field "$a" disk_used_bytes 2>/dev/null)
ub=$(field "$b" disk_used_bytes 2>/dev/null)
grew=$((${ub:-0} - ${ua:-0}))
[ "$(field "$b" disk_limit_bytes)" = $((64 * MiB)) ] && [ $grew -ge $((10 * MiB)) ] &&
	[ $grew -le $((11 * MiB)) ] && pass disk_used_grows_by_what_is_written ||
	fail disk_used_grows_by_what_is_written "grew $grew: $a / $b"
nsbox rm "$id" >/dev/null

# -- a measured workspace budget ---------------------------------------------
# run_ws NAME SIZE CMD...: `run --json --workspace NAME --workspace-size
# SIZE`, one after another with no wait (a run's detached remover no
# longer holds the workspace); its output in OUT, its exit status in RC,
# its stderr in $T/err.
run_ws() {
	local name=$1 size=$2
	shift 2
	OUT=$("${AS[@]}" env NSBOX_LIMITS="$LIMITS" "$NSBOX" --store "$WS_STORE" run --json --workspace "$name" --workspace-size "$size" \
		"$BB" -- "$@" 2>"$T/err")
	RC=$?
}

# budget_cases PREFIX: the measured budget through run, as the caller is.
budget_cases() {
	local p=$1 out
	run_ws w 1m sh -c 'dd if=/dev/zero of=f bs=1M count=2 2>/dev/null; echo filled'
	out=$OUT
	if [ "$(field "$out" workspace_disk)" = measured ] &&
		[ "$(field "$out" workspace_limit_bytes)" = $MiB ] &&
		[ "$(field "$out" workspace_used_bytes)" -ge $((2 * MiB)) ] 2>/dev/null; then
		pass "$p"measured_usage_in_record
	else
		fail "$p"measured_usage_in_record "$out"
	fi
	run_ws w 1m echo ran
	out=$OUT
	[ "$RC" = 125 ] && grep -q 'over its budget of 1.0 MiB' "$T/err" && [ -z "$out" ] &&
		pass "$p"over_budget_command_refused ||
		fail "$p"over_budget_command_refused "exit $RC: $out $(cat "$T/err")"
	# Under again once files are deleted (here on the host side).
	"${AS[@]}" rm -f "$WS_STORE/workspaces/w/f"
	run_ws w 1m echo ran
	out=$OUT
	[ "$RC" = 0 ] && [ "$(field "$out" stdout)" = ran ] && pass "$p"under_budget_runs_again ||
		fail "$p"under_budget_runs_again "exit $RC: $out"
	run_ws w unlimited sh -c 'dd if=/dev/zero of=f bs=1M count=2 2>/dev/null; echo ok'
	out=$OUT
	[ "$RC" = 0 ] && [ "$(field "$out" workspace_limit_bytes)" = None ] &&
		pass "$p"unlimited_workspace_not_refused || fail "$p"unlimited_workspace_not_refused "$out"
}
WS_STORE=$S
AS=()
LIMITS=strict
budget_cases ""
# The budget is the detached sandbox's too (its record): exec is refused.
id=$(nsbox create --workspace w2 --workspace-size 1m "$BB")
nsbox exec "$id" -- sh -c 'dd if=/dev/zero of=f bs=1M count=2 2>/dev/null'
out=$(nsbox exec "$id" -- true 2>&1)
[ $? = 125 ] && printf '%s' "$out" | grep -q 'workspace "w2" holds 2.0 MiB' && pass exec_refused_over_budget ||
	fail exec_refused_over_budget "$out"
nsbox rm "$id" >/dev/null

# Rootless: the walk runs in the user namespace.
RL=$T/rootless
mkdir -p "$RL" && chmod 755 "$T" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
NSBOX=$RL/nsbox
WS_STORE=$RL/store
AS=(runuser -u nsboxtest --)
LIMITS=best-effort
runuser -u nsboxtest -- "$NSBOX" --store "$WS_STORE" pull --quiet "$BB" >/dev/null 2>&1
budget_cases rootless/
finish
