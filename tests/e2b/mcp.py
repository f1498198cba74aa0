"""The MCP clients of the ported E2B suites (tests/e2b/e2b_port.py): a stdio
client that keeps several requests in flight and collects each one's
notifications/progress (what E2B's on_stdout/on_stderr callbacks see), and
a Streamable HTTP session for the reconnect cases.  Only the standard
library.  Environment: NSBOX (default build/nsbox), NSBOX_STORE (default
/var/lib/nsbox)."""
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402

NSBOX = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE") or "/var/lib/nsbox"
VERSION = "2025-11-25"


class McpError(Exception):
    """The server answered with a JSON-RPC error, or not at all in time."""


class Stdio:
    """`nsbox --store STORE serve`, initialized.  A reader thread files each
    response under its id and each progress notification under its token,
    so that a request can be sent while another runs (sandbox_stop during a
    cell, notifications/cancelled)."""

    def __init__(self, extra=()):
        self.p = subprocess.Popen([NSBOX, "--store", STORE, "serve", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.n = 0
        self.lock = threading.Lock()
        self.answers = {}
        self.progress = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.sandboxes = []
        self.call_raw("initialize", {"protocolVersion": VERSION, "capabilities": {},
                                     "clientInfo": {"name": "e2b-port", "version": "1"}})
        self.notify("notifications/initialized")

    def _read(self):
        for line in self.p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("method") == "notifications/progress":
                params = msg.get("params") or {}
                with self.lock:
                    self.progress.setdefault(params.get("progressToken"), []).append(params)
            elif "id" in msg and ("result" in msg or "error" in msg):
                with self.lock:
                    q = self.answers.setdefault(msg["id"], queue.Queue())
                q.put(msg)

    def send(self, method, params, progress=False):
        """Sends a request; returns its id (also its progress token)."""
        with self.lock:
            self.n += 1
            rid = self.n
            self.answers.setdefault(rid, queue.Queue())
        if progress:
            params = dict(params, _meta={"progressToken": rid})
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def _write(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def notify(self, method, params=None):
        self._write({"jsonrpc": "2.0", "method": method} | ({"params": params} if params else {}))

    def wait(self, rid, timeout=60):
        """The response to request rid (McpError when none within timeout)."""
        try:
            return self.answers[rid].get(timeout=timeout)
        except queue.Empty:
            raise McpError(f"no answer to request {rid} within {timeout} s") from None

    def progress_of(self, rid):
        with self.lock:
            return list(self.progress.get(rid, []))

    def call_raw(self, method, params, timeout=60):
        return self.wait(self.send(method, params), timeout)

    def tools(self):
        """The names of tools/list."""
        msg = self.call_raw("tools/list", {})
        return {t["name"] for t in msg.get("result", {}).get("tools", [])}

    def close(self):
        for sid in self.sandboxes:
            try:
                self.wait(self.send("tools/call", {"name": "sandbox_stop",
                                                   "arguments": {"sandbox_id": sid}}), 30)
            except Exception:  # noqa: BLE001 -- already stopped, or the server is gone
                pass
        try:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except Exception:  # noqa: BLE001 -- a hung server: end it
            self.p.kill()
            self.p.wait()


class Http:
    """`nsbox --store STORE serve --http 127.0.0.1:0` with one tenant's
    token; session() opens a 2025-11-25 session of that tenant."""

    def __init__(self, tmpdir):
        self.token = "e2b-port-" + os.urandom(8).hex()
        self.log = os.path.join(tmpdir, "http.log")
        env = dict(os.environ, NSBOX_TOKEN=self.token)
        with open(self.log, "w") as err:
            self.p = subprocess.Popen([NSBOX, "--store", STORE, "serve", "--http", "127.0.0.1:0",
                                       "--reconnect-idle", "300"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=err, env=env)
        self.port = None
        for _ in range(100):
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", open(self.log).read())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        if not self.port:
            self.close()
            raise McpError("the HTTP server did not start: " + open(self.log).read()[-300:])

    def session(self):
        return HttpSession(self)

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class HttpSession:
    def __init__(self, server):
        self.port, self.auth = server.port, {"Authorization": "Bearer " + server.token}
        self.n = 0
        r = mcphttp.post(self.port, self._msg("initialize", {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "e2b-port", "version": "1"}}), headers=self.auth)
        self.sid = r.headers.get("mcp-session-id")
        if r.status != 200 or not self.sid:
            raise McpError(f"initialize over HTTP: {r!r}")
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     sid=self.sid, version=VERSION, headers=self.auth)

    def _msg(self, method, params):
        self.n += 1
        return {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}

    def call(self, name, **args):
        """The whole response to a tools/call."""
        r = mcphttp.post(self.port, self._msg("tools/call", {"name": name, "arguments": args}),
                         sid=self.sid, version=VERSION, headers=self.auth)
        msg = r.response(self.n)
        if msg is None:
            raise McpError(f"tools/call {name} over HTTP: {r!r}")
        return msg
