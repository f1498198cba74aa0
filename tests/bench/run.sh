#!/usr/bin/env bash
# nsbox benchmarks (`make bench`).  See docs/bench.md.
#
#   tests/bench/run.sh [NAME...]    run the named benchmarks (default: all)
#   tests/bench/run.sh --list       list them
#
# Every benchmark times nsbox and a baseline side by side in one run,
# alternating the two commands (A B A B ...) after one untimed warm-up round,
# and reports the median and the minimum wall time of each side and the ratio
# nsbox/baseline of the medians.  Besides the table, each benchmark prints one
# line for machines:
#
#   bench NAME nsbox_ms=N baseline_ms=N ratio=R target<=T OK|MISSED
#
# (`target=none INFO` for figures that are only context).  A missed target is
# reported, not fatal; a command that fails, or an nsbox result that is not a
# sane rootfs, makes the script exit non-zero.
#
# Environment:
#   BENCH_RUNS      timed iterations per side (default 5)
#   NSBOX           the binary to measure (default build/nsbox)
#   NSBOX_FIXTURES  fixture directory (default /var/cache/nsbox/fixtures)
#   TMPDIR          where the scratch directory goes (default /tmp); the
#                   stores, layouts and bundles are written there
#
# Adding a benchmark: write a function bench_NAME and add NAME to BENCHES
# below.  It times commands with run_timed, files each sample under a series
# name with `record SERIES`, and prints its table with header/row/report.
# Shared pieces: need_registry (a local registry with the fixtures pushed),
# iter_dir (a new empty directory for one iteration), settle (untimed sync
# before a timed command), check_store (the nsbox result is a python rootfs).
#
# Nothing is deleted before the script exits: every iteration writes into new
# empty directories, and the whole scratch directory goes at the end.  On an
# ext4 without a journal (like the VM these figures come from) the inode allocator skips
# every inode freed in the last 60 s, at the cost of a buffer-cache lookup
# each, so deleting a 7,700-file rootfs just before unpacking the next one
# makes both sides' system time grow from run to run (0.2 s to 2 s and more).
# See docs/bench.md.
set -euo pipefail
export LC_ALL=C # EPOCHREALTIME must use '.' as its decimal point

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
F=${NSBOX_FIXTURES:-/var/cache/nsbox/fixtures}
F=${F%/}
NSBOX=${NSBOX:-$ROOT/build/nsbox}
RUNS=${BENCH_RUNS:-5}

BENCHES=(pull_unpack_python unpack_python sandbox_start exec_live idle_sandboxes mcp_execute mcp_interp egress file_urls node_capacity)

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
# Sets WALL_US to its wall time and USER_MS and SYS_MS to the CPU time it and
# its children used (10 ms resolution).  Exits (non-zero) if CMD fails.
WALL_US=0 USER_MS=0 SYS_MS=0
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
	USER_MS=$(((CHILD_UTICKS - u0) * 1000 / TICK))
	SYS_MS=$(((CHILD_STICKS - s0) * 1000 / TICK))
}

# record SERIES: files the last run_timed's figures under SERIES (the arrays
# SERIES_wall in us, SERIES_user and SERIES_sys in ms).
record() {
	local -n w=${1}_wall u=${1}_user s=${1}_sys
	w+=("$WALL_US") u+=("$USER_MS") s+=("$SYS_MS")
}

# series_reset SERIES...: empties (and declares) the series.
series_reset() {
	local n
	for n in "$@"; do
		declare -ga "${n}_wall=()" "${n}_user=()" "${n}_sys=()"
	done
}

# stats VALUE...: prints "MEDIAN MIN" of the values.
stats() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.0f %d\n", m, v[1]
		}'
}

# Milliseconds: one decimal below 100 ms (sandbox start and exec), whole above.
ms() { awk -v us="$1" 'BEGIN { printf (us < 100000 ? "%.1f" : "%.0f"), us / 1000 }'; }

