#!/usr/bin/env python3
"""Files by URL against the alternatives (issue #15; tests/bench/run.sh file_urls).

usage: file_urls_bench.py NSBOX STORE IMAGE RUNS

One `nsbox serve --http` with a kept python sandbox holding a 64 MiB file of
random bytes, and on the host's loopback a plain HTTP server (sendfile from
a file on the same disk for GET, a write to a file for PUT): the best a
server that is not a sandbox does.  RUNS rounds after one untimed warm-up
round, each running every side once, the order rotated from round to round:
  url_get     GET the file's download_url (read_file {url: true})
  plain_get   GET the same bytes from the plain server
  read_file   the way a client gets it without URLs: read_file in pages of
              8 MiB (its most), base64 through the MCP session, decoded
  url_put     PUT 64 MiB to an upload_url
  plain_put   PUT 64 MiB to the plain server (written to disk, fsync'ed
              by neither)
Prints a table (min, median, max per side) and result lines in
benchlib.py's format: the URL's GET and PUT as ratios of the plain server's time (what the sandbox's confinement costs: the file moves
in 4 MiB in-sandbox operations, copied through the sandbox's file channel,
where the plain server sends from the page cache), and read_file's time
over the URL's (what the URL saves a client)."""
import hashlib
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import line, spread  # noqa: E402

BIG = 64 << 20
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "file-urls-bench", "version": "1"}}


def plain_server(path, sink):
    """GET: the file by sendfile; PUT: the body into sink.  Returns the port."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)

    def handle(c):
        try:
            req = b""
            while b"\r\n\r\n" not in req:
                b = c.recv(65536)
                if not b:
                    return
                req += b
            head, _, rest = req.partition(b"\r\n\r\n")
            if head.startswith(b"GET "):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % BIG)
                with open(path, "rb") as f:
                    off = 0
                    while off < BIG:
                        off += os.sendfile(c.fileno(), f.fileno(), off, BIG - off)
            else:
                n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                with open(sink, "wb") as f:
                    f.write(rest)
                    got = len(rest)
                    buf = bytearray(1 << 20)
                    while got < n:
                        k = c.recv_into(buf)
                        if k == 0:
                            break
                        f.write(memoryview(buf)[:k])
                        got += k
                c.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
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


def timed_get(port, path):
    """Seconds to GET path whole (read into one reused buffer)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    c.request("GET", path, headers={"Host": f"localhost:{port}"})
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
    if r.status != 200 or got != BIG:
        sys.exit(f"file_urls_bench: GET {path[:40]}: HTTP {r.status}, {got} bytes")
    return t


def timed_put(port, path, body):
    t0 = time.perf_counter()
    r = mcphttp.request(port, "PUT", path, body=body, timeout=300)
    t = time.perf_counter() - t0
    if r.status not in (200, 201):
        sys.exit(f"file_urls_bench: PUT {path[:40]}: {r!r}")
    return t


