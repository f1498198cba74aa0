#!/usr/bin/env bash
# nsbox benchmarks (`make bench`).  See docs/bench.md.
#
#   tests/bench/run.sh [NAME...]    run the named benchmarks (default: all)
#   tests/bench/run.sh --list       list them
#
# Method.  Every benchmark times nsbox and a baseline side by side in one
# run: one untimed warm-up round of every side, then BENCH_RUNS rounds, each
# running every side once, the order rotated from round to round (A B, B A,
# ...; A B C, B C A, C A B, ...) so that no side always runs right after the
# same other one.  A sample is one command, or for the runtime benchmarks
# (milliseconds each) the mean of BENCH_REPEAT commands in a row.  Nothing a
# side leaves running lands in the next side's sample: the runtime samples
# wait for every process a command left behind (runloop.py: `nsbox run`'s
# detached remover, the egress broker) and count it in that command's time,
# as teardown; the MCP benchmarks wait until the server's own background
# work (its spare sandbox, removals) is done before the next side.
#
# Output.  Per benchmark a table (min, median and max of each side, the CPU
# medians, every sample in the order taken) and its load average at start
# and end; after all tables, one result line per figure, in one format for
# every benchmark (the bash ones here, the Python and Node ones through
# benchlib.py):
#
#   bench NAME FIGURE... [ratio=R] TARGET VERDICT [n=N] load=START/END
#
# FIGURE is KEY=MIN/MEDIAN/MAX for a figure sampled N times (e.g.
# nsbox_ms=13.0/13.4/14.1), KEY=VALUE for one measured once; ratio is of
# the medians (nsbox/baseline); TARGET is target<=T (the highest acceptable
# ratio), target<T (a bound on a figure that is not a ratio) or target=none
# (context only); VERDICT is OK, MISSED or INFO (no target); n is the
# number of samples per side; load is the 1-minute load average when the
# benchmark started and when the line was written.  Figures taken under a
# load average near or above the core count are worthless: rerun.  A missed
# target is reported, not fatal; a command that fails, or an nsbox result
# that is not a sane rootfs, makes the script exit non-zero.
#
# Environment:
#   BENCH_RUNS      timed rounds (samples per side; default 5)
#   BENCH_REPEAT    commands per sample in the runtime benchmarks (default 20)
#   NSBOX           the binary to measure (default build/nsbox)
#   BENCH_DENSITY   sandbox counts for the density benchmark (default 1000;
#                   e.g. 1000,5000,10000)
#   NSBOX_FIXTURES  fixture directory (default /var/cache/nsbox/fixtures)
#   TMPDIR          where the scratch directory goes (default /tmp); the
#                   stores, layouts and rootfs trees are written there
#
# Adding a benchmark: write a function bench_NAME and add NAME to BENCHES
# below.  It times commands with run_timed (or run_loop for millisecond
# commands), files each sample under a series name with `record SERIES`,
# runs its sides in `rotated` order, and prints its table with
# header/row/report.  The shared pieces are in tests/bench/lib.sh:
# need_registry (a local registry with the fixtures pushed), iter_dir (a new
# empty directory for one iteration), settle (untimed sync before a timed
# command), check_store (the nsbox result is a python rootfs), relay (a
# Python or Node benchmark's result lines).
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
# benchlib.py, for the Python benchmarks and the tables written here in Python
export PYTHONPATH=$ROOT/tests/bench${PYTHONPATH:+:$PYTHONPATH}

BENCHES=(pull_unpack_python unpack_python sandbox_start exec_live idle_sandboxes mcp_execute mcp_interp mcp_rich egress secrets file_urls node_capacity services zygote fork pause context_fork density burst nested_podman nested_ready)

# shellcheck source=tests/bench/lib.sh
. "$ROOT/tests/bench/lib.sh"

# ---- benchmark: pull + unpack over docker:// ---------------------------------