# One table per benchmark: wall-time median and min, CPU-time medians, and
# every wall-time sample in the order taken.
cols() { printf '  %-46s %9s %7s %8s %7s   %s\n' "$@"; }
header() {
	printf '\n%s\n' "$1"
	cols "" "median ms" "min ms" "user ms" "sys ms" "runs (ms, in order)"
}

# row LABEL SERIES
row() {
	# shellcheck disable=SC2178 # namerefs to arrays
	local -n w=${2}_wall u=${2}_user s=${2}_sys
	local med min umed smed runs='' x
	read -r med min < <(stats "${w[@]}")
	read -r umed _ < <(stats "${u[@]}")
	read -r smed _ < <(stats "${s[@]}")
	for x in "${w[@]}"; do runs+="$(ms "$x") "; done
	cols "$1" "$(ms "$med")" "$(ms "$min")" "$umed" "$smed" "${runs% }"
}

# report NAME TARGET NSBOX_SERIES BASELINE_SERIES: prints the ratio line of
# the table and queues the machine-readable line.  TARGET is the highest
# acceptable ratio of the wall-time medians, or "none" for figures that are
# only context.
RESULTS=()
report() {
	local name=$1 target=$2 n_med b_med ratio verdict tgt
	local -n n=${3}_wall b=${4}_wall
	read -r n_med _ < <(stats "${n[@]}")
	read -r b_med _ < <(stats "${b[@]}")
	ratio=$(awk -v a="$n_med" -v b="$b_med" 'BEGIN { printf "%.2f", a / b }')
	if [ "$target" = none ]; then
		tgt="target=none" verdict=INFO
	else
		tgt="target<=$target"
		verdict=$(awk -v r="$ratio" -v t="$target" 'BEGIN { print (r <= t ? "OK" : "MISSED") }')
	fi
	printf '  ratio nsbox/baseline of the wall-time medians: %s  (%s %s)\n' "$ratio" "$tgt" "$verdict"
	RESULTS+=("bench $name nsbox_ms=$(ms "$n_med") baseline_ms=$(ms "$b_med") ratio=$ratio $tgt $verdict")
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

# ---- benchmark: pull + unpack over docker:// ---------------------------------

bench_pull_unpack_python() {
	need_registry
	local src=127.0.0.1:$REG_PORT/python:latest
	local store base bundle i rootfs_mb

	pull_nsbox() {
		store=$ITER_DIR/store
		settle
		run_timed nsbox-pull "$NSBOX" --store "$store" pull --quiet --tls-verify=false "$src"
	}
	# skopeo copy && umoci unpack, timed as one (their sum) and each
	pull_baseline() {
		base=$ITER_DIR/base bundle=$ITER_DIR/bundle
		settle
		run_timed skopeo-copy skopeo copy --quiet --src-tls-verify=false \
			"docker://$src" "oci:$base:latest"
		local cw=$WALL_US cu=$USER_MS cs=$SYS_MS
		record copy
		run_timed umoci-unpack umoci unpack --image "$base:latest" "$bundle"
		record unpack
		WALL_US=$((WALL_US + cw)) USER_MS=$((USER_MS + cu)) SYS_MS=$((SYS_MS + cs))
		record baseline
	}

	say "pull_unpack_python: warm-up round (untimed) and tree check"
	series_reset nsbox baseline copy unpack
	iter_dir pull_unpack_python 0
	pull_nsbox
	pull_baseline
	check_store "$store"
	check_python_rootfs "$bundle/rootfs"
	compare_trees "$ROOTFS" "$bundle/rootfs"
	rootfs_mb=$(du -sm "$bundle/rootfs" | cut -f1)

	series_reset nsbox baseline copy unpack
	for ((i = 1; i <= RUNS; i++)); do
		say "pull_unpack_python: run $i/$RUNS"
		iter_dir pull_unpack_python "$i"
		pull_nsbox
		record nsbox
		check_store "$store"
		pull_baseline
	done

	header "pull_unpack_python: pull the python fixture (${LAYER_MB} MB gzip layer, ${rootfs_mb} MB rootfs) from 127.0.0.1 into an empty store, $RUNS runs"
	row "nsbox pull" nsbox
	row "baseline: skopeo copy + umoci unpack" baseline
	row "  of which skopeo copy (docker:// -> oci:)" copy
	row "  of which umoci unpack" unpack
	report pull_unpack_python 0.50 nsbox baseline
}

# ---- context: unpack from a local layout -------------------------------------

bench_unpack_python() {
	local layout=$TMP/unpack_python/layout store bundle i

	mkdir -p "$TMP/unpack_python"
	skopeo --insecure-policy copy --quiet "oci:$F/oci/python:latest" "oci:$layout:latest" ||
		die "cannot copy the python fixture to $layout"

	unpack_nsbox() {
		store=$ITER_DIR/store
		settle
		run_timed nsbox-pull-oci "$NSBOX" --store "$store" pull --quiet "oci:$layout:latest"
	}
	unpack_baseline() {
		bundle=$ITER_DIR/bundle
		settle
		run_timed umoci-unpack umoci unpack --image "$layout:latest" "$bundle"
	}

	say "unpack_python: warm-up round (untimed)"
	iter_dir unpack_python 0
	unpack_nsbox
	unpack_baseline
	check_store "$store"
	check_python_rootfs "$bundle/rootfs"

	series_reset nsbox baseline
	for ((i = 1; i <= RUNS; i++)); do
		say "unpack_python: run $i/$RUNS"
		iter_dir unpack_python "$i"
		unpack_nsbox
		record nsbox
		check_store "$store"
		unpack_baseline
		record baseline
	done

	header "unpack_python (context, no target): unpack from a local OCI layout into an empty store, $RUNS runs"
	row "nsbox pull oci:LAYOUT (incl. its skopeo copy)" nsbox
	row "baseline: umoci unpack" baseline
	report unpack_python none nsbox baseline
}


# ---- runtime: sandbox start and exec -------------------------------------------

# A store with the python fixture, for the runtime benchmarks.
RT_STORE= RT_ROOTFS=
need_runtime_store() {
	[ -n "$RT_STORE" ] && return
	RT_STORE=$TMP/rt-store
	"$NSBOX" --store "$RT_STORE" pull --quiet "oci:$F/oci/python:latest" >/dev/null ||
		die "cannot pull the python fixture into $RT_STORE"
	check_store "$RT_STORE"
	RT_ROOTFS=$ROOTFS
}

# repeat N CMD...: CMD N times in a row (one timed sample), failing on the
# first failure.  Both sides pay the same loop.
REPEAT=${BENCH_REPEAT:-20}
repeat() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do "$@" >/dev/null || return 1; done
}

