#!/usr/bin/env python3
"""context_fork's latency (issue #29: target <= 5 ms) beside context_create
of a fresh context, in one kept sandbox of the default image through
`nsbox serve` over stdio, sides rotated per round: (1) a small python
context (a few variables) forked, against a new context made; (2) a
context with numpy and pandas imported forked, against a new context made
and the same imports run in it (what a fork saves).  Each side's context
is removed after it is timed (untimed, then 50 ms for its teardown to
settle), so the sandbox stays under its 16.
Also the fork's memory: Pss and Private_Dirty of a pandas fork against its
source's (smaps_rollup), the copy-on-write sharing.

usage: context_fork_bench.py NSBOX STORE ROUNDS   (prints benchlib lines)"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mcp"))
from benchlib import line, rotated, spread, table_header, table_row  # noqa: E402
from stdio_client import Server  # noqa: E402

nsbox, store, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = Server(store=store, nsbox=nsbox)


def sc(r):
    if r.get("isError"):
        sys.exit("context_fork_bench: " + r["content"][0]["text"])
    return r.get("structuredContent") or {}


def timed(name, **args):
    t = time.perf_counter()
    r = sc(s.tool(name, **args))
    return (time.perf_counter() - t) * 1000, r


def remove(sb, cid):
    """Untimed: the context goes, and its teardown (a killed interpreter's
    exit) settles before the next timed call."""
    s.tool("context_remove", sandbox_id=sb, context_id=cid)
    time.sleep(0.05)


def rollup(sb, pid):
    out = sc(s.tool("run_command", sandbox_id=sb,
                    command=f"grep -E '^(Pss|Private_Dirty):' /proc/{pid}/smaps_rollup"))["stdout"]
    return {k.rstrip(":"): int(v) for k, v, _ in (ln.split() for ln in out.splitlines())}


sb = sc(s.tool("sandbox_create", language="python"))["sandbox_id"]
try:
    small = sc(s.tool("context_create", sandbox_id=sb))["context_id"]
    sc(s.tool("execute_code", sandbox_id=sb, context=small,
              code="import json, os\nx = 41\nd = {i: str(i) for i in range(1000)}"))
    big = sc(s.tool("context_create", sandbox_id=sb))["context_id"]
    sc(s.tool("execute_code", sandbox_id=sb, context=big, code="import numpy, pandas"))
    series = {k: [] for k in ("fork", "create", "fork_pandas", "create_pandas", "server_fork")}

    def side_fork():
        ms, r = timed("context_fork", sandbox_id=sb, context_id=small)
        series["fork"].append(ms)
        series["server_fork"].append(r["fork_ms"])
        remove(sb, r["context_id"])

    def side_create():
        ms, r = timed("context_create", sandbox_id=sb)
        series["create"].append(ms)
        remove(sb, r["context_id"])

    def side_fork_pandas():
        ms, r = timed("context_fork", sandbox_id=sb, context_id=big)
        series["fork_pandas"].append(ms)
        remove(sb, r["context_id"])

    def side_create_pandas():
        t = time.perf_counter()
        r = sc(s.tool("context_create", sandbox_id=sb))
        sc(s.tool("execute_code", sandbox_id=sb, context=r["context_id"], code="import numpy, pandas"))
        series["create_pandas"].append((time.perf_counter() - t) * 1000)
        remove(sb, r["context_id"])

    sides = [side_fork, side_create, side_fork_pandas, side_create_pandas]
    for side in sides:  # warm-up, untimed
        side()
    for k in series:
        series[k].clear()
    for i in range(rounds):
        for side in rotated(sides, i):
            side()

    f = sc(s.tool("context_fork", sandbox_id=sb, context_id=big))
    pid_src = sc(s.tool("execute_code", sandbox_id=sb, context=big, code="import os; os.getpid()"))["result"]
    pid_f = sc(s.tool("execute_code", sandbox_id=sb, context=f["context_id"],
                      code="import os; os.getpid()"))["result"]
    m_src, m_f = rollup(sb, pid_src), rollup(sb, pid_f)
finally:
    s.tool("sandbox_stop", sandbox_id=sb)
    s.close()

med = {k: statistics.median(v) for k, v in series.items()}
print(f"\ncontext_fork: one kept sandbox of the default image, through nsbox serve over stdio; "
      f"ms per call, {rounds} rounds, sides rotated")
print(table_header())
print(table_row("context_fork of a small python context", series["fork"]))
print(table_row("  (the server's own time for it: fork_ms)", series["server_fork"]))
print(table_row("baseline: context_create (a fresh python)", series["create"]))
print(table_row("context_fork of a context with numpy+pandas", series["fork_pandas"]))
print(table_row("baseline: context_create + import numpy, pandas", series["create_pandas"]))
print(f"  memory of a numpy+pandas fork: Pss {m_f['Pss']} KiB, Private_Dirty {m_f['Private_Dirty']} KiB "
      f"(its source: Pss {m_src['Pss']} KiB, Private_Dirty {m_src['Private_Dirty']} KiB)")
n = len(series["fork"])
print(line("context_fork", [f"nsbox_ms={spread(series['fork'])}", f"baseline_ms={spread(series['create'])}",
                            f"ratio={med['fork'] / med['create']:.2f}"],
           "target<=5ms", "OK" if med["fork"] <= 5 else "MISSED", n))
print(line("context_fork_pandas", [f"nsbox_ms={spread(series['fork_pandas'])}",
                                   f"baseline_ms={spread(series['create_pandas'])}",
                                   f"ratio={med['fork_pandas'] / med['create_pandas']:.3f}"],
           "target<=5ms", "OK" if med["fork_pandas"] <= 5 else "MISSED", n))
print(line("context_fork_memory", [f"fork_pss_kib={m_f['Pss']}", f"fork_private_dirty_kib={m_f['Private_Dirty']}",
                                   f"source_pss_kib={m_src['Pss']}"], n=1))