# The baseline's unpack is `umoci raw unpack`: the rootfs alone, as nsbox
# makes it.  (`umoci unpack` also writes an mtree manifest with a digest of
# every file of the rootfs, and a runtime config: work nsbox does not do;
# docs/bench.md gives its measured cost.)
bench_pull_unpack_python() {
	need_registry
	local src=127.0.0.1:$REG_PORT/python:latest
	local store base rootfs i s rootfs_mb
	local sides=(nsbox baseline)

	side_nsbox() {
		store=$ITER_DIR/store
		settle
		run_timed nsbox-pull "$NSBOX" --store "$store" pull --quiet --tls-verify=false "$src"
	}
	# skopeo copy && umoci raw unpack, timed as one (their sum) and each
	side_baseline() {
		base=$ITER_DIR/base rootfs=$ITER_DIR/rootfs
		settle
		run_timed skopeo-copy skopeo copy --quiet --src-tls-verify=false \
			"docker://$src" "oci:$base:latest"
		local cw=$WALL_US cu=$USER_US cs=$SYS_US
		record copy
		run_timed umoci-unpack umoci raw unpack --image "$base:latest" "$rootfs"
		record unpack
		WALL_US=$((WALL_US + cw)) USER_US=$((USER_US + cu)) SYS_US=$((SYS_US + cs))
	}

	say "pull_unpack_python: warm-up round (untimed) and tree check"
	series_reset nsbox baseline copy unpack
	iter_dir pull_unpack_python 0
	side_nsbox
	side_baseline
	check_store "$store"
	check_python_rootfs "$rootfs"
	compare_trees "$ROOTFS" "$rootfs"
	rootfs_mb=$(du -sm "$rootfs" | cut -f1)

	series_reset nsbox baseline copy unpack
	for ((i = 1; i <= RUNS; i++)); do
		say "pull_unpack_python: run $i/$RUNS"
		iter_dir pull_unpack_python "$i"
		rotated "$i" "${sides[@]}"
		for s in "${ORDER[@]}"; do
			"side_$s"
			record "$s"
		done
		check_store "$store"
	done

	header "pull_unpack_python: pull the python fixture (${LAYER_MB} MB gzip layer, ${rootfs_mb} MB rootfs) from 127.0.0.1 into an empty store, $RUNS runs"
	row "nsbox pull" nsbox
	row "baseline: skopeo copy + umoci raw unpack" baseline
	row "  of which skopeo copy (docker:// -> oci:)" copy
	row "  of which umoci raw unpack" unpack
	report pull_unpack_python 0.50 nsbox baseline
}

# ---- context: unpack from a local layout -------------------------------------