# per-invocation series: divides the last run_timed figures by REPEAT.
record_each() {
	WALL_US=$((WALL_US / REPEAT)) USER_MS=$((USER_MS / REPEAT)) SYS_MS=$((SYS_MS / REPEAT))
	record "$1"
}

bench_sandbox_start() {
	need_runtime_store
	local img="oci:$F/oci/python:latest" i have_bwrap=0
	command -v bwrap >/dev/null && have_bwrap=1
	start_nsbox() { run_timed nsbox-run repeat "$REPEAT" "$NSBOX" --store "$RT_STORE" run "$img" -- python3 -c pass; }
	start_chroot() { run_timed chroot repeat "$REPEAT" chroot "$RT_ROOTFS" python3 -c pass; }
	# The disk layer's cost: the same run with no total disk bound (the
	# upper layer on the store's filesystem, as before the disk layer).
	start_nodisk() { run_timed nsbox-nodisk repeat "$REPEAT" "$NSBOX" --store "$RT_STORE" run --disk unlimited "$img" -- python3 -c pass; }
	start_bwrap() {
		run_timed bwrap repeat "$REPEAT" bwrap --unshare-all --die-with-parent --ro-bind "$RT_ROOTFS" / \
			--proc /proc --dev /dev --tmpfs /tmp python3 -c pass
	}
	say "sandbox_start: warm-up round (untimed)"
	start_nsbox && start_chroot && start_nodisk
	[ $have_bwrap = 1 ] && start_bwrap
	series_reset nsbox chroot bwrap nodisk
	for ((i = 1; i <= RUNS; i++)); do
		say "sandbox_start: run $i/$RUNS"
		start_nsbox && record_each nsbox
		start_nodisk && record_each nodisk
		start_chroot && record_each chroot
		if [ $have_bwrap = 1 ]; then start_bwrap && record_each bwrap; fi
	done
	header "sandbox_start: python3 -c pass in a fresh sandbox (create, run, destroy), $RUNS x $REPEAT runs; ms per run"
	row "nsbox run (all namespaces, seccomp, cgroup limits)" nsbox
	row "baseline: chroot ROOTFS" chroot
	report sandbox_start_vs_chroot 1.25 nsbox chroot
	row "context: nsbox run --disk unlimited (no disk layer)" nodisk
	report disk_layer_start 1.05 nsbox nodisk
	if [ $have_bwrap = 1 ]; then
		row "context: bwrap --unshare-all" bwrap
		report sandbox_start_vs_bwrap 1.00 nsbox bwrap
	fi
}

