#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS from its seed corpus
# (tests/fuzz/corpus/NAME, never written) plus a working corpus in
# build-fuzz/corpus/NAME that grows across runs on one machine.  Prints one
# line per target with its executions, then "N passed, N failed".  A crash
# leaves its input in build-fuzz/artifacts/NAME/ and fails the target.
#   usage: tests/fuzz/run.sh SECONDS NAME...
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:?seconds}
shift
passed=0 failed=0
for name in "$@"; do
    bin=build-fuzz/fuzz-$name
    work=build-fuzz/corpus/$name art=build-fuzz/artifacts/$name/
    mkdir -p "$work" "$art"
    log=build-fuzz/fuzz-$name.log
    # -rss_limit_mb bounds a leak or a bomb; -timeout flags an input that
    # hangs; -max_len lets layers be whole small archives.
    if "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$art" \
        "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
        printf 'ok   fuzz-%-8s %9s executions in %ss, %s, corpus %s\n' "$name" "$execs" \
            "$seconds" "$cov" "$(ls "$work" | wc -l)"
        passed=$((passed + 1))
    else
        printf 'FAIL fuzz-%s (log: %s)\n' "$name" "$log"
        # The sanitizers' reports, and the target's own failed check
        # ("fuzz-NAME: ..."), which otherwise shows only as a deadly signal.
        grep -E 'ERROR|SUMMARY|==[0-9]+==|Test unit written|^fuzz-[a-z]+: ' "$log" | head -20
        # The input itself, so a CI log alone reproduces the failure (CI's
        # clone, and the artifact in it, are gone once the run ends).
        unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        if [ -n "$unit" ] && [ -f "$unit" ]; then
            echo "input ($(stat -c %s "$unit") bytes; base64 of the first 4 KiB):"
            head -c 4096 "$unit" | base64 -w 76
        fi
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
