"""The small stdio MCP client that the Python suites of
tests/integration/mcp_stdio.sh share (raw_protocol.py and file_tools.py
keep their own: they send malformed bytes and time out reads); they
report through tests/lib/nsbox_test.py.  Environment: NSBOX (default
build/nsbox)."""
import json, os, subprocess

NSBOX = os.environ.get("NSBOX") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox")


class Server:
    """`[ARGV_PREFIX...] nsbox [--store STORE] serve EXTRA...`, initialized.
    argv_prefix runs it as another user (runuser ...) or with more
    environment (env K=V ...); pass_fds are inherited by it."""

    def __init__(self, extra=(), store="", argv_prefix=(), nsbox=None, pass_fds=()):
        args = list(argv_prefix) + [nsbox or NSBOX] + (["--store", store] if store else []) + ["serve", *extra]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, pass_fds=pass_fds)
        self.n = 0
        self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "1"}})

    def req(self, method, params, notify=False):
        """The whole response to one request (None for a notification)."""
        if notify:
            msg = {"jsonrpc": "2.0", "method": method} | ({"params": params} if params else {})
            self.p.stdin.write(json.dumps(msg) + "\n")
            self.p.stdin.flush()
            return None
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            msg = json.loads(self.p.stdout.readline())
            # Skip notifications (log messages); an error without an id
            # (the request could not be parsed) answers this request too.
            if msg.get("id") == self.n or ("id" in msg and msg["id"] is None):
                return msg

    def call(self, name, **args):
        """The whole response to a tools/call."""
        return self.req("tools/call", {"name": name, "arguments": args})

    def tool(self, name, **args):
        """The CallToolResult of a tools/call."""
        return self.call(name, **args)["result"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)