bench_exec_live() {
	need_runtime_store
	local id i
	id=$("$NSBOX" --store "$RT_STORE" create "oci:$F/oci/python:latest") || die "nsbox create failed"
	exec_nsbox() { run_timed nsbox-exec repeat "$REPEAT" "$NSBOX" --store "$RT_STORE" exec "$id" -- python3 -c pass; }
	exec_chroot() { run_timed chroot repeat "$REPEAT" chroot "$RT_ROOTFS" python3 -c pass; }
	say "exec_live: warm-up round (untimed)"
	exec_nsbox && exec_chroot
	series_reset nsbox chroot
	for ((i = 1; i <= RUNS; i++)); do
		say "exec_live: run $i/$RUNS"
		exec_nsbox && record_each nsbox
		exec_chroot && record_each chroot
	done
	"$NSBOX" --store "$RT_STORE" rm "$id" >/dev/null
	header "exec_live: python3 -c pass in a live sandbox (nsbox exec, a new nsbox process each time), $RUNS x $REPEAT runs; ms per run"
	row "nsbox exec" nsbox
	row "baseline: chroot ROOTFS" chroot
	report exec_live 1.10 nsbox chroot
}

# Memory is not a ratio: 100 idle sandboxes, the host's MemAvailable before
# and after, per sandbox.  Also proves 100 of them run side by side.
bench_idle_sandboxes() {
	need_runtime_store
	local n=${BENCH_IDLE:-100} ids=() before after i ok=0 t0 t1
	sync
	before=$(awk '/^MemAvailable/ {print $2}' /proc/meminfo)
	t0=$EPOCHREALTIME
	for ((i = 0; i < n; i++)); do
		ids+=("$("$NSBOX" --store "$RT_STORE" create "oci:$F/oci/python:latest")") || die "create $i failed"
	done
	t1=$EPOCHREALTIME
	sleep 1
	after=$(awk '/^MemAvailable/ {print $2}' /proc/meminfo)
	for id in "${ids[@]}"; do
		"$NSBOX" --store "$RT_STORE" exec "$id" -- true && ok=$((ok + 1))
	done
	local init_rss=0 pid
	for pid in $("$NSBOX" --store "$RT_STORE" ps | awk 'NR > 1 && $3 == "running" {print $2}'); do
		init_rss=$((init_rss + $(awk '/^Pss:/ {s += $2} END {print s + 0}' /proc/$pid/smaps_rollup 2>/dev/null || echo 0)))
	done
	"$NSBOX" --store "$RT_STORE" rm "${ids[@]}" >/dev/null
	local per_kb=$(((before - after) / n)) create_ms
	create_ms=$(awk -v a="${t0//[!0-9]/}" -v b="${t1//[!0-9]/}" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / 1000 / n }')
	printf '\nidle_sandboxes: %d idle python sandboxes side by side\n' "$n"
	printf '  created in %s ms each; %d of %d answered an exec afterwards\n' "$create_ms" "$ok" "$n"
	printf '  host MemAvailable drop: %d KiB per sandbox (kernel objects, tmpfs, overlay, init)\n' "$per_kb"
	printf '  init processes: %d KiB PSS per sandbox\n' "$((init_rss / n))"
	local verdict=MISSED
	[ "$per_kb" -lt 2048 ] && [ "$ok" = "$n" ] && verdict=OK
	RESULTS+=("bench idle_sandboxes per_sandbox_kib=$per_kb answered=$ok/$n target<2048KiB $verdict")
}

