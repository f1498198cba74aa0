#!/usr/bin/env bash
# The test runner: every suite of tests/suites.tsv, each once, side by side
# within the machine's cores, each judged so that no test can be lost.
# Ends with "N passed, N failed" and exits non-zero on any FAIL or when
# nothing passed.  docs/testing.md ("How a suite is judged") is the manual.
#
# A suite is a script (tests/integration/NAME.sh; hostile, harness and e2b are
# tests/NAME/run.sh, the ASan canary asan is tests/harness/asan.sh) or the
# unit-test binary (unit).  It prints PASS:/FAIL:/SKIP: lines named NAME/... and
# ends with "# done NAME" (tests/lib.sh: finish).  The runner fails it as
# FAIL: NAME/incomplete: REASON when it
#   - runs past its budget (tests/suites.tsv; `timeout`, its whole process
#     group killed), exits non-zero without a FAIL line, or ends without
#     its "# done" marker;
#   - prints fewer results than the table expects (the missing number), a
#     result not named NAME/..., a name twice, or a SKIP that
#     tests/skips.allow does not allow for this mode;
# as FAIL: NAME/count when it prints more than the table says, and as
# FAIL: NAME/sanitizer when it ran under ASan and left a report in its
# NSBOX_SANITIZER_DIR (kept in build-asan/reports/NAME/).
#
# Modes (NSBOX_TEST_MODE):
#   table  (make test)       each suite in its table mode: asan (the
#                            ASan+UBSan build, build-asan/) or plain
#                            (build/, the production binary)
#   plain  (make test-plain) every suite uninstrumented
#   asan   (make test-asan)  the suites whose table mode is asan, under
#                            ASan; a plain one only when TESTS names it
# Environment:
#   TESTS="a b"    only these suites (unit included only when named)
#   JOBS=N         suites at once (default 4; 1 = one after another)
#   NSBOX_TESTS_DIR=DIR   suites, table and allow-list from DIR instead of
#                  tests/ (the harness's self-test plants suites there)
#   NSBOX_TEST_PREP=0     no shared set-up (users, fixtures, registry, npm
#                  packages, VM kernels, default image)
#   UNIT=PATH      another unit-test binary
#   NSBOX_TEST_SHARED_IMAGE=0  no shared default image: its suites pull it
# Every suite's log is kept in build/test-logs/NAME.log, the times in
# build/test-times.tsv (also printed at the end).
set -u
# (One compound command, read whole before it runs: editing this file
# during a run cannot change the run.)
{
cd "$(dirname "$0")/.."
ROOT=$PWD
TD=$(cd "${NSBOX_TESTS_DIR:-$ROOT/tests}" && pwd)
TABLE=$TD/suites.tsv
ALLOW=$TD/skips.allow
MODE=${NSBOX_TEST_MODE:-table}
JOBS=${JOBS:-4}
PREP=${NSBOX_TEST_PREP:-1}
PLAIN_BUILD=${NSBOX_PLAIN_BUILD:-$ROOT/build}
ASAN_BUILD=${NSBOX_ASAN_BUILD:-$ROOT/build-asan}
LOGDIR=${NSBOX_TEST_LOGS:-$ROOT/build/test-logs}
TIMES=${NSBOX_TEST_TIMES:-$ROOT/build/test-times.tsv}
REPORTS=$ASAN_BUILD/reports

case $MODE in table | plain | asan) ;; *)
	echo "tests/run.sh: NSBOX_TEST_MODE is \"$MODE\": it takes table, plain or asan" >&2
	exit 2
	;;
esac
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "tests/run.sh: JOBS=$JOBS is not a number" >&2; exit 2; }

