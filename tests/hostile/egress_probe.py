#!/usr/bin/env python3
"""The in-sandbox side of tests/hostile/egress_cases.py: probes of the
network as a hostile program would try it, run in the test image as

    python3 /usr/local/lib/nsbox-egress/egress_probe.py inside STEPS_JSON

STEPS_JSON is a list of {"do": PROBE, "id": ID, ...}; each prints one JSON
line {"id": ID, ...} with what happened (errno names, bytes received, DNS
rcodes, netlink acks).  The probes never judge: egress_cases.py does.
stdlib only (the fixture's Debian python3).  Refuses to run anywhere but
in the test image: on the host, as root, the netlink probes would really
change the host's routes and nf_tables."""
import ctypes
import errno
import json
import os
import re
import socket
import ssl
import stat
import struct
import sys
import time

MARK = "nsbox-egress-upstream-7f3a"   # only the real upstreams send this
IMAGE_PATH = "/usr/local/lib/nsbox-egress/egress_probe.py"

def _errname(e):
    if isinstance(e, socket.timeout):
        return "timeout"
    if isinstance(e, socket.gaierror):
        return {socket.EAI_NONAME: "EAI_NONAME", getattr(socket, "EAI_NODATA", -5): "EAI_NODATA",
                socket.EAI_AGAIN: "EAI_AGAIN", socket.EAI_FAIL: "EAI_FAIL"}.get(e.errno, f"EAI_{e.errno}")
    if isinstance(e, ssl.SSLError):
        return "SSL:" + (e.reason or str(e))[:80]
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _connect(host, port, timeout):
    if re.fullmatch(r"[0-9.]+|[0-9a-fA-F:]+", host):
        s = socket.socket(_family(host), socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect((host, port))
    else:
        s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _read_all(s, limit=1 << 16):
    got, end = b"", "eof"
    try:
        while len(got) < limit:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError as e:
        end = _errname(e)
    return got, end


def p_resolve(st):
    try:
        infos = socket.getaddrinfo(st["name"], st.get("port", 80), socket.AF_UNSPEC, socket.SOCK_STREAM)
        return {"addrs": sorted({i[4][0] for i in infos})}
    except OSError as e:
        return {"error": _errname(e)}


QTYPES = {"A": 1, "AAAA": 28, "TXT": 16, "MX": 15, "HTTPS": 65, "ANY": 255}


def dns_query(name, qtype, qid=0x1234):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", QTYPES.get(qtype, 1), 1)


def dns_parse(r):
    """(qid, rcode, [(type, ttl, rdata-as-text)]) of a reply."""
    qid, flags, qd, an = struct.unpack(">HHHH", r[:8])
    i = 12
    for _ in range(qd):
        while r[i]:
            i += 1 + r[i] if r[i] < 0xc0 else 1
            if r[i - 1] >= 0xc0:
                break
        i += 1 + 4
    answers = []
    for _ in range(an):
        if r[i] >= 0xc0:
            i += 2
        else:
            while r[i]:
                i += 1 + r[i]
            i += 1
        t, _, ttl, ln = struct.unpack(">HHIH", r[i:i + 10])
        data = r[i + 10:i + 10 + ln]
        answers.append((t, ttl, socket.inet_ntoa(data) if t == 1 and ln == 4 else data.hex()))
        i += 10 + ln
    return qid, flags & 0xf, answers


def p_dns(st):
    q = dns_query(st["name"], st.get("qtype", "A"))
    server = (st.get("server", "127.0.0.1"), st.get("port", 53))
    try:
        if st.get("tcp"):
            s = socket.create_connection(server, timeout=3)
            s.sendall(struct.pack(">H", len(q)) + q)
            ln = struct.unpack(">H", s.recv(2))[0]
            r = b""
            while len(r) < ln:
                b = s.recv(ln - len(r))
                if not b:
                    break
                r += b
        else:
            s = socket.socket(_family(server[0]), socket.SOCK_DGRAM)
            s.settimeout(3)
            s.connect(server)
            s.send(q)
            r = s.recv(4096)
        qid, rcode, answers = dns_parse(r)
        return {"rcode": rcode, "answers": [a[2] for a in answers if a[0] == 1],
                "ttls": [a[1] for a in answers], "n_answers": len(answers), "qid_ok": qid == 0x1234}
    except Exception as e:  # noqa: BLE001
        return {"error": _errname(e)}


def p_tcp(st):
    """Connects, sends each piece (latin-1 text) with delay between them,
    then reads until the end: {"connect", "recv", "end"}."""
    try:
        s = _connect(st["host"], st["port"], st.get("timeout", 5))
    except OSError as e:
        return {"connect": _errname(e)}
    out = {"connect": "ok"}
    try:
        for piece in st.get("send", []):
            s.sendall(piece.encode("latin-1"))
            time.sleep(st.get("delay", 0))
        if st.get("shut"):
            s.shutdown(socket.SHUT_WR)
    except OSError as e:
        out["send"] = _errname(e)
    got, out["end"] = _read_all(s)
    out["recv"] = got[:3000].decode("latin-1")
    out["marker"] = MARK in got.decode("latin-1")
    s.close()
    return out


def _read_response(s, buf):
    """One HTTP response from s (buf: bytes already read).  (status or None,
    body, rest, end)."""
    end = None
    while b"\r\n\r\n" not in buf:
        try:
            b = s.recv(65536)
        except OSError as e:
            return None, buf, b"", _errname(e)
        if not b:
            return None, buf, b"", "eof"
        buf += b
    head, rest = buf.split(b"\r\n\r\n", 1)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    n = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    n = int(n.group(1)) if n else 0
    while len(rest) < n:
        try:
            b = s.recv(65536)
        except OSError as e:
            end = _errname(e)
            break
        if not b:
            end = "eof"
            break
        rest += b
    return (int(m.group(1)) if m else None), head + b"\r\n\r\n" + rest[:n], rest[n:], end


def p_http(st):
    """Requests (raw heads) one after the other on ONE connection:
    {"connect", "responses": [{"status", "marker"}], "end"}."""
    try:
        s = _connect(st["host"], st["port"], st.get("timeout", 5))
    except OSError as e:
        return {"connect": _errname(e)}
    out = {"connect": "ok", "responses": []}
    buf = b""
    for i, req in enumerate(st["requests"]):
        if i and st.get("pause"):
            time.sleep(st["pause"])
        try:
            s.sendall(req.encode("latin-1"))
        except OSError as e:
            out["end"] = "send:" + _errname(e)
            break
        status, body, buf, end = _read_response(s, buf)
        text = body.decode("latin-1")
        out["responses"].append({"status": status, "marker": MARK in text, "text": text[:300]})
        if end or status is None:
            out["end"] = end or "eof"
            break
    if "end" not in out:
        # after the last answer: does the connection end (a refusal closes it)?
        s.settimeout(2)
        more, out["end"] = _read_all(s)
        if more:
            out["responses"].append({"status": None, "marker": MARK in more.decode("latin-1"),
                                     "text": more[:300].decode("latin-1")})
    s.close()
    return out


def _records(hello, size):
    """hello (one TLS handshake record) re-framed into records of size bytes."""
    ctype, ver, ln = hello[0], hello[1:3], struct.unpack(">H", hello[3:5])[0]
    body, rest = hello[5:5 + ln], hello[5 + ln:]
    out = [bytes([ctype]) + ver + struct.pack(">H", len(body[i:i + size])) + body[i:i + size]
           for i in range(0, len(body), size)]
    return out + ([rest] if rest else [])


def p_tls(st):
    """A TLS client (the image's trust store) through a memory BIO, so that
    the ClientHello can be sent as is, byte by byte ("bytes") or re-framed in
    16-byte records ("records"); then GET / with Host = sni.
    {"connect", "handshake": "ok"|error, "status", "marker"}."""
    ctx = ssl.create_default_context()
    if st.get("noverify"):
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    sni = st.get("sni")
    try:
        s = _connect(st["host"], st["port"], st.get("timeout", 8))
    except OSError as e:
        return {"connect": _errname(e)}
    inc, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outb, server_hostname=sni)
    res = {"connect": "ok"}
    first = True

    def flush():
        nonlocal first
        data = outb.read()
        if not data:
            return
        if first and st.get("split") == "bytes":
            for i in range(len(data)):
                s.sendall(data[i:i + 1])
                time.sleep(0.002)
        elif first and st.get("split") == "records":
            for rec in _records(data, 16):
                s.sendall(rec)
                time.sleep(0.005)
        else:
            s.sendall(data)
        first = False

    def pump():
        flush()
        b = s.recv(65536)
        if not b:
            raise ConnectionAbortedError(errno.ECONNABORTED, "eof")
        inc.write(b)

    try:
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pump()
        flush()
        res["handshake"] = "ok"
    except ConnectionAbortedError:
        res["handshake"] = "eof"
        return res
    except Exception as e:  # noqa: BLE001
        res["handshake"] = _errname(e)
        return res
    host = st.get("host_header", sni)
    obj.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    body = b""
    try:
        while True:
            try:
                b = obj.read(65536)
                if not b:
                    break
                body += b
            except ssl.SSLWantReadError:
                pump()
    except Exception as e:  # noqa: BLE001
        res["end"] = _errname(e)
    text = body.decode("latin-1")
    m = re.match(r"HTTP/1\.[01] (\d{3})", text)
    res["status"] = int(m.group(1)) if m else None
    res["marker"] = MARK in text
    return res


