#!/usr/bin/env python3
"""Terminals over HTTP (issue #28, docs/services-terminal.md): terminal_open
against a real `nsbox serve --http` with real sandboxes, driven by a real
WebSocket client (Debian's python3-websockets).

A command typed in runs in the sandbox's shell (hi-42 comes back); a
resize message changes what `stty size` says; the shell is the sandbox's
(its hostname, no host file); bash where the image has it, sh where not
(busybox); the URL works once (a second connection is refused), a
tampered or expired token is refused; closing the socket ends the shell
and its jobs (no process left in the sandbox); stopping the sandbox
closes the socket; a session holds at most --max-terminals; the tool is
HTTP only (not offered over stdio); frames a client must not send (an
unmasked one, one over 1 MiB) close the connection with 1002 / 1009.

usage: terminal.py STORE PYTHON_IMAGE BUSYBOX_IMAGE  (NSBOX: the binary;
SUITE: the prefix).  Prints PASS/FAIL lines; exits 1 when a test failed."""
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

import websockets  # noqa: E402  (python3-websockets, tests/deps.sh)

nt.configure(default_suite="terminal")

NSBOX = os.environ.get("NSBOX") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox")
STORE, PY_IMAGE, BB_IMAGE = (sys.argv[1:] + ["", "", ""])[:3]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "terminal.py", "version": "1"}}


class Server:
    def __init__(self, *args):
        env = dict(os.environ)
        env.pop("NSBOX_TOKEN", None)
        self.p = subprocess.Popen([NSBOX, "--store", STORE, "serve", "--http", "127.0.0.1:0", *args],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=env)
        self.port = None
        end = time.time() + 20
        while self.port is None and time.time() < end:
            line = self.p.stderr.readline().decode()
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
            if not line and self.p.poll() is not None:
                break
        if self.port is None:
            raise RuntimeError("the HTTP server did not start")
        threading.Thread(target=lambda: [sys.stderr.write('SRV ' + l.decode()) for l in self.p.stderr] if os.environ.get('TERM_DEBUG') else self.p.stderr.read(), daemon=True).start()
        self.n = 0

    def rpc(self, sid, method, params):
        self.n += 1
        r = mcphttp.post(self.port, {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params},
                         sid, timeout=300)
        return r.response(self.n), r.headers.get("mcp-session-id")

    def session(self):
        r, sid = self.rpc(None, "initialize", INIT)
        if not sid:
            raise RuntimeError(f"initialize: {r}")
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        return sid

    def tool(self, sid, name, args, ok=True):
        r, _ = self.rpc(sid, "tools/call", {"name": name, "arguments": args})
        res = r["result"]
        if ok and res.get("isError"):
            raise RuntimeError(f"{name}: {res['content'][0]['text']}")
        return res

    def run(self, sid, box, command):
        return self.tool(sid, "run_command", {"sandbox_id": box, "command": command,
                                              "timeout_s": 60})["structuredContent"]

    def create(self, sid, image):
        return self.tool(sid, "sandbox_create", {"image": image})["structuredContent"]["sandbox_id"]

    def terminal(self, sid, box, **kw):
        """terminal_open; a terminal whose socket the test just closed may
        take a moment to end on the server: its slot is waited for (5 s
        at most)."""
        end = time.time() + 5
        while True:
            res = self.tool(sid, "terminal_open", {"sandbox_id": box, **kw}, ok=False)
            if not res.get("isError"):
                return res["structuredContent"]
            text = res["content"][0]["text"]
            if "--max-terminals" not in text or time.time() > end:
                raise RuntimeError(f"terminal_open: {text}")
            time.sleep(0.1)

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()


async def read_until(ws, pattern, timeout=20):
    """Output (text) until the regex pattern is in it; raises on timeout."""
    buf = b""
    end = time.time() + timeout
    while True:
        left = end - time.time()
        if left <= 0:
            raise nt.Check(f"no {pattern!r} within {timeout} s; got {buf[-400:]!r}")
        try:
            m = await asyncio.wait_for(ws.recv(), left)
        except asyncio.TimeoutError:
            continue
        buf += m if isinstance(m, bytes) else m.encode()
        if re.search(pattern, buf.decode(errors="replace")):
            return buf.decode(errors="replace")


