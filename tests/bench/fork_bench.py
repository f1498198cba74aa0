#!/usr/bin/env python3
"""sandbox_fork and checkpoints (issue #29; tests/bench/run.sh fork,
docs/bench.md, docs/fork.md).

usage: fork_bench.py NSBOX STORE IMAGE RUNS

One `nsbox serve` over stdio; a kept parent sandbox of IMAGE with a few
files written (a 1 MiB file, a small tree).  RUNS rounds after one untimed
warm-up round, the sides rotated from round to round:

  create       sandbox_create of a fresh sandbox of IMAGE (the baseline)
  fork_1       sandbox_fork {count 1} of the parent
  fork_10      sandbox_fork {count 10}
  checkpoint   sandbox_checkpoint of the parent
  restore      sandbox_restore of that checkpoint

Each side's sandboxes are stopped (untimed) before the next side.  On a
host where CRIU cannot run (every result says state_lost) these are
filesystem-only forks: the issue's targets (one child of a python sandbox
with pandas loaded, carrying its memory, <= 150 ms; 10 children <= 1 s)
are printed against them all the same, and memory per child is the
MemAvailable drop over fork_10's children divided by 10.

Prints a table and result lines in benchlib.py's format.  Reports, never
asserts; exits non-zero only when a step fails."""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mcp"))
import benchlib  # noqa: E402
from benchlib import line, spread  # noqa: E402
from stdio_client import Server  # noqa: E402


def die(msg):
    sys.exit(f"fork_bench: {msg}")


def sc(r):
    return (r or {}).get("structuredContent") or {}


def mem_available():
    with open("/proc/meminfo") as f:
        for ln in f:
            if ln.startswith("MemAvailable:"):
                return int(ln.split()[1]) * 1024
    return 0


def main():
    if len(sys.argv) != 5:
        die("usage: fork_bench.py NSBOX STORE IMAGE RUNS")
    nsbox, store, image, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    srv = Server(["--max-sandboxes", "16", "--max-checkpoints", "64"], store, nsbox=nsbox)
    parent = sc(srv.tool("sandbox_create", image=image)).get("sandbox_id") or die("create the parent")
    r = srv.tool("run_command", sandbox_id=parent,
                 command="head -c 1048576 /dev/urandom > /workspace/blob && mkdir -p /opt/app/lib && "
                         "for i in $(seq 50); do echo $i > /opt/app/lib/f$i; done")
    if sc(r).get("exit_code") != 0:
        die(f"prepare the parent: {r}")
    ck = [None]
    lost = [""]

    def stop_all(ids):
        for i in ids:
            srv.tool("sandbox_stop", sandbox_id=i)

    def timed(name, **args):
        t0 = time.perf_counter()
        r = srv.tool(name, **args)
        t = (time.perf_counter() - t0) * 1000
        if r.get("isError"):
            die(f"{name}: {r}")
        return t, sc(r)

    mem_per_child = []

    def side(name):
        if name == "create":
            t, r = timed("sandbox_create", image=image)
            stop_all([r["sandbox_id"]])
        elif name in ("fork_1", "fork_10"):
            n = 1 if name == "fork_1" else 10
            before = mem_available()
            t, r = timed("sandbox_fork", sandbox_id=parent, count=n)
            if n == 10:
                mem_per_child.append((before - mem_available()) / 10)
            lost[0] = r.get("state_lost_reason", "")
            stop_all([c["sandbox_id"] for c in r["children"]])
        elif name == "checkpoint":
            t, r = timed("sandbox_checkpoint", sandbox_id=parent)
            if ck[0] is not None:
                srv.tool("checkpoint_delete", checkpoint_id=ck[0])
            ck[0] = r["checkpoint_id"]
        else:
            if ck[0] is None:
                ck[0] = timed("sandbox_checkpoint", sandbox_id=parent)[1]["checkpoint_id"]
            t, r = timed("sandbox_restore", checkpoint_id=ck[0])
            stop_all([r["sandbox_id"]])
        return t

    sides = ["create", "fork_1", "fork_10", "checkpoint", "restore"]
    samples = {s: [] for s in sides}
    for i in range(runs + 1):
        for s in benchlib.rotated(sides, i):
            t = side(s)
            if i > 0:
                samples[s].append(t)
    srv.tool("sandbox_stop", sandbox_id=parent)
    if ck[0] is not None:
        srv.tool("checkpoint_delete", checkpoint_id=ck[0])
    srv.close()

    print(f"fork: {image}, parent with 1 MiB + 50 files written; memory carried: "
          f"{'no: ' + lost[0] if lost[0] else 'yes'}")
    print(benchlib.table_header())
    for s in sides:
        print(benchlib.table_row(s, samples[s]))
    med = {s: statistics.median(samples[s]) for s in sides}
    n = runs
    fs = "fs_only" if lost[0] else "memory"
    print(line("fork_1", [f"fork_ms={spread(samples['fork_1'])}", f"create_ms={spread(samples['create'])}",
                          f"ratio={med['fork_1'] / med['create']:.2f}", f"kind={fs}"],
               "target<150ms", "OK" if med["fork_1"] <= 150 else "MISSED", n))
    print(line("fork_10", [f"fork_ms={spread(samples['fork_10'])}",
                           f"create_x10_ms={med['create'] * 10:.0f}",
                           f"ratio={med['fork_10'] / (med['create'] * 10):.2f}", f"kind={fs}"],
               "target<1000ms", "OK" if med["fork_10"] <= 1000 else "MISSED", n))
    print(line("fork_mem_per_child", [f"memavailable_mib={spread([m / 2**20 for m in mem_per_child])}",
                                      f"kind={fs}"], n=n))
    print(line("checkpoint", [f"checkpoint_ms={spread(samples['checkpoint'])}",
                              f"restore_ms={spread(samples['restore'])}",
                              f"restore_vs_create={med['restore'] / med['create']:.2f}", f"kind={fs}"], n=n))


if __name__ == "__main__":
    main()