def p_udp(st):
    host = st["host"]
    s = socket.socket(_family(host), socket.SOCK_DGRAM)
    s.settimeout(st.get("timeout", 1.5))
    try:
        s.connect((host, st["port"]))
        # QUIC-like: a long-header Initial packet's first bytes
        s.send(bytes.fromhex("c300000001") + b"\0" * 1195 if st.get("quic") else b"nsbox-udp-probe")
        s.recv(4096)
        return {"result": "answered"}
    except OSError as e:
        return {"result": _errname(e)}


def p_socket(st):
    fam = getattr(socket, st["family"])
    typ = getattr(socket, st["type"])
    try:
        socket.socket(fam, typ, st.get("proto", 0)).close()
        return {"result": "ok"}
    except OSError as e:
        return {"result": _errname(e)}


def _nl_talk(proto, msgs):
    """Sends netlink messages (bytes), returns the errno names of the acks."""
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
    except OSError as e:
        return {"socket": _errname(e)}
    s.settimeout(2)
    s.bind((0, 0))
    s.send(b"".join(msgs))
    acks = []
    try:
        while len(acks) < len(msgs):
            data = s.recv(65536)
            i = 0
            while i + 16 <= len(data):
                ln, typ = struct.unpack("=IH", data[i:i + 6])
                if typ == 2:  # NLMSG_ERROR
                    code = struct.unpack("=i", data[i + 16:i + 20])[0]
                    acks.append("ok" if code == 0 else errno.errorcode.get(-code, str(code)))
                i += (ln + 3) & ~3
                if ln == 0:
                    break
    except OSError as e:
        acks.append(_errname(e))
    return {"socket": "ok", "acks": acks}


