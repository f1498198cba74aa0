#!/usr/bin/env python3
"""nsbox-tls, driven directly as the egress broker drives it (tests/integration/egress_tls.sh).

    tls_helper.py --bin BUILD/nsbox-tls --suite egress_tls --mode root|rootless

A SOCK_SEQPACKET socketpair stands for the broker: the config message,
then "conn" messages with real TCP sockets (SCM_RIGHTS) and the bytes of the
ClientHello already read from them (as the broker reads them for its SNI
check).  The host side is a real TLS server on 127.0.0.1 with a test CA made
here by `openssl req`; nsbox-tls trusts it through SSL_CERT_FILE.  The
sandbox side is Python's ssl client trusting STATE_DIR/egress-ca.pem.
No part of nsbox-tls is replaced.  Prints one PASS/FAIL line a test.
"""
import argparse
import base64
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

ARGS = None
RESULTS = []
VALUE = "s3cr3t-VALUE-0123456789-xyz"
PLACEHOLDER = "nsbox-secret-tok-AbCdEfGhIjKlMnOpQrStUvWx"


def result(name, ok, why=""):
    line = f"{'PASS' if ok else 'FAIL'}: {ARGS.suite}/{ARGS.mode}/{name}"
    if not ok:
        line += f": {why}"
    print(line, flush=True)
    RESULTS.append(ok)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


# ---- a test PKI (openssl req), and the upstream servers ----

