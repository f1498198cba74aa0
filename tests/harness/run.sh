#!/usr/bin/env bash
# The harness's own test: tests/run.sh and .ci/lib.sh against planted
# failures.  Each case runs the real runner on a tests directory of its own
# (NSBOX_TESTS_DIR: planted suites, a suites.tsv and a skips.allow; no
# shared set-up) and passes only when the run goes red (a non-zero status,
# no "0 failed" total) with a FAIL line naming the planted suite and what
# went wrong.  A green control proves the planted tests directory itself
# is sound.  The CI steps are proved the same way on planted commands.
SUITE=harness
. "$(dirname "$0")/../lib.sh"

P=$T/tests
mkdir -p "$P/integration"
cp "$ROOT/tests/lib.sh" "$P/lib.sh"

# plant NAME BODY: a suite that sources lib.sh, then runs BODY.
plant() {
	printf '#!/usr/bin/env bash\nSUITE=%s\n. "$(dirname "$0")/../lib.sh"\n%s\n' "$1" "$2" >"$P/integration/$1.sh"
}
plant good 'pass one; pass two; skip three "allowed everywhere"; finish'
plant killed 'pass one; pass two; kill -KILL $$; pass three; pass four; finish'
plant unbound 'pass one; echo "$NOT_SET_ANYWHERE"; pass two; pass three; finish'
plant pyharness 'python3 -c "
print(\"PASS: pyharness/case1\", flush=True)
raise OSError(\"an exception outside any case\")
print(\"PASS: pyharness/case2\")"
rc=$?
[ $rc -le 1 ] || fail py "exited $rc without finishing"
finish'
# The test libraries (tests/lib/nsbox_test.py, .mjs): an exception outside
# any test is a FAIL named SUITE/harness and exit status 2.  (The planted
# lib.sh's ROOT is the planted directory: the libraries' real path is
# written into the suite.)
plant pylib 'env SUITE="$SUITE" python3 -c "
import sys
sys.path.insert(0, sys.argv[1])
import nsbox_test as nt
nt.pass_(\"case1\")
raise OSError(\"outside any case\")
nt.pass_(\"case2\")" '"'$ROOT/tests/lib'"'
rc=$?
[ $rc = 2 ] && pass status_2 || fail status_2 "python exited $rc"
finish'
plant jslib 'env SUITE="$SUITE" node --input-type=module -e "
const nt = await import(process.argv[1]);
nt.pass(\"case1\");
throw new Error(\"outside any case\");
nt.pass(\"case2\");" '"'$ROOT/tests/lib/nsbox_test.mjs'"'
rc=$?
[ $rc = 2 ] && pass status_2 || fail status_2 "node exited $rc"
finish'
plant empty 'finish'
plant nothing 'finish'
plant hangs '(sleep 7341 &); pass before; sleep 600; finish'
plant noskip 'pass one; skip two "not in the allow-list"; finish'
plant asanskip 'pass one; skip two "allowed under ASan only"; finish'
plant fewer 'pass one; pass two; finish'
plant more 'pass one; pass two; pass three; pass four; finish'
plant foreign 'pass one; echo "PASS: someone_else/two"; finish'
plant twice 'pass one; pass one; finish'
plant nomarker 'pass one; pass two; exit 0'
plant report 'pass one; echo "==42==ERROR: AddressSanitizer: heap-use-after-free" >"$NSBOX_SANITIZER_DIR/report.42"; finish'
cat >"$P/suites.tsv" <<'EOF'
# planted: name budget expected mode locks
good	30	3	plain	-
killed	30	4	plain	-
unbound	30	3	plain	-
pyharness	30	3	plain	-
pylib	30	3	plain	-
jslib	30	3	plain	-
empty	30	2	plain	-
nothing	30	0	plain	-
hangs	3	1	plain	-
noskip	30	2	plain	-
asanskip	30	2	plain	-
fewer	30	3	plain	-
more	30	3	plain	-
foreign	30	2	plain	-
twice	30	2	plain	-
nomarker	30	2	plain	-
report	30	1	asan	-
EOF
cat >"$P/skips.allow" <<'EOF'
good/three	any	a planted skip, allowed
asanskip/two	asan	a planted skip, allowed only under ASan
EOF

# runner TESTS [ENV...]: the real runner on the planted directory; its
# output in OUT, its status in RC.
runner() {
	local tests=$1
	shift
	OUT=$(env "$@" TESTS="$tests" NSBOX_TESTS_DIR="$P" NSBOX_TEST_PREP=0 NSBOX_TEST_LOGS="$T/logs" \
		NSBOX_TEST_TIMES="$T/times.tsv" NSBOX_ASAN_BUILD="$T/asan" JOBS=2 bash "$ROOT/tests/run.sh" 2>&1)
	RC=$?
}
# red NAME TESTS PATTERN [ENV...]: the run of TESTS fails, with a FAIL
# line matching PATTERN (grep -E).
red() {
	local name=$1 tests=$2 pattern=$3
	shift 3
	runner "$tests" "$@"
	if [ "$RC" = 0 ]; then
		fail "$name" "the run went green: $(printf '%s' "$OUT" | tail -2 | tr '\n' ' ')"
	elif ! printf '%s\n' "$OUT" | grep -E '^FAIL: ' | grep -Eq -- "$pattern"; then
		fail "$name" "no FAIL line /$pattern/: $(printf '%s\n' "$OUT" | grep '^FAIL: ' | head -3 | tr '\n' ' ')"
	elif printf '%s\n' "$OUT" | tail -1 | grep -q ' 0 failed$'; then
		fail "$name" "the total says 0 failed: $(printf '%s' "$OUT" | tail -1)"
	else
		pass "$name"
	fi
}

runner good
if [ "$RC" = 0 ] && printf '%s\n' "$OUT" | tail -1 | grep -qx '2 passed, 0 failed' &&
	printf '%s\n' "$OUT" | grep -q '^#   SKIP: good/three: allowed everywhere'; then
	pass green_control
else
	fail green_control "status $RC: $(printf '%s' "$OUT" | grep -E '^FAIL|passed' | tr '\n' ' ')"
fi
red killed_halfway killed '^FAIL: killed/incomplete: exited 137 without a FAIL line; ended without its marker .*; 2 of 4 tests ran \(2 missing\)'
red set_u_abort unbound '^FAIL: unbound/incomplete: exited 1 without a FAIL line; .*1 of 3 tests ran \(2 missing\)'
red python_harness_exception pyharness '^FAIL: pyharness/incomplete: 1 of 3 tests ran \(2 missing\)'
for lang in py js; do
	red "${lang}_library_exception" ${lang}lib "^FAIL: ${lang}lib/harness: (OSError: )?outside any case"
	# (case1, harness and status_2: the table's 3, all there, status_2 passed)
	if ! printf '%s\n' "$OUT" | grep -Eq "^FAIL: ${lang}lib/(status_2|incomplete|count)"; then
		pass "${lang}_library_exception_status_2"
	else
		fail "${lang}_library_exception_status_2" "$(printf '%s\n' "$OUT" | grep "^[A-Z]*: ${lang}lib/" | tr '\n' ' ')"
	fi
done
red suite_with_no_tests empty '^FAIL: empty/incomplete: 0 of 2 tests ran \(2 missing\)'
# A run in which nothing passed is red by itself (a table saying 0 too).
runner nothing
if [ "$RC" != 0 ] && printf '%s\n' "$OUT" | tail -1 | grep -qx '0 passed, 0 failed'; then
	pass nothing_passed_is_red
else
	fail nothing_passed_is_red "status $RC: $(printf '%s' "$OUT" | tail -1)"
fi
start=$SECONDS
red hang_past_budget hangs '^FAIL: hangs/incomplete: ran past its budget of 3 s'
if [ $((SECONDS - start)) -lt 60 ] && ! pgrep -f 'sleep 7341' >/dev/null; then
	pass hang_killed_with_its_children
else
	fail hang_killed_with_its_children "$((SECONDS - start)) s; left: $(pgrep -af 'sleep 7341' | tr '\n' ' ')"
	pkill -f 'sleep 7341'
fi
red skip_not_allowed noskip '^FAIL: noskip/incomplete: SKIP not allowed in plain mode by tests/skips.allow: noskip/two'
red skip_allowed_in_another_mode asanskip '^FAIL: asanskip/incomplete: SKIP not allowed in plain mode'
red count_below_table fewer '^FAIL: fewer/incomplete: 2 of 3 tests ran \(1 missing\)'
red count_above_table more '^FAIL: more/count: 4 tests ran, tests/suites.tsv says 3'
red result_of_another_suite foreign '^FAIL: foreign/incomplete: .*results not named foreign/'
red name_twice twice '^FAIL: twice/incomplete: .*names printed more than once: twice/one'
red no_marker nomarker '^FAIL: nomarker/incomplete: ended without its marker "# done nomarker"'
red sanitizer_report report '^FAIL: report/sanitizer: 1 report files, the first: ==42==ERROR: AddressSanitizer: heap-use-after-free' \
	NSBOX_TEST_MODE=asan
plant stray 'pass one; finish'
red suite_not_in_table good '^FAIL: run/table: .*stray.sh is not in'
rm -f "$P/integration/stray.sh"

# -- the CI steps (.ci/lib.sh) ------------------------------------------------------
ci() { # the step function on planted commands, under .ci/run's set -euo
	# pipefail, then a second step that must still run; prints the summary
	bash -c '
set -euo pipefail
CI_LOGS=$1 CI_TIMES=$1/times.tsv
. "$2/.ci/lib.sh"
shift 2
step planted "$@"
step after echo "1 passed, 0 failed"
ci_summary' _ "$T/ci" "$ROOT" "$@" 2>&1
}
mkdir -p "$T/ci"
ci_red() { # NAME WHY CMD...: the step fails, saying WHY
	local name=$1 why=$2 out rc
	shift 2
	out=$(ci "$@")
	rc=$?
	if [ "$rc" != 0 ] && printf '%s\n' "$out" | grep -q "^ci: FAILED STEP planted: .*$why" &&
		printf '%s\n' "$out" | grep -q '^ci: after: 1 passed, 0 failed, status 0' &&
		! printf '%s\n' "$out" | tail -1 | grep -q ' 0 failed$'; then
		pass "$name"
	else
		fail "$name" "status $rc: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
}
out=$(ci sh -c 'echo "5 passed, 0 failed"')
[ $? = 0 ] && printf '%s\n' "$out" | tail -1 | grep -qx '6 passed, 0 failed' && pass ci_green_control ||
	fail ci_green_control "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
ci_red ci_step_with_no_tests '0 passed' sh -c 'echo "0 passed, 0 failed"'
ci_red ci_step_status_counts 'exit status 3' sh -c 'echo "5 passed, 0 failed"; exit 3'
ci_red ci_step_without_total 'printed no' sh -c 'echo "make: *** [test] Error 2"; exit 0'
ci_red ci_step_with_failures '1 failed' sh -c 'echo "4 passed, 1 failed"; exit 1'
finish
