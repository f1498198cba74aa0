#!/usr/bin/env python3
"""The egress broker's cost (issue #14; tests/bench/run.sh egress).

usage: egress_bench.py NSBOX STORE IMAGE ROOTFS RUNS

An HTTP/1.1 server on 127.0.0.1 (sendfile of a 256 MiB file, and a
2-byte answer) and one client program, run side by side: one untimed
warm-up round, then RUNS rounds running every side once, the order rotated
from round to round; after each side the script waits for every process it
left running (the sandbox's remover and broker: benchlib.reap_all), so no
teardown runs during the next side:
  direct   chroot ROOTFS python3 -c CLIENT 127.0.0.1 PORT   (the image's
           own python on the host's loopback: no broker)
  name     nsbox run --net bench.test=127.0.0.1:PORT IMAGE -- python3 -c
           CLIENT bench.test PORT   (a name rule: DNS, Host checked on
           every request, then relayed)
  addr     nsbox run --net 127.0.0.1:PORT ... 127.0.0.1 PORT   (an
           address rule: relayed without inspection)
  direct_tls, name_tls: the same over HTTPS (a self-signed bench.test
           certificate the client is given): the path of a package
           install; the broker checks the SNI, then relays untouched
The sandboxes get --cpus 2 (the chroot has no CPU limit either).
The client times itself (sandbox start is not in these figures): one GET
of the 256 MiB file (throughput), then SMALL GETs of the small file, each
on a new connection (latency: connect, request, answer, close).
Prints a table (min, median, max per side) and result lines in
benchlib.py's format: the download through the broker at >= 0.8x the
direct throughput (ratio = time through the broker / direct time, target
<= 1.25), and a small GET adding < 0.5 ms (the median of the runs' medians
through the broker - the same direct)."""
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import line, spread  # noqa: E402

BIG = 256 << 20
SMALL = int(os.environ.get("BENCH_EGRESS_SMALL", "200"))

CLIENT = r'''
import socket, sys, time, json
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = None
if len(sys.argv) > 4:
    import ssl
    ctx = ssl.create_default_context(cadata=sys.argv[4])
addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
def get(path, buf=None):
    s = socket.create_connection(addr)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ctx is not None:
        s = ctx.wrap_socket(s, server_hostname="bench.test")
    s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\nConnection: close\r\n\r\n")
    got = 0
    mv = memoryview(buf) if buf is not None else None
    while True:
        k = s.recv_into(mv) if mv is not None else len(s.recv(65536))
        if k == 0:
            break
        got += k
    s.close()
    return got
buf = bytearray(4 << 20)
t0 = time.perf_counter()
big = get(b"/big", buf)
t1 = time.perf_counter()
lat = []
for _ in range(n):
    a = time.perf_counter()
    k = get(b"/small")
    lat.append((time.perf_counter() - a) * 1000)
    assert k > 0
print(json.dumps({"big_bytes": big, "big_s": t1 - t0, "small_ms": lat}))
'''