# ---- MCP: execute_code through the official client SDK --------------------------

bench_mcp_execute() {
	need_runtime_store
	"$ROOT/tests/mcp/setup.sh" >/dev/null || die "tests/mcp/setup.sh failed"
	local k=$((REPEAT * RUNS)) out i
	out=$(node "$ROOT/tests/bench/mcp_bench.mjs" "$NSBOX" "$RT_STORE" "$k") || die "mcp_bench.mjs failed"
	series_reset chroot
	for ((i = 1; i <= RUNS; i++)); do
		run_timed chroot repeat "$REPEAT" chroot "$RT_ROOTFS" python3 -c 'print(1)'
		record_each chroot
	done
	python3 - "$out" "${chroot_wall[@]}" <<'PYEOF'
import json, statistics, sys
r = json.loads(sys.argv[1])
chroot = statistics.median(int(x) for x in sys.argv[2:]) / 1000
live, one = statistics.median(r["live_ms"]), statistics.median(r["oneshot_ms"])
print(f"\nmcp_execute: execute_code {{code: print(1)}} through the MCP client SDK over stdio, {len(r['live_ms'])} calls each; ms per call")
print(f"  live sandbox (sandbox_id)   median {live:6.2f} ms   min {min(r['live_ms']):6.2f}")
print(f"  one-shot (fresh sandbox)    median {one:6.2f} ms   min {min(r['oneshot_ms']):6.2f}")
print(f"  baseline: chroot ROOTFS python3 -c 'print(1)'   {chroot:6.2f} ms")
print(f"  server RSS: {r['idle_rss_kb']} KiB idle, {r['busy_rss_kb']} KiB after the calls (target < 16 MiB idle)")
for name, v, t in (("mcp_execute_live", live, 1.15), ("mcp_execute_oneshot", one, 1.40)):
    ratio = v / chroot
    print(f"RESULT bench {name} nsbox_ms={v:.0f} baseline_ms={chroot:.0f} ratio={ratio:.2f} target<={t:.2f} {'OK' if ratio <= t else 'MISSED'}")
ok = r["idle_rss_kb"] < 16384
print(f"RESULT bench mcp_server_idle_rss rss_kib={r['idle_rss_kb']} target<16384KiB {'OK' if ok else 'MISSED'}")
PYEOF
}

# ---- MCP: persistent interpreters (docs/interpreters.md) -----------------------

# A store with the default image (numpy, pandas, node, typescript): pulled
# from images/default/build.sh's cached layout, built there when missing.
DEF_STORE=
need_default_store() {
	[ -n "$DEF_STORE" ] && return
	DEF_STORE=$TMP/default-store
	say "default image: into $DEF_STORE (images/default-image.sh; builds the layout if not cached)"
	"$ROOT/images/default-image.sh" "$NSBOX" --store "$DEF_STORE" >/dev/null 2>"$TMP/logs/default-image.log" ||
		die "images/default-image.sh failed (log: $TMP/logs/default-image.log)"
}

