#!/usr/bin/env python3
"""Exposed ports (issue #28): port_expose/port_list/port_close and the
preview proxy of `nsbox serve --http`, against real sandboxes running
tests/services/app.py, and the loopback URL of `nsbox serve` over stdio.

Path mode (/p/TOKEN/: the app sees /..., X-Forwarded-* set), the redirect
to the trailing slash, keep-alive with several requests on one connection
(a chunked POST and a Content-Length POST among them, one upstream
connection), a WebSocket echo, host mode (PORT-TOKEN.DOMAIN in Host),
the same record on a second expose, port_list, port_close cutting a live
connection, --max-ports, a port nothing listens on, the URL after the
sandbox's stop, and over stdio a 127.0.0.1 URL that ends with the sandbox.

usage: preview.py STORE            (as root: then again as the rootless
       user ROOTLESS_USER, default nsboxtest, with a store of its own
       under WORK, default a temporary directory)
NSBOX: the binary; SUITE: the prefix.  Prints PASS/FAIL lines; exits 1
when a test failed."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402
import svc  # noqa: E402

MODE = "rootless" if os.geteuid() != 0 else "root"
nt.configure(default_suite="services_preview", prefix=f"{MODE}/")
STORE = sys.argv[1]
TOKEN_RE = r"[a-z2-7]{48}"


def http_tests():
    srv = svc.Http(STORE)
    try:
        sid = srv.session()
        box = svc.create(srv, sid)
        svc.start_app(srv, sid, box)
        st = {}

        @nt.test("expose_returns_a_path_url")
        def _():
            e = svc.expose(srv, sid, box)
            st["e"] = e
            m = re.fullmatch(rf"http://127\.0\.0\.1:(\d+)/p/({TOKEN_RE})/", e["url"])
            if not m:
                return f"url {e['url']!r}"
            if int(m.group(1)) != srv.preview_port or srv.preview_port == srv.port:
                return f"the preview origin is not its own port: {e['url']} (MCP on {srv.port})"
            if e["mode"] != "path" or e["port"] != svc.APP_PORT or not e.get("expires_at"):
                return f"record {e}"
            st["token"] = m.group(2)

        if "e" not in st:
            return
        _, pport, base = svc.split(st["e"]["url"])

        @nt.test("get_strips_the_prefix_and_forwards")
        def _():
            status, _, body = svc.request(pport, base + "hello/x?q=1", headers={"X-Forwarded-For": "6.6.6.6"})
            if status != 200:
                return f"status {status}: {body[:200]!r}"
            seen = json.loads(body)
            h = seen["headers"]
            if seen["path"] != "/hello/x?q=1":
                return f"the app saw {seen['path']!r}"
            if h.get("x-forwarded-prefix") != "/p/" + st["token"]:
                return f"X-Forwarded-Prefix {h.get('x-forwarded-prefix')!r}"
            if h.get("x-forwarded-for") != "127.0.0.1" or h.get("x-forwarded-proto") != "http":
                return f"X-Forwarded-For/Proto {h.get('x-forwarded-for')!r} {h.get('x-forwarded-proto')!r}"
            if h.get("host") != f"127.0.0.1:{pport}" or h.get("x-forwarded-host") != f"127.0.0.1:{pport}":
                return f"Host {h.get('host')!r} X-Forwarded-Host {h.get('x-forwarded-host')!r}"

        @nt.test("no_trailing_slash_redirects")
        def _():
            status, h, _ = svc.request(pport, base[:-1] + "?a=b")
            if status != 308 or h.get("location") != base + "?a=b":
                return f"{status} {h}"

        @nt.test("keepalive_chunked_and_length_bodies_on_one_connection")
        def _():
            s = svc.connect(pport)
            r = svc.Reader(s)
            hostl = f"Host: 127.0.0.1:{pport}\r\n"
            seen = []
            s.sendall(f"GET {base}one HTTP/1.1\r\n{hostl}\r\n".encode())
            seen.append(json.loads(r.response()[2]))
            chunks = [b"a" * 5000, b"b" * 70000, b"c"]
            body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nX-Trailer: t\r\n\r\n"
            s.sendall(f"POST {base}two HTTP/1.1\r\n{hostl}Transfer-Encoding: chunked\r\n\r\n".encode() + body)
            seen.append(json.loads(r.response()[2]))
            s.sendall(f"POST {base}three HTTP/1.1\r\n{hostl}Content-Length: 11\r\n\r\nhello world".encode())
            seen.append(json.loads(r.response()[2]))
            # Two requests in one write (pipelined): both answered in order.
            s.sendall(f"GET {base}four HTTP/1.1\r\n{hostl}\r\nGET {base}five HTTP/1.1\r\n{hostl}\r\n".encode())
            seen.append(json.loads(r.response()[2]))
            seen.append(json.loads(r.response()[2]))
            s.close()
            paths = [x["path"] for x in seen]
            if paths != ["/one", "/two", "/three", "/four", "/five"]:
                return f"paths {paths}"
            if seen[1]["length"] != 75001 or seen[2]["length"] != 11:
                return f"bodies {seen[1]['length']} {seen[2]['length']}"
            if len({x["conn"] for x in seen}) != 1 or [x["n"] for x in seen] != [1, 2, 3, 4, 5]:
                return f"not one upstream connection: {[(x['conn'], x['n']) for x in seen]}"

        @nt.test("websocket_echo")
        def _():
            s, r = svc.ws_open(pport, base + "ws")
            for msg in (b"hello", b"x" * 3000, "ünïcode".encode()):
                svc.ws_send(s, msg)
                op, data = svc.ws_recv(r)
                if data != msg:
                    return f"echo {data[:50]!r} for {msg[:50]!r}"
            s.close()

        @nt.test("forty_requests_at_once_all_served")
        def _():
            # A page's assets load in parallel: attempts past the proxy's
            # per-exposure connect bound wait their turn, never 503.
            import concurrent.futures
            with concurrent.futures.ThreadPoolExecutor(40) as ex:
                got = list(ex.map(lambda i: svc.request(pport, f"{base}asset{i}")[0], range(40)))
            if got != [200] * 40:
                return f"statuses {sorted(set(got))}: {got.count(200)} of 40 served"

        @nt.test("expose_again_returns_the_same_record")
        def _():
            e2 = svc.expose(srv, sid, box)
            if e2["url"] != st["e"]["url"] or e2["expires_at"] != st["e"]["expires_at"]:
                return f"{e2} vs {st['e']}"

        @nt.test("port_list")
        def _():
            res = srv.tool(sid, "port_list", {"sandbox_id": box})["structuredContent"]
            urls = [p["url"] for p in res["ports"]]
            if urls != [st["e"]["url"]] or svc.APP_PORT not in res["listening"]:
                return f"{res}"

        @nt.test("wait_for_nothing_listening_fails")
        def _():
            t0 = time.time()
            res = svc.expose(srv, sid, box, port=8009, wait_s=1, ok=False)
            text = res["content"][0]["text"]
            if not res.get("isError") or "listens" not in text or time.time() - t0 > 10:
                return f"{res}"

        @nt.test("expose_before_listening_waits")
        def _():
            run_bg = "sh -c 'sleep 2; exec python3 /tmp/app.py 8001' >/dev/null 2>&1 </dev/null &"
            svc.run(srv, sid, box, "setsid nohup " + run_bg)
            e = svc.expose(srv, sid, box, port=8001, wait_s=20)
            _, p, b = svc.split(e["url"])
            status, _, body = svc.request(p, b + "late")
            if status != 200 or json.loads(body)["path"] != "/late":
                return f"{status} {body[:200]!r}"

        @nt.test("port_close_refuses_and_cuts")
        def _():
            e = svc.expose(srv, sid, box, port=8001)
            _, p, b = svc.split(e["url"])
            s = svc.connect(p)
            r = svc.Reader(s)
            s.sendall(f"GET {b}a HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            if r.response()[0] != 200:
                return "no first answer"
            res = srv.tool(sid, "port_close", {"sandbox_id": box, "port": 8001})["structuredContent"]
            if res["closed"] is not True:
                return f"{res}"
            s.settimeout(5)
            try:
                s.sendall(f"GET {b}b HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                got = s.recv(100)
            except OSError:
                got = b""
            if got:
                return f"the live connection still answers: {got!r}"
            status, _, _ = svc.request(p, b)
            if status != 404:
                return f"after port_close: {status}"
            again = srv.tool(sid, "port_close", {"sandbox_id": box, "port": 8001})["structuredContent"]
            if again["closed"] is not False:
                return f"second close {again}"

        @nt.test("url_dies_with_the_sandbox")
        def _():
            box2 = svc.create(srv, sid)
            svc.start_app(srv, sid, box2)
            e = svc.expose(srv, sid, box2)
            _, p, b = svc.split(e["url"])
            if svc.request(p, b)[0] != 200:
                return "no answer first"
            s, r = svc.ws_open(p, b + "ws")
            srv.tool(sid, "sandbox_stop", {"sandbox_id": box2})
            s.settimeout(5)
            try:
                got = s.recv(100)
            except OSError:
                got = b""
            status = svc.request(p, b)[0]
            if got or status != 404:
                return f"after the stop: ws read {got!r}, GET {status}"
    finally:
        srv.close()

    # Host mode and the per-sandbox cap, on a server of their own.
    srv = svc.Http(STORE, "--preview-domain", "Preview.Test", "--max-ports", "2")
    try:
        sid = srv.session()
        box = svc.create(srv, sid)
        svc.start_app(srv, sid, box)
        st = {}

        @nt.test("host_mode")
        def _():
            e = svc.expose(srv, sid, box)
            m = re.fullmatch(rf"http://(8000-({TOKEN_RE})\.preview\.test):(\d+)/", e["url"])
            if not m or e["mode"] != "host" or int(m.group(3)) != srv.preview_port:
                return f"{e}"
            st["host"] = f"{m.group(1)}:{m.group(3)}"
            status, _, body = svc.request(srv.preview_port, "/deep/path", host=st["host"])
            seen = json.loads(body) if status == 200 else {}
            if status != 200 or seen["path"] != "/deep/path":
                return f"{status} {body[:200]!r}"
            if seen["headers"].get("x-forwarded-prefix") != "/":
                return f"X-Forwarded-Prefix {seen['headers'].get('x-forwarded-prefix')!r}"
            s, r = svc.ws_open(srv.preview_port, "/ws", host=st["host"])
            svc.ws_send(s, b"host-mode")
            if svc.ws_recv(r)[1] != b"host-mode":
                return "websocket in host mode"
            # The same token under another port's label is not that port.
            other = st["host"].replace("8000-", "8001-", 1)
            if svc.request(srv.preview_port, "/", host=other)[0] != 404:
                return "a token answered under another port's label"

        @nt.test("max_ports")
        def _():
            svc.run(srv, sid, box, "setsid nohup python3 /tmp/app.py 8001 >/dev/null 2>&1 </dev/null &"
                    "setsid nohup python3 /tmp/app.py 8002 >/dev/null 2>&1 </dev/null &")
            svc.expose(srv, sid, box, port=8001)
            res = svc.expose(srv, sid, box, port=8002, ok=False)
            if not res.get("isError") or "max-ports" not in res["content"][0]["text"]:
                return f"a third port: {res}"
    finally:
        srv.close()


def stdio_tests():
    srv = svc.Stdio(STORE)
    try:
        box = svc.create(srv, None)
        svc.start_app(srv, None, box)
        st = {}

        @nt.test("stdio_loopback_url")
        def _():
            e = svc.expose(srv, None, box)
            m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", e["url"])
            if not m or e["mode"] != "loopback" or e["expires_at"] is not None:
                return f"{e}"
            st["port"] = int(m.group(1))
            status, _, body = svc.request(st["port"], "/x")
            if status != 200 or json.loads(body)["path"] != "/x":
                return f"{status} {body[:200]!r}"
            s, r = svc.ws_open(st["port"], "/ws")
            svc.ws_send(s, b"stdio")
            if svc.ws_recv(r)[1] != b"stdio":
                return "websocket over the loopback URL"
            s.close()

        @nt.test("stdio_listener_ends_with_the_sandbox")
        def _():
            if "port" not in st:
                return "no URL"
            srv.tool(None, "sandbox_stop", {"sandbox_id": box})
            try:
                svc.request(st["port"], "/")
            except (ConnectionRefusedError, ConnectionResetError, EOFError):
                return None
            return "the 127.0.0.1 listener still answers"
    finally:
        srv.close()


def rootless_run():
    """The same tests as ROOTLESS_USER, with a store of its own."""
    user = os.environ.get("ROOTLESS_USER", "nsboxtest")
    work = tempfile.mkdtemp(prefix="nsbox-preview-", dir=os.environ.get("WORK"))
    os.chmod(work, 0o755)
    store = os.path.join(work, "store")
    fixtures = os.environ.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures")
    try:
        shutil.chown(work, user)
        env = ["env", "-i", "PATH=/usr/bin:/bin", f"HOME=/home/{user}", f"NSBOX={os.path.abspath(svc.NSBOX)}",
               f"SUITE={os.environ.get('SUITE', '')}", "NSBOX_LIMITS=best-effort"]
        subprocess.run(["runuser", "-u", user, "--", *env, svc.NSBOX, "--store", store, "pull", "--quiet",
                        f"oci:{fixtures}/oci/python:latest"], check=True, stdout=subprocess.DEVNULL,
                       timeout=300)
        p = subprocess.run(["runuser", "-u", user, "--", *env, "python3", os.path.abspath(__file__), store],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        out = p.stdout.decode(errors="replace")
        sys.stdout.write("".join(ln + "\n" for ln in out.splitlines() if re.match(r"(PASS|FAIL|SKIP): |# ", ln)))
        if p.returncode != 0 and "FAIL: " not in out:
            nt.fail("rootless_run", f"exited {p.returncode}: {out[-400:]}")
        elif "FAIL: " in out:
            nt.note("rootless failures above")
            return False
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return True


if __name__ == "__main__":
    http_tests()
    stdio_tests()
    ok = True
    if MODE == "root" and os.environ.get("NO_ROOTLESS") != "1":
        ok = rootless_run()
    if not ok:
        sys.exit(1)
    nt.finish()
