#!/usr/bin/env python3
"""Density: many kept sandboxes in one server (issue #29, docs/density.md;
tests/bench/run.sh density).

usage: density_bench.py NSBOX STORE IMAGE SIZES

One `nsbox serve` over stdio (python image IMAGE as language python)
makes kept sandboxes one after another up to each size of SIZES (a comma
list, ascending: BENCH_DENSITY, default 1000; e.g. 1000,5000,10000).
At each size it reports:

  create_ms      sandbox_create's time over the last 100 made before this
                 size, beside the first 100 made (the baseline): the ratio
                 says whether create time depends on the live count
                 (target <= 1.5: flat)
  exec_ms        one run_command `true` in every live sandbox, in order:
                 median and max (target: max < 50 ms)
  mem_kib        the host's MemAvailable drop per sandbox (settled),
                 context, no target
  fds            the server's open fds per sandbox (target <= 2)
  rss_kib        the server's RSS per sandbox, context

BENCH_DENSITY_USER=NAME runs the server as that user (rootless, through
runuser; NSBOX_LIMITS=best-effort: no cgroup without delegation).

Creation stops early, reported, when MemAvailable falls below
BENCH_DENSITY_FLOOR_MB (default 2048) or a create fails, and an exec pass
ends after BENCH_DENSITY_EXEC_S (default 600) seconds, said; every sandbox is
stopped at the end (the stop time reported).  Reports, never asserts;
exits non-zero when a step fails."""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mcp"))
sys.path.insert(0, HERE)
from benchlib import line, spread  # noqa: E402
from stdio_client import Server  # noqa: E402

EXEC_BUDGET_S = int(os.environ.get("BENCH_DENSITY_EXEC_S", "600"))
FLOOR_KIB = int(os.environ.get("BENCH_DENSITY_FLOOR_MB", "2048")) << 10


def mem_avail():
    with open("/proc/meminfo") as f:
        for ln in f:
            if ln.startswith("MemAvailable:"):
                return int(ln.split()[1])
    return 0


def mem_settled():
    """MemAvailable once it stops moving (within 1 MiB over 0.5 s)."""
    prev = mem_avail()
    for _ in range(40):
        time.sleep(0.5)
        now = mem_avail()
        if abs(now - prev) < 1024:
            return now
        prev = now
    return prev


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def server_pid(p):
    """The nsbox process itself (under runuser: runuser's child, past env)."""
    pid = p.pid
    for _ in range(3):
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() not in ("runuser", "env"):
                return pid
        for _ in range(50):
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
            if kids:
                break
            time.sleep(0.1)
        pid = int(kids[0])
    sys.exit("density_bench: no nsbox server process found")


def stop_all(s, ids, batch=32):
    """sandbox_stop for every id, batch calls in flight at a time (the
    server runs a session's calls at once); returns the failures."""
    failed = 0
    for k in range(0, len(ids), batch):
        part = ids[k:k + batch]
        first = s.n + 1
        for i in part:
            s.n += 1
            s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": s.n, "method": "tools/call",
                                        "params": {"name": "sandbox_stop",
                                                   "arguments": {"sandbox_id": i}}}) + "\n")
        s.p.stdin.flush()
        got = 0
        while got < len(part):
            msg = json.loads(s.p.stdout.readline())
            if isinstance(msg.get("id"), int) and msg["id"] >= first:
                got += 1
                failed += "error" in msg or msg.get("result", {}).get("isError", False)
    return failed


def ok(r, what):
    if "result" not in r or r["result"].get("isError"):
        sys.exit(f"density_bench: {what}: {str(r)[:400]}")
    return r["result"]["structuredContent"]


def report(rows, results, user, stopped_early):
    print(f"\ndensity: kept python sandboxes in one nsbox serve (stdio, {'as ' + user if user else 'as root'}), "
          f"made one after another; host {os.cpu_count()} cores")
    print(f"  {'live':>6} {'create ms first 100':>20} {'last 100':>9} {'ratio':>6} "
          f"{'exec ms median':>15} {'max':>7} {'>=50ms':>7} {'MemAvail KiB/sb':>16} "
          f"{'fds/sb':>7} {'RSS KiB/sb':>11}")
    for r in rows:
        print(f"  {r['n']:>6} {statistics.median(r['first']):>20.1f} {statistics.median(r['last']):>9.1f} "
              f"{statistics.median(r['last']) / statistics.median(r['first']):>6.2f} "
              f"{statistics.median(r['lat']):>15.1f} {max(r['lat']):>7.1f} {r['slow']:>7} "
              f"{r['mem']:>16.0f} {r['fds']:>7.2f} {r['rss']:>11.1f}")
    if stopped_early:
        print(f"  stopped early: {stopped_early}")
    for r in results:
        print(r)
    sys.stdout.flush()


