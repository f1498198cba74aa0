"""The user-level proof's client (issue #28; tests/services/svc.py is the
preview and hostile tests' own): an MCP client over HTTP (a running `nsbox
serve --http`) or over stdio (an `nsbox serve` it starts), and the calls of
the long-lived-work tools as a user makes them: start a process in the
background, expose a port, read a process's logs with the cursor.

Used by tests/services/browser.py and tests/bench/services_bench.py (as uf).
Only the standard library (and tests/lib/mcphttp.py).

Rules: every tool error raises ToolError with the tool's own text; no call
waits without a deadline."""
import json
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402

VERSION = "2025-11-25"
APPS = os.path.join(HERE, "apps")


class ToolError(Exception):
    pass


def _init(name):
    return {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}


class Http:
    """One MCP session on `nsbox serve --http` at 127.0.0.1:port."""

    def __init__(self, port, name="services", token=None):
        self.port, self.n = port, 0
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.sid = None
        r = self._post({"jsonrpc": "2.0", "id": self._id(), "method": "initialize", "params": _init(name)})
        self.sid = r.headers.get("mcp-session-id")
        if not self.sid:
            raise RuntimeError(f"initialize: {r!r}")
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _id(self):
        self.n += 1
        return self.n

    def _post(self, msg, timeout=300):
        return mcphttp.post(self.port, msg, sid=self.sid, version=VERSION, headers=self.headers,
                            timeout=timeout)

    def request(self, method, params, timeout=300):
        rid = self._id()
        r = self._post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, timeout)
        m = r.response(rid)
        if m is None:
            raise RuntimeError(f"{method}: no response: {r!r}")
        return m

    def close(self):
        if self.sid:
            mcphttp.request(self.port, "DELETE", headers={**self.headers, "Mcp-Session-Id": self.sid})
            self.sid = None


class Stdio:
    """`nsbox serve` over stdio, started here: cmd is its argv."""

    def __init__(self, cmd, name="services", env=None):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.q = queue.Queue()
        self.n = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", _init(name))
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            try:
                self.q.put(json.loads(line))
            except ValueError:
                pass
        self.q.put(None)

    def _send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method, params, timeout=300):
        self.n += 1
        rid = self.n
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        end = time.monotonic() + timeout
        while True:
            try:
                m = self.q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"{method}: no answer in {timeout} s") from None
            if m is None:
                raise RuntimeError(f"{method}: the server closed stdout")
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def call(c, name, args, timeout=300):
    """structuredContent of a tool call (the text parsed as JSON when there
    is none); ToolError when the tool says isError or the call fails."""
    m = c.request("tools/call", {"name": name, "arguments": args}, timeout)
    if "error" in m:
        raise ToolError(f"{name}: {m['error']}")
    res = m["result"]
    if res.get("isError"):
        raise ToolError(f"{name}: {' '.join(x.get('text', '') for x in res.get('content', []))}")
    if "structuredContent" in res:
        return res["structuredContent"]
    return json.loads(res["content"][0]["text"])


def app(name):
    with open(os.path.join(APPS, name)) as f:
        return f.read()


# -- the issue #28 tools, as a user calls them ----------------------------------

def start(c, box, command, name=None, workdir=None):
    """process_start: the process's handle."""
    args = {"sandbox_id": box, "command": command}
    if name:
        args["name"] = name
    if workdir:
        args["workdir"] = workdir
    r = call(c, "process_start", args)
    return r["handle"]


def expose(c, box, port, wait_s=60):
    """port_expose: the URL (ending in /) once something listens."""
    r = call(c, "port_expose", {"sandbox_id": box, "port": port, "wait_s": wait_s}, timeout=wait_s + 60)
    return r["url"]


def logs(c, handle, stream="stdout", cursor=None, max_bytes=None):
    """process_logs: the whole result (text, cursor for the next read,
    dropped bytes, whether the process still runs)."""
    args = {"handle": handle, "stream": stream}
    if cursor is not None:
        args["cursor"] = cursor
    if max_bytes is not None:
        args["max_bytes"] = max_bytes
    return call(c, "process_logs", args)


def log_text(r, stream="stdout"):
    """The bytes a process_logs result carries."""
    for k in ("data", "text", stream, "output"):
        if isinstance(r.get(k), str):
            return r[k]
    raise KeyError(f"no text in {json.dumps(r)[:300]}")


def log_cursor(r):
    for k in ("next_cursor", "cursor"):
        if k in r:
            return r[k]
    raise KeyError(f"no cursor in {json.dumps(r)[:300]}")


def log_running(r):
    """True while the process runs (None when the result does not say)."""
    if "running" in r:
        return bool(r["running"])
    if "state" in r:
        return r["state"] == "running"
    if "exited" in r:
        return not r["exited"]
    if "exit_code" in r:
        return r["exit_code"] is None
    return None


def log_dropped(r):
    return r.get("dropped", r.get("dropped_bytes", 0)) or 0


def wait(c, handle, timeout_s=60):
    return call(c, "process_wait", {"handle": handle, "timeout_s": timeout_s}, timeout=timeout_s + 60)
