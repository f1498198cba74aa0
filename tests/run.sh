#!/usr/bin/env bash
# Runs every test: the C unit tests and the shell integration suites, with
# real fixture images served by a real local registry.  Ends with the line
# "N passed, N failed".  TESTS="name ..." runs only those integration suites;
# UNIT=PATH runs another unit-test binary (make test-asan).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG=$(mktemp -d /tmp/nsbox-run.XXXXXX)
chmod 755 "$LOG"

cleanup() {
	[ -f "$LOG/registry/pid" ] && tests/fixtures/registry.sh stop "$LOG/registry" >/dev/null 2>&1
	rm -rf "$LOG"
}
trap cleanup EXIT

echo "== fixtures"
if ! tests/fixtures/build.sh; then
	echo "fixtures could not be built"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "== registry"
if ! port=$(tests/fixtures/registry.sh start "$LOG/registry") ||
	! tests/fixtures/registry.sh push "$LOG/registry" >"$LOG/push.log" 2>&1; then
	cat "$LOG/push.log" 2>/dev/null
	echo "the local registry could not be started"
	echo "0 passed, 1 failed"
	exit 1
fi
export NSBOX_TEST_REGISTRY=127.0.0.1:$port
echo "registry on $NSBOX_TEST_REGISTRY"

results=$LOG/results
: >"$results"
run_suite() {
	local name=$1
	shift
	echo "== $name"
	local start=$SECONDS
	"$@" 2>&1 | tee -a "$results" | grep -E '^(PASS|FAIL|#)' | grep -v '^PASS' || true
	echo "   ($((SECONDS - start)) s)"
}

if [ -x "${UNIT:-build/unit-tests}" ]; then
	run_suite unit "${UNIT:-build/unit-tests}"
else
	# A missing unit binary is a failure, not a suite that ran nothing.
	echo "FAIL: unit/binary: ${UNIT:-build/unit-tests} is not built (make build/unit-tests)" | tee -a "$results"
fi
# The integration suites, then the hostile suite (tests/hostile/run.sh).
for t in tests/integration/*.sh tests/hostile/run.sh; do
	name=$(basename "$t" .sh)
	[ "$name" = run ] && name=hostile
	if [ -n "${TESTS:-}" ] && ! [[ " $TESTS " == *" $name "* ]]; then
		continue
	fi
	run_suite "$name" bash "$t"
done

passed=$(grep -c '^PASS: ' "$results")
failed=$(grep -c '^FAIL: ' "$results")
echo
grep '^FAIL: ' "$results"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