def _rta(t, data):
    ln = 4 + len(data)
    return struct.pack("=HH", ln, t) + data + b"\0" * ((4 - ln % 4) % 4)


def _nlmsg(typ, flags, seq, payload):
    return struct.pack("=IHHII", 16 + len(payload), typ, flags, seq, 0) + payload


def p_netlink_route(st):
    """RTM_NEWROUTE 10.9.9.9/32 dev lo, RTM_DELROUTE of the local default
    route (the capture), RTM_NEWLINK of a dummy: each acked with an errno."""
    req, ack, create, excl = 1, 4, 0x400, 0x200
    add = struct.pack("=BBBBBBBBI", socket.AF_INET, 32, 0, 0, 254, 3, 0, 1, 0) + \
        _rta(1, socket.inet_aton("10.9.9.9")) + _rta(4, struct.pack("=i", 1))
    dele = struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 255, 0, 254, 2, 0) + _rta(4, struct.pack("=i", 1))
    dele6 = struct.pack("=BBBBBBBBI", socket.AF_INET6, 0, 0, 0, 255, 0, 254, 2, 0) + _rta(4, struct.pack("=i", 1))
    link = struct.pack("=BxHiII", 0, 0, 0, 0, 0) + _rta(3, b"nsx0\0") + _rta(18, _rta(1, b"dummy\0"))
    return _nl_talk(0, [_nlmsg(24, req | ack | create | excl, 1, add), _nlmsg(25, req | ack, 2, dele),
                        _nlmsg(25, req | ack, 3, dele6), _nlmsg(16, req | ack | create | excl, 4, link)])