def main():
    nsbox, store, image = sys.argv[1], sys.argv[2], sys.argv[3]
    sizes = sorted({int(x) for x in sys.argv[4].split(",") if x.strip()})
    top = sizes[-1]
    user = os.environ.get("BENCH_DENSITY_USER", "")
    prefix = ["runuser", "-u", user, "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
              f"HOME=/home/{user}", "NSBOX_LIMITS=best-effort"] if user else []
    s = Server(extra=["--image", f"python={image}", "--max-sandboxes", str(top + 16),
                      "--max-total-sandboxes", str(top + 16)],
               store=store, nsbox=nsbox, argv_prefix=prefix)
    pid = server_pid(s.p)
    ids, create_ms, rows, results = [], [], [], []
    stopped_early = ""
    try:
        time.sleep(1)
        m0, f0, r0 = mem_settled(), nfds(pid), rss_kib(pid)
        for size in sizes:
            while len(ids) < size:
                if len(ids) % 100 == 0 and mem_avail() < FLOOR_KIB:
                    stopped_early = f"MemAvailable below {FLOOR_KIB >> 10} MiB at {len(ids)} sandboxes"
                    break
                t0 = time.perf_counter()
                r = s.call("sandbox_create", language="python")
                create_ms.append((time.perf_counter() - t0) * 1000)
                if "result" not in r or r["result"].get("isError"):
                    stopped_early = f"create {len(ids) + 1} failed: {str(r)[:300]}"
                    break
                ids.append(r["result"]["structuredContent"]["sandbox_id"])
                if len(ids) % 500 == 0:
                    print(f"density: {len(ids)} live, last create {create_ms[-1]:.1f} ms, "
                          f"MemAvailable {mem_avail() >> 10} MiB", file=sys.stderr, flush=True)
            n = len(ids)
            if n == 0:
                break
            mem = mem_settled()
            fds, rss = nfds(pid), rss_kib(pid)
            lat, t_pass = [], time.perf_counter()
            for i in ids:
                if time.perf_counter() - t_pass > EXEC_BUDGET_S:
                    stopped_early = (f"the exec pass at {n} took over {EXEC_BUDGET_S} s: "
                                     f"{len(lat)} of {n} sandboxes asked")
                    break
                t0 = time.perf_counter()
                st = ok(s.call("run_command", sandbox_id=i, command="true"), "run_command")
                lat.append((time.perf_counter() - t0) * 1000)
                if st.get("exit_code") != 0:
                    sys.exit(f"density_bench: run_command true in {i}: {st}")
            first, last = create_ms[:100], create_ms[max(0, n - 100):n]
            row = dict(n=n, first=first, last=last, lat=lat, mem=(m0 - mem) / n,
                       fds=(fds - f0) / n, rss=(rss - r0) / n, slow=sum(x >= 50 for x in lat))
            rows.append(row)
            ratio = statistics.median(last) / statistics.median(first)
            results.append(line(f"density_create_{n}", [f"nsbox_ms={spread(last, '{:.1f}')}",
                                                         f"baseline_ms={spread(first, '{:.1f}')}",
                                                         f"ratio={ratio:.2f}"],
                                "target<=1.5", "OK" if ratio <= 1.5 else "MISSED", n=len(last)))
            results.append(line(f"density_exec_{n}", [f"exec_ms={spread(lat, '{:.1f}')}",
                                                      f"over_50ms={row['slow']}"],
                                "target<50ms", "OK" if max(lat) < 50 else "MISSED", n=n))
            results.append(line(f"density_fds_{n}", [f"fds_per_sandbox={row['fds']:.2f}",
                                                     f"mem_kib_per_sandbox={row['mem']:.0f}",
                                                     f"server_rss_kib_per_sandbox={row['rss']:.1f}"],
                                "target<=2fds", "OK" if row["fds"] <= 2 else "MISSED"))
            if stopped_early:
                break
        report(rows, results, user, stopped_early)
    finally:
        t0 = time.perf_counter()
        failed = stop_all(s, ids)
        print(f"  stopping {len(ids)} sandboxes, 32 at a time, took {time.perf_counter() - t0:.1f} s"
              f"{f' ({failed} failed)' if failed else ''}")
        s.close()


if __name__ == "__main__":
    main()
