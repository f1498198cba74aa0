# shellcheck shell=bash
# Sourced by tests/bench/run.sh: bench_mcp_rich, issue #27's speed figures
# (docs/bench.md, "Rich results and streaming (issue #27)").  Uses run.sh's
# need_default_store, relay, say, die and $ROOT/$NSBOX/$DEF_STORE.
#
# tests/bench/mcp_rich_bench.mjs (the MCP client SDK over stdio, a kept
# sandbox of the default image, rounds in a shuffled order) times: the stateful call
# without and with a progressToken; a DataFrame, a matplotlib figure with
# its chart and display() of HTML, each against the same work without the
# results and a fresh python3 -c doing it; the first output line's way from
# print() to the client's onprogress, against a plain pipe on the host.
# BENCH_RICH_CALLS (default 50) rounds of the stateful calls,
# BENCH_RICH_ROUNDS (default 20) of the rich ones and of the first line.
# BENCH_RICH_OLD=PATH: an nsbox binary from before issue #27, whose
# stateful calls are timed beside these (the richer results' cost).

bench_mcp_rich() {
	need_default_store
	"$ROOT/tests/mcp/setup.sh" >/dev/null || die "tests/mcp/setup.sh failed"
	local k=${BENCH_RICH_CALLS:-50} r=${BENCH_RICH_ROUNDS:-20} out
	[ -z "${BENCH_RICH_OLD:-}" ] || [ -x "$BENCH_RICH_OLD" ] || die "BENCH_RICH_OLD=$BENCH_RICH_OLD is not executable"
	say "mcp_rich: $k rounds of stateful calls, $r of rich results and of the first output line"
	out=$(node "$ROOT/tests/bench/mcp_rich_bench.mjs" "$NSBOX" "$DEF_STORE" localhost/nsbox-default:latest \
		"$k" "$r" "$r") || die "mcp_rich_bench.mjs failed"
	relay python3 - "$out" <<'PYEOF'
import json, statistics, sys
from benchlib import line, spread, table_header, table_row
r = json.loads(sys.argv[1])
med = lambda k: statistics.median(r[k])
n, m, f = len(r["stateful_ms"]), len(r["df_ms"]), len(r["first_stream_ms"])
print(f"\nmcp_rich: execute_code in a kept python interpreter of the default image, through the MCP client SDK "
      f"over stdio; ms per call, {n} rounds, each in a shuffled order")
print(table_header())
print(table_row("x = x + 1; print(x)", r["stateful_ms"]))
print(table_row("x = x + 1; x  (main result bundle)", r["result_ms"]))
print(table_row("x = x + 1; x  with a progressToken", r["result_progress_ms"]))
print(table_row("baseline: fresh: true  python3 -c 'print(1)'", r["fresh_ms"]))
print(table_row("context: sandbox_list (a call that runs nothing)", r["floor_ms"]))
if "old_stateful_ms" in r:
    print(table_row("nsbox before #27 (BENCH_RICH_OLD): x = x + 1; print(x)", r["old_stateful_ms"]))
    print(table_row("nsbox before #27 (BENCH_RICH_OLD): x = x + 1; x", r["old_result_ms"]))
print(f"  then on its own, {len(r['stateful_progress_ms'])} calls (its 50 ms gap would idle the next side):")
print(table_row("x = x + 1; print(x)  with a progressToken", r["stateful_progress_ms"]))
notes = lambda k: f"{min(r[k])}..{max(r[k])}"
print(f"  progress notifications per call with a token: print(x) {notes('stateful_progress_notes')}, "
      f"x {notes('result_progress_notes')}")
print(f"  then numpy, pandas, matplotlib imported ({r['rich_setup_ms']:.0f} ms once), {m} rounds, shuffled:")
print(table_row("df  (text + html + data)", r["df_ms"]))
print(table_row("  the same work, nothing returned", r["df_work_ms"]))
print(table_row("  baseline: fresh python3 -c, import + the same work", r["df_fresh_ms"]))
print(table_row("a line plot  (png + chart)", r["fig_ms"]))
print(table_row("  the same figure and savefig png, nothing returned", r["fig_work_ms"]))
print(table_row("  baseline: fresh python3 -c, import + figure + png", r["fig_fresh_ms"]))
print(table_row("display(HTML('<b>hi</b>'))", r["html_ms"]))
print(table_row("  baseline: the same interpreter, x = x + 1; print(x)", r["trivial_ms"]))
print(f"  first output line, print(flush=True) to the client's onprogress (CLOCK_MONOTONIC both sides), {f} rounds:")
print(table_row("streamed (notifications/progress)", r["first_stream_ms"], lambda x: f"{x:.2f}"))
print(table_row("baseline: the same print read from a pipe on the host", r["first_pipe_ms"], lambda x: f"{x:.2f}"))
print("  old behaviour (before issue #27): a once-a-second tail, 1000 ms by construction")
fresh = med("fresh_ms")
for name, key in (("mcp_rich_stateful", "stateful_ms"), ("mcp_rich_stateful_progress", "stateful_progress_ms"),
                  ("mcp_rich_result", "result_ms"), ("mcp_rich_result_progress", "result_progress_ms")):
    v = med(key)
    print(line(name, [f"nsbox_ms={spread(r[key])}", f"baseline_ms={spread(r['fresh_ms'])}", f"ratio={v / fresh:.2f}"],
               "target<=1ms", "OK" if v <= 1 else "MISSED", len(r[key])))
for name, key in (("mcp_rich_stateful_vs_old", "stateful"), ("mcp_rich_result_vs_old", "result")):
    if "old_" + key + "_ms" in r:
        print(line(name, [f"nsbox_ms={spread(r[key + '_ms'])}", f"baseline_ms={spread(r['old_' + key + '_ms'])}",
                          f"ratio={med(key + '_ms') / med('old_' + key + '_ms'):.2f}"], n=n))
for name, key, base in (("mcp_rich_dataframe", "df", "df_fresh"), ("mcp_rich_figure_chart", "fig", "fig_fresh")):
    print(line(name, [f"nsbox_ms={spread(r[key + '_ms'])}", f"baseline_ms={spread(r[base + '_ms'])}",
                      f"ratio={med(key + '_ms') / med(base + '_ms'):.2f}", f"work_ms={spread(r[key + '_work_ms'])}"], n=m))
print(line("mcp_rich_display_html", [f"nsbox_ms={spread(r['html_ms'])}", f"baseline_ms={spread(r['trivial_ms'])}",
                                     f"ratio={med('html_ms') / med('trivial_ms'):.2f}"], n=m))
s, p = r["first_stream_ms"], r["first_pipe_ms"]
print(line("mcp_rich_first_output", [f"nsbox_ms={spread(s)}", f"baseline_ms={spread(p)}",
                                     f"ratio={statistics.median(s) / statistics.median(p):.2f}", "old_ms=1000"],
           "target<100ms", "OK" if max(s) < 100 else "MISSED", f))
PYEOF
}
