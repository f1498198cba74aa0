"""What the service tests share (preview.py, tests/hostile/services_cases.py):
an `nsbox serve --http` (with its preview proxy) or `nsbox serve` over
stdio started by the test, tool calls on it, the test app (app.py) started
in a sandbox, raw HTTP/1.1 and a small RFC 6455 WebSocket client."""
import base64
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402

NSBOX = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "services-test", "version": "1"}}
APP = open(os.path.join(HERE, "app.py")).read()
APP_PORT = 8000


class ToolError(Exception):
    pass


class Http:
    """nsbox serve --http 127.0.0.1:0 with its preview proxy."""

    def __init__(self, store, *args, token=None, env_extra=None, prefix=(), nsbox=None):
        env = dict(os.environ)
        env.pop("NSBOX_TOKEN", None)
        if token:
            env["NSBOX_TOKEN"] = token
        env.update(env_extra or {})
        self.token = token
        self.p = subprocess.Popen([*prefix, nsbox or NSBOX, "--store", store, "serve", "--http", "127.0.0.1:0",
                                   *args],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=env)
        self.port = self.preview_port = None
        self.log = []
        end = time.time() + 30
        while (self.port is None or self.preview_port is None) and time.time() < end:
            line = self.p.stderr.readline().decode()
            self.log.append(line)
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
            m = re.search(r"preview proxy .*port (\d+)", line)
            if m:
                self.preview_port = int(m.group(1))
            if not line and self.p.poll() is not None:
                break
        if self.port is None or self.preview_port is None:
            raise RuntimeError("the HTTP server did not start: " + "".join(self.log)[-500:])
        threading.Thread(target=self._drain, daemon=True).start()
        self.n = 0
        self.lock = threading.Lock()

    def _drain(self):
        for line in self.p.stderr:
            self.log.append(line.decode(errors="replace"))

    def auth(self):
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def rpc(self, sid, method, params, timeout=300):
        with self.lock:
            self.n += 1
            n = self.n
        r = mcphttp.post(self.port, {"jsonrpc": "2.0", "id": n, "method": method, "params": params},
                         sid, headers=self.auth(), timeout=timeout)
        return r.response(n), r.headers.get("mcp-session-id")

    def session(self):
        r, sid = self.rpc(None, "initialize", INIT)
        if not sid:
            raise RuntimeError(f"initialize: {r}")
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid,
                     headers=self.auth())
        return sid

    def tool(self, sid, name, args, ok=True, timeout=300):
        r, _ = self.rpc(sid, "tools/call", {"name": name, "arguments": args}, timeout=timeout)
        if "result" not in r:
            raise ToolError(f"{name}: {r}")
        res = r["result"]
        if ok and res.get("isError"):
            raise ToolError(f"{name}: {res['content'][0]['text']}")
        return res

    def ping(self, sid, timeout=10):
        r, _ = self.rpc(sid, "ping", {}, timeout=timeout)
        return "result" in r

    def delete(self, sid):
        mcphttp.request(self.port, "DELETE", headers={**self.auth(), "Mcp-Session-Id": sid})

    def alive(self):
        return self.p.poll() is None

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Stdio:
    """nsbox serve over stdio, one session."""

    def __init__(self, store, *args, prefix=(), nsbox=None):
        self.p = subprocess.Popen([*prefix, nsbox or NSBOX, "--store", store, "serve", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.n = 0
        self.rpc("initialize", INIT)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def rpc(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the stdio server closed")
            m = json.loads(line)
            if m.get("id") == self.n:
                return m

    def tool(self, sid, name, args, ok=True, timeout=None):
        res = self.rpc("tools/call", {"name": name, "arguments": args})["result"]
        if ok and res.get("isError"):
            raise ToolError(f"{name}: {res['content'][0]['text']}")
        return res

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def create(srv, sid):
    return srv.tool(sid, "sandbox_create", {})["structuredContent"]["sandbox_id"]


def run(srv, sid, box, command):
    return srv.tool(sid, "run_command", {"sandbox_id": box, "command": command,
                                         "timeout_s": 60})["structuredContent"]


def start_app(srv, sid, box, port=APP_PORT, host="0.0.0.0"):
    """app.py listening on port in box, running after the call."""
    srv.tool(sid, "write_file", {"sandbox_id": box, "path": "/tmp/app.py", "content": APP})
    run(srv, sid, box, f"setsid nohup python3 /tmp/app.py {port} {host} >/tmp/app-{port}.log 2>&1 </dev/null &")


def expose(srv, sid, box, port=APP_PORT, wait_s=20, ok=True):
    res = srv.tool(sid, "port_expose", {"sandbox_id": box, "port": port, "wait_s": wait_s}, ok=ok)
    return res if not ok else res["structuredContent"]


def split(url):
    """(host, port, path) of an http:// URL."""
    m = re.match(r"http://([^/:]+|\[[^\]]+\]):(\d+)(/.*)?$", url)
    return m.group(1), int(m.group(2)), m.group(3) or "/"


def connect(port, host="127.0.0.1", timeout=15):
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """HTTP/1.1 responses off one socket (Content-Length, chunked or to EOF)."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def fill(self):
        b = self.s.recv(65536)
        if not b:
            raise EOFError("closed")
        self.buf += b

    def until(self, sep):
        while sep not in self.buf:
            self.fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self):
        head = self.until(b"\r\n\r\n").decode(errors="replace")
        lines = head.split("\r\n")
        status = int(lines[0].split()[1])
        hd = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                hd[k.strip().lower()] = v.strip()
        if status == 101:
            return status, hd, b""
        if "content-length" in hd:
            body = self.take(int(hd["content-length"]))
        elif hd.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                n = int(self.until(b"\r\n").split(b";")[0], 16)
                if n == 0:
                    self.until(b"\r\n")
                    break
                body += self.take(n)
                self.take(2)
        else:
            try:
                while True:
                    self.fill()
            except (EOFError, OSError):
                pass
            body, self.buf = self.buf, b""
        return status, hd, body


def request(port, path, method="GET", host=None, headers=None, body=None, timeout=15):
    """One request on a new connection: (status, headers, body)."""
    s = connect(port, timeout=timeout)
    try:
        h = {"Host": host or f"127.0.0.1:{port}", "Connection": "close", **(headers or {})}
        if body is not None:
            h["Content-Length"] = str(len(body))
        s.sendall((f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) +
                   "\r\n").encode() + (body or b""))
        return Reader(s).response()
    finally:
        s.close()


def ws_open(port, path, host=None, timeout=15):
    """A WebSocket (socket, Reader) after a 101, else raises."""
    s = connect(port, timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    r = Reader(s)
    status, hd, _ = r.response()
    if status != 101:
        raise RuntimeError(f"no upgrade: {status}")
    import hashlib
    want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    if hd.get("sec-websocket-accept") != want:
        raise RuntimeError(f"bad Sec-WebSocket-Accept: {hd}")
    return s, r


def ws_send(s, data, op=1):
    mask = os.urandom(4)
    n = len(data)
    hdr = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
    s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def ws_recv(r):
    h = r.take(2)
    n = h[1] & 0x7F
    if n == 126:
        n = int.from_bytes(r.take(2), "big")
    elif n == 127:
        n = int.from_bytes(r.take(8), "big")
    return h[0] & 0x0F, r.take(n)