RUN=$(mktemp -d /tmp/nsbox-run.XXXXXX)
chmod 755 "$RUN"
RESULTS=$RUN/results
: >"$RESULTS"
mkdir -p "$LOGDIR" "$(dirname "$TIMES")" "$RUN/san"
rm -f "$LOGDIR"/*.log
declare -A PIDS=() # pid -> suite
declare -A JOB_PID=() JOB_DONE=() # set-up job -> pid, -> its status once done
cleanup() {
	local p
	# (a suite's subshell, then its timeout, which signals the whole group)
	for p in "${!PIDS[@]}" "${JOB_PID[@]}"; do
		pkill -TERM -P "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	[ -f "$RUN/registry/pid" ] && "$ROOT/tests/fixtures/registry.sh" stop "$RUN/registry" >/dev/null 2>&1
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'echo "tests/run.sh: interrupted (SIGINT)"; exit 130' INT
trap 'echo "tests/run.sh: terminated (SIGTERM)"; exit 143' TERM

load1() { cut -d' ' -f1 /proc/loadavg; }
LOAD_START=$(load1)
LOAD_MAX=$LOAD_START
T0=$SECONDS
# A FAIL of the run itself (set-up, the table), not of a suite.
run_fail() { echo "FAIL: run/$1: $2" | tee -a "$RESULTS"; }

# ---- the table and the allow-list -------------------------------------------------
declare -A BUDGET=() EXPECTED=() TMODE=() LOCKS=() MODE_OF=()
ORDER=()
if [ ! -r "$TABLE" ]; then
	run_fail table "no $TABLE"
	echo "0 passed, 1 failed"
	exit 1
fi
while IFS=$' \t' read -r name budget expected tmode locks rest; do
	[[ -z $name || $name == \#* ]] && continue
	if ! [[ $budget =~ ^[0-9]+$ ]] || ! [[ $expected =~ ^[0-9]+$ ]] ||
		! [[ $tmode =~ ^(asan|plain)$ ]] || [ -z "${locks:-}" ] || [ -n "${rest:-}" ]; then
		run_fail table "$TABLE: bad line for $name (name budget_s expected asan|plain locks)"
		continue
	fi
	[ -n "${BUDGET[$name]:-}" ] && run_fail table "$TABLE: $name twice"
	BUDGET[$name]=$budget EXPECTED[$name]=$expected TMODE[$name]=$tmode LOCKS[$name]=$locks
	ORDER+=("$name")
done <"$TABLE"

# tests/skips.allow: "SUITE/NAME  MODES  REASON", MODES asan, plain or any.
declare -A SKIP_OK=()
if [ -r "$ALLOW" ]; then
	while IFS=$' \t' read -r name modes reason; do
		[[ -z $name || $name == \#* ]] && continue
		if ! [[ $modes =~ ^(asan|plain|any)$ ]] || [ -z "${reason:-}" ]; then
			run_fail skips_allow "$ALLOW: $name needs MODES (asan, plain or any) and a reason"
			continue
		fi
		SKIP_OK[$name]=$modes
	done <"$ALLOW"
fi

# A suite's script, or nothing when it is the unit binary.
suite_file() {
	case $1 in
	unit) ;;
	hostile | harness | e2b) echo "$TD/$1/run.sh" ;;
	*) if [ -f "$TD/integration/$1.sh" ]; then echo "$TD/integration/$1.sh"; else echo "$TD/harness/$1.sh"; fi ;;
	esac
}
# Every integration suite on disk is in the table (a new one cannot be
# forgotten), and every row names a suite that exists.
for f in "$TD"/integration/*.sh; do
	[ -e "$f" ] || continue
	n=$(basename "$f" .sh)
	[ -n "${BUDGET[$n]:-}" ] || run_fail table "$f is not in $TABLE"
done
for n in "${ORDER[@]}"; do
	[ "$n" = unit ] || [ -f "$(suite_file "$n")" ] || run_fail table "$TABLE names $n: no $(suite_file "$n")"
done

# The suites of this run, and the build each one runs against.
SELECTED=()
for n in "${ORDER[@]}"; do
	if [ -n "${TESTS:-}" ]; then
		[[ " $TESTS " == *" $n "* ]] || continue
	fi
	case $MODE in
	table) m=${TMODE[$n]} ;;
	plain) m=plain ;;
	asan)
		m=asan
		if [ "${TMODE[$n]}" = plain ] && [[ " ${TESTS:-} " != *" $n "* ]]; then
			echo "# $n: not run by test-asan (plain in tests/suites.tsv: the reason is there)"
			continue
		fi
		;;
	esac
	# The ASan canary proves report files are caught: under ASan only.
	[ "$n" = asan ] && [ "$m" != asan ] && continue
	MODE_OF[$n]=$m
	SELECTED+=("$n")
done
for n in ${TESTS:-}; do
	[ -n "${BUDGET[$n]:-}" ] || run_fail table "TESTS names $n, which $TABLE does not list"
done
# ---- shared set-up, once per run ----------------------------------------------------
# The set-up jobs a suite waits for (they run in the background while other
# suites start): npm packages, VM kernels, the default image, the CI image
# (images/ci/build.sh, for the nested suites: every suite named nested*).
needs_of() {
	case $1 in
	mcp_stdio | interp | fleet | smoke | watch | services) echo npm-mcp ;;
	mcp_http) echo npm-mcp npm-conformance ;;
	conformance) echo npm-conformance ;;
	clients) echo npm-conformance npm-clients ;;
	disk | vm_cgroup_v2 | pod | hostile) echo vm ;;
	host_profiles | vm_landlock) echo vm vm-kernels ;;
	esac
	case $1 in interp | packages | services) echo image ;; esac
	case $1 in nested*) echo ci-image ;; esac
}
# bg_job NAME CMD...: a set-up job, its output in LOGDIR/setup-NAME.log.
bg_job() {
	local name=$1
	shift
	("$@") </dev/null >"$LOGDIR/setup-$name.log" 2>&1 &
	JOB_PID[$name]=$!
}
# default_image: the layout built (or found in its cache) and pulled once
# into a root store and a store of nsboxtest's; the suites that need it
# start from hard-link copies (tests/lib.sh: seed_default_store).
default_image() {
	set -e
	local start=$SECONDS layout
	layout=$("$ROOT/images/default/build.sh")
	mkdir -p "$NSBOX_DEFAULT_STORE_RL"
	install -m 755 "$PLAIN_BUILD/nsbox" "$RUN/default/nsbox"
	chown nsboxtest: "$NSBOX_DEFAULT_STORE_RL" && chmod 700 "$NSBOX_DEFAULT_STORE_RL"
	"$RUN/default/nsbox" --store "$NSBOX_DEFAULT_STORE" pull --quiet "oci:$layout:latest" &
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort "$RUN/default/nsbox" --store "$NSBOX_DEFAULT_STORE_RL" \
		pull --quiet "oci:$layout:latest"
	wait $!
	touch "$NSBOX_DEFAULT_STORE/.seed-ready" "$NSBOX_DEFAULT_STORE_RL/.seed-ready"
	echo "# the default image pulled into the run's two shared stores in $((SECONDS - start)) s"
}
# ci_image: the CI image's layout built once for the run (or found in its
# cache, images/ci/build.sh); the nested suites pull it from
# NSBOX_CI_LAYOUT into their stores and tag it localhost/nsbox-ci:latest.
ci_image() {
	set -e
	local start=$SECONDS
	"$ROOT/images/ci/build.sh" >/dev/null
	echo "# the CI image's layout ready in $((SECONDS - start)) s ($(du -sh "$NSBOX_CI_LAYOUT" | cut -f1))"
}
vm_kernels() {
	"$ROOT/tests/vm/setup.sh" --kernel bullseye && "$ROOT/tests/vm/setup.sh" --kernel bookworm-backports
}
if [ "$PREP" != 0 ]; then
	echo "== set-up"
	"$ROOT/tests/setup-users.sh" || run_fail users "tests/setup-users.sh failed"
	if ! "$ROOT/tests/fixtures/build.sh"; then
		run_fail fixtures "tests/fixtures/build.sh failed"
		echo "0 passed, $(grep -c '^FAIL: ' "$RESULTS") failed"
		exit 1
	fi
	if ! port=$("$ROOT/tests/fixtures/registry.sh" start "$RUN/registry") ||
		! "$ROOT/tests/fixtures/registry.sh" push "$RUN/registry" >"$RUN/push.log" 2>&1; then
		cat "$RUN/push.log" 2>/dev/null
		run_fail registry "the local registry could not be started"
		echo "0 passed, $(grep -c '^FAIL: ' "$RESULTS") failed"
		exit 1
	fi
	export NSBOX_TEST_REGISTRY=127.0.0.1:$port
	echo "# registry on $NSBOX_TEST_REGISTRY"
	export NSBOX_FIXTURES=${NSBOX_FIXTURES:-/var/cache/nsbox/fixtures}
	export NSBOX_DEFAULT_LAYOUT=${NSBOX_DEFAULT_LAYOUT:-/var/cache/nsbox/default-image/oci}
	export NSBOX_CI_LAYOUT=${NSBOX_CI_IMAGE_CACHE:-/var/cache/nsbox/ci-image}/oci
	export NSBOX_DEFAULT_STORE=$RUN/default/root NSBOX_DEFAULT_STORE_RL=$RUN/default/user
	# Each job once, here, rather than by suites side by side (a suite's own
	# call of the same script then finds everything current).
	wanted=" $(for n in "${SELECTED[@]}"; do needs_of "$n"; done | sort -u | tr '\n' ' ')"
	[[ $wanted == *" npm-mcp "* ]] && bg_job npm-mcp "$ROOT/tests/mcp/setup.sh"
	[[ $wanted == *" npm-conformance "* ]] && bg_job npm-conformance "$ROOT/tests/conformance/setup.sh"
	[[ $wanted == *" npm-clients "* ]] && bg_job npm-clients "$ROOT/tests/clients/setup.sh"
	[[ $wanted == *" vm "* ]] && bg_job vm "$ROOT/tests/vm/setup.sh"
	[[ $wanted == *" vm-kernels "* ]] && bg_job vm-kernels vm_kernels
	[[ $wanted == *" ci-image "* ]] && bg_job ci-image ci_image
	if [ "${NSBOX_TEST_SHARED_IMAGE:-1}" = 0 ]; then
		unset NSBOX_DEFAULT_STORE NSBOX_DEFAULT_STORE_RL # (each suite pulls it, to compare)
	elif [[ $wanted == *" image "* ]]; then
		bg_job image default_image
	fi
fi
export NSBOX_PLAIN=$PLAIN_BUILD/nsbox
echo "# set-up $((SECONDS - T0)) s; ${#SELECTED[@]} suites, mode $MODE, $JOBS at once, load $LOAD_START"

# ---- running one suite -----------------------------------------------------------------
declare -A STARTED=() ELAPSED=() VERDICT=() COUNTS=()
HELD=() # the locks held now, "LOCK=SUITE"

start_suite() {
	local n=$1 m=${MODE_OF[$1]} budget=${BUDGET[$1]} cmd env san
	if [ "$n" = unit ]; then
		if [ "$m" = asan ]; then cmd=("${UNIT:-$ASAN_BUILD/unit-tests}"); else cmd=("${UNIT:-$PLAIN_BUILD/unit-tests}"); fi
	else
		cmd=(bash "$(suite_file "$n")")
	fi
	env=(-u NSBOX_ASAN -u ASAN_OPTIONS -u UBSAN_OPTIONS -u NSBOX_SANITIZER_DIR NSBOX="$PLAIN_BUILD/nsbox")
	if [ "$m" = asan ]; then
		san=$RUN/san/$n
		mkdir -p "$san" && chmod 1777 "$san"
		# exitcode=99 keeps a sanitizer abort apart from nsbox's own exit 1;
		# clang's one runtime serves both: they name the same files.
		env=(NSBOX="$ASAN_BUILD/nsbox" NSBOX_ASAN=1 NSBOX_SANITIZER_DIR="$san"
			ASAN_OPTIONS="log_path=$san/report:exitcode=99:halt_on_error=1:detect_leaks=1"
			UBSAN_OPTIONS="log_path=$san/report:exitcode=99:halt_on_error=1:print_stacktrace=1")
	fi
	echo "-> $n ($m, budget ${budget} s)"
	# timeout makes its own process group and signals all of it: a suite
	# and whatever it started in the background end together.
	# The subshell notes the CPU time the suite's processes used (those it
	# waited for), to tell waiting suites from busy ones.
	(
		cd "$ROOT" || exit 2
		env "${env[@]}" timeout -k 20 "$budget" "${cmd[@]}"
		rc=$?
		read -r -a st </proc/$BASHPID/stat # cutime, cstime: clock ticks
		echo $(((st[15] + st[16]) / $(getconf CLK_TCK))) >"$RUN/cpu.$n"
		exit $rc
	) </dev/null >"$LOGDIR/$n.log" 2>&1 &
	PIDS[$!]=$n
	STARTED[$n]=$SECONDS
}

# judge SUITE STATUS: the runner's verdict on a finished suite, as FAIL
# lines in the results (its own lines are there already).
judge() {
	local n=$1 rc=$2 log=$LOGDIR/$1.log budget=${BUDGET[$1]} want=${EXPECTED[$1]}
	local lines names own foreign ran nfail skips bad_skips=() dups why=() s m=${MODE_OF[$1]}
	lines=$(grep -aE '^(PASS|FAIL|SKIP): ' "$log")
	[ -n "$lines" ] && printf '%s\n' "$lines" >>"$RESULTS"
	# A name ends at the first ": " (the reason follows) or at the line's end.
	names=$(printf '%s\n' "$lines" | sed -nE 's/^(PASS|FAIL|SKIP): //; T; s/: .*//; p')
	own=$(printf '%s\n' "$names" | grep -c "^$n/")
	foreign=$(printf '%s\n' "$names" | grep -v "^$n/" | grep -c .)
	ran=$own
	nfail=$(printf '%s\n' "$lines" | grep -c '^FAIL: ')
	skips=$(printf '%s\n' "$lines" | sed -nE 's/^SKIP: //; T; s/: .*//; p')
	for s in $skips; do
		case ${SKIP_OK[$s]:-none} in any | "$m") ;; *) bad_skips+=("$s") ;; esac
	done
	dups=$(printf '%s\n' "$names" | grep . | sort | uniq -d | head -3 | tr '\n' ' ')
	# timeout's 124, or 137 once it had to SIGKILL; a suite killed by
	# someone else (137 too) ended before its budget.
	local timed_out=0
	{ [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ "${ELAPSED[$n]}" -ge "$budget" ] && timed_out=1
	if [ $timed_out = 1 ]; then
		why+=("ran past its budget of $budget s (tests/suites.tsv) and was killed")
	elif [ "$rc" != 0 ] && [ "$nfail" = 0 ]; then
		why+=("exited $rc without a FAIL line")
	fi
	if ! grep -aqx "# done $n" "$log" && [ $timed_out = 0 ]; then
		why+=("ended without its marker \"# done $n\" (last line: $(grep -av '^$' "$log" | tail -1 | cut -c1-120))")
	fi
	[ "$ran" -lt "$want" ] && why+=("$ran of $want tests ran ($((want - ran)) missing)")
	[ "$foreign" -gt 0 ] && why+=("$foreign results not named $n/...: $(printf '%s\n' "$names" | grep -v "^$n/" | head -2 | tr '\n' ' ')")
	[ -n "$dups" ] && why+=("names printed more than once: $dups")
	[ ${#bad_skips[@]} -gt 0 ] && why+=("SKIP not allowed in $m mode by tests/skips.allow: ${bad_skips[*]}")
	VERDICT[$n]=ok
	[ "$nfail" -gt 0 ] && VERDICT[$n]=FAIL
	if [ ${#why[@]} -gt 0 ]; then
		local all=${why[0]} i
		for ((i = 1; i < ${#why[@]}; i++)); do all="$all; ${why[$i]}"; done
		echo "FAIL: $n/incomplete: $all" >>"$RESULTS"
		VERDICT[$n]=FAIL
	fi
	if [ "$ran" -gt "$want" ]; then
		echo "FAIL: $n/count: $ran tests ran, tests/suites.tsv says $want" >>"$RESULTS"
		VERDICT[$n]=FAIL
	fi
	[ "$m" = asan ] && collect_reports "$n"
	COUNTS[$n]="$ran $(printf '%s\n' "$lines" | grep -c '^PASS: ') $nfail $(printf '%s\n' "$skips" | grep -c .)"
	return 0
}

# collect_reports SUITE: every file in the suite's sanitizer directory is a
# report (a process whose exit status nobody reads still leaves one), but
# one that holds nothing but LeakSanitizer's "Unable to get registers from
# thread N." (a thread exiting while the leak check stops them all: a
# warning, the check goes on and reports any leak in the same file) is
# noted and kept, not a finding.
collect_reports() {
	local n=$1 dir=$RUN/san/$1 files f what k=0
	files=$(find "$dir" -type f 2>/dev/null | sort)
	[ -z "$files" ] && return 0
	mkdir -p "$REPORTS/$n"
	for f in $files; do
		cp "$f" "$REPORTS/$n/" && rm -f "$f"
		if ! grep -qvE '^(==[0-9]+==Unable to get registers from thread [0-9]+\.)?$' "$REPORTS/$n/${f##*/}"; then
			echo "# $n: LeakSanitizer could not stop an exiting thread (a warning, no finding): ${REPORTS#"$ROOT"/}/$n/${f##*/}"
			mv "$REPORTS/$n/${f##*/}" "$REPORTS/$n/${f##*/}.warning"
			continue
		fi
		k=$((k + 1))
	done
	[ "$k" = 0 ] && return 0
	f=$(ls "$REPORTS/$n" | grep -v '\.warning$' | head -1)
	what=$(grep -m1 -hE 'ERROR: |runtime error|SUMMARY' "$REPORTS/$n/$f" | cut -c1-200)
	echo "FAIL: $n/sanitizer: $k report files, the first: ${what:-$(head -1 "$REPORTS/$n/$f")} (${REPORTS#"$ROOT"/}/$n/)" >>"$RESULTS"
	VERDICT[$n]=FAIL
}

# show SUITE: what the log says beyond its PASS lines, and the verdict.
show() {
	local n=$1 c
	read -r ran pass nfail nskip <<<"${COUNTS[$n]}"
	c=$(grep -c "^FAIL: $n/\(incomplete\|count\|sanitizer\): " "$RESULTS")
	echo "== $n: $pass passed, $((nfail + c)) failed, $nskip skipped; $ran of ${EXPECTED[$n]} ran (${MODE_OF[$n]}, ${ELAPSED[$n]} s of ${BUDGET[$n]})"
	grep -aE '^(FAIL|SKIP): |^# ' "$LOGDIR/$n.log" | grep -avx "# done $n" | sed 's/^/   /'
	grep "^FAIL: $n/\(incomplete\|count\|sanitizer\): " "$RESULTS" | sed 's/^/   /'
}

# ---- the scheduler -------------------------------------------------------------------
# Longest first (by budget), as many as JOBS at once; a suite waits while
# another holds one of its locks (tests/suites.tsv) or while a set-up job
# it needs still runs (needs_of).
QUEUE=($(for n in "${SELECTED[@]}"; do echo "${BUDGET[$n]} $n"; done | sort -k1,1nr -k2 | cut -d' ' -f2))
ready() {
	local n=$1 l h j
	for j in $(needs_of "$n"); do
		[ -z "${JOB_PID[$j]:-}" ] || return 1
	done
	for l in ${LOCKS[$n]//,/ }; do
		[ "$l" = - ] && continue
		for h in "${HELD[@]}"; do [ "${h%%=*}" = "$l" ] && return 1; done
	done
	return 0
}
setup_only() { # SUITE: it waits for a set-up job, and for no lock
	local l h
	for l in ${LOCKS[$1]//,/ }; do
		for h in "${HELD[@]}"; do [ "${h%%=*}" = "$l" ] && return 1; done
	done
	return 0
}
take_locks() {
	local l
	for l in ${LOCKS[$1]//,/ }; do [ "$l" = - ] || HELD+=("$l=$1"); done
}
drop_locks() {
	local h keep=()
	for h in "${HELD[@]}"; do [ "${h#*=}" = "$1" ] || keep+=("$h"); done
	HELD=("${keep[@]}")
}
job_of() { # PID: the set-up job of that pid, if any
	local j
	for j in "${!JOB_PID[@]}"; do [ "${JOB_PID[$j]}" = "$1" ] && echo "$j"; done
}
while [ ${#QUEUE[@]} -gt 0 ] || [ ${#PIDS[@]} -gt 0 ]; do
	rest=()
	free=$((JOBS - ${#PIDS[@]}))
	for n in "${QUEUE[@]}"; do
		if [ "$free" -gt 0 ] && ready "$n"; then
			take_locks "$n"
			start_suite "$n"
			free=$((free - 1))
		else
			# The longest suite waiting only for a set-up job keeps a slot:
			# handed to a short one, it would start late and end last.
			[ ${#rest[@]} = 0 ] && [ "$n" = "${QUEUE[0]}" ] && setup_only "$n" && free=$((free - 1))
			rest+=("$n")
		fi
	done
	QUEUE=("${rest[@]}")
	if [ ${#PIDS[@]} -eq 0 ] && [ ${#QUEUE[@]} -gt 0 ] && [ ${#JOB_PID[@]} -eq 0 ]; then
		run_fail scheduler "nothing can start: ${QUEUE[*]}"
		break
	fi
	done_pid=
	wait -n -p done_pid
	rc=$?
	[ -z "$done_pid" ] && continue
	j=$(job_of "$done_pid")
	if [ -n "$j" ]; then
		# A failed job is no verdict: its suites run its script themselves
		# and fail with their own message (or pull the image themselves).
		unset "JOB_PID[$j]"
		JOB_DONE[$j]=$rc
		echo "# set-up $j: $([ "$rc" = 0 ] && echo done || echo "failed, status $rc") at $((SECONDS - T0)) s: $(grep -v '^$' "$LOGDIR/setup-$j.log" | tail -1 | cut -c1-200)"
		continue
	fi
	n=${PIDS[$done_pid]:-}
	[ -z "$n" ] && continue
	unset "PIDS[$done_pid]"
	drop_locks "$n"
	ELAPSED[$n]=$((SECONDS - STARTED[$n]))
	l=$(load1)
	awk -v a="$l" -v b="$LOAD_MAX" 'BEGIN { exit !(a > b) }' && LOAD_MAX=$l
	judge "$n" "$rc"
	show "$n"
done
wait

# Reports that arrived after their suite ended (a detached removal).
for n in "${SELECTED[@]}"; do
	[ "${MODE_OF[$n]}" = asan ] && [ -n "${COUNTS[$n]:-}" ] && collect_reports "$n"
done

# cpu_of SUITE: user + system seconds of the suite's waited-for processes.
cpu_of() {
	cat "$RUN/cpu.$1" 2>/dev/null || echo -
}

# ---- the totals ---------------------------------------------------------------------------
WALL=$((SECONDS - T0))
{
	printf '# %s mode %s, %s at once, wall %s s, load %s at the start, %s at most, %s at the end\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$MODE" "$JOBS" "$WALL" "$LOAD_START" "$LOAD_MAX" "$(load1)"
	printf 'suite\tmode\tseconds\tbudget\tran\texpected\tpassed\tfailed\tskipped\tverdict\tcpu_s\n'
	for n in "${SELECTED[@]}"; do
		[ -n "${COUNTS[$n]:-}" ] || continue
		read -r ran pass nfail nskip <<<"${COUNTS[$n]}"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "${MODE_OF[$n]}" "${ELAPSED[$n]}" "${BUDGET[$n]}" \
			"$ran" "${EXPECTED[$n]}" "$pass" "$(grep -c "^FAIL: $n/" "$RESULTS")" "$nskip" "${VERDICT[$n]}" "$(cpu_of "$n")"
	done
} >"$TIMES"
echo
echo "# suite times (${TIMES#"$ROOT"/}), longest first:"
tail -n +3 "$TIMES" | sort -t$'\t' -k3,3nr |
	awk -F'\t' '{ printf "#   %-16s %-5s %5d s (budget %4d, cpu %4d s)  %4d tests  %s\n", $1, $2, $3, $4, $11, $5, $10 }'
echo "# $(head -1 "$TIMES" | cut -c3-)"
if grep -q '^SKIP: ' "$RESULTS"; then
	echo "# skipped (each allowed by tests/skips.allow):"
	grep '^SKIP: ' "$RESULTS" | sed 's/^/#   /'
fi
passed=$(grep -c '^PASS: ' "$RESULTS")
failed=$(grep -c '^FAIL: ' "$RESULTS")
echo
grep '^FAIL: ' "$RESULTS"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
exit
}