bench_unpack_python() {
	local layout=$TMP/unpack_python/layout store rootfs i s
	local sides=(nsbox baseline)

	mkdir -p "$TMP/unpack_python"
	skopeo --insecure-policy copy --quiet "oci:$F/oci/python:latest" "oci:$layout:latest" ||
		die "cannot copy the python fixture to $layout"

	side_nsbox() {
		store=$ITER_DIR/store
		settle
		run_timed nsbox-pull-oci "$NSBOX" --store "$store" pull --quiet "oci:$layout:latest"
	}
	side_baseline() {
		rootfs=$ITER_DIR/rootfs
		settle
		run_timed umoci-unpack umoci raw unpack --image "$layout:latest" "$rootfs"
	}

	say "unpack_python: warm-up round (untimed)"
	iter_dir unpack_python 0
	side_nsbox
	side_baseline
	check_store "$store"
	check_python_rootfs "$rootfs"

	series_reset nsbox baseline
	for ((i = 1; i <= RUNS; i++)); do
		say "unpack_python: run $i/$RUNS"
		iter_dir unpack_python "$i"
		rotated "$i" "${sides[@]}"
		for s in "${ORDER[@]}"; do
			"side_$s"
			record "$s"
		done
		check_store "$store"
	done

	header "unpack_python (context, no target): unpack from a local OCI layout into an empty store, $RUNS runs"
	row "nsbox pull oci:LAYOUT (incl. its skopeo copy)" nsbox
	row "baseline: umoci raw unpack" baseline
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

# Commands per sample in the runtime benchmarks (run_loop); the tables and
# result lines give milliseconds per command.
REPEAT=${BENCH_REPEAT:-20}

# `nsbox run` returns before its sandbox is gone: a detached remover
# (runtime/lifecycle.c) kills init and removes the state, cgroups and upper
# layer after the command's status is back.  run_loop waits for it, so its
# work is timed, as teardown, in nsbox's sample, and never runs during the
# next side's.
bench_sandbox_start() {
	need_runtime_store
	local img="oci:$F/oci/python:latest" i s sides=(nsbox nodisk chroot)
	command -v bwrap >/dev/null && sides+=(bwrap)
	side_nsbox() { run_loop nsbox-run "$REPEAT" "$NSBOX" --store "$RT_STORE" run "$img" -- python3 -c pass; }
	side_chroot() { run_loop chroot "$REPEAT" chroot "$RT_ROOTFS" python3 -c pass; }
	# The disk layer's cost: the same run with no total disk bound (the
	# upper layer on the store's filesystem, as before the disk layer).
	side_nodisk() { run_loop nsbox-nodisk "$REPEAT" "$NSBOX" --store "$RT_STORE" run --disk unlimited "$img" -- python3 -c pass; }
	side_bwrap() {
		run_loop bwrap "$REPEAT" bwrap --unshare-all --die-with-parent --ro-bind "$RT_ROOTFS" / \
			--proc /proc --dev /dev --tmpfs /tmp python3 -c pass
	}
	say "sandbox_start: warm-up round (untimed)"
	for s in "${sides[@]}"; do "side_$s"; done
	series_reset nsbox nsbox_ret nsbox_td nodisk nodisk_ret nodisk_td chroot bwrap
	for ((i = 1; i <= RUNS; i++)); do
		say "sandbox_start: run $i/$RUNS"
		rotated "$i" "${sides[@]}"
		for s in "${ORDER[@]}"; do
			"side_$s"
			record "$s"
			case $s in nsbox | nodisk) record_parts "$s" ;; esac
		done
	done
	header "sandbox_start: python3 -c pass in a fresh sandbox (create, run, destroy: until every process it started has exited), $RUNS x $REPEAT runs; ms per run"
	row "nsbox run (all namespaces, seccomp, cgroup limits)" nsbox
	row "  of which until nsbox run returned" nsbox_ret
	row "  of which teardown after it returned (its remover)" nsbox_td
	row "baseline: chroot ROOTFS" chroot
	report sandbox_start_vs_chroot 1.25 nsbox chroot
	report sandbox_start_returned_vs_chroot none nsbox_ret chroot
	report_one sandbox_teardown teardown_ms nsbox_td
	row "context: nsbox run --disk unlimited (no disk layer)" nodisk
	row "  of which teardown after it returned (its remover)" nodisk_td
	report disk_layer_start 1.05 nsbox nodisk
	if [[ " ${sides[*]} " == *" bwrap "* ]]; then
		row "context: bwrap --unshare-all" bwrap
		report sandbox_start_vs_bwrap 1.00 nsbox bwrap
	fi
}

bench_exec_live() {
	need_runtime_store
	local id i s sides=(nsbox chroot)
	id=$("$NSBOX" --store "$RT_STORE" create "oci:$F/oci/python:latest") || die "nsbox create failed"
	side_nsbox() { run_loop nsbox-exec "$REPEAT" "$NSBOX" --store "$RT_STORE" exec "$id" -- python3 -c pass; }
	side_chroot() { run_loop chroot "$REPEAT" chroot "$RT_ROOTFS" python3 -c pass; }
	say "exec_live: warm-up round (untimed)"
	for s in "${sides[@]}"; do "side_$s"; done
	series_reset nsbox chroot
	for ((i = 1; i <= RUNS; i++)); do
		say "exec_live: run $i/$RUNS"
		rotated "$i" "${sides[@]}"
		for s in "${ORDER[@]}"; do
			"side_$s"
			record "$s"
		done
	done
	"$NSBOX" --store "$RT_STORE" rm "$id" >/dev/null
	header "exec_live: python3 -c pass in a live sandbox (nsbox exec, a new nsbox process each time), $RUNS x $REPEAT runs; ms per run"
	row "nsbox exec" nsbox
	row "baseline: chroot ROOTFS" chroot
	report exec_live 1.10 nsbox chroot
}

