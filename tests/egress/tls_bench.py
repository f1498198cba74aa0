#!/usr/bin/env python3
"""How much nsbox-tls costs (issue #30's targets: <= 1 ms added per request,
>= 0.6x direct throughput), side by side with direct TLS in one run:

    tls_bench.py --bin BUILD/nsbox-tls [--requests 500] [--mib 256]

The same Python ssl client and the same local TLS server
(tests/egress/tls_helper.py's), once directly and once through nsbox-tls
(handed the connections as the broker hands them).  Prints one JSON object:
per-request time on a kept-alive connection, a new connection with one
request, and a download's MiB/s, each direct and terminated.  Figures, not
assertions: nothing here passes or fails.
"""
import argparse
import json
import os
import socket
import ssl
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tls_helper as th  # noqa: E402


def direct(up, cafile):
    ctx = th.client_ctx(cafile)
    s = socket.create_connection(("127.0.0.1", up.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(s, server_hostname="api.test")


def through(helper, up, state):
    cid, s = th.tls_client(helper, "api.test", up.port, th.client_ctx(f"{state}/egress-ca.pem"))
    if isinstance(s, Exception):
        raise s
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def per_request(s, n):
    t = time.perf_counter()
    for _ in range(n):
        status, _, _ = th.http(s, "GET", "/v1/small", "api.test")
        assert status == 200, status
    return (time.perf_counter() - t) / n * 1000


def download(s, size):
    s.sendall(f"GET /big/{size} HTTP/1.1\r\nHost: api.test\r\n\r\n".encode())
    t = time.perf_counter()
    head, rest = th.read_head(s, b"")
    got = len(rest)
    buf = bytearray(1 << 20)
    while got < size:
        n = s.recv_into(buf)
        if not n:
            break
        got += n
    dt = time.perf_counter() - t
    assert got == size, (got, size)
    return size / dt / (1 << 20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--secret", action="store_true",
                    help="bind a secret to the host: responses are scrubbed")
    a = ap.parse_args()
    th.ARGS = a
    d = tempfile.mkdtemp(prefix="nsbox-tls-bench.")
    th.make_pki(d)
    state = f"{d}/state"
    os.mkdir(state)
    env = dict(os.environ, SSL_CERT_FILE=f"{d}/ca.pem")
    up = th.Upstream(f"{d}/api.pem", f"{d}/api.key")
    helper = th.Helper(a.bin, state, env)
    secrets = [{"name": "tok", "placeholder": th.PLACEHOLDER, "value": th.VALUE,
                "hosts": ["api.test:443"], "header": "Authorization", "template": "Bearer {}"}]
    helper.send({"op": "config", "rules": ["api.test GET /v1/**,/big/*"],
                 "secrets": secrets if a.secret else []})
    assert helper.answer().get("ok")
    out = {}
    for name, opener in (("direct", lambda: direct(up, f"{d}/ca.pem")),
                         ("nsbox_tls", lambda: through(helper, up, state))):
        s = opener()
        per_request(s, 20)  # warm
        out[f"{name}_request_ms"] = round(per_request(s, a.requests), 3)
        s.close()
        t = time.perf_counter()
        for _ in range(a.connections):
            s = opener()
            th.http(s, "GET", "/v1/one", "api.test")
            s.close()
        out[f"{name}_connection_ms"] = round((time.perf_counter() - t) / a.connections * 1000, 3)
        s = opener()
        out[f"{name}_download_mib_s"] = round(download(s, a.mib << 20), 1)
        s.close()
        with helper.cv:
            helper.msgs.clear()
    out["added_per_request_ms"] = round(out["nsbox_tls_request_ms"] - out["direct_request_ms"], 3)
    out["added_per_connection_ms"] = round(
        out["nsbox_tls_connection_ms"] - out["direct_connection_ms"], 3)
    out["throughput_ratio"] = round(out["nsbox_tls_download_mib_s"] / out["direct_download_mib_s"],
                                    2)
    out["download_mib"] = a.mib
    out["scrubbed"] = a.secret
    print(json.dumps(out))
    helper.sock.shutdown(socket.SHUT_RDWR)
    helper.proc.wait(10)
    os.system(f"rm -rf {d}")


if __name__ == "__main__":
    main()
