#!/usr/bin/env python3
"""Long-lived services (issue #28; tests/bench/run.sh services, docs/bench.md).

usage: services_bench.py NSBOX STORE IMAGE RUNS

One `nsbox serve --http` with a kept python sandbox running
tests/services/apps/bench_server.py in the background (process_start),
exposed with port_expose; the same program on the host's loopback is the
baseline ("direct").  RUNS rounds after one untimed warm-up round, the
sides of each figure rotated from round to round:

  services_proxy_small   GET of 100 bytes on a new connection, through the
                         preview URL vs direct: SMALL_N requests a side a
                         round; the figure is the difference of the
                         medians (target: adds <= 0.5 ms)
  services_proxy_256m    GET of 256 MiB, through the preview URL vs direct
                         (target: at least 0.8x direct's speed, i.e. a
                         time ratio <= 1.25)
  (both with a reference side: HAProxy in TCP mode on the loopback in
  front of the direct app, what any one-more-hop relay costs here; not
  counted in the verdicts)
  services_logs_cursor   1,000 lines (61 KiB) a finished background process
                         printed, read through process_logs: with the
                         cursor in pages of 4 KiB, and in one call, against
                         `cat` of the same lines by run_command (context)

Prints a table and result lines in benchlib.py's format.  Reports, never
asserts; exits non-zero only when a step fails or a body is wrong."""
import http.client
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "services"))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import userflow as uf  # noqa: E402
from benchlib import line, spread  # noqa: E402

SMALL_N = int(os.environ.get("BENCH_SERVICES_SMALL", "200"))
BIG = 256 << 20
LINES = "".join(f"line {i:04d} of the long test run: tests/test_{i:04d}.py PASSED\n" for i in range(1, 1001))


def die(msg):
    sys.exit(f"services_bench: {msg}")


