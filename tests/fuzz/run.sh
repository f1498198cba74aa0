#!/usr/bin/env bash
# Runs libFuzzer targets, FUZZ_JOBS (default 2) at a time, each for SECONDS.
#
#   usage: tests/fuzz/run.sh SECONDS NAME...
#
# Per target, in this order:
#  1. replay: every input of its seed corpus tests/fuzz/corpus/NAME, run
#     once, whole.  A seed that crashes, leaks or hangs fails the target:
#     a crash found once stays found.
#  2. fuzz for SECONDS from the seed corpus plus a working corpus in
#     build-fuzz/corpus/NAME that grows across runs on one machine (new
#     inputs go there, never into the seed corpus).  A crash, leak, hang
#     (-timeout), memory bomb (-rss_limit_mb) or UBSan report fails the
#     target; its input is printed in base64 (CI's clone is gone once the
#     run ends) and copied into the seed corpus as
#     tests/fuzz/corpus/NAME/SHA1, so that every later run on this checkout
#     replays it first; commit it with the fix.
#  3. floors: the coverage the run reached (libFuzzer's `cov:`, edges) and
#     its executions per second must reach the target's line in
#     tests/fuzz/floors.tsv, so a target that stops reaching its parser (or
#     slows to a crawl) fails instead of printing `ok`.  A target without a
#     line there fails too.
# One line per target as it finishes, then "N passed, N failed"; each
# target's libFuzzer output is in build-fuzz/fuzz-NAME.log (the replay's in
# build-fuzz/fuzz-NAME.replay.log).
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:?seconds}
shift
jobs=${FUZZ_JOBS:-2}
floors=tests/fuzz/floors.tsv
# -rss_limit_mb bounds a leak or a bomb; -timeout flags an input that hangs.
limits=(-timeout=20 -rss_limit_mb=2048)

# print_input FILE: the input in base64, so a CI log alone reproduces it.
print_input() {
	echo "input ($(stat -c %s "$1") bytes, base64):"
	base64 -w 76 "$1"
}

# The sanitizers' reports, and the target's own failed check ("fuzz-NAME:
# ..."), which otherwise shows only as a deadly signal.
print_reports() {
	grep -E 'ERROR|SUMMARY|==[0-9]+==|Test unit written|^fuzz-[a-z_]+: ' "$1" | head -20
}

# fuzz_one NAME: the three steps; prints the target's report, status 0 when
# it passed.
fuzz_one() {
	local name=$1 bin=build-fuzz/fuzz-$1 seeds=tests/fuzz/corpus/$1
	local work=build-fuzz/corpus/$1 art=build-fuzz/artifacts/$1/
	local log=build-fuzz/fuzz-$1.log rlog=build-fuzz/fuzz-$1.replay.log
	local files execs cov floor_cov floor_eps eps unit kept sha
	mkdir -p "$work" "$art"
	files=("$seeds"/*)
	[ -e "${files[0]}" ] || files=()
	if [ ${#files[@]} -gt 0 ] && ! "$bin" "${limits[@]}" -artifact_prefix="$art" "${files[@]}" >"$rlog" 2>&1; then
		printf 'FAIL fuzz-%s: a seed fails on replay: %s (log: %s)\n' "$name" \
			"$(sed -n 's/^Running: //p' "$rlog" | tail -1)" "$rlog"
		print_reports "$rlog"
		return 1
	fi
	if ! "$bin" -max_total_time="$seconds" "${limits[@]}" -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$art" "$work" "$seeds" >"$log" 2>&1; then
		printf 'FAIL fuzz-%s (log: %s)\n' "$name" "$log"
		print_reports "$log"
		unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
		if [ -n "$unit" ] && [ -f "$unit" ]; then
			print_input "$unit"
			sha=$(sha1sum "$unit" | cut -d' ' -f1)
			kept=$seeds/$sha
			cp "$unit" "$kept"
			echo "kept as $kept: every run replays it from now on; commit it with the fix"
			echo "  (from this log alone: base64 -d > $kept, pasting the input above; then git add $kept)"
		fi
		return 1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	eps=$((${execs:-0} / seconds))
	read -r floor_cov floor_eps < <(awk -v n="$name" '$1 == n { print $2, $3 }' "$floors")
	if [ -z "${floor_cov:-}" ]; then
		printf 'FAIL fuzz-%s: no floor in %s (measured: cov %s, %s executions/s)\n' "$name" "$floors" "$cov" "$eps"
		return 1
	fi
	if [ "${cov:-0}" -lt "$floor_cov" ] || [ "$eps" -lt "$floor_eps" ]; then
		printf 'FAIL fuzz-%s: below its floor in %s: cov %s (floor %s), %s executions/s (floor %s); log: %s\n' \
			"$name" "$floors" "${cov:-none}" "$floor_cov" "$eps" "$floor_eps" "$log"
		return 1
	fi
	printf 'ok   fuzz-%-13s %9s executions in %ss (%s/s, floor %s), cov: %s (floor %s), corpus %s, %s seeds replayed\n' \
		"$name" "$execs" "$seconds" "$eps" "$floor_eps" "$cov" "$floor_cov" "$(ls "$work" | wc -l)" "${#files[@]}"
}

passed=0 failed=0 t0=$SECONDS
declare -A running=()
# reap: waits for one running target, prints its report, counts it.
reap() {
	local pid rc=0
	wait -n -p pid "${!running[@]}" || rc=$?
	cat "build-fuzz/fuzz-${running[$pid]}.report"
	if [ "$rc" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	unset "running[$pid]"
}
for name in "$@"; do
	[ ${#running[@]} -lt "$jobs" ] || reap
	fuzz_one "$name" >"build-fuzz/fuzz-$name.report" 2>&1 &
	running[$!]=$name
done
while [ ${#running[@]} -gt 0 ]; do reap; done
echo "# fuzz: $# targets, $jobs at a time, ${seconds}s each: $((SECONDS - t0))s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
