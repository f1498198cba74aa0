#!/usr/bin/env python3
"""Exposed ports under attack (issue #28, docs/services-preview.md): the
preview proxy of `nsbox serve --http` and the port tools, as root and
rootless (the rootless user of tests/setup-users.sh runs the server).

Each case starts what it needs (a server, sandboxes running
tests/services/app.py or a tiny server of its own) and asserts what a
client, the host and other sandboxes see:
  other_sandbox_port        a URL reaches its own sandbox's port, never
                            another's (also not on a reused connection)
  host_loopback             the same port number on the host's 127.0.0.1
                            is never reached, exposed or not listening
  other_tenant              another tenant cannot expose, list or close
  tampered_token            one character flipped (several places),
                            upper case, cut short: 403
  expired_token             --preview-ttl 1: refused after it
  replayed_token            after port_close, after the sandbox's stop,
                            and on a new server (a new key): refused
  slow_client               a head trickled 1 byte/s is cut within the
                            head timeout; others are served meanwhile
  thousand_connections      1,000 connections at once: bounded (503 past
                            the cap), /mcp still answers, served after
  listens_on_every_port     a sandbox bound to ports 1..1000 gains
                            nothing: its "MCP port" is its own, no URL
                            appears that was not asked for
  malicious_server          bad HTTP, endless headers, a WebSocket flood
                            to a client that does not read: the proxy's
                            memory stays bounded, others are served
  no_way_out                with a port exposed, the sandbox still reaches
                            nothing outside (host loopback, the proxy,
                            the MCP port, an outside address)

Environment: NSBOX, NSBOX_RL (the binary the rootless user runs; default
NSBOX), STORE, STORE_RL, ROOTLESS_USER (nsboxtest), WORK (scratch, readable
by the rootless user), ONLY (regex over services/FRONT/CASE).  Run as root.
Prints PASS/FAIL lines (suite hostile/services); exits 1 on a failure."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(suite="hostile/services", width=900)

import json  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "services"))
import svc  # noqa: E402

E = os.environ
ONLY = re.compile(E.get("ONLY", ""))
USER = E.get("ROOTLESS_USER", "nsboxtest")


class Front:
    def __init__(self, mode):
        self.mode = mode
        self.store = E["STORE"] if mode == "root" else E["STORE_RL"]
        self.nsbox = E["NSBOX"] if mode == "root" else E.get("NSBOX_RL", E["NSBOX"])

    def prefix(self):
        if self.mode == "root":
            return []
        return ["runuser", "-u", USER, "--", "env", "-i", "PATH=/usr/bin:/bin", f"HOME=/home/{USER}",
                "NSBOX_LIMITS=best-effort"]

    def http(self, *args):
        return svc.Http(self.store, *args, prefix=self.prefix(), nsbox=self.nsbox)


def box_with_app(srv, sid, port=svc.APP_PORT):
    box = svc.create(srv, sid)
    svc.start_app(srv, sid, box, port)
    return box


def who_server(srv, sid, box, port, name):
    """python3 -m http.server on port serving /who = name."""
    svc.run(srv, sid, box, f"mkdir -p /tmp/w{port} && echo {name} > /tmp/w{port}/who && cd /tmp/w{port} && "
            f"(setsid nohup python3 -m http.server {port} >/dev/null 2>&1 </dev/null & echo $! >/tmp/w{port}.pid)")


def canary(host="127.0.0.1", port=0):
    """A host listener that records every connection: (port, hits list)."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(64)
    hits = []

    def loop():
        while True:
            try:
                c, a = s.accept()
            except OSError:
                return
            hits.append(a)
            c.close()
    threading.Thread(target=loop, daemon=True).start()
    return s, s.getsockname()[1], hits


def rss_kb(pid):
    """The RSS of the nsbox serve process under pid (itself or a child)."""
    for p in [pid] + [int(x) for x in open(f"/proc/{pid}/task/{pid}/children").read().split()]:
        try:
            with open(f"/proc/{p}/status") as f:
                st = f.read()
            if "nsbox" in open(f"/proc/{p}/comm").read():
                return int(re.search(r"VmRSS:\s+(\d+)", st).group(1))
        except OSError:
            continue
    return 0