def get(host, port, path, want):
    """Seconds for one GET of path on a new connection to 127.0.0.1:port
    (Host: host:port), the body read whole into a reused buffer and its
    length checked."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    c.request("GET", path, headers={"Host": f"{host}:{port}", "Connection": "close"})
    r = c.getresponse()
    buf = bytearray(1 << 20)
    got = 0
    while True:
        k = r.readinto(buf)
        if not k:
            break
        got += k
    t = time.perf_counter() - t0
    c.close()
    if r.status != 200 or got != want:
        die(f"GET {path[:60]}: HTTP {r.status}, {got} bytes, want {want}")
    return t


def haproxy(port):
    """HAProxy (mode tcp) on a free loopback port relaying to port:
    (process, its port), or (None, None) without haproxy."""
    import shutil
    import socket
    import tempfile
    if not shutil.which("haproxy"):
        return None, None
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    hp = s.getsockname()[1]
    s.close()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
    cfg.write(f"global\n  maxconn 256\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 300s\n"
              f"  timeout server 300s\nfrontend f\n  bind 127.0.0.1:{hp}\n  default_backend b\n"
              f"backend b\n  server s1 127.0.0.1:{port}\n")
    cfg.close()
    p = subprocess.Popen(["haproxy", "-f", cfg.name, "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.time() + 10
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", hp), 1).close()
            os.unlink(cfg.name)
            return p, hp
        except OSError:
            time.sleep(0.05)
    die("haproxy did not start")


class Serve:
    def __init__(self, nsbox, store, image):
        self.p = subprocess.Popen([nsbox, "--store", store, "serve", "--http", "127.0.0.1:0",
                                   "--image", f"python={image}"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.port = None
        end = time.time() + 30
        while self.port is None and time.time() < end:
            ln = self.p.stderr.readline().decode()
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", ln)
            if m:
                self.port = int(m.group(1))
            if not ln and self.p.poll() is not None:
                break
        if self.port is None:
            die("nsbox serve --http did not start")
        import threading
        threading.Thread(target=self.p.stderr.read, daemon=True).start()

    def stop(self):
        self.p.terminate()
        self.p.wait(60)


def main():
    nsbox, store, image, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    app = uf.app("bench_server.py")
    # The baseline: the same program on the host's loopback.
    host = subprocess.Popen([sys.executable, os.path.join(uf.APPS, "bench_server.py"), "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    direct_port = int(host.stdout.readline().split()[-1])
    hap, hap_port = haproxy(direct_port)
    s = Serve(nsbox, store, image)
    c = uf.Http(s.port, name="services-bench")
    try:
        box = uf.call(c, "sandbox_create", {"language": "python"})["sandbox_id"]
        uf.call(c, "write_file", {"sandbox_id": box, "path": "/tmp/app.py", "content": app})
        uf.start(c, box, "python3 /tmp/app.py 8000", name="app")
        url = urllib.parse.urlsplit(uf.expose(c, box, 8000, wait_s=60))
        phost, pport, ppath = url.hostname, url.port or 80, url.path  # ppath ends in /
        # The log benchmark's process: 1,000 lines, then it ends.
        uf.call(c, "write_file", {"sandbox_id": box, "path": "/tmp/lines.txt", "content": LINES})
        lh = uf.start(c, box, "cat /tmp/lines.txt", name="lines")
        uf.wait(c, lh, 60)

        def small(side):
            if side == "proxied":
                return [get(phost, pport, ppath + "small", 100) for _ in range(SMALL_N)]
            if side == "haproxy":
                return [get("127.0.0.1", hap_port, "/small", 100) for _ in range(SMALL_N)]
            return [get("127.0.0.1", direct_port, "/small", 100) for _ in range(SMALL_N)]

        def big(side):
            if side == "proxied":
                return get(phost, pport, ppath + "big", BIG)
            if side == "haproxy":
                return get("127.0.0.1", hap_port, "/big", BIG)
            return get("127.0.0.1", direct_port, "/big", BIG)

        http_sides = ["proxied", "direct"] + (["haproxy"] if hap else [])

        def read_pages():
            t0 = time.perf_counter()
            got, cur = "", None
            while True:
                r = uf.logs(c, lh, cursor=cur, max_bytes=4096)
                text = uf.log_text(r)
                if not text:
                    break
                got += text
                cur = uf.log_cursor(r)
            t = time.perf_counter() - t0
            if got != LINES:
                die(f"process_logs pages gave {len(got)} bytes, want {len(LINES)}")
            return t

        def read_one():
            t0 = time.perf_counter()
            r = uf.logs(c, lh, max_bytes=65536)
            t = time.perf_counter() - t0
            if uf.log_text(r) != LINES:
                die(f"process_logs in one call gave {len(uf.log_text(r))} bytes")
            return t

        def cat():
            t0 = time.perf_counter()
            r = uf.call(c, "run_command", {"sandbox_id": box, "command": "cat /tmp/lines.txt", "max_inline_kb": 128})
            t = time.perf_counter() - t0
            if r["stdout"] != LINES:
                die("run_command cat gave other bytes")
            return t

        logs_sides = {"cursor_pages": read_pages, "cursor_one_call": read_one, "run_command_cat": cat}
        # Warm-up, untimed.
        for side in http_sides:
            small(side), big(side)
        for f in logs_sides.values():
            f()
        res = {k: [] for k in (*(f"small_{x}" for x in http_sides), *(f"big_{x}" for x in http_sides), *logs_sides)}
        for i in range(runs):
            print(f"bench: services: run {i + 1}/{runs}", file=sys.stderr, flush=True)
            for side in benchlib.rotated(http_sides, i):
                res[f"small_{side}"] += small(side)
            for side in benchlib.rotated(http_sides, i):
                res[f"big_{side}"].append(big(side))
            for k in benchlib.rotated(list(logs_sides), i):
                res[k].append(logs_sides[k]())
        uf.call(c, "sandbox_stop", {"sandbox_id": box})
    finally:
        c.close()
        s.stop()
        host.kill()
        host.wait()
        if hap:
            hap.kill()
            hap.wait()

    ms = {k: [x * 1000 for x in v] for k, v in res.items()}
    med = {k: statistics.median(v) for k, v in ms.items()}
    print(f"\nservices: the preview URL vs the same app on the host's loopback, {runs} rounds, rotated; "
          f"{SMALL_N} small requests a side a round (new connection each)")
    print(benchlib.table_header())
    for k, label in (("small_proxied", "GET 100 B via preview URL (new conn)"),
                     ("small_direct", "baseline: GET 100 B direct on loopback"),
                     ("small_haproxy", "reference: GET 100 B via HAProxy tcp (new conn)"),
                     ("big_proxied", "GET 256 MiB via preview URL"),
                     ("big_direct", "baseline: GET 256 MiB direct on loopback"),
                     ("big_haproxy", "reference: GET 256 MiB via HAProxy tcp"),
                     ("cursor_pages", "1,000 log lines: process_logs, 4 KiB pages"),
                     ("cursor_one_call", "1,000 log lines: process_logs, one call"),
                     ("run_command_cat", "context: run_command cat of the same lines")):
        v = ms.get(k)
        if not v:
            continue
        if len(v) <= 20:
            print(benchlib.table_row(label, v))
        else:  # the small requests: too many samples to list
            print(f"  {label:50} {min(v):8.3f} {statistics.median(v):8.3f} {max(v):8.3f} {'-':>8} {'-':>8}   "
                  f"({len(v)} requests)")
    added = med["small_proxied"] - med["small_direct"]
    mib_s = {k: 256 / (med[k] / 1000) for k in ("big_proxied", "big_direct")}
    speed = mib_s["big_proxied"] / mib_s["big_direct"]
    print(f"  small request: the preview URL adds {added:.3f} ms (median); 256 MiB: {mib_s['big_proxied']:.0f} vs "
          f"{mib_s['big_direct']:.0f} MiB/s ({speed:.2f}x direct)")
    if "big_haproxy" in med:
        print(f"  reference, HAProxy (mode tcp) in front of the direct app: adds "
              f"{med['small_haproxy'] - med['small_direct']:.3f} ms; 256 MiB at {256 / (med['big_haproxy'] / 1000):.0f} MiB/s "
              f"({med['big_direct'] / med['big_haproxy']:.2f}x direct)")
    print(line("services_proxy_small",
               [f"proxied_ms={spread(ms['small_proxied'], '{:.3f}')}", f"direct_ms={spread(ms['small_direct'], '{:.3f}')}",
                f"added_ms={added:.3f}"], "target<0.5ms", "OK" if added < 0.5 else "MISSED", n=len(ms["small_proxied"])))
    ratio = med["big_proxied"] / med["big_direct"]
    print(line("services_proxy_256m",
               [f"proxied_ms={spread(ms['big_proxied'], '{:.0f}')}", f"direct_ms={spread(ms['big_direct'], '{:.0f}')}",
                f"proxied_mib_s={mib_s['big_proxied']:.0f}", f"direct_mib_s={mib_s['big_direct']:.0f}",
                f"ratio={ratio:.2f}"], "target<=1.25", "OK" if round(ratio, 2) <= 1.25 else "MISSED", n=runs))
    if "big_haproxy" in med:
        print(line("services_haproxy_reference",
                   [f"small_added_ms={med['small_haproxy'] - med['small_direct']:.3f}",
                    f"big_ms={spread(ms['big_haproxy'], '{:.0f}')}",
                    f"big_mib_s={256 / (med['big_haproxy'] / 1000):.0f}",
                    f"ratio={med['big_haproxy'] / med['big_direct']:.2f}"], n=runs))
    print(line("services_logs_cursor",
               [f"pages_4k_ms={spread(ms['cursor_pages'])}", f"one_call_ms={spread(ms['cursor_one_call'])}",
                f"run_command_cat_ms={spread(ms['run_command_cat'])}",
                f"ratio={med['cursor_pages'] / med['run_command_cat']:.2f}"], n=runs))


if __name__ == "__main__":
    main()