def p_nft(st):
    """An nf_tables batch (begin, new table, end) on NETLINK_NETFILTER."""
    nfgen = lambda fam, res: struct.pack("=BBH", fam, 0, socket.htons(res))  # noqa: E731
    begin = _nlmsg(0x10, 1 | 4, 1, nfgen(0, 10))
    table = _nlmsg((10 << 8) | 0, 1 | 4 | 0x400, 2, nfgen(socket.AF_INET, 0) + _rta(1, b"nsbox\0"))
    end = _nlmsg(0x11, 1 | 4, 3, nfgen(0, 10))
    return _nl_talk(12, [begin, table, end])


def p_unshare(st):
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.unshare(ctypes.c_int(st["flags"]))
    return {"result": "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")}


def p_io_uring(st):
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    r = libc.syscall(ctypes.c_long(425), ctypes.c_uint(4), params)  # io_uring_setup
    return {"result": "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")}


def p_unix(st):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(st["path"].replace("@", "\0", 1) if st["path"].startswith("@") else st["path"])
        got, _ = _read_all(s)
        return {"result": "connected", "recv": got[:200].decode("latin-1")}
    except OSError as e:
        return {"result": _errname(e)}


def p_find_sockets(st):
    found = []
    for top in ("/",):
        for d, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if os.path.join(d, x) not in ("/proc", "/sys", "/dev")]
            for f in files:
                p = os.path.join(d, f)
                try:
                    if stat.S_ISSOCK(os.lstat(p).st_mode):
                        found.append(p)
                except OSError:
                    pass
    try:
        with open("/proc/net/unix") as f:
            abstract = [ln.split()[-1] for ln in f.read().splitlines()[1:] if ln.split()[-1].startswith("@")]
    except OSError:
        abstract = ["?"]
    return {"sockets": found, "abstract": abstract}


def p_many(st):
    """Opens n connections (sending nothing), then sees how many the broker
    still holds after a second: {"opened", "failed", "closed", "open"}."""
    socks, failed = [], 0
    for _ in range(st["n"]):
        try:
            socks.append(_connect(st["host"], st["port"], 3))
        except OSError:
            failed += 1
    time.sleep(1)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    for s in socks:
        s.close()
    return {"opened": len(socks), "failed": failed, "closed": closed, "open": len(socks) - closed}


def p_idle(st):
    """Connects and sends nothing: how long until the broker closes."""
    t0 = time.time()
    try:
        s = _connect(st["host"], st["port"], st.get("timeout", 30))
    except OSError as e:
        return {"connect": _errname(e)}
    got, end = _read_all(s)
    return {"connect": "ok", "end": end, "recv": got[:200].decode("latin-1"), "after_s": round(time.time() - t0, 1)}


def p_urlopen(st):
    """urllib, as a program would fetch (the image's trust store)."""
    import urllib.request
    try:
        with urllib.request.urlopen(st["url"], timeout=10) as r:
            body = r.read().decode("latin-1")
            return {"status": r.status, "marker": MARK in body}
    except Exception as e:  # noqa: BLE001
        return {"error": _errname(getattr(e, "reason", e)) if not isinstance(getattr(e, "reason", e), str)
                else str(e.reason)[:120]}


def p_sleep(st):
    time.sleep(st["s"])
    return {}


def inside(steps):
    for st in steps:
        fn = globals()["p_" + st["do"]]
        try:
            r = fn(st)
        except Exception as e:  # noqa: BLE001
            r = {"crash": repr(e)[:300]}
        print(json.dumps(dict(r, id=st["id"])), flush=True)


if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "inside":
    # Only where the test image puts this file: on the host, as root, the
    # netlink probes would really change the host's routes and tables.
    if os.path.abspath(__file__) != IMAGE_PATH and not os.environ.get("EGRESS_INSIDE_ANYWHERE"):
        sys.exit("egress_probe.py inside: only in the test image's sandbox")
    inside(json.loads(sys.argv[2]))
    sys.exit(0)