# execute_code in a kept sandbox's interpreter vs a new process in the same
# sandbox (fresh: true), through the SDK client; the pandas call's cost
# once imported; javascript and typescript; the interpreters' memory.
bench_mcp_interp() {
	need_default_store
	"$ROOT/tests/mcp/setup.sh" >/dev/null || die "tests/mcp/setup.sh failed"
	local k=${BENCH_INTERP_CALLS:-50} n=${BENCH_INTERP_SANDBOXES:-20} out
	say "mcp_interp: $k calls per series, then $n sandboxes with pandas imported"
	out=$(node "$ROOT/tests/bench/mcp_interp_bench.mjs" "$NSBOX" "$DEF_STORE" localhost/nsbox-default:latest \
		"$k" "$k" "$n") || die "mcp_interp_bench.mjs failed"
	python3 - "$out" <<'PYEOF'
import json, statistics, sys
r = json.loads(sys.argv[1])
med = lambda k: statistics.median(r[k])
py, fresh, pd = med("python_ms"), med("fresh_ms"), med("pandas_ms")
js, ts = med("javascript_ms"), med("typescript_ms")
print(f"\nmcp_interp: execute_code in a kept sandbox of the default image, through the MCP client SDK over stdio, {len(r['python_ms'])} calls each; ms per call")
print(f"  python interpreter   x = x + 1; print(x)        median {py:6.2f} ms   min {min(r['python_ms']):6.2f}")
print(f"  baseline: fresh: true  python3 -c 'print(1)'    median {fresh:6.2f} ms   min {min(r['fresh_ms']):6.2f}")
print(f"  context: sandbox_list (a call that runs nothing) median {med('floor_ms'):6.2f} ms   min {min(r['floor_ms']):6.2f}")
print(f"  python interpreter   df.sum() (pandas loaded)   median {pd:6.2f} ms   min {min(r['pandas_ms']):6.2f}   (import numpy, pandas once: {r['pandas_import_ms']:.0f} ms)")
print(f"  javascript interpreter  x = x + 1; console.log  median {js:6.2f} ms   min {min(r['javascript_ms']):6.2f}")
print(f"  typescript interpreter  x = x + 1; console.log  median {ts:6.2f} ms   min {min(r['typescript_ms']):6.2f}")
print(f"  idle interpreter PSS: python {r['python_pss_kib']} KiB, python with numpy+pandas {r['python_pandas_pss_kib']} KiB, "
      f"node {r['javascript_pss_kib']} KiB, typescript {r['typescript_pss_kib']} KiB")
n = r["fleet_n"]
per = r["fleet_memavailable_drop_kib"] / n
fpss = statistics.median(r["fleet_pss_kib"]) if r["fleet_pss_kib"] else 0
print(f"  {n} kept sandboxes, each a python interpreter with numpy+pandas imported: set up in {r['fleet_setup_ms'] / n:.0f} ms each; "
      f"{r['fleet_answered']} of {n} answered a call afterwards")
print(f"  host MemAvailable drop: {per:.0f} KiB per sandbox; interpreter PSS median {fpss:.0f} KiB")
print(f"RESULT bench mcp_interp_python nsbox_ms={py:.2f} baseline_ms={fresh:.2f} ratio={py / fresh:.2f} target<=2ms {'OK' if py <= 2 else 'MISSED'}")
print(f"RESULT bench mcp_interp_pandas_call nsbox_ms={pd:.2f} baseline_ms={py:.2f} ratio={pd / py:.2f} target=none INFO")
print(f"RESULT bench mcp_interp_javascript nsbox_ms={js:.2f} baseline_ms={fresh:.2f} ratio={js / fresh:.2f} target=none INFO")
print(f"RESULT bench mcp_interp_typescript nsbox_ms={ts:.2f} baseline_ms={fresh:.2f} ratio={ts / fresh:.2f} target=none INFO")
print(f"RESULT bench mcp_interp_fleet per_sandbox_kib={per:.0f} answered={r['fleet_answered']}/{n} target=none INFO")
PYEOF
}

# ---- egress: the allow-list's broker (docs/network.md) ---------------------------

