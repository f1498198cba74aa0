# shellcheck shell=bash
# The steps of .ci/run (sourced; tests/harness/run.sh proves them).
#
# timed NAME CMD...: a set-up step (apt, deps, build): its status and time;
# a failure ends CI at once (set -e in .ci/run).
# step NAME CMD...: a test step, run to its end whatever happens; it fails
# when its exit status is not 0, when it prints no "N passed, N failed"
# total, when that total has a failure, or when it passed nothing.
# ci_summary: every step's line again, the sum ("N passed, N failed", a
# failed step counting as at least one failure), the status.
# Each step's output is in $CI_LOGS/NAME; its line (name, seconds, status,
# passed, failed, verdict) in $CI_TIMES, which .ci/run keeps in build/.
CI_LOGS=${CI_LOGS:-$(mktemp -d /tmp/nsbox-ci.XXXXXX)}
CI_TIMES=${CI_TIMES:-$CI_LOGS/times.tsv}
CI_PASSED=0 CI_FAILED=0 CI_BAD=()
printf 'step\tseconds\tstatus\tpassed\tfailed\tverdict\n' >"$CI_TIMES"

timed() {
	local name=$1 start=$SECONDS rc=0
	shift
	echo "ci: == $name: $*"
	"$@" || rc=$?
	printf '%s\t%s\t%s\t-\t-\t%s\n' "$name" $((SECONDS - start)) "$rc" "$([ "$rc" = 0 ] && echo ok || echo FAIL)" >>"$CI_TIMES"
	echo "ci: $name: status $rc, $((SECONDS - start)) s"
	return "$rc"
}

step() {
	local name=$1 start=$SECONDS rc total passed=0 failed=0 why=()
	shift
	echo "ci: == $name: $*"
	# (On the left of ||, set -e of .ci/run does not end CI here.)
	{
		"$@" 2>&1 | tee "$CI_LOGS/$name"
		rc=${PIPESTATUS[0]}
	} || true
	total=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$CI_LOGS/$name" | tail -1 || true)
	if [ -n "$total" ]; then
		set -- $total
		passed=$1 failed=$3
	else
		why+=("printed no \"N passed, N failed\"")
	fi
	[ "$rc" != 0 ] && why+=("exit status $rc")
	[ "$failed" -gt 0 ] && why+=("$failed failed")
	[ -n "$total" ] && [ "$passed" = 0 ] && why+=("0 passed")
	CI_PASSED=$((CI_PASSED + passed)) CI_FAILED=$((CI_FAILED + failed))
	local verdict=ok
	if [ ${#why[@]} -gt 0 ]; then
		verdict="FAIL (${why[*]})"
		CI_BAD+=("$name: ${why[*]}")
		# A failed step is at least one failure, even with none in its total.
		[ "$failed" -gt 0 ] || CI_FAILED=$((CI_FAILED + 1))
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" $((SECONDS - start)) "$rc" "$passed" "$failed" "$verdict" >>"$CI_TIMES"
	echo "ci: $name: $passed passed, $failed failed, status $rc, $((SECONDS - start)) s: $verdict"
	return 0
}

ci_summary() {
	local b
	echo
	echo "ci: steps (step, seconds, status, passed, failed, verdict):"
	tail -n +2 "$CI_TIMES" | sed 's/^/ci:   /'
	for b in "${CI_BAD[@]}"; do echo "ci: FAILED STEP $b"; done
	echo "$CI_PASSED passed, $CI_FAILED failed"
	[ ${#CI_BAD[@]} -eq 0 ]
}
