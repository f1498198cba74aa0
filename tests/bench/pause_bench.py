#!/usr/bin/env python3
"""Pause and resume (issue #29; tests/bench/run.sh pause, docs/bench.md).

usage: pause_bench.py NSBOX STORE RUNS

One `nsbox serve` over stdio with a kept sandbox (the store's default
image).  RUNS rounds after one untimed warm-up, N calls a side a round,
the sides' order rotated from round to round:

  pause_resume_added   run_command `true` on a paused sandbox (the call
                       resumes it: transparent resume) vs the same call on
                       a running one; the figure is the difference of the
                       medians (target: adds <= 5 ms)
  pause_pause_ms       sandbox_pause itself (freeze and wait for FROZEN):
                       INFO
  pause_resume_ms      sandbox_resume itself: INFO

Prints a table and result lines in benchlib.py's format.  Reports, never
asserts; exits non-zero only when a step fails."""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mcp"))
sys.path.insert(0, HERE)
from benchlib import line, spread, table_header, table_row  # noqa: E402
from stdio_client import Server  # noqa: E402

N = int(os.environ.get("BENCH_PAUSE_N", "20"))


def die(msg):
    sys.exit(f"pause_bench: {msg}")


def main():
    nsbox, store, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    srv = Server(store=store, nsbox=nsbox)
    try:
        res = srv.tool("sandbox_create")
        if res.get("isError"):
            die(f"sandbox_create: {res['content'][0]['text']}")
        box = res["structuredContent"]["sandbox_id"]

        def call():
            t0 = time.perf_counter()
            r = srv.tool("run_command", sandbox_id=box, command="true")
            t = (time.perf_counter() - t0) * 1000
            if r.get("isError") or r["structuredContent"]["exit_code"] != 0:
                die(f"run_command: {r}")
            return t

        def timed(name):
            t0 = time.perf_counter()
            r = srv.tool(name, sandbox_id=box)
            if r.get("isError"):
                die(f"{name}: {r['content'][0]['text']}")
            return (time.perf_counter() - t0) * 1000

        running, paused, pause_ms, resume_ms = [], [], [], []

        def side_running(out):
            for _ in range(N):
                out.append(call())

        def side_paused(out):
            for _ in range(N):
                pause_ms.append(timed("sandbox_pause"))
                out.append(call())

        for rnd in range(runs + 1):
            a, b = [], []
            sides = [(side_running, a), (side_paused, b)]
            for fn, out in (sides if rnd % 2 == 0 else sides[::-1]):
                fn(out)
            for _ in range(N // 4 or 1):
                srv.tool("sandbox_pause", sandbox_id=box)
                resume_ms.append(timed("sandbox_resume"))
            if rnd == 0:
                pause_ms.clear()
                resume_ms.clear()
                continue
            running.append(statistics.median(a))
            paused.append(statistics.median(b))
        srv.tool("sandbox_stop", sandbox_id=box)
    finally:
        srv.close()
    added = statistics.median(paused) - statistics.median(running)
    print(f"pause: run_command `true` through nsbox serve (stdio), {runs} rounds x {N} calls; "
          "ms per call (medians of each round)")
    print(table_header())
    print(table_row("call on a running sandbox (baseline)", running))
    print(table_row("call on a paused sandbox (resumes it)", paused))
    print(table_row("sandbox_pause (freeze, FROZEN)", pause_ms))
    print(table_row("sandbox_resume", resume_ms))
    print(line("pause_resume_added", [f"running_ms={spread(running)}", f"paused_ms={spread(paused)}",
                                      f"added_ms={added:.2f}"],
               "target<=5", "OK" if added <= 5 else "MISSED", n=runs))
    print(line("pause_pause_ms", [f"ms={spread(pause_ms)}"], n=len(pause_ms)))
    print(line("pause_resume_ms", [f"ms={spread(resume_ms)}"], n=len(resume_ms)))


if __name__ == "__main__":
    main()
