"""The MCP stdio client of issue #30's end-to-end tests (tests/secrets/e2e.py):
`nsbox serve` as the operator runs it, every line it writes kept (the
transcript: results, progress notifications, task answers) and its stderr
in a file, so that the test can look for a secret's value in everything
the model could ever be shown.  Requests may be sent and awaited apart
(a task, a call whose progress is watched).  Standard library only."""
import json
import subprocess
import threading
import time


class Mcp:
    def __init__(self, argv, stderr_path, timeout=120):
        self.stderr = open(stderr_path, "ab")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.timeout = timeout
        self.lines = []  # every line the server wrote, as text
        self.responses = {}
        self.notes = []
        self.n = 0
        self.cv = threading.Condition()
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()
        init = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "secrets-e2e", "version": "1"}})
        if "result" not in init:
            raise RuntimeError(f"initialize: {init}")
        self.notify("notifications/initialized")

    def _read(self):
        for raw in self.p.stdout:
            text = raw.decode("utf-8", "replace")
            with self.cv:
                self.lines.append(text)
                try:
                    m = json.loads(text)
                except ValueError:
                    m = {}
                if "id" in m and "method" not in m:
                    self.responses[m["id"]] = m
                else:
                    self.notes.append(m)
                self.cv.notify_all()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def _write(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def notify(self, method, params=None):
        self._write({"jsonrpc": "2.0", "method": method} | ({"params": params} if params else {}))

    def send(self, method, params):
        with self.cv:
            self.n += 1
            rid = self.n
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def wait(self, rid, timeout=None):
        end = time.monotonic() + (timeout or self.timeout)
        with self.cv:
            while rid not in self.responses:
                left = end - time.monotonic()
                if left <= 0 or self.closed:
                    raise RuntimeError(f"no answer to request {rid} ({'server gone' if self.closed else 'timeout'})")
                self.cv.wait(left)
            return self.responses[rid]

    def request(self, method, params, timeout=None):
        return self.wait(self.send(method, params), timeout)

    def tool(self, name, **args):
        """The CallToolResult (or {"isError": True, "error": ...} for a
        JSON-RPC error)."""
        m = self.request("tools/call", {"name": name, "arguments": args})
        return m.get("result") or {"isError": True, "error": m.get("error")}

    def transcript(self):
        with self.cv:
            return "".join(self.lines)

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.stderr.close()


def sc(r):
    return r.get("structuredContent") or {}


def text_of(r):
    return " ".join(c.get("text", "") for c in r.get("content", []) if isinstance(c, dict)) or json.dumps(r)