# mem_settled: waits (20 s at most) until the host's MemAvailable moves by
# less than 256 KiB over half a second, after a sync, and sets MEM_KIB to it.
MEM_KIB=0
mem_available() { awk '/^MemAvailable/ {print $2}' /proc/meminfo; }
mem_settled() {
	local prev now k d
	sync
	prev=$(mem_available)
	for ((k = 0; k < 40; k++)); do
		sleep 0.5
		now=$(mem_available)
		d=$((now - prev))
		[ "${d#-}" -lt 256 ] && break
		prev=$now
	done
	MEM_KIB=$now
}

# Memory is not a ratio: 100 idle sandboxes, the host's MemAvailable before
# and after, per sandbox, in BENCH_RUNS rounds (each created, measured and
# removed; `nsbox rm` waits for the removal).  Every reading is taken once
# MemAvailable has stopped moving (mem_settled): nothing is left running by
# the benchmarks before (run_loop waited for every remover), and a removal
# or writeback still under way would otherwise count as sandboxes' memory
# or hide it.  Also proves 100 of them run side by side and answer.
bench_idle_sandboxes() {
	need_runtime_store
	local n=${BENCH_IDLE:-100} r i ids before after ok=0 asked=0 t0 t1 pss pid
	series_reset idle_mem idle_pss idle_create
	for ((r = 1; r <= RUNS; r++)); do
		say "idle_sandboxes: round $r/$RUNS"
		ids=()
		mem_settled
		before=$MEM_KIB
		t0=$EPOCHREALTIME
		for ((i = 0; i < n; i++)); do
			ids+=("$("$NSBOX" --store "$RT_STORE" create "oci:$F/oci/python:latest")") || die "create $i failed"
		done
		t1=$EPOCHREALTIME
		mem_settled
		after=$MEM_KIB
		for id in "${ids[@]}"; do
			asked=$((asked + 1))
			"$NSBOX" --store "$RT_STORE" exec "$id" -- true && ok=$((ok + 1))
		done
		pss=0
		for pid in $("$NSBOX" --store "$RT_STORE" ps | awk 'NR > 1 && $3 == "running" {print $2}'); do
			pss=$((pss + $(awk '/^Pss:/ {s += $2} END {print s + 0}' /proc/$pid/smaps_rollup 2>/dev/null || echo 0)))
		done
		"$NSBOX" --store "$RT_STORE" rm "${ids[@]}" >/dev/null
		# KiB per sandbox, filed as "wall" so that the table helpers apply
		idle_mem_wall+=($(((before - after) / n)))
		idle_pss_wall+=($((pss / n)))
		idle_create_wall+=($(((${t1//[!0-9]/} - ${t0//[!0-9]/}) / n)))
	done
	local m_lo m_med m_hi p_lo p_med p_hi c
	read -r m_lo m_med m_hi < <(stats "${idle_mem_wall[@]}")
	read -r p_lo p_med p_hi < <(stats "${idle_pss_wall[@]}")
	local pss_spread=$p_lo/$p_med/$p_hi
	printf '\nidle_sandboxes: %d idle python sandboxes side by side, %d rounds\n' "$n" "$RUNS"
	printf '  %-50s %8s %8s %8s   %s\n' "" min median max "rounds, in order"
	printf '  %-50s %8s %8s %8s   %s\n' "host MemAvailable drop, KiB per sandbox" "$m_lo" "$m_med" "$m_hi" "${idle_mem_wall[*]}"
	printf '  %-50s %8s %8s %8s   %s\n' "init processes, KiB PSS per sandbox" "$p_lo" "$p_med" "$p_hi" "${idle_pss_wall[*]}"
	read -r p_lo p_med p_hi < <(stats "${idle_create_wall[@]}")
	printf '  %-50s %8s %8s %8s   %s\n' "create, ms per sandbox" "$(ms "$p_lo")" "$(ms "$p_med")" "$(ms "$p_hi")" \
		"$(for c in "${idle_create_wall[@]}"; do printf '%s ' "$(ms "$c")"; done)"
	printf '  %d of %d answered an exec\n' "$ok" "$asked"
	local verdict=MISSED
	[ "$m_med" -lt 2048 ] && [ "$ok" = "$asked" ] && verdict=OK
	result "idle_sandboxes per_sandbox_kib=$m_lo/$m_med/$m_hi init_pss_kib=$pss_spread create_ms=$(spread_ms idle_create) unanswered=$((asked - ok)) target<2048KiB $verdict n=$RUNS"
}

# ---- MCP: execute_code through the official client SDK --------------------------

# tests/bench/mcp_bench.mjs: execute_code in a live sandbox and one-shot,
# against chroot ROOTFS python3 -c 'print(1)' (run by runloop.py, as in
# sandbox_start), interleaved round by round.
bench_mcp_execute() {
	need_runtime_store
	"$ROOT/tests/mcp/setup.sh" >/dev/null || die "tests/mcp/setup.sh failed"
	local out
	out=$(node "$ROOT/tests/bench/mcp_bench.mjs" "$NSBOX" "$RT_STORE" "$RT_ROOTFS" "$RUNS" "$REPEAT") ||
		die "mcp_bench.mjs failed"
	relay python3 - "$out" <<'PYEOF'
import json, statistics, sys
from benchlib import line, spread, table_header, table_row
r = json.loads(sys.argv[1])
n, k = len(r["live_ms"]), r["repeat"]
print(f"\nmcp_execute: execute_code {{code: print(1)}} through the MCP client SDK over stdio, {n} x {k} calls per side, "
      f"rotated; ms per call (mean of each {k})")
print(table_header())
print(table_row("live sandbox (sandbox_id)", r["live_ms"]))
print(table_row("one-shot (fresh sandbox)", r["oneshot_ms"]))
print(table_row("baseline: chroot ROOTFS python3 -c 'print(1)'", r["chroot_ms"]))
print(table_row("context: server busy after a one-shot batch", r["settle_ms"]))
c = r["oneshot_call_ms"]
print(f"  context: one-shot single calls, {len(c)}: min {min(c):.1f}, median {statistics.median(c):.1f}, max {max(c):.1f} ms")
print(f"  server RSS: {r['connect_rss_kb']} KiB at connect, {r['idle_rss_kb']} KiB idle with its spare and a kept sandbox, "
      f"{r['busy_rss_kb']} KiB after the calls (target < 16 MiB idle)")
chroot = statistics.median(r["chroot_ms"])
for name, key, t in (("mcp_execute_live", "live_ms", 1.15), ("mcp_execute_oneshot", "oneshot_ms", 1.40)):
    ratio = statistics.median(r[key]) / chroot
    print(line(name, [f"nsbox_ms={spread(r[key])}", f"baseline_ms={spread(r['chroot_ms'])}", f"ratio={ratio:.2f}"],
               f"target<={t:.2f}", "OK" if ratio <= t else "MISSED", n))
print(line("mcp_execute_oneshot_settle", [f"settle_ms={spread(r['settle_ms'])}"], n=n))
print(line("mcp_execute_oneshot_calls", [f"call_ms={spread(c)}"], n=len(c)))
print(line("mcp_server_idle_rss", [f"rss_kib={r['idle_rss_kb']}", f"connect_rss_kib={r['connect_rss_kb']}"],
           "target<16384KiB", "OK" if r["idle_rss_kb"] < 16384 else "MISSED"))
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
	relay python3 - "$out" <<'PYEOF'
import json, statistics, sys
from benchlib import line, spread, table_header, table_row
r = json.loads(sys.argv[1])
med = lambda k: statistics.median(r[k])
py, fresh, pd, py2 = med("python_ms"), med("fresh_ms"), med("pandas_ms"), med("python_pandas_loaded_ms")
js, ts = med("javascript_ms"), med("typescript_ms")
n, n2 = len(r["python_ms"]), len(r["pandas_ms"])
print(f"\nmcp_interp: execute_code in a kept sandbox of the default image, through the MCP client SDK over stdio; "
      f"ms per call, {n} calls each, interleaved (rotated)")
print(table_header())
print(table_row("python interpreter  x = x + 1; print(x)", r["python_ms"]))
print(table_row("baseline: fresh: true  python3 -c 'print(1)'", r["fresh_ms"]))
print(table_row("context: sandbox_list (a call that runs nothing)", r["floor_ms"]))
print(table_row("javascript interpreter  x = x + 1; console.log", r["javascript_ms"]))
print(table_row("typescript interpreter  x = x + 1; console.log", r["typescript_ms"]))
print(f"  then pandas loaded (import numpy, pandas once: {r['pandas_import_ms']:.0f} ms), {n2} calls each, interleaved:")
print(table_row("python interpreter  df.sum()", r["pandas_ms"]))
print(table_row("baseline: the same interpreter, x = x + 1", r["python_pandas_loaded_ms"]))
print(f"  idle interpreter PSS: python {r['python_pss_kib']} KiB, python with numpy+pandas {r['python_pandas_pss_kib']} KiB, "
      f"node {r['javascript_pss_kib']} KiB, typescript {r['typescript_pss_kib']} KiB")
f = r["fleet_n"]
per = r["fleet_memavailable_drop_kib"] / f
print(f"  {f} kept sandboxes, each a python interpreter with numpy+pandas imported: set up in {r['fleet_setup_ms'] / f:.0f} ms each; "
      f"{r['fleet_answered']} of {f} answered a call afterwards")
print(f"  host MemAvailable drop: {per:.0f} KiB per sandbox; interpreter PSS min/median/max {spread(r['fleet_pss_kib'], '{:.0f}')} KiB")
print(line("mcp_interp_python", [f"nsbox_ms={spread(r['python_ms'])}", f"baseline_ms={spread(r['fresh_ms'])}",
                                 f"ratio={py / fresh:.2f}"], "target<=2ms", "OK" if py <= 2 else "MISSED", n))
print(line("mcp_interp_pandas_call", [f"nsbox_ms={spread(r['pandas_ms'])}", f"baseline_ms={spread(r['python_pandas_loaded_ms'])}",
                                      f"ratio={pd / py2:.2f}"], n=n2))
print(line("mcp_interp_javascript", [f"nsbox_ms={spread(r['javascript_ms'])}", f"baseline_ms={spread(r['fresh_ms'])}",
                                     f"ratio={js / fresh:.2f}"], n=n))
print(line("mcp_interp_typescript", [f"nsbox_ms={spread(r['typescript_ms'])}", f"baseline_ms={spread(r['fresh_ms'])}",
                                     f"ratio={ts / fresh:.2f}"], n=n))
print(line("mcp_interp_floor", [f"floor_ms={spread(r['floor_ms'])}"], n=n))
print(line("mcp_interp_fleet", [f"per_sandbox_kib={per:.0f}", f"pss_kib={spread(r['fleet_pss_kib'], '{:.0f}')}",
                                f"unanswered={f - r['fleet_answered']}"], n=f))
PYEOF
}

# mcp_rich: issue #27's rich results and streaming (tests/bench/mcp_rich.sh).
# shellcheck source=tests/bench/mcp_rich.sh
. "$ROOT/tests/bench/mcp_rich.sh"

# ---- egress: the allow-list's broker (docs/network.md) ---------------------------

# Sandbox start with networking (a rule: the init makes the listeners, the
# broker starts and takes them) against the same start without; then
# tests/bench/egress_bench.py: a 256 MiB download and small GETs through
# the broker against the same client on the host's loopback.
bench_egress() {
	need_runtime_store
	local img="oci:$F/oci/python:latest" i s sides=(net plain)
	side_plain() { run_loop nsbox-run "$REPEAT" "$NSBOX" --store "$RT_STORE" run "$img" -- python3 -c pass; }
	side_net() {
		run_loop nsbox-run-net "$REPEAT" "$NSBOX" --store "$RT_STORE" run \
			--net "bench.test=127.0.0.1:9" --net pypi "$img" -- python3 -c pass
	}
	say "egress: warm-up round (untimed)"
	for s in "${sides[@]}"; do "side_$s"; done
	series_reset net net_ret net_td plain plain_ret plain_td
	for ((i = 1; i <= RUNS; i++)); do
		say "egress: start run $i/$RUNS"
		rotated "$i" "${sides[@]}"
		for s in "${ORDER[@]}"; do
			"side_$s"
			record "$s"
			record_parts "$s"
		done
	done
	header "egress_start: python3 -c pass in a fresh sandbox with --net (listeners, broker) vs without (create, run, destroy: until every process it started has exited), $RUNS x $REPEAT runs; ms per run"
	row "nsbox run --net bench.test=127.0.0.1:9 --net pypi" net
	row "  of which teardown after it returned" net_td
	row "baseline: nsbox run (sealed)" plain
	row "  of which teardown after it returned" plain_td
	report egress_start none net plain
	relay python3 "$ROOT/tests/bench/egress_bench.py" "$NSBOX" "$RT_STORE" "$img" "$RT_ROOTFS" "$RUNS"
}

# ---- secrets: TLS terminated at the broker (issue #30, docs/secrets.md) -----------

# tests/bench/secrets_bench.py: small HTTPS GETs (keep-alive and new
# connections) and a 256 MiB download, direct on the host's loopback vs
# through the terminating broker (nsbox-tls, a secret substituted) vs the
# passthrough broker.
bench_secrets() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/secrets_bench.py" "$NSBOX" "$RT_STORE" "oci:$F/oci/python:latest" "$RT_ROOTFS" "$RUNS"
}

# ---- file_urls: files by signed URL (docs/tools.md, "Files by URL") ----------

# tests/bench/file_urls_bench.py: 64 MiB out of and into a kept sandbox by
# its download_url and an upload_url, against a plain HTTP server on the
# host's loopback, and against read_file's base64 pages over MCP.
bench_file_urls() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/file_urls_bench.py" "$NSBOX" "$RT_STORE" "oci:$F/oci/python:latest" "$RUNS"
}

# ---- node_capacity: one serve --http node, direct and through HAProxy ----------

# tests/bench/node_capacity.sh (docs/deploy.md, "Capacity of one node").
bench_node_capacity() {
	need_runtime_store
	relay "$ROOT/tests/bench/node_capacity.sh" "$NSBOX" "$RT_STORE" "$RUNS"
}

# ---- services: preview URLs and process logs (issue #28, docs/services.md) -----

# tests/bench/services_bench.py: a small request and a 256 MiB download
# through a preview URL against the same app on the host's loopback, and
# 1,000 log lines read through process_logs' cursor.
bench_services() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/services_bench.py" "$NSBOX" "$RT_STORE" "oci:$F/oci/python:latest" "$RUNS"
}

# tests/bench/zygote_bench.py: one-shot execute_code in python, javascript and
# typescript served by the spare's zygote (docs/warm.md), against the same
# call without spares and the interpreter's bare start in the same image;
# what --warm-import's modules cost in memory and save per call.
bench_zygote() {
	need_default_store
	relay python3 "$ROOT/tests/bench/zygote_bench.py" "$NSBOX" "$DEF_STORE" "$RUNS"
}

# ---- fork: sandbox_fork and checkpoints (issue #29, docs/fork.md) -------------

# tests/bench/fork_bench.py: sandbox_fork of 1 and of 10 children and
# sandbox_checkpoint/sandbox_restore beside sandbox_create of a fresh one.
bench_fork() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/fork_bench.py" "$NSBOX" "$RT_STORE" "oci:$F/oci/python:latest" "$RUNS"
}

# tests/bench/pause_bench.py: a call on a paused sandbox (transparent
# resume) vs the same call on a running one, and pause/resume themselves.
bench_pause() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/pause_bench.py" "$NSBOX" "$RT_STORE" "$RUNS"
}

