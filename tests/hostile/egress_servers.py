"""The host side of tests/hostile/egress_cases.py: upstreams and canaries
on 127.0.0.1 / ::1, each logging every connection, HTTP request head, TLS
server name and DNS question into EVENTS, which the cases compare with
what they allow; and the test CA (openssl)."""
import array
import fcntl
import os
import socket
import ssl
import struct
import subprocess
import termios
import threading
import time

from egress_probe import MARK, _family

EVENTS = []            # (server, detail), in arrival order
_ev_lock = threading.Lock()
_busy = [0]            # connections accepted whose handler has not returned
_listeners = []        # TCP listening sockets
_datagrams = []        # UDP sockets (canaries, DNS)


def event(server, detail=""):
    with _ev_lock:
        EVENTS.append((server, detail))


def free_port(family=socket.AF_INET, kind=socket.SOCK_STREAM):
    """A port free for TCP and UDP on 127.0.0.1 and ::1 right now."""
    while True:
        s = socket.socket(family, kind)
        s.bind(("127.0.0.1" if family == socket.AF_INET else "::1", 0))
        port = s.getsockname()[1]
        s.close()
        ok = True
        for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            for k in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                t = socket.socket(fam, k)
                try:
                    t.bind((host, port))
                except OSError:
                    ok = False
                t.close()
        if ok:
            return port


def listen(host, port):
    s = socket.socket(_family(host), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if ":" in host:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((host, port))
    s.listen(64)
    return s


def serve_forever(lsock, handler):
    _listeners.append(lsock)

    def run(c, peer):
        try:
            handler(c, peer)
        finally:
            with _ev_lock:
                _busy[0] -= 1

    def loop():
        while True:
            try:
                c, peer = lsock.accept()
            except OSError:
                return
            with _ev_lock:
                _busy[0] += 1
            threading.Thread(target=run, args=(c, peer), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def _backlog(lsock):
    """Connections the kernel accepted that accept() has not taken yet (a
    listening socket's tcpi_unacked is its accept queue's length)."""
    try:
        return struct.unpack_from("I", lsock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 24)[0]
    except OSError:
        return 0


def _unread(sock):
    buf = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf)
    except OSError:
        return 0
    return buf[0]


def quiet():
    """No connection waits in a backlog, no handler runs, no datagram waits
    unread: every event that already reached a host server is in EVENTS."""
    with _ev_lock:
        busy = _busy[0]
    return busy == 0 and not any(_backlog(s) for s in _listeners) and not any(_unread(s) for s in _datagrams)


def settle(seconds=10):
    """Waits until quiet() holds twice 0.1 s apart (a datagram or connection
    just taken off its queue is counted as busy a moment later); False when
    it never does within seconds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if quiet():
            time.sleep(0.1)
            if quiet():
                return True
        else:
            time.sleep(0.05)
    return False


def http_upstream(name, log_connect=True):
    """HTTP/1.1 with keep-alive: logs each request head's method and Host;
    answers 200 with MARK."""
    def handle(c, peer):
        if log_connect:
            event(name, "connect")
        buf = b""
        c.settimeout(10)
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    b = c.recv(65536)
                    if not b:
                        return
                    buf += b
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                host = next((ln.split(":", 1)[1].strip() for ln in lines[1:] if ln.lower().startswith("host:")), "")
                event(name, f"request {lines[0].split(' ')[0]} host={host}")
                body = f"{MARK} {name} {lines[0]}\n".encode()
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Upstream: " + MARK.encode() +
                          b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                if any(ln.lower().replace(" ", "") == "connection:close" for ln in lines[1:]):
                    return
        except OSError:
            pass
        finally:
            c.close()
    return handle


def tls_upstream(ctx, name):
    """TLS (the test CA's cert) then HTTP: logs the server name it was asked
    for and each request."""
    def handle(c, peer):
        event(name, "connect")
        c.settimeout(10)
        try:
            t = ctx.wrap_socket(c, server_side=True)
        except (OSError, ssl.SSLError) as e:
            event(name, f"handshake failed {e!r}"[:120])
            c.close()
            return
        http_upstream(name, log_connect=False)(t, peer)
    return handle


def canary_tcp(name):
    def handle(c, peer):
        event(name, f"connect from {peer}")
        try:
            c.sendall(b"host canary " + name.encode())
        except OSError:
            pass
        c.close()
    return handle


def start_udp_canary(name, host, port):
    s = socket.socket(_family(host), socket.SOCK_DGRAM)
    s.bind((host, port))
    _datagrams.append(s)

    def loop():
        while True:
            try:
                data, peer = s.recvfrom(65536)
            except OSError:
                return
            event(name, f"datagram from {peer}")
            s.sendto(b"host udp canary", peer)
    threading.Thread(target=loop, daemon=True).start()
    return s


def start_dns(host, answers):
    """A DNS server (UDP) that logs every question: the resolver the broker's
    getaddrinfo is pointed at in the root runs.  answers: name -> IPv4."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, 53))
    _datagrams.append(s)

    def loop():
        while True:
            try:
                q, peer = s.recvfrom(4096)
            except OSError:
                return
            try:
                i, labels = 12, []
                while q[i]:
                    labels.append(q[i + 1:i + 1 + q[i]].decode("latin-1"))
                    i += 1 + q[i]
                name = ".".join(labels).lower()
                qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
            except (IndexError, struct.error):
                continue
            event("dns", f"question {name} type {qtype}")
            ip = answers.get(name)
            qsec = q[12:i + 5]
            if ip and qtype == 1:
                r = q[:2] + struct.pack(">HHHHH", 0x8180, 1, 1, 0, 0) + qsec + \
                    b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + socket.inet_aton(ip)
            else:
                r = q[:2] + struct.pack(">HHHHH", 0x8180 | (0 if ip else 3), 1, 0, 0, 0) + qsec
            s.sendto(r, peer)
    threading.Thread(target=loop, daemon=True).start()
    return s


def make_ca(d):
    """A test CA and a server cert for tls.test and other.test (openssl).
    Returns (ca.pem, server.pem, server.key)."""
    ca_key, ca, key, csr, crt, ext = (os.path.join(d, n) for n in
                                      ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem", "ext.cnf"))
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:tls.test,DNS:other.test,DNS:web.test\nextendedKeyUsage=serverAuth\n")
    for cmd in (["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
                 "-days", "2", "-subj", "/CN=nsbox egress test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                 "-subj", "/CN=tls.test"],
                ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                 "-out", crt, "-days", "2", "-extfile", ext]):
        subprocess.run(cmd, check=True, capture_output=True)
    return ca, crt, key