# Sandbox start with networking (a rule: the init makes the listeners, the
# broker starts and takes them) against the same start without; then
# tests/bench/egress_bench.py: a 256 MiB download and small GETs through
# the broker against the same client on the host's loopback.
bench_egress() {
	need_runtime_store
	local img="oci:$F/oci/python:latest" i
	start_plain() { run_timed nsbox-run repeat "$REPEAT" "$NSBOX" --store "$RT_STORE" run "$img" -- python3 -c pass; }
	start_net() {
		run_timed nsbox-run-net repeat "$REPEAT" "$NSBOX" --store "$RT_STORE" run \
			--net "bench.test=127.0.0.1:9" --net pypi "$img" -- python3 -c pass
	}
	say "egress: warm-up round (untimed)"
	start_net && start_plain
	series_reset net plain
	for ((i = 1; i <= RUNS; i++)); do
		say "egress: start run $i/$RUNS"
		start_net && record_each net
		start_plain && record_each plain
	done
	header "egress_start: python3 -c pass in a fresh sandbox with --net (listeners, broker) vs without, $RUNS x $REPEAT runs; ms per run"
	row "nsbox run --net bench.test=127.0.0.1:9 --net pypi" net
	row "baseline: nsbox run (sealed)" plain
	report egress_start none net plain
	python3 "$ROOT/tests/bench/egress_bench.py" "$NSBOX" "$RT_STORE" "$img" "$RT_ROOTFS" "$RUNS" ||
		die "egress_bench.py failed"
}

# ---- file_urls: files by signed URL (docs/tools.md, "Files by URL") ----------

# tests/bench/file_urls_bench.py: 64 MiB out of and into a kept sandbox by
# its download_url and an upload_url, against a plain HTTP server on the
# host's loopback, and against read_file's base64 pages over MCP.
bench_file_urls() {
	need_runtime_store
	python3 "$ROOT/tests/bench/file_urls_bench.py" "$NSBOX" "$RT_STORE" "oci:$F/oci/python:latest" "$RUNS" ||
		die "file_urls_bench.py failed"
}

# ---- node_capacity: one serve --http node, direct and through HAProxy ----------

# tests/bench/node_capacity.sh (docs/deploy.md, "Capacity of one node").
bench_node_capacity() {
	need_runtime_store
	"$ROOT/tests/bench/node_capacity.sh" "$NSBOX" "$RT_STORE" "$RUNS" || die "node_capacity.sh failed"
}

# ---- main --------------------------------------------------------------------

usage() {
	echo "usage: tests/bench/run.sh [--list] [NAME...]   (names: ${BENCHES[*]})" >&2
	exit 2
}

selected=()
for arg in "$@"; do
	case $arg in
	--list)
		printf '%s\n' "${BENCHES[@]}"
		exit 0
		;;
	-*) usage ;;
	*)
		[[ " ${BENCHES[*]} " == *" $arg "* ]] || die "no benchmark named '$arg' (${BENCHES[*]})"
		selected+=("$arg")
		;;
	esac
done
[ ${#selected[@]} -gt 0 ] || selected=("${BENCHES[@]}")

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, not '$RUNS'"
[ "$(id -u)" = 0 ] || die "run as root: the baseline is umoci unpack as root"
[ -x "$NSBOX" ] || die "$NSBOX is missing: run make first (or make bench)"
for c in skopeo umoci python3 docker-registry; do
	command -v "$c" >/dev/null 2>&1 || die "missing command '$c' (make deps)"
done

"$ROOT/tests/fixtures/build.sh" >&2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsbox-bench.XXXXXX")
mkdir -p "$TMP/logs"
free_mb=$(df -Pm "$TMP" | awk 'NR == 2 {print $4}')
[ "$free_mb" -ge "$(need_space_mb)" ] ||
	die "$TMP has $free_mb MB free, the run needs about $(need_space_mb) MB (lower BENCH_RUNS or set TMPDIR)"
LAYER_MB=$(du -sm "$F/oci/python/blobs" | cut -f1)

printf 'nsbox benchmarks, %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
printf 'host: %s cores, kernel %s; %s, umoci %s; nsbox %s\n' "$(nproc)" "$(uname -r)" \
	"$(skopeo --version)" "$(umoci --version | awk '{print $3}')" \
	"$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
printf 'scratch: %s (%s); %s timed runs per side, alternating, after 1 warm-up\n' \
	"$TMP" "$(df -T "$TMP" | awk 'NR == 2 {print $2}')" "$RUNS"
printf 'load average at start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

for b in "${selected[@]}"; do
	"bench_$b"
done

printf '\nload average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${RESULTS[@]}"