# ---- context_fork: a fork of a code context (issue #29, docs/context-fork.md) ----

# tests/bench/context_fork_bench.py: context_fork of a small python context
# and of one with numpy+pandas imported, beside context_create (and
# context_create + the same imports), sides rotated, in one kept sandbox of
# the default image; the fork's Pss and Private_Dirty beside its source's.
bench_context_fork() {
	need_default_store
	relay python3 "$ROOT/tests/bench/context_fork_bench.py" "$NSBOX" "$DEF_STORE" "${BENCH_CONTEXT_FORK_ROUNDS:-20}"
}

# ---- density: many kept sandboxes in one server (issue #29, docs/density.md) ---

# tests/bench/density_bench.py: kept sandboxes made one after another in one
# `nsbox serve` up to each size of BENCH_DENSITY (default 1000; e.g.
# BENCH_DENSITY=1000,5000,10000): create time at the end against the first
# 100, run_command latency in every one, MemAvailable, server fds and RSS
# per sandbox.
bench_density() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/density_bench.py" "$NSBOX" "$RT_STORE" "oci:$F/oci/python:latest" \
		"${BENCH_DENSITY:-1000}"
}
# ---- burst: 100 sandbox_create + first command at once (issue #29, docs/burst.md) ----

# tests/bench/burst_bench.py: 100 items (sandbox_create, then its first
# run_command) released at once from 4 HTTP sessions of one serve --http,
# and 50 through one stdio session, against the same item one at a time
# (the baseline: what one create and its command cost uncontended).
bench_burst() {
	need_runtime_store
	relay python3 "$ROOT/tests/bench/burst_bench.py" "$NSBOX" "$RT_STORE" "$RUNS" "oci:$F/oci/python:latest"
}