async def refused_status(url):
    """The HTTP status a WebSocket connection to url is refused with, or
    None when it opens."""
    try:
        ws = await websockets.connect(url, open_timeout=10)
    except websockets.exceptions.InvalidStatusCode as e:
        return e.status_code
    await ws.close()
    return None


def procs(srv, sid, box):
    """The command lines of the sandbox's processes, one a line."""
    out = srv.run(sid, box, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done")
    return out["stdout"]


def raw_ws(port, path):
    """A handshaken raw socket to path (for frames a library will not send)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    if b" 101 " not in head.split(b"\r\n")[0] or b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" not in head:
        raise nt.Check(f"handshake: {head!r}")
    return s


def close_code(s, timeout=10):
    """The code of the close frame the server sends (skipping data frames)."""
    s.settimeout(timeout)
    buf = b""
    while True:
        b = s.recv(65536)
        if not b:
            raise nt.Check(f"connection closed with no close frame ({buf[:80]!r})")
        buf += b
        while len(buf) >= 2:
            op, ln = buf[0] & 0x0F, buf[1] & 0x7F
            hl = 2 + (2 if ln == 126 else 8 if ln == 127 else 0)
            if len(buf) < hl:
                break
            if ln >= 126:
                ln = int.from_bytes(buf[2:hl], "big")
            if len(buf) < hl + ln:
                break
            if op == 8:
                return int.from_bytes(buf[hl:hl + 2], "big")
            buf = buf[hl + ln:]


def main():
    srv = Server("--max-terminals", "2")
    try:
        tests(srv)
    finally:
        srv.close()
    short = Server("--terminal-ttl", "1")
    try:
        sid = short.session()
        box = short.create(sid, BB_IMAGE)
        url = short.terminal(sid, box)["url"]
        time.sleep(2.5)
        st = asyncio.run(refused_status(url))
        nt.result("expired_refused", st == 403, f"status {st} (expected 403)")
    finally:
        short.close()
    idle = Server("--idle-timeout", "2")
    try:
        sid = idle.session()
        box = idle.create(sid, BB_IMAGE)
        url = idle.terminal(sid, box)["url"]

        async def quiet():
            async with websockets.connect(url, open_timeout=10, ping_interval=None) as ws:
                await asyncio.sleep(5)  # over the connection idle timeout
                await ws.send("echo still-$((20+22))\r")
                await read_until(ws, r"still-42")
        nt.run("idle_terminal_outlives_idle_timeout", lambda: asyncio.run(quiet()))
    finally:
        idle.close()
    stdio_not_offered()


def stdio_not_offered():
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "terminal_open", "arguments": {"sandbox_id": "x"}}}]
    p = subprocess.run([NSBOX, "--store", STORE, "serve"], input="".join(json.dumps(m) + "\n" for m in msgs),
                       capture_output=True, text=True, timeout=60)
    got = {}
    for line in p.stdout.splitlines():
        m = json.loads(line)
        got[m.get("id")] = m
    names = [t["name"] for t in got.get(2, {}).get("result", {}).get("tools", [])]
    call = got.get(3, {})
    nt.result("stdio_not_offered", names and "terminal_open" not in names and
              ("error" in call or call.get("result", {}).get("isError")),
              f"tools: {names}; call: {call}")


def tests(srv):
    sid = srv.session()
    listed, _ = srv.rpc(sid, "tools/list", {})
    nt.result("http_offered", any(t["name"] == "terminal_open" for t in listed["result"]["tools"]),
              "terminal_open not in tools/list over HTTP")
    box = srv.create(sid, PY_IMAGE)
    t = srv.terminal(sid, box, cols=100, rows=30)
    url = t["url"]
    nt.result("url_form", re.fullmatch(rf"ws://127\.0\.0\.1:{srv.port}/t/[a-z2-7]{{48}}", url) is not None
              and t["cols"] == 100 and t["rows"] == 30 and t["expires_at"].endswith("Z"), f"result {t}")
    marker = f"/tmp/nsbox-terminal-host-{os.getpid()}"
    with open(marker, "w") as f:
        f.write("host\n")

    async def session_one():
        async with websockets.connect(url, open_timeout=10, max_size=None) as ws:
            async def t_echo():
                await ws.send("echo hi-$((6*7))\r")
                await read_until(ws, r"hi-42")
            await guard("echo", t_echo())

            async def t_size0():
                await ws.send(b"stty size\r")  # binary input works too
                await read_until(ws, r"30 100")
            await guard("initial_size", t_size0())

            async def t_resize():
                await ws.send(json.dumps({"type": "resize", "cols": 123, "rows": 45}))
                await ws.send("stty size\r")
                await read_until(ws, r"45 123")
            await guard("resize", t_resize())

            async def t_bash():
                await ws.send("echo shell=[$BASH_VERSION]\r")
                out = await read_until(ws, r"shell=\[\d|shell=\[\]")
                nt.ok(re.search(r"shell=\[\d", out), f"not bash: {out[-200:]!r}")
            await guard("bash_where_present", t_bash())

            async def t_sandbox():
                await ws.send(f"echo host=$(hostname); test -e {marker} && echo SEES-HOST || echo no-host-file\r")
                out = await read_until(ws, r"(SEES-HOST|no-host-file)\r?\n")
                nt.ok("no-host-file" in out.split("test -e")[-1], f"the shell sees the host's file: {out[-300:]!r}")
                h = re.findall(r"host=(\S+)", out)
                nt.ok(h and h[-1] != socket.gethostname(), f"hostname {h} is the host's")
            await guard("is_the_sandbox", t_sandbox())

            async def t_ping():
                pong = await ws.ping(b"abc")
                await asyncio.wait_for(pong, 10)
            await guard("ping_pong", t_ping())

            # A job in the background and one in the foreground: both end
            # with the socket.
            await ws.send("sleep 4243 & sleep 4242\r")
            await asyncio.sleep(1)
        # the socket is closed here

    asyncio.run(session_one())

    st = asyncio.run(refused_status(url))
    nt.result("reuse_refused", st in (404, 409), f"status {st} (expected 409, or 404 once ended)")
    tampered = url[:-1] + ("a" if url[-1] != "a" else "b")
    st = asyncio.run(refused_status(tampered))
    nt.result("tampered_refused", st == 403, f"status {st} (expected 403)")

    def no_stray():
        end = time.time() + 10
        while True:
            ps = procs(srv, sid, box)
            left = [l for l in ps.splitlines() if "sleep 424" in l or "bash -i" in l]
            if not left:
                return
            if time.time() > end:
                raise nt.Check(f"left in the sandbox after the socket closed: {left}")
            time.sleep(0.5)
    nt.run("close_ends_shell", no_stray)

    # A second URL while one is open, then the cap (--max-terminals 2).
    t2 = srv.terminal(sid, box)
    t3 = srv.terminal(sid, box)
    over = srv.tool(sid, "terminal_open", {"sandbox_id": box}, ok=False)
    nt.result("max_terminals", over.get("isError") and "--max-terminals" in over["content"][0]["text"],
              f"a third terminal: {over}")

    # Unopened URL ends at the sandbox's stop; an open one is closed.
    async def stop_closes():
        async with websockets.connect(t2["url"], open_timeout=10) as ws:
            await ws.send("echo ready-$((1+1))\r")
            await read_until(ws, r"ready-2")
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: srv.tool(sid, "sandbox_stop", {"sandbox_id": box}))
            try:
                await asyncio.wait_for(read_until(ws, r"never-printed", timeout=15), 20)
            except websockets.exceptions.ConnectionClosed:
                return
            raise nt.Check("the socket stayed open after sandbox_stop")
    nt.run("sandbox_stop_closes", lambda: asyncio.run(stop_closes()))
    st = asyncio.run(refused_status(t3["url"]))
    nt.result("unused_url_dies_with_sandbox", st == 404, f"status {st} (expected 404)")

    # sh where there is no bash; command given; the exit of the command
    # closes the socket with 1000.
    bb = srv.create(sid, BB_IMAGE)

    async def sh_only():
        async with websockets.connect(srv.terminal(sid, bb)["url"], open_timeout=10) as ws:
            await ws.send("echo sh-$((2*21)); readlink /proc/$$/exe\r")
            out = await read_until(ws, r"sh-42[\s\S]*busybox")
            nt.ok("bash" not in out.split("sh-42")[-1], out)
    nt.run("sh_without_bash", lambda: asyncio.run(sh_only()))

    async def command_exit():
        async with websockets.connect(srv.terminal(sid, bb, command="echo cmd-$((3*3)); exit 3")["url"],
                                      open_timeout=10) as ws:
            await read_until(ws, r"cmd-9")
            try:
                await asyncio.wait_for(ws.recv(), 10)
                await asyncio.wait_for(ws.recv(), 10)
            except websockets.exceptions.ConnectionClosed as e:
                nt.ok(e.rcvd is not None and e.rcvd.code == 1000, f"closed with {e.rcvd}")
                return
            raise nt.Check("still open after the command exited")
    nt.run("command_exit_closes", lambda: asyncio.run(command_exit()))

    # Frames a client must not send.
    def unmasked():
        s = raw_ws(srv.port, "/t/" + srv.terminal(sid, bb)["url"].rsplit("/", 1)[1])
        s.sendall(bytes([0x82, 3]) + b"abc")  # binary, not masked
        code = close_code(s)
        nt.ok(code == 1002, f"close code {code} (expected 1002)")
    nt.run("unmasked_frame_1002", unmasked)

    def too_big():
        s = raw_ws(srv.port, "/t/" + srv.terminal(sid, bb)["url"].rsplit("/", 1)[1])
        s.sendall(bytes([0x82, 0xFF]) + (2 << 20).to_bytes(8, "big") + b"\0\0\0\0")
        code = close_code(s)
        nt.ok(code == 1009, f"close code {code} (expected 1009)")
    nt.run("oversized_frame_1009", too_big)

    def slow_reader():
        """A client that never reads, a command that writes without end:
        the server's memory stays flat (the pty is not read while the
        socket is backed up), and the command ends with the socket."""
        def rss():
            with open(f"/proc/{srv.p.pid}/status") as f:
                return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) * 1024
        s = raw_ws(srv.port, "/t/" + srv.terminal(sid, bb, command="yes terminal-flood")["url"].rsplit("/", 1)[1])
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        time.sleep(1)
        before = rss()
        time.sleep(4)
        grown = rss() - before
        s.close()
        nt.ok(grown < 16 << 20, f"the server grew by {grown >> 20} MiB while the client did not read")
        end = time.time() + 10
        while "yes terminal-flood" in procs(srv, sid, bb):
            nt.ok(time.time() < end, "yes still runs after the socket closed")
            time.sleep(0.5)
    nt.run("slow_reader_bounded", slow_reader)

    def not_websocket():
        tok = srv.terminal(sid, bb)["url"].rsplit("/", 1)[1]
        r = mcphttp.request(srv.port, "GET", path="/t/" + tok)
        nt.ok(r.status == 426, f"a plain GET: {r}")
        # the token was not used up by it
        st = asyncio.run(refused_status(f"ws://127.0.0.1:{srv.port}/t/{tok}"))
        nt.ok(st is None, f"then refused with {st}")
    nt.run("plain_get_426_keeps_token", not_websocket)

    def cross_origin():
        url4 = srv.terminal(sid, bb)["url"]

        async def go():
            async with websockets.connect(url4, open_timeout=10, origin="https://app.example") as ws:
                await ws.send("echo origin-$((5+5))\r")
                await read_until(ws, r"origin-10")
        asyncio.run(go())
    nt.run("any_origin_with_the_url", cross_origin)
    os.unlink(marker)


async def guard(name, coro):
    try:
        await coro
    except nt.Check as e:
        nt.fail(name, str(e))
        return False
    except Exception as e:  # noqa: BLE001
        nt.fail(name, f"{type(e).__name__}: {e}")
        return False
    nt.pass_(name)
    return False


if __name__ == "__main__":
    try:
        main()
    finally:
        nt.finish()
