"""The pieces tests/egress/tls_helper.py (the egress_tls suite) and
tests/egress/tls_bench.py drive nsbox-tls with: a test PKI made by
`openssl req`, real HTTP/1.1 upstream servers (TLS or plain), nsbox-tls
behind a SOCK_SEQPACKET socketpair standing for the broker, connections
handed over as the broker hands them (SCM_RIGHTS, the ClientHello read
first), and a small HTTP/1.1 client.  Nothing here replaces nsbox-tls.
"""
import base64
import json
import os
import socket
import ssl
import subprocess
import threading
import time

VALUE = "s3cr3t-VALUE-0123456789-xyz"
PLACEHOLDER = "nsbox-secret-tok-AbCdEfGhIjKlMnOpQrStUvWx"


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