# ---- nested: containers inside a sandbox (issue #31, docs/nested.md) ----------

# The CI image (images/ci/build.sh builds its layout once and caches it).
NESTED_STORE=
need_nested_store() {
	[ -n "$NESTED_STORE" ] && return
	local layout=${NSBOX_CI_LAYOUT:-/var/cache/nsbox/ci-image/oci}
	[ -d "$layout" ] || "$ROOT/images/ci/build.sh" >/dev/null 2>"$TMP/logs/ci-image.log" ||
		die "images/ci/build.sh failed (log: $TMP/logs/ci-image.log)"
	NESTED_STORE=$TMP/nested-store
	NESTED_CI=oci:$layout:latest
}

# tests/bench/nested_bench.py podman: `podman run --rm busybox true` in a
# nested sandbox (crun) against the same on the host as root (runc, rlimits
# lowered: this host's hybrid cgroups and hard limits), and nsbox exec's own
# cost.
bench_nested_podman() {
	need_nested_store
	relay python3 "$ROOT/tests/bench/nested_bench.py" podman "$NSBOX" "$NESTED_STORE" "$NESTED_CI" "$F/oci/busybox" "$RUNS"
}

# tests/bench/nested_bench.py ready: create --nested until the Docker API
# answers /_ping, against a plain create of the same image (and with one
# --nested-image, for context).
bench_nested_ready() {
	need_nested_store
	relay python3 "$ROOT/tests/bench/nested_bench.py" ready "$NSBOX" "$NESTED_STORE" "$NESTED_CI" "$F/oci/busybox" "$RUNS"
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
[ "$(id -u)" = 0 ] || die "run as root: the baseline is umoci raw unpack as root"
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
printf 'scratch: %s (%s); %s timed rounds per benchmark, sides rotated, after 1 warm-up; %s commands per runtime sample\n' \
	"$TMP" "$(df -T "$TMP" | awk 'NR == 2 {print $2}')" "$RUNS" "$REPEAT"
printf 'load average (1, 5, 15 min) at start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
if awk -v l="$(load1)" -v c="$(nproc)" 'BEGIN { exit !(l >= c / 4) }'; then
	printf 'note: the machine is not quiet (load average %s on %s cores): these figures are unreliable\n' "$(load1)" "$(nproc)"
fi

for b in "${selected[@]}"; do
	l0=$(cut -d' ' -f1-3 /proc/loadavg)
	export BENCH_LOAD_START=${l0%% *}
	"bench_$b"
	printf '  %s: load average (1, 5, 15 min) %s at start, %s at end\n' "$b" "$l0" "$(cut -d' ' -f1-3 /proc/loadavg)"
done

printf '\nload average (1, 5, 15 min) at end: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${RESULTS[@]}"