def make_pki(d):
    """ca.pem/ca.key (trusted by nsbox-tls via SSL_CERT_FILE), api.pem for
    api.test signed by it, self.pem self-signed for api.test (untrusted)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
         "-days", "2", "-subj", "/CN=nsbox test upstream CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    run(["openssl", "req", "-new", *ec, "-keyout", f"{d}/api.key", "-out", f"{d}/api.csr",
         "-subj", "/CN=api.test"])
    with open(f"{d}/ext", "w") as f:
        f.write("subjectAltName=DNS:api.test\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "x509", "-req", "-in", f"{d}/api.csr", "-CA", f"{d}/ca.pem",
         "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/api.pem", "-days", "2",
         "-extfile", f"{d}/ext"])
    run(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/self.key", "-out", f"{d}/self.pem",
         "-days", "2", "-subj", "/CN=api.test", "-addext", "subjectAltName=DNS:api.test"])


def read_head(sock, buf):
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def read_chunked(sock, buf):
    """A chunked body (no trailers): (body, its length on the wire, rest)."""
    body, wire = b"", 0
    while True:
        while b"\r\n" not in buf:
            buf += sock.recv(65536) or b"\r\n"
        line, buf = buf.split(b"\r\n", 1)
        size = int(line.split(b";")[0], 16)
        while len(buf) < size + 2:
            c = sock.recv(65536)
            if not c:
                raise OSError("cut short")
            buf += c
        body += buf[:size]
        wire += len(line) + 2 + size + 2
        buf = buf[size + 2:]
        if size == 0:
            return body, wire, buf


def read_message(sock, buf, no_body=False):
    """One HTTP/1.1 message (head + Content-Length or chunked body):
    (head, body, rest); with chunked, head gets the body's wire length
    appended as "\r\nX-Wire: N"."""
    head, buf = read_head(sock, buf)
    if head is None:
        return None, None, buf
    n = 0
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            n = int(v.strip())
        if k.strip().lower() == "transfer-encoding" and not no_body:
            body, wire, rest = read_chunked(sock, buf)
            return head + f"\r\nX-Wire: {wire}", body, rest
    if no_body:
        return head, b"", buf
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return head, buf[:n], buf[n:]


class Upstream:
    """An HTTP/1.1 server (TLS when cert is given) that answers every
    request with JSON naming its method, path and Authorization header,
    keep-alive; `seen` lists the requests it got."""

    def __init__(self, cert=None, key=None):
        self.ctx = None
        if cert:
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(cert, key)
            self.ctx.set_alpn_protocols(["http/1.1"])
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.alpn = []
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            c, _ = self.sock.accept()
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if self.ctx:
                c = self.ctx.wrap_socket(c, server_side=True)
                self.alpn.append(c.selected_alpn_protocol())
            buf = b""
            while True:
                head, body, buf = read_message(c, buf)
                if head is None:
                    break
                lines = head.split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                hdrs = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    hdrs[k.strip().lower()] = v.strip()
                self.seen.append((method, path, hdrs.get("authorization", ""), body))
                out = json.dumps({"method": method, "path": path,
                                  "auth": hdrs.get("authorization", ""),
                                  "body": body.decode("latin-1")}).encode()
                if path.startswith("/big/"):
                    out = b"x" * int(path[5:])
                if path.endswith("/chunked"):  # the echo in 3 chunks
                    parts = [out[:10], out[10:40], out[40:]]
                    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              b"".join(b"%x\r\n%s\r\n" % (len(x), x) for x in parts) +
                              b"0\r\n\r\n")
                    continue
                head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(out))
                if method == "HEAD":
                    c.sendall(head)
                elif path.endswith("/split"):  # the echo in two writes, 50 ms apart
                    half = out.index(b"Bearer ") + 12
                    c.sendall(head + out[:half])
                    time.sleep(0.05)
                    c.sendall(out[half:])
                else:
                    c.sendall(head + out)
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            c.close()


# ---- the broker's side ----

class Helper:
    """nsbox-tls with fd 3 one end of a SOCK_SEQPACKET socketpair."""

    def __init__(self, binary, state, env):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fd = theirs.fileno()

        def child():
            os.dup2(fd, 3)

        self.proc = subprocess.Popen([binary, state], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     pass_fds=(fd, 3), preexec_fn=child, env=env)
        theirs.close()
        self.msgs = []
        self.cv = threading.Condition()
        self.stderr = []
        threading.Thread(target=self.reader, daemon=True).start()
        self.err_thread = threading.Thread(target=self.errs, daemon=True)
        self.err_thread.start()

    def errs(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def reader(self):
        while True:
            try:
                m = self.sock.recv(70000)
            except OSError:
                return
            if not m:
                return
            with self.cv:
                self.msgs.append(json.loads(m))
                self.cv.notify_all()

    def send(self, obj, fds=()):
        data = json.dumps(obj).encode()
        if fds:
            socket.send_fds(self.sock, [data], list(fds))
        else:
            self.sock.send(data)

    def wait(self, pred, timeout=10):
        end = time.time() + timeout
        with self.cv:
            while True:
                for m in self.msgs:
                    if pred(m):
                        return m
                left = end - time.time()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def answer(self, timeout=10):
        """The next answer to a config (ok or error), consumed."""
        m = self.wait(lambda m: "ok" in m or "error" in m, timeout)
        if m:
            with self.cv:
                self.msgs.remove(m)
        return m

    def records(self, cid, timeout=15):
        """Every record of conn cid, once its closed record came."""
        if not self.wait(lambda m: m.get("op") == "closed" and m.get("id") == cid, timeout):
            return None
        with self.cv:
            return [m for m in self.msgs if m.get("id") == cid]


NEXT_ID = [100]


def handover(helper, host, up_port, tls=True, port=443, prefix=True):
    """A TCP connection pair: returns (id, the sandbox's socket).  The
    ClientHello's first record is read here, as the broker reads it, and
    sent as the prefix; the sandbox's socket handshakes in the caller."""
    NEXT_ID[0] += 1
    cid = NEXT_ID[0]
    lst = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(lst.getsockname())
    server_side, _ = lst.accept()
    lst.close()
    upstream = socket.create_connection(("127.0.0.1", up_port))
    return cid, client, server_side, upstream


def send_conn(helper, cid, host, server_side, upstream, tls, port, pre):
    helper.send({"op": "conn", "id": cid, "host": host, "port": port, "tls": tls,
                 "prefix": base64.b64encode(pre).decode()},
                [server_side.fileno(), upstream.fileno()])
    server_side.close()
    upstream.close()


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            break
        b += c
    return b


def tls_client(helper, host, up_port, ctx, sni=None, port=443):
    """Returns (id, ssl socket or the exception its handshake raised)."""
    cid, client, server_side, upstream = handover(helper, host, up_port)
    out = {}

    def hs():
        try:
            out["s"] = ctx.wrap_socket(client, server_hostname=sni or host)
        except (ssl.SSLError, OSError) as e:
            out["e"] = e

    t = threading.Thread(target=hs)
    t.start()
    server_side.settimeout(10)
    rec = recv_exact(server_side, 5)
    rec += recv_exact(server_side, int.from_bytes(rec[3:5], "big"))
    send_conn(helper, cid, host, server_side, upstream, True, port, rec)
    t.join(15)
    return cid, out.get("s", out.get("e", TimeoutError("handshake never ended")))


def http(s, method, path, host, headers=(), body=b""):
    req = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    for k, v in headers:
        req += f"{k}: {v}\r\n"
    if body or method in ("POST", "PUT"):
        req += f"Content-Length: {len(body)}\r\n"
    try:
        s.sendall(req.encode() + b"\r\n" + body)
        s.settimeout(15)
        head, rbody, rest = read_message(s, b"", method == "HEAD")
    except (OSError, ssl.SSLError, ValueError):
        return None, None, 0
    if head is None:
        return None, None, 0
    try:
        status = int(head.split(" ", 2)[1])
    except (ValueError, IndexError):  # misframed: what came is not a response
        return f"not a response: {head[:60]!r}", rbody, 0
    if "\r\nX-Wire: " in head:
        head, wire = head.split("\r\nX-Wire: ")
        return status, rbody, len(head) + 4 + int(wire)
    return status, rbody, len(head) + 4 + len(rbody)


def client_ctx(cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


# ---- the tests ----

def config(helper, rules=None):
    helper.send({"op": "config",
                 "rules": rules or ["api.test GET,POST,HEAD /v1/**", "api.test:8443", "other.test",
                                    "plain.test"],
                 "secrets": [{"name": "tok", "placeholder": PLACEHOLDER, "value": VALUE,
                              "hosts": ["api.test:443", "plain.test:80", "api.test:9443"],
                              "header": "Authorization", "template": "Bearer {}"}]})
    return helper.answer()


def t_ca(helper, state):
    ans = config(helper)
    path = f"{state}/egress-ca.pem"
    if not ans or ans.get("ok") is not True or ans.get("ca") != path:
        return result("config_answers_ca", False, f"answer {ans}")
    st = os.stat(path)
    text = run(["openssl", "x509", "-in", path, "-noout", "-text"]).stdout
    want = ["CA:TRUE, pathlen:0", "Certificate Sign, CRL Sign", "Subject Key Identifier",
            "ASN1 OID: prime256v1"]
    missing = [w for w in want if w not in text]
    subj = run(["openssl", "x509", "-in", path, "-noout", "-subject"]).stdout
    ok = (st.st_mode & 0o777) == 0o644 and not missing and "CN = nsbox sandbox CA " in subj
    result("config_answers_ca", ok, f"mode {oct(st.st_mode)} missing {missing} subject {subj}")
    # A second config keeps the CA (the sandbox trusts that one).
    before = open(path).read()
    ans = config(helper)
    result("second_config_keeps_ca", ans and ans.get("ok") and open(path).read() == before,
           f"answer {ans}")
    # The key: nowhere in STATE_DIR (only the certificate is there).
    files = os.listdir(state)
    keyish = [f for f in files if b"PRIVATE KEY" in open(f"{state}/{f}", "rb").read()]
    result("ca_key_not_in_state_dir", files == ["egress-ca.pem"] and not keyish,
           f"files {files}, with a key: {keyish}")


def t_leaf(helper, state, api, d):
    ctx = client_ctx(f"{state}/egress-ca.pem")
    cid, s = tls_client(helper, "api.test", api.port, ctx)
    if isinstance(s, Exception):
        result("leaf_verifies_for_host", False, f"handshake: {s}")
        result("leaf_fails_for_other_name", False, "no leaf")
        return
    der = s.getpeercert(binary_form=True)
    san = s.getpeercert().get("subjectAltName")
    status, body, _ = http(s, "GET", "/v1/items", "api.test")
    s.close()
    result("leaf_verifies_for_host",
           san == (("DNS", "api.test"),) and status == 200 and b'"/v1/items"' in body,
           f"SAN {san}, status {status}, body {body!r}")
    with open(f"{d}/leaf.pem", "w") as f:
        f.write(ssl.DER_cert_to_PEM_cert(der))
    base = ["openssl", "verify", "-CAfile", f"{state}/egress-ca.pem", "-purpose", "sslserver"]
    good = subprocess.run(base + ["-verify_hostname", "api.test", f"{d}/leaf.pem"],
                          capture_output=True, text=True)
    bad = subprocess.run(base + ["-verify_hostname", "evil.test", f"{d}/leaf.pem"],
                         capture_output=True, text=True)
    result("leaf_fails_for_other_name",
           good.returncode == 0 and bad.returncode != 0 and "mismatch" in bad.stdout + bad.stderr,
           f"api.test: {good.returncode} {good.stdout}{good.stderr}; evil.test: "
           f"{bad.returncode} {bad.stdout}{bad.stderr}")


def t_sni(helper, state, api):
    ctx = client_ctx(f"{state}/egress-ca.pem")
    cid, s = tls_client(helper, "api.test", api.port, ctx, sni="evil.test")
    recs = helper.records(cid) or []
    reasons = [r.get("reason", "") for r in recs if r.get("op") == "request"]
    ok = isinstance(s, ssl.SSLError) and any("names evil.test, not api.test" in r for r in reasons)
    result("sni_other_than_host_refused", ok, f"client {s!r}, records {recs}")


def t_upstream(helper, state, api, selfsigned):
    ctx = client_ctx(f"{state}/egress-ca.pem")
    # other.test's connection reaches a server whose certificate says api.test.
    for name, host, up, want in (("upstream_name_mismatch_502", "other.test", api, "hostname mismatch"),
                                 ("upstream_untrusted_502", "api.test", selfsigned, "self-signed")):
        n_seen = len(up.seen)
        cid, s = tls_client(helper, host, up.port, ctx)
        if isinstance(s, Exception):
            result(name, False, f"handshake with the sandbox: {s}")
            continue
        status, body, _ = http(s, "GET", "/v1/x", host)
        s.close()
        recs = helper.records(cid) or []
        req = [r for r in recs if r.get("op") == "request"]
        ok = (status == 502 and body and want in body.decode() and len(req) == 1 and
              req[0]["verdict"] == "refused" and want in req[0].get("reason", "") and
              req[0]["method"] == "GET" and req[0]["path"] == "/v1/x" and len(up.seen) == n_seen)
        result(name, ok, f"status {status}, body {body!r}, records {recs}")


def t_rules(helper, state, api):
    ctx = client_ctx(f"{state}/egress-ca.pem")
    for name, method, path in (("method_outside_rule_403", "DELETE", "/v1/items/1"),
                               ("path_outside_rule_403", "GET", "/v2/items")):
        n_seen = len(api.seen)
        cid, s = tls_client(helper, "api.test", api.port, ctx)
        if isinstance(s, Exception):
            result(name, False, f"handshake: {s}")
            continue
        status, body, _ = http(s, method, path, "api.test")
        s.close()
        recs = helper.records(cid) or []
        req = [r for r in recs if r.get("op") == "request"]
        ok = (status == 403 and body and body.startswith(b"nsbox: ") and b"refused" in body and
              len(req) == 1 and req[0]["verdict"] == "refused" and req[0]["method"] == method and
              req[0]["path"] == path and len(api.seen) == n_seen)
        result(name, ok, f"status {status}, body {body!r}, records {recs}, upstream saw "
               f"{api.seen[n_seen:]}")


def t_hostile_head(helper, state, api):
    """A request line with bytes that are not ASCII (nor UTF-8): refused,
    and its record still arrives (made printable)."""
    cid, s = tls_client(helper, "api.test", api.port, client_ctx(f"{state}/egress-ca.pem"))
    if isinstance(s, Exception):
        return result("hostile_request_refused_and_recorded", False, f"handshake: {s}")
    n_seen = len(api.seen)
    try:
        s.sendall(b"GET /v1/\xff\xfe\x01 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        s.settimeout(10)
        head, body, _ = read_message(s, b"")
    except (OSError, ssl.SSLError) as e:
        head, body = repr(e), b""
    s.close()
    recs = helper.records(cid) or []
    req = [r for r in recs if r.get("op") == "request"]
    result("hostile_request_refused_and_recorded",
           head and head.startswith("HTTP/1.1 403") and len(req) == 1 and
           req[0]["verdict"] == "refused" and req[0].get("reason") and len(api.seen) == n_seen,
           f"head {head!r}, records {recs}")


def t_secret(helper, state, api):
    ctx = client_ctx(f"{state}/egress-ca.pem")
    cid, s = tls_client(helper, "api.test", api.port, ctx)
    if isinstance(s, Exception):
        result("bearer_placeholder_substituted", False, f"handshake: {s}")
        result("value_scrubbed_in_response", False, "no connection")
        result("kept_alive_responses_whole_and_scrubbed", False, "no connection")
        result("pipelined_requests_both_answered", False, "no connection")
        result("closed_record_counts_bytes", False, "no connection")
        return
    n_seen = len(api.seen)
    status, body, n1 = http(s, "GET", "/v1/me", "api.test",
                            [("Authorization", f"Bearer {PLACEHOLDER}")])
    # The placeholder in a body is not a binding: it goes as it is.
    status2, body2, n2 = http(s, "POST", "/v1/echo", "api.test", [], PLACEHOLDER.encode())
    # More responses on the same kept-alive connection, each framed its
    # own way: each must arrive whole (the scrub's holdback flushed at its
    # end) and scrubbed.
    auth = [("Authorization", f"Bearer {PLACEHOLDER}")]
    # Two requests in one write: a 100 KB body, then a GET right behind it.
    big = b"b" * 100000
    try:
        s.sendall(f"POST /v1/big HTTP/1.1\r\nHost: api.test\r\nContent-Length: {len(big)}\r\n\r\n"
                  .encode() + big + b"GET /v1/after HTTP/1.1\r\nHost: api.test\r\n\r\n")
        h1, b1, rest = read_message(s, b"")
        h2, b2, rest = read_message(s, rest)
        pipelined = [h1[:12], len(json.loads(b1)["body"]), h2[:12], json.loads(b2)["path"]]
        n_pipe = len(h1) + 4 + len(b1) + len(h2) + 4 + len(b2)
    except (OSError, ValueError, TypeError) as e:
        pipelined, n_pipe = repr(e), 0
    more = [http(s, "HEAD", "/v1/head", "api.test", auth),
            http(s, "GET", "/v1/chunked", "api.test", auth),
            http(s, "GET", "/v1/split", "api.test", auth)]
    s.close()
    recs = helper.records(cid) or []
    seen = api.seen[n_seen:]
    req = [r for r in recs if r.get("op") == "request"]
    ok = (status == 200 and len(seen) == 7 and seen[0][2] == f"Bearer {VALUE}" and
          seen[1][3] == PLACEHOLDER.encode() and len(req) == 7 and req[0]["secrets"] == ["tok"]
          and req[1]["secrets"] == [] and all(r["verdict"] == "allowed" for r in req))
    result("bearer_placeholder_substituted", ok, f"upstream saw {seen}, records {req}")
    echoed = json.loads(body)["auth"] if body else ""
    result("value_scrubbed_in_response",
           echoed == "Bearer " + "*" * len(VALUE) and VALUE.encode() not in body,
           f"the client got {body!r}")
    result("pipelined_requests_both_answered",
           pipelined == ["HTTP/1.1 200", 100000, "HTTP/1.1 200", "/v1/after"], f"{pipelined}")
    stars = b"Bearer " + b"*" * len(VALUE)
    result("kept_alive_responses_whole_and_scrubbed",
           [m[0] for m in more] == [200, 200, 200] and more[0][1] == b"" and
           stars in (more[1][1] or b"") and stars in (more[2][1] or b"") and
           all(VALUE.encode() not in (m[1] or b"") for m in more),
           f"HEAD, chunked, split: {more}")
    closed = [r for r in recs if r.get("op") == "closed"]
    n = n1 + n2 + n_pipe + sum(m[2] for m in more)
    result("closed_record_counts_bytes",
           len(closed) == 1 and closed[0]["bytes_in"] == n and closed[0]["bytes_out"] > 0,
           f"closed {closed}, the client read {n} bytes")


def t_unbound_port(helper, state, api):
    """api.test:8443 is allowed but the secret is bound to api.test:443 (and
    9443): the placeholder goes as it is, and nothing is scrubbed."""
    cid, s = tls_client(helper, "api.test", api.port, client_ctx(f"{state}/egress-ca.pem"),
                        port=8443)
    if isinstance(s, Exception):
        return result("placeholder_unbound_port_unchanged", False, f"handshake: {s}")
    n_seen = len(api.seen)
    status, body, _ = http(s, "GET", "/x", "api.test:8443",
                           [("Authorization", f"Bearer {PLACEHOLDER}")])
    s.close()
    recs = helper.records(cid) or []
    seen = api.seen[n_seen:]
    result("placeholder_unbound_port_unchanged",
           status == 200 and len(seen) == 1 and seen[0][2] == f"Bearer {PLACEHOLDER}" and
           PLACEHOLDER.encode() in body and
           [r.get("secrets") for r in recs if r.get("op") == "request"] == [[]],
           f"status {status}, upstream saw {seen}, records {recs}")


def t_untrusting(helper, state, api):
    ctx = ssl.create_default_context()  # the system's store: not the sandbox's CA
    cid, s = tls_client(helper, "api.test", api.port, ctx)
    recs = helper.records(cid) or []
    reasons = [r.get("reason", "") for r in recs if r.get("op") == "request"]
    failed = isinstance(s, ssl.SSLCertVerificationError)
    # And it stays up: the next connection works.
    cid2, s2 = tls_client(helper, "api.test", api.port, client_ctx(f"{state}/egress-ca.pem"))
    status = None
    if not isinstance(s2, Exception):
        status, _, _ = http(s2, "GET", "/v1/x", "api.test")
        s2.close()
    result("untrusting_client_fails_closed",
           failed and any("TLS with the sandbox failed" in r for r in reasons) and
           helper.proc.poll() is None and status == 200,
           f"client {s!r}, records {recs}, next status {status}")


def t_alpn(helper, state, api):
    got = {}
    for offer in (["h2"], ["h2", "http/1.1"]):
        ctx = ssl.create_default_context(cafile=f"{state}/egress-ca.pem")
        ctx.set_alpn_protocols(offer)
        cid, s = tls_client(helper, "api.test", api.port, ctx)
        got[offer[-1]] = None if isinstance(s, Exception) else s.selected_alpn_protocol()
        # An h2 preface is not HTTP/1.1: refused, never relayed.
        if offer == ["h2"] and not isinstance(s, Exception):
            n_seen = len(api.seen)
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            s.settimeout(10)
            got["preface"] = s.recv(4096)[:12]
            got["relayed"] = len(api.seen) - n_seen
        if not isinstance(s, Exception):
            s.close()
    result("alpn_never_h2",
           got.get("h2") is None and got.get("http/1.1") == "http/1.1" and
           got.get("preface") == b"HTTP/1.1 403" and got.get("relayed") == 0 and
           "h2" not in api.alpn, f"{got}, upstream ALPN {set(api.alpn)}")


def t_plain(helper, plain):
    NEXT_ID[0] += 1
    cid = NEXT_ID[0]
    lst = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(lst.getsockname())
    server_side, _ = lst.accept()
    lst.close()
    upstream = socket.create_connection(("127.0.0.1", plain.port))
    req = (f"GET /p HTTP/1.1\r\nHost: plain.test\r\nAuthorization: Bearer {PLACEHOLDER}\r\n\r\n"
           ).encode()
    client.sendall(req)
    pre = server_side.recv(8)  # the broker sniffed a few bytes (not TLS)
    send_conn(helper, cid, "plain.test", server_side, upstream, False, 80, pre)
    client.settimeout(10)
    head, body, _ = read_message(client, b"")
    client.close()
    recs = helper.records(cid) or []
    seen = [x for x in plain.seen if x[1] == "/p"]
    result("plain_http_inspected",
           head is not None and head.startswith("HTTP/1.1 200") and seen and
           seen[-1][2] == f"Bearer {VALUE}" and VALUE.encode() not in body and
           any(r.get("secrets") == ["tok"] for r in recs),
           f"head {head!r}, body {body!r}, upstream saw {seen}, records {recs}")


def t_bad_input(helper, state, api):
    before = len(helper.msgs)
    helper.sock.send(b"not json at all")
    ans1 = helper.answer()
    helper.send({"op": "config", "rules": ["api.test GET /v1/** extra"]})
    ans2 = helper.answer()
    a, b = socket.socketpair()
    helper.send({"op": "conn", "id": 1, "host": "api.test", "port": 443, "tls": True}, [a.fileno()])
    c, e = socket.socketpair()
    helper.send({"op": "conn", "id": 2, "host": "api.test", "port": 443, "tls": True,
                 "prefix": "!!!not base64"}, [c.fileno(), e.fileno()])
    for x in (a, c, e):
        x.close()
    # The dropped conns' fds are closed by nsbox-tls: our peer ends see EOF.
    b.settimeout(5)
    eof = b.recv(1) == b""
    cid, s = tls_client(helper, "api.test", api.port, client_ctx(f"{state}/egress-ca.pem"))
    status = None
    if not isinstance(s, Exception):
        status, _, _ = http(s, "GET", "/v1/x", "api.test")
        s.close()
    # The bad config did not replace the good one: /v1 is still GET-able,
    # and DELETE still refused.
    result("bad_messages_answered_process_stays_up",
           ans1 and "error" in ans1 and ans2 and "error" in ans2 and eof and status == 200 and
           helper.proc.poll() is None, f"answers {ans1} {ans2}, fd closed {eof}, status {status}")


def t_limit(helper, state, api):
    held = []
    for _ in range(128):
        cid, client, server_side, upstream = handover(helper, "api.test", api.port)
        send_conn(helper, cid, "api.test", server_side, upstream, True, 443, b"")
        held.append((cid, client))
    cid, client, server_side, upstream = handover(helper, "api.test", api.port)
    send_conn(helper, cid, "api.test", server_side, upstream, True, 443, b"")
    recs = helper.records(cid) or []
    client.settimeout(5)
    try:
        closed = client.recv(1) == b""
    except OSError:
        closed = True
    client.close()
    for _, c in held:
        c.close()
    drained = all(helper.records(c) is not None for c, _ in held)
    ok = (any("too many inspected connections" in r.get("reason", "") for r in recs) and
          closed and drained and not any(r.get("op") == "request" and "too many" in
                                         r.get("reason", "") for c, _ in held[:1]
                                         for r in helper.records(c) or []))
    result("connections_bounded", ok, f"129th: {recs}, closed {closed}, held ones ended {drained}")


def mem_probe(binary, state, env):
    """In a child of ours (as uid 65534 when we are root: the same uid as
    the nsbox-tls it starts), reads /proc/PID/mem of nsbox-tls and of a
    dumpable process of the same uid (the control).  Returns a dict."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        out = {}
        try:
            os.close(r)
            if os.getuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            h = Helper(binary, state, env)
            ans = config(h)
            out["config"] = bool(ans and ans.get("ok"))
            ctl = subprocess.Popen(["sleep", "30"])
            for name, p in (("helper", h.proc.pid), ("control", ctl.pid)):
                try:
                    with open(f"/proc/{p}/maps") as f:
                        start = int(f.readline().split("-")[0], 16)
                    with open(f"/proc/{p}/mem", "rb") as f:
                        f.seek(start)
                        out[name] = "read %d bytes" % len(f.read(16))
                except OSError as e:
                    out[name] = f"denied: {e.strerror}"
            with open(f"/proc/{h.proc.pid}/limits") as f:
                out["core"] = [line.split()[4:6] for line in f if line.startswith("Max core")]
            out["uid"] = os.getuid()
            ctl.kill()
            h.sock.shutdown(socket.SHUT_RDWR)
            h.sock.close()
            h.proc.wait(10)
        except Exception as e:  # reported to the parent, never raised
            out["error"] = repr(e)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        c = os.read(r, 65536)
        if not c:
            break
        data += c
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


def t_mem(binary, d, env):
    state = f"{d}/memstate"
    os.mkdir(state)
    os.chmod(d, 0o755)
    os.chmod(state, 0o777)
    out = mem_probe(binary, state, env)
    result("proc_mem_unreadable_same_uid",
           out.get("config") and out.get("helper", "").startswith("denied") and
           out.get("control", "").startswith("read 16"), f"{out}")
    result("no_core_dumps", out.get("core") == [["0", "0"]], f"{out}")


def t_privileges(helper):
    with open(f"/proc/{helper.proc.pid}/status") as f:
        st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    caps = {k: st.get(k) for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs")}
    # The bounding set drops only with CAP_SETPCAP (root); without it,
    # no_new_privs keeps an exec from gaining any.
    sets = ("CapEff", "CapPrm", "CapAmb") + (("CapBnd",) if os.geteuid() == 0 else ())
    result("no_capabilities_no_new_privs",
           all(int(caps[k] or "1", 16) == 0 for k in sets)
           and caps["NoNewPrivs"].strip() == "1", f"{caps}")


def t_exit(helper):
    # shutdown: our reader thread still sits in recv() on this socket, and
    # a close() alone would not end it while that call holds it.
    helper.sock.shutdown(socket.SHUT_RDWR)
    helper.sock.close()
    try:
        rc = helper.proc.wait(10)
    except subprocess.TimeoutExpired:
        helper.proc.kill()
        rc = "still running"
    helper.err_thread.join(5)
    err = "".join(helper.stderr)
    # Under the sanitizer build a report goes to stderr where no
    # ASAN_OPTIONS log_path reaches (the rootless run's env -i).
    report = any(w in err for w in ("Sanitizer", "runtime error:"))
    result("exits_when_broker_closes", rc == 0 and not report, f"exit {rc}; stderr {err[-600:]}")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--suite", default="egress_tls")
    ap.add_argument("--mode", default="root")
    ARGS = ap.parse_args()
    d = tempfile.mkdtemp(prefix="nsbox-tls-test.")
    make_pki(d)
    state = f"{d}/state"
    os.mkdir(state)
    env = dict(os.environ, SSL_CERT_FILE=f"{d}/ca.pem")
    env.pop("SSL_CERT_DIR", None)
    api = Upstream(f"{d}/api.pem", f"{d}/api.key")
    selfsigned = Upstream(f"{d}/self.pem", f"{d}/self.key")
    plain = Upstream()
    helper = Helper(ARGS.bin, state, env)
    t_ca(helper, state)
    t_leaf(helper, state, api, d)
    t_sni(helper, state, api)
    t_upstream(helper, state, api, selfsigned)
    t_rules(helper, state, api)
    t_hostile_head(helper, state, api)
    t_secret(helper, state, api)
    t_unbound_port(helper, state, api)
    t_untrusting(helper, state, api)
    t_alpn(helper, state, api)
    t_plain(helper, plain)
    t_bad_input(helper, state, api)
    t_limit(helper, state, api)
    t_mem(ARGS.bin, d, env)
    t_privileges(helper)
    t_exit(helper)
    subprocess.run(["rm", "-rf", d])
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
