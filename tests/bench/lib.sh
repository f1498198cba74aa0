# Shared pieces of tests/bench/run.sh (`make bench`), sourced by it after its
# settings (ROOT, F, NSBOX, RUNS, BENCHES): messages, the scratch directory
# and its cleanup trap, the local registry, timing (run_timed, run_loop,
# record, rotated), the tables and result lines (header, row, report,
# result, relay) and the sanity checks of an nsbox result.  run.sh's header
# states the method and the output format these implement.
# shellcheck shell=bash

say() { printf 'bench: %s\n' "$*" >&2; }
die() {
	printf 'bench: error: %s\n' "$*" >&2
	exit 1
}

# ---- scratch directory, registry, cleanup ------------------------------------

TMP=
REG_DIR=
cleanup() {
	local rc=$?
	if [ -n "$REG_DIR" ]; then
		"$ROOT/tests/fixtures/registry.sh" stop "$REG_DIR" || rc=1
	fi
	if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts the local registry and pushes the fixtures, once per run.  Sets
# REG_PORT.
REG_PORT=
need_registry() {
	[ -z "$REG_PORT" ] || return 0
	REG_DIR=$TMP/registry # set first: the trap stops whatever got started
	REG_PORT=$("$ROOT/tests/fixtures/registry.sh" start "$REG_DIR") ||
		die "cannot start the local registry"
	"$ROOT/tests/fixtures/registry.sh" push "$REG_DIR" 2>"$TMP/logs/push.log" || {
		cat "$TMP/logs/push.log" >&2
		die "cannot push the fixtures to the local registry"
	}
	say "local registry on 127.0.0.1:$REG_PORT"
}

# ITER_DIR=$TMP/BENCH/I, new and empty (I is 0 for the warm-up round).  The
# commands create their own store, layout and bundle directories in it.
ITER_DIR=
iter_dir() {
	ITER_DIR=$TMP/$1/$2
	mkdir -p "$ITER_DIR"
	[ -z "$(ls -A "$ITER_DIR")" ] || die "$ITER_DIR is not empty"
}

# Untimed, before each timed command: flushes the previous commands' writes
# so that their writeback does not land in the timed one.  Nothing is dropped
# from the page cache.
settle() { sync; }

# The scratch space a run needs, in MB: per iteration (and the warm-up), the
# nsbox store (blob + rootfs), the baseline's layout and bundle, for each
# benchmark, rounded up generously.
need_space_mb() { echo $(((RUNS + 1) * 1000 + 500)); }

# ---- timing ------------------------------------------------------------------

TICK=$(getconf CLK_TCK)

# The user and system CPU time (in ticks) of this shell's waited-for children,
# which include their own waited-for children (skopeo under nsbox).  Builtins
# only: nothing is forked.
CHILD_UTICKS=0 CHILD_STICKS=0
child_ticks() {
	local line f
	read -r line </proc/$$/stat
	read -ra f <<<"${line##*) }" # fields 3... (comm may hold spaces)
	CHILD_UTICKS=${f[13]} CHILD_STICKS=${f[14]}
}

# run_timed LABEL CMD...: runs CMD with its output in $TMP/logs/LABEL.log.
# Sets WALL_US to its wall time and USER_US and SYS_US to the CPU time it and
# its children used (10 ms resolution).  Exits (non-zero) if CMD fails.
WALL_US=0 RET_US=0 USER_US=0 SYS_US=0
run_timed() {
	local label=$1 rc=0 t0 t1 u0 s0
	shift
	local log=$TMP/logs/$label.log
	child_ticks
	u0=$CHILD_UTICKS s0=$CHILD_STICKS
	t0=$EPOCHREALTIME
	"$@" >"$log" 2>&1 || rc=$?
	t1=$EPOCHREALTIME
	child_ticks
	if [ "$rc" != 0 ]; then
		printf 'bench: error: exit status %s from:' "$rc" >&2
		printf ' %q' "$@" >&2
		printf '\n--- last lines of its output ---\n' >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	WALL_US=$((${t1//[!0-9]/} - ${t0//[!0-9]/}))
	RET_US=$WALL_US
	USER_US=$(((CHILD_UTICKS - u0) * 1000000 / TICK))
	SYS_US=$(((CHILD_STICKS - s0) * 1000000 / TICK))
}

# run_loop LABEL N CMD...: one sample of a millisecond command: CMD N times
# in a row, each waited for together with every process it left running
# (tests/bench/runloop.py, a child subreaper), its stderr in
# $TMP/logs/LABEL.log.  Sets, per command: WALL_US from its start until all
# it started had exited, RET_US until CMD itself returned, USER_US and
# SYS_US the CPU time of CMD and all it started.  Exits if CMD fails.
run_loop() {
	local label=$1 n=$2 out f
	shift 2
	local log=$TMP/logs/$label.log
	if ! out=$(python3 "$ROOT/tests/bench/runloop.py" "$n" "$@" 2>"$log"); then
		printf 'bench: error: runloop.py %s' "$n" >&2
		printf ' %q' "$@" >&2
		printf '\n--- last lines of its output ---\n' >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	declare -A f
	local kv
	for kv in $out; do f[${kv%%=*}]=${kv#*=}; done
	WALL_US=$((f[total_us] / n)) RET_US=$((f[returned_us] / n))
	USER_US=$((f[user_us] / n)) SYS_US=$((f[sys_us] / n))
}

# record SERIES: files the last run_timed's or run_loop's figures under
# SERIES (the arrays SERIES_wall, SERIES_user and SERIES_sys, in us).
record() {
	local -n w=${1}_wall u=${1}_user s=${1}_sys
	w+=("$WALL_US") u+=("$USER_US") s+=("$SYS_US")
}

# record_parts SERIES: the last run_loop's time until the command returned
# under SERIES_ret, and the rest (its teardown) under SERIES_td; wall only.
record_parts() {
	local -n r=${1}_ret_wall t=${1}_td_wall
	r+=("$RET_US") t+=("$((WALL_US - RET_US))")
}

# series_reset SERIES...: empties (and declares) the series.
series_reset() {
	local n
	for n in "$@"; do
		declare -ga "${n}_wall=()" "${n}_user=()" "${n}_sys=()"
	done
}

# rotated I SIDE...: sets ORDER to the sides in round I's order (each round
# starts one side later: no side always runs right after the same other).
ORDER=()
rotated() {
	local i=$1
	shift
	local k=$((i % $#))
	ORDER=("${@:k+1}" "${@:1:k}")
}

# stats VALUE...: prints "MIN MEDIAN MAX" of the values.
stats() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%d %.0f %d\n", v[1], m, v[NR]
		}'
}

# Milliseconds from microseconds: one decimal below 100 ms (sandbox start
# and exec), whole above.
ms() { awk -v us="$1" 'BEGIN { printf (us < 100000 ? "%.1f" : "%.0f"), us / 1000 }'; }

# spread_ms SERIES: MIN/MEDIAN/MAX of its wall times, in ms.
spread_ms() {
	local -n w=${1}_wall
	local lo med hi
	read -r lo med hi < <(stats "${w[@]}")
	printf '%s/%s/%s' "$(ms "$lo")" "$(ms "$med")" "$(ms "$hi")"
}

# One table per benchmark: wall-time min, median and max, CPU-time medians
# (- where not measured), and every wall-time sample in the order taken.
cols() { printf '  %-50s %8s %8s %8s %8s %8s   %s\n' "$@"; }
header() {
	printf '\n%s\n' "$1"
	cols "" "min ms" "median" "max" "user ms" "sys ms" "samples (ms, in order)"
}

# row LABEL SERIES
row() {
	# shellcheck disable=SC2178 # namerefs to arrays
	local -n w=${2}_wall u=${2}_user s=${2}_sys
	local lo med hi umed=- smed=- runs='' x
	read -r lo med hi < <(stats "${w[@]}")
	if [ ${#u[@]} -gt 0 ]; then
		read -r _ umed _ < <(stats "${u[@]}")
		read -r _ smed _ < <(stats "${s[@]}")
		umed=$(ms "$umed") smed=$(ms "$smed")
	fi
	for x in "${w[@]}"; do runs+="$(ms "$x") "; done
	cols "$1" "$(ms "$lo")" "$(ms "$med")" "$(ms "$hi")" "$umed" "$smed" "${runs% }"
}

# The result lines, printed after all tables.  LOAD_START: the 1-minute load
# average when the current benchmark started (exported for the Python and
# Node ones as BENCH_LOAD_START).
RESULTS=()
load1() { cut -d' ' -f1 /proc/loadavg; }
result() { RESULTS+=("bench $* load=$BENCH_LOAD_START/$(load1)"); }

# report NAME TARGET NSBOX_SERIES BASELINE_SERIES: prints the ratio line of
# the table and queues the result line.  TARGET is the highest acceptable
# ratio of the wall-time medians, or "none" for figures that are only context.
report() {
	local name=$1 target=$2 n_med b_med ratio verdict tgt
	local -n n=${3}_wall b=${4}_wall
	read -r _ n_med _ < <(stats "${n[@]}")
	read -r _ b_med _ < <(stats "${b[@]}")
	ratio=$(awk -v a="$n_med" -v b="$b_med" 'BEGIN { printf "%.2f", a / b }')
	if [ "$target" = none ]; then
		tgt="target=none" verdict=INFO
	else
		tgt="target<=$target"
		verdict=$(awk -v r="$ratio" -v t="$target" 'BEGIN { print (r <= t ? "OK" : "MISSED") }')
	fi
	printf '  %s: ratio of the medians %s  (%s %s)\n' "$name" "$ratio" "$tgt" "$verdict"
	result "$name nsbox_ms=$(spread_ms "$3") baseline_ms=$(spread_ms "$4") ratio=$ratio $tgt $verdict n=${#n[@]}"
}

# report_one NAME KEY SERIES: a result line for one series, context only.
report_one() {
	local -n w=${3}_wall
	result "$1 $2=$(spread_ms "$3") target=none INFO n=${#w[@]}"
}

# relay CMD...: runs a Python or Node benchmark (or a table written in
# Python); its result lines ("bench ...") join RESULTS, the rest is printed.
# Exits if it fails.
relay() {
	local out line
	out=$("$@") || die "$(printf '%q ' "$@" | cut -c1-120)failed"
	while IFS= read -r line; do
		if [[ $line == "bench "* ]]; then RESULTS+=("$line"); else printf '%s\n' "$line"; fi
	done <<<"$out"
}

# ---- sanity checks -----------------------------------------------------------

# A python rootfs must at least have a python3 binary (a symlink in Debian).
check_python_rootfs() {
	if ! { [ -n "$1" ] && [ -f "$1/usr/bin/python3" ] && [ -x "$1/usr/bin/python3" ] &&
		[ -s "$1/usr/bin/python3" ]; }; then
		die "$1/usr/bin/python3 is missing: the pull did not produce a python rootfs"
	fi
}

# nsbox store $1 must hold exactly one image, with a python rootfs.  Sets
# ROOTFS to it.
ROOTFS=
check_store() {
	local dirs=("$1"/images/*/rootfs)
	if [ ${#dirs[@]} != 1 ] || [ ! -d "${dirs[0]}" ]; then
		die "expected exactly one unpacked image in $1/images, found: ${dirs[*]}"
	fi
	ROOTFS=${dirs[0]}
	check_python_rootfs "$ROOTFS"
}

# The two unpacked trees must be identical (type, mode, owner, content hash,
# link count, mtime of every path), so that a broken pull cannot look fast.
compare_trees() {
	local ours=$1 theirs=$2
	"$ROOT/tests/fixtures/list-tree.py" "$theirs" / >"$TMP/logs/tree-baseline.txt"
	"$ROOT/tests/fixtures/list-tree.py" "$ours" / >"$TMP/logs/tree-nsbox.txt"
	if ! diff -u "$TMP/logs/tree-baseline.txt" "$TMP/logs/tree-nsbox.txt" >"$TMP/logs/tree.diff"; then
		head -n 40 "$TMP/logs/tree.diff" >&2
		die "nsbox's rootfs differs from umoci's (diff above: -umoci +nsbox)"
	fi
	say "nsbox's rootfs matches umoci's ($(wc -l <"$TMP/logs/tree-nsbox.txt") paths)"
}