class Serve:
    def __init__(self, nsbox, store, image):
        self.p = subprocess.Popen([nsbox, "--store", store, "serve", "--http", "127.0.0.1:0",
                                   "--image", f"python={image}"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        self.port = None
        end = time.time() + 30
        while self.port is None and time.time() < end:
            line = self.p.stderr.readline().decode()
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
            if not line and self.p.poll() is not None:
                break
        if self.port is None:
            sys.exit("file_urls_bench: nsbox serve --http did not start")
        threading.Thread(target=self.p.stderr.read, daemon=True).start()
        self.n = 0
        r = self.rpc("initialize", INIT)
        self.sid = r.headers.get("mcp-session-id")
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     sid=self.sid, version="2025-11-25")

    def rpc(self, method, params):
        self.n += 1
        return mcphttp.post(self.port, {"jsonrpc": "2.0", "id": self.n, "method": method,
                                        "params": params},
                            sid=getattr(self, "sid", None), version="2025-11-25", timeout=300)

    def tool(self, name, args):
        r = self.rpc("tools/call", {"name": name, "arguments": args})
        m = r.response(self.n)
        res = (m or {}).get("result")
        if res is None or res.get("isError"):
            sys.exit(f"file_urls_bench: {name}: {r!r}")
        return res["structuredContent"]

    def stop(self):
        self.p.terminate()
        self.p.wait(30)


def read_file_pages(s, box, path):
    """Seconds to fetch the file through read_file's pages, decoded."""
    import base64
    t0 = time.perf_counter()
    got, off, page = 0, 0, 8 << 20
    while off < BIG:
        r = s.tool("read_file", {"sandbox_id": box, "path": path, "offset": off, "length": page,
                                 "encoding": "base64"})
        got += len(base64.b64decode(r["content"]))
        off += page
    t = time.perf_counter() - t0
    if got != BIG:
        sys.exit(f"file_urls_bench: read_file gave {got} bytes")
    return t


def main():
    nsbox, store, image, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    tmp = tempfile.mkdtemp(prefix="nsbox-file-urls-bench.")
    host_file, sink = os.path.join(tmp, "big"), os.path.join(tmp, "sink")
    body = os.urandom(BIG)
    with open(host_file, "wb") as f:
        f.write(body)
    plain = plain_server(host_file, sink)
    s = Serve(nsbox, store, image)
    box = s.tool("sandbox_create", {"language": "python"})["sandbox_id"]
    s.tool("run_command", {"sandbox_id": box, "command": "head -c 67108864 /dev/urandom > /tmp/big",
                           "timeout_s": 120})
    url = s.tool("read_file", {"sandbox_id": box, "path": "/tmp/big", "url": True})["download_url"]
    get_path = urllib.parse.urlsplit(url).path
    want = hashlib.sha256()
    sides = {
        "url_get": lambda: timed_get(s.port, get_path),
        "plain_get": lambda: timed_get(plain, "/big"),
        "read_file": lambda: read_file_pages(s, box, "/tmp/big"),
        "url_put": lambda: timed_put(s.port, urllib.parse.urlsplit(
            s.tool("upload_url", {"sandbox_id": box, "path": "/tmp/up"})["url"]).path, body),
        "plain_put": lambda: timed_put(plain, "/up", body),
    }
    for f in sides.values():  # warm-up, untimed
        f()
    res = {k: [] for k in sides}
    for i in range(runs):
        print(f"bench: file_urls: run {i + 1}/{runs}", file=sys.stderr, flush=True)
        for k in benchlib.rotated(list(sides), i):
            res[k].append(sides[k]())
    # The upload arrived whole: code in the sandbox sees the bytes sent.
    want.update(body)
    got = s.tool("run_command", {"sandbox_id": box, "command": "sha256sum /tmp/up"})["stdout"].split()[0]
    s.stop()
    for f in (host_file, sink):
        if os.path.exists(f):
            os.unlink(f)
    os.rmdir(tmp)
    if got != want.hexdigest():
        sys.exit("file_urls_bench: the uploaded file differs from what was sent")

    med = {k: statistics.median(v) for k, v in res.items()}
    mbps = {k: BIG / (1 << 20) / t for k, t in med.items()}
    ms = {k: [x * 1000 for x in v] for k, v in res.items()}
    print(f"\nfile_urls: 64 MiB by signed URL vs a plain loopback HTTP server and vs read_file, "
          f"{runs} runs each, rotated")
    print(f"  {'':44} {'min ms':>9} {'median':>9} {'max':>9} {'MiB/s (median)':>15}")
    for k, label in (("url_get", "GET download_url (nsbox serve --http)"),
                     ("plain_get", "baseline: GET, plain server (sendfile)"),
                     ("read_file", "read_file pages, base64 over MCP"),
                     ("url_put", "PUT upload_url (nsbox serve --http)"),
                     ("plain_put", "baseline: PUT, plain server (write)")):
        print(f"  {label:44} {min(ms[k]):9.0f} {statistics.median(ms[k]):9.0f} {max(ms[k]):9.0f} {mbps[k]:15.0f}")
    for name, k, base, a, b in (("file_urls_url_get", "url_get", "plain_get", "nsbox_ms", "baseline_ms"),
                                ("file_urls_url_put", "url_put", "plain_put", "nsbox_ms", "baseline_ms"),
                                ("file_urls_read_file_over_url", "read_file", "url_get", "read_file_ms", "url_ms")):
        print(line(name, [f"{a}={spread(ms[k], '{:.0f}')}", f"{b}={spread(ms[base], '{:.0f}')}",
                          f"ratio={med[k] / med[base]:.2f}"], n=runs))


if __name__ == "__main__":
    main()