def url_parts(e):
    return svc.split(e["url"])


# ---- the cases ---------------------------------------------------------------

def other_sandbox_port(front):
    srv = front.http()
    try:
        sid = srv.session()
        a, b = svc.create(srv, sid), svc.create(srv, sid)
        who_server(srv, sid, a, 8000, "sandbox-a")
        who_server(srv, sid, b, 8000, "sandbox-b")
        who_server(srv, sid, b, 8001, "sandbox-b-8001")
        ea, eb = svc.expose(srv, sid, a), svc.expose(srv, sid, b)
        _, p, pa = url_parts(ea)
        _, _, pb = url_parts(eb)
        bad = []
        for path, want in ((pa, "sandbox-a"), (pb, "sandbox-b")):
            st, _, body = svc.request(p, path + "who")
            if st != 200 or body.strip() != want.encode():
                bad.append(f"{path}who: {st} {body[:80]!r}")
        # A's token under B's port (host-mode label trick has no meaning in
        # path mode): the path after the token is the app's, never a port.
        st, _, body = svc.request(p, pa + "../../p/x/who")
        if body.strip() in (b"sandbox-b", b"sandbox-b-8001"):
            bad.append("a dot-dot path reached another sandbox")
        # One connection: A's request, then B's: never answered by A's
        # upstream; the proxy closes it for a new connection.
        s = svc.connect(p)
        r = svc.Reader(s)
        s.sendall(f"GET {pa}who HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        first = r.response()[2].strip()
        s.sendall(f"GET {pb}who HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        try:
            second = r.response()[2].strip()
        except (EOFError, OSError):
            second = None
        s.close()
        if first != b"sandbox-a" or second not in (None, b"sandbox-b"):
            bad.append(f"keep-alive switch: {first!r} then {second!r}")
        return not bad, "; ".join(bad)
    finally:
        srv.close()


def host_loopback(front):
    cs, cport, hits = canary()
    srv = front.http()
    try:
        sid = srv.session()
        box = svc.create(srv, sid)
        bad = []
        # Nothing listens on cport in the sandbox: no URL, nothing reached.
        res = svc.expose(srv, sid, box, port=cport, wait_s=1, ok=False)
        if not res.get("isError"):
            bad.append(f"exposed a port only the host listens on: {res}")
        # The sandbox listens on the same number: its own answers.
        who_server(srv, sid, box, cport, "in-sandbox")
        e = svc.expose(srv, sid, box, port=cport)
        _, p, path = url_parts(e)
        st, _, body = svc.request(p, path + "who")
        if body.strip() != b"in-sandbox":
            bad.append(f"same number: {st} {body[:80]!r}")
        # Its server gone: 502, never the host's.
        svc.run(srv, sid, box, f"kill $(cat /tmp/w{cport}.pid); sleep 0.5")
        st, _, body = svc.request(p, path + "who")
        if st != 502:
            bad.append(f"after the sandbox's server stopped: {st} {body[:80]!r}")
        time.sleep(0.3)
        if hits:
            bad.append(f"the host's 127.0.0.1:{cport} was reached: {hits}")
        return not bad, "; ".join(bad)
    finally:
        srv.close()
        cs.close()


def other_tenant(front):
    tf = os.path.join(E["WORK"], f"services-tokens-{front.mode}")
    with open(tf, "w") as f:
        f.write("alice alice-token-0123456789abcdef\nbob bob-token-0123456789abcdefgh\n")
    os.chmod(tf, 0o600)
    if front.mode == "rootless":
        subprocess.run(["chown", USER, tf], check=True)
    srv = front.http("--token-file", tf)
    try:
        srv.token = "alice-token-0123456789abcdef"
        sa = srv.session()
        box = box_with_app(srv, sa)
        e = svc.expose(srv, sa, box)
        srv.token = "bob-token-0123456789abcdefgh"
        sb = srv.session()
        bad = []
        for name, args in (("port_expose", {"sandbox_id": box, "port": 8000, "wait_s": 1}),
                           ("port_list", {"sandbox_id": box}), ("port_close", {"sandbox_id": box, "port": 8000})):
            res = srv.tool(sb, name, args, ok=False)
            if not res.get("isError"):
                bad.append(f"bob's {name} on alice's sandbox: {res.get('structuredContent')}")
        _, p, path = url_parts(e)
        if svc.request(p, path + "x")[0] != 200:
            bad.append("alice's URL stopped working")
        return not bad, "; ".join(bad)
    finally:
        srv.close()


def flip(tok, i):
    c = tok[i]
    return tok[:i] + ("b" if c == "a" else "a") + tok[i + 1:]


def tampered_token(front):
    srv = front.http()
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        tok = path.split("/")[2]
        bad = []
        for t in [flip(tok, i) for i in (0, 1, 10, 24, 40, 47)] + [tok.upper(), tok[:-1], tok + "a", ""]:
            st, _, body = svc.request(p, f"/p/{t}/x")
            if st not in (403, 404) or (len(t) == 48 and st != 403):
                bad.append(f"{t[:12]}..: {st}")
            if b"signature" in body or b"expired" in body:
                bad.append(f"the refusal says why: {body!r}")
        if svc.request(p, path + "x")[0] != 200:
            bad.append("the real token stopped working")
        return not bad, "; ".join(bad)
    finally:
        srv.close()


def expired_token(front):
    srv = front.http("--preview-ttl", "1")
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        time.sleep(2.2)
        bad = []
        st = svc.request(p, path + "x")[0]
        if st != 403:
            bad.append(f"expired: {st}")
        e2 = svc.expose(srv, sid, box)
        if e2["url"] == e["url"]:
            bad.append("expose after expiry returned the dead URL")
        return not bad, "; ".join(bad)
    finally:
        srv.close()


def replayed_token(front):
    srv = front.http()
    old = None
    bad = []
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        srv.tool(sid, "port_close", {"sandbox_id": box, "port": 8000})
        st = svc.request(p, path)[0]
        if st != 404:
            bad.append(f"after port_close: {st}")
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        old = path
        srv.tool(sid, "sandbox_stop", {"sandbox_id": box})
        st = svc.request(p, path)[0]
        if st != 404:
            bad.append(f"after sandbox_stop: {st}")
    finally:
        srv.close()
    srv = front.http()
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        svc.expose(srv, sid, box)
        st = svc.request(srv.preview_port, old)[0]
        if st != 403:
            bad.append(f"an earlier server's token: {st}")
    finally:
        srv.close()
    return not bad, "; ".join(bad)


def slow_client(front):
    srv = front.http()
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        head = f"GET {path}x HTTP/1.1\r\nHost: x\r\nX-Slow: {'a' * 100}\r\n\r\n".encode()
        s = svc.connect(p, timeout=30)
        t0 = time.time()
        cut = None
        bad = []
        for i, byte in enumerate(head):
            try:
                s.send(bytes([byte]))
            except OSError:
                cut = time.time() - t0
                break
            if i % 3 == 0:
                t1 = time.time()
                if svc.request(p, path + "y")[0] != 200 or time.time() - t1 > 2:
                    bad.append("another client waited")
            time.sleep(1)
            s.setblocking(False)
            try:
                got = s.recv(100)
                if got == b"" or b" 408 " in got:
                    cut = time.time() - t0
                    break
            except BlockingIOError:
                pass
            except OSError:
                cut = time.time() - t0
                break
            s.setblocking(True)
            if time.time() - t0 > 25:
                break
        s.close()
        if cut is None or cut > 13:
            bad.append(f"a head trickled at 1 byte/s was not cut (after {time.time() - t0:.0f} s)")
        return not bad, "; ".join(bad) or {"cut_after_s": round(cut, 1)}
    finally:
        srv.close()


def thousand_connections(front):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    srv = front.http()
    conns = []
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        bad = []
        for _ in range(1000):
            try:
                conns.append(socket.create_connection(("127.0.0.1", p), timeout=10))
            except OSError as x:
                bad.append(f"connect: {x}")
                break
        # Half of them send a head: those past the cap get 503 at once.
        for c in conns[:600]:
            c.sendall(f"GET {path}x HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        t0 = time.time()
        if not srv.ping(sid, timeout=10) or time.time() - t0 > 3:
            bad.append(f"/mcp ping took {time.time() - t0:.1f} s")
        busy = 0
        for c in conns[512:1000]:
            c.settimeout(10)
            try:
                if b" 503 " in c.recv(200):
                    busy += 1
            except OSError:
                pass
        if busy < 400:
            bad.append(f"only {busy} of the connections past the cap got 503")
        for c in conns:
            c.close()
        conns = []
        for _ in range(40):  # closed, each upstream too, and served again
            st = svc.request(p, path + "after")[0]
            if st == 200:
                break
            time.sleep(0.5)
        if st != 200:
            bad.append(f"after they closed: {st}")
        if not srv.alive():
            bad.append("the server died")
        return not bad, "; ".join(bad) or {"busy_503": busy}
    finally:
        for c in conns:
            c.close()
        srv.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


EVERY_PORT = r"""
import errno, resource, socket, sys, threading, http.server
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"in-sandbox-fake"; self.send_response(200); self.send_header("Content-Length", str(len(b)))
        self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
skip = set(map(int, sys.argv[1:]))
for port in skip:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
socks = []
for port in range(1, 65536):
    if port in skip or len(socks) > hard - 64:
        continue
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port)); s.listen(1); socks.append(s)
    except OSError:
        s.close()
open("/tmp/bound", "w").write(str(len(socks)))
threading.Event().wait()
"""


def listens_on_every_port(front):
    srv = front.http()
    try:
        sid = srv.session()
        box = svc.create(srv, sid)
        srv.tool(sid, "write_file", {"sandbox_id": box, "path": "/tmp/every.py", "content": EVERY_PORT})
        svc.run(srv, sid, box, f"setsid nohup python3 /tmp/every.py {srv.port} {srv.preview_port} "
                ">/tmp/every.log 2>&1 </dev/null &")
        bad = []
        for _ in range(60):  # the bind loop done
            if svc.run(srv, sid, box, "cat /tmp/bound 2>/dev/null")["stdout"].strip():
                break
            time.sleep(0.5)
        e = svc.expose(srv, sid, box, port=srv.port)
        _, p, path = url_parts(e)
        st, _, body = svc.request(p, path + "mcp")
        if body != b"in-sandbox-fake":
            bad.append(f"its 'MCP port' answered {st} {body[:80]!r}")
        lst = srv.tool(sid, "port_list", {"sandbox_id": box})["structuredContent"]
        if [x["port"] for x in lst["ports"]] != [srv.port]:
            bad.append(f"exposed: {lst['ports']}")
        nb = svc.run(srv, sid, box, "cat /tmp/bound; cat /tmp/every.log")["stdout"]
        if len(lst["listening"]) < 200:
            bad.append(f"listening shows {len(lst['listening'])} ports: the bind loop did not run ({nb[:200]})")
        for t in ("/", "/p/", "/mcp", f"/p/{'a' * 48}/"):
            st = svc.request(p, t)[0]
            if st not in (403, 404):
                bad.append(f"{t}: {st}")
        if not srv.ping(sid):
            bad.append("/mcp stopped answering")
        return not bad, "; ".join(bad) or {"bound": nb.strip()[:20], "listening": len(lst["listening"])}
    finally:
        srv.close()


def malicious_server(front):
    srv = front.http()
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        e = svc.expose(srv, sid, box)
        _, p, path = url_parts(e)
        bad = []
        rss0 = rss_kb(srv.p.pid)
        try:  # relayed as it is: the client's problem, not the proxy's
            svc.request(p, path + "bad")
        except (ValueError, EOFError, OSError):
            pass
        # Endless headers: the client reads 20 MB, then leaves.
        s = svc.connect(p)
        s.sendall(f"GET {path}headers HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        got = 0
        while got < 20 << 20:
            b = s.recv(1 << 16)
            if not b:
                break
            got += len(b)
        s.close()
        # A flood to 10 clients that never read.
        floods = []
        for _ in range(10):
            f, _ = svc.ws_open(p, path + "flood")
            floods.append(f)
        time.sleep(3)
        t0 = time.time()
        st, _, body = svc.request(p, path + "meanwhile")
        if st != 200 or time.time() - t0 > 2:
            bad.append(f"another request during the flood: {st} in {time.time() - t0:.1f} s")
        if not srv.ping(sid):
            bad.append("/mcp stopped answering")
        rss1 = rss_kb(srv.p.pid)
        for f in floods:
            f.close()
        if rss0 and rss1 - rss0 > 64 << 10:
            bad.append(f"the server grew {(rss1 - rss0) >> 10} MiB during the flood")
        if not srv.alive():
            bad.append("the server died")
        return not bad, "; ".join(bad) or {"rss_kb": [rss0, rss1], "endless_read": got}
    finally:
        srv.close()


NO_WAY_OUT = r"""
import json, socket, sys
out = {}
for name, addr in [("host_canary", ("127.0.0.1", int(sys.argv[1]))), ("mcp", ("127.0.0.1", int(sys.argv[2]))),
                   ("preview", ("127.0.0.1", int(sys.argv[3]))), ("outside", ("1.1.1.1", 80)),
                   ("gateway", ("10.0.2.2", 80))]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect(addr); out[name] = "connected"
    except OSError as e:
        out[name] = e.__class__.__name__ + ":" + str(e.errno)
    s.close()
out["ifaces"] = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])
print(json.dumps(out))
"""


def no_way_out(front):
    cs, cport, hits = canary()
    srv = front.http()
    try:
        sid = srv.session()
        box = box_with_app(srv, sid)
        svc.expose(srv, sid, box)
        srv.tool(sid, "write_file", {"sandbox_id": box, "path": "/tmp/out.py", "content": NO_WAY_OUT})
        r = svc.run(srv, sid, box, f"python3 /tmp/out.py {cport} {srv.port} {srv.preview_port}")
        res = json.loads(r["stdout"])
        bad = [f"{k}: {v}" for k, v in res.items() if v == "connected" and k != "mcp" and k != "preview"]
        # 127.0.0.1 in the sandbox is its own: "mcp"/"preview" connect only
        # if something of the sandbox listens there, which nothing does.
        bad += [f"{k}: connected" for k in ("mcp", "preview") if res.get(k) == "connected"]
        if res["ifaces"] != ["lo"]:
            bad.append(f"interfaces {res['ifaces']}")
        time.sleep(0.3)
        if hits:
            bad.append(f"the host canary was reached: {hits}")
        return not bad, "; ".join(bad) or res
    finally:
        srv.close()
        cs.close()


CASES = [
    ("other_sandbox_port", other_sandbox_port),
    ("host_loopback", host_loopback),
    ("other_tenant", other_tenant),
    ("tampered_token", tampered_token),
    ("expired_token", expired_token),
    ("replayed_token", replayed_token),
    ("slow_client", slow_client),
    ("thousand_connections", thousand_connections),
    ("listens_on_every_port", listens_on_every_port),
    ("malicious_server", malicious_server),
    ("no_way_out", no_way_out),
]


def setup():
    """The python fixture (its sandbox.language label) in both stores."""
    fixtures = E.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures").rstrip("/")
    for front in (Front("root"), Front("rootless")):
        p = subprocess.run(front.prefix() + [front.nsbox, "--store", front.store, "pull", "--quiet",
                                             f"oci:{fixtures}/oci/python:latest"], capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"{front.mode}: pull: {p.stderr.strip()}")


def main():
    if os.geteuid() != 0:
        sys.exit("services_cases.py: run as root (it runs nsbox as root and as the rootless user)")
    try:
        setup()
    except Exception as e:  # noqa: BLE001
        nt.fail("setup", repr(e))
        sys.exit(1)
    for mode in ("root", "rootless"):
        front = Front(mode)
        t0 = time.time()
        for name, fn in CASES:
            full = f"{mode}/{name}"
            if not ONLY.search(f"services/{full}"):
                continue
            try:
                ok, why = fn(front)
            except Exception as e:  # noqa: BLE001
                ok, why = False, f"raised {e!r}"
            nt.result(full, ok, why if not ok else "")
            if ok and why:
                nt.note(f"services/{full}: {json.dumps(why)}")
        print(f"# services/{mode}: {time.time() - t0:.1f} s", flush=True)
    nt.finish()


if __name__ == "__main__":
    main()