def serve(path, tls=None):
    """The server; tls: an SSLContext (then the file is sent with sendall
    of 1 MiB blocks, as sendfile cannot encrypt)."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(256)

    def handle(c):
        try:
            if tls is not None:
                c = tls.wrap_socket(c, server_side=True)
            req = b""
            while b"\r\n\r\n" not in req:
                b = c.recv(4096)
                if not b:
                    return
                req += b
            if req.startswith(b"GET /big "):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % BIG)
                with open(path, "rb") as f:
                    if tls is not None:
                        block = f.read(1 << 20)
                        for _ in range(BIG >> 20):
                            c.sendall(block)
                    else:
                        off = 0
                        while off < BIG:
                            off += os.sendfile(c.fileno(), f.fileno(), off, BIG - off)
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except OSError:
            pass
        finally:
            c.close()

    def loop():
        while True:
            c, _ = ls.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return ls.getsockname()[1]


def client(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    benchlib.reap_all()
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        sys.exit(f"egress_bench: {' '.join(argv[:6])}...: exit {p.returncode}: {p.stdout[-300:]} {p.stderr[-600:]}")
    if r["big_bytes"] < BIG:
        sys.exit(f"egress_bench: {argv[:6]}: only {r['big_bytes']} of {BIG} bytes")
    return r


def main():
    nsbox, store, image, rootfs, runs = sys.argv[1:6]
    runs = int(runs)
    benchlib.become_subreaper()
    tmp = tempfile.mkdtemp(prefix="nsbox-egress-bench.")
    path = os.path.join(tmp, "big")
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(BIG >> 20):
            f.write(block)
    port = serve(path)
    crt, key = os.path.join(tmp, "crt.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", "2", "-subj", "/CN=bench.test", "-addext", "subjectAltName=DNS:bench.test"],
                   check=True, capture_output=True)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(crt, key)
    tport = serve(path, sctx)
    ca = open(crt).read()
    n = str(SMALL)
    sides = {
        "direct": ["chroot", rootfs, "python3", "-c", CLIENT, "127.0.0.1", str(port), n],
        "name": [nsbox, "--store", store, "run", "--cpus", "2", "--net", f"bench.test=127.0.0.1:{port}", image, "--",
                 "python3", "-c", CLIENT, "bench.test", str(port), n],
        "addr": [nsbox, "--store", store, "run", "--cpus", "2", "--net", f"127.0.0.1:{port}", image, "--",
                 "python3", "-c", CLIENT, "127.0.0.1", str(port), n],
        "direct_tls": ["chroot", rootfs, "python3", "-c", CLIENT, "127.0.0.1", str(tport), n, ca],
        "name_tls": [nsbox, "--store", store, "run", "--cpus", "2", "--net", f"bench.test=127.0.0.1:{tport}", image,
                     "--", "python3", "-c", CLIENT, "bench.test", str(tport), n, ca],
    }
    for argv in sides.values():   # warm-up, untimed
        client(argv)
    res = {k: [] for k in sides}
    for i in range(runs):
        print(f"bench: egress: run {i + 1}/{runs}", file=sys.stderr, flush=True)
        for k in benchlib.rotated(list(sides), i):
            res[k].append(client(sides[k]))
    for f in (path, crt, key):
        os.unlink(f)
    os.rmdir(tmp)

    big_ms = {k: [r["big_s"] * 1000 for r in v] for k, v in res.items()}
    small_ms = {k: [statistics.median(r["small_ms"]) for r in v] for k, v in res.items()}
    secs = {k: statistics.median(v) / 1000 for k, v in big_ms.items()}
    gbps = {k: BIG * 8 / s / 1e9 for k, s in secs.items()}
    lat = {k: statistics.median(v) for k, v in small_ms.items()}
    p90 = {k: sorted(x for r in v for x in r["small_ms"])[int(0.9 * SMALL * runs)] for k, v in res.items()}
    print(f"\negress: through nsbox's broker vs direct on the host's loopback, {runs} runs each, rotated "
          f"(the client times itself; sandbox start excluded)")
    print(f"  {'':40} {'256 MiB GET, ms: min':>21} {'median':>7} {'max':>7} {'Gb/s':>6}"
          f"   {'small GET, ms: min':>18} {'median':>7} {'max':>7} {'p90':>7}")
    for k, label in (("direct", "direct: chroot, 127.0.0.1"), ("name", "broker: name rule (Host checked)"),
                     ("addr", "broker: address rule (no inspection)"),
                     ("direct_tls", "HTTPS direct: chroot, 127.0.0.1"),
                     ("name_tls", "HTTPS broker: name rule (SNI checked)")):
        b, m = big_ms[k], small_ms[k]
        print(f"  {label:40} {min(b):21.0f} {statistics.median(b):7.0f} {max(b):7.0f} {gbps[k]:6.2f}"
              f"   {min(m):18.3f} {statistics.median(m):7.3f} {max(m):7.3f} {p90[k]:7.3f}")
    print("  (small GET: the median of each run's GETs; p90 over all of them)")
    for k, base in (("name", "direct"), ("addr", "direct"), ("name_tls", "direct_tls")):
        ratio = secs[k] / secs[base]
        print(line(f"egress_download_256m_{k}",
                   [f"nsbox_ms={spread(big_ms[k], '{:.0f}')}", f"baseline_ms={spread(big_ms[base], '{:.0f}')}",
                    f"ratio={ratio:.2f}", f"throughput={gbps[k] / gbps[base]:.2f}x"],
                   "target<=1.25", "OK" if ratio <= 1.25 else "MISSED", runs))
        added = lat[k] - lat[base]
        print(line(f"egress_small_get_{k}",
                   [f"nsbox_ms={spread(small_ms[k], '{:.3f}')}", f"baseline_ms={spread(small_ms[base], '{:.3f}')}",
                    f"added_ms={added:.3f}"],
                   "target<0.5ms", "OK" if added < 0.5 else "MISSED", runs))


if __name__ == "__main__":
    main()
