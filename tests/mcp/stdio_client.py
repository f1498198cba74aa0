"""The small stdio MCP client that the Python suites of
tests/integration/mcp_stdio.sh share (raw_protocol.py and file_tools.py
keep their own: they send malformed bytes and time out reads); they
report through tests/lib/nsbox_test.py.  Environment: NSBOX (default
build/nsbox).

The server's stderr goes to a temporary file, so a server that dies or
hangs is reported with what it said last (an ASan report, a fatal
error), never as a bare EOF or timeout.  close() never hides the error
that brought a `finally` there: a server that does not exit is killed,
and the error in flight goes on (noted); without one, close() raises
ServerError."""
import json, os, subprocess, sys, tempfile

NSBOX = os.environ.get("NSBOX") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox")


class ServerError(Exception):
    """The server stopped answering: it closed its output, or did not exit
    when its input closed.  The message ends with its stderr's tail."""


class Server:
    """`[ARGV_PREFIX...] nsbox [--store STORE] serve EXTRA...`, initialized.
    argv_prefix runs it as another user (runuser ...) or with more
    environment (env K=V ...); pass_fds are inherited by it."""

    def __init__(self, extra=(), store="", argv_prefix=(), nsbox=None, pass_fds=()):
        args = list(argv_prefix) + [nsbox or NSBOX] + (["--store", store] if store else []) + ["serve", *extra]
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, pass_fds=pass_fds)
        self.n = 0
        self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "1"}})

    def stderr_tail(self, n=1500):
        """The last n characters the server wrote to stderr, on one line."""
        self.err.seek(0, os.SEEK_END)
        size = self.err.tell()
        self.err.seek(max(0, size - n))
        return " ".join(self.err.read().decode(errors="replace").split())

    def _gone(self, what):
        try:
            status = self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = "still running"
        return ServerError(f"{what} (server exit status {status}); its stderr ends: "
                           f"{self.stderr_tail() or '(nothing)'}")

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
            line = self.p.stdout.readline()
            if not line:
                raise self._gone(f"the server closed its output during {method} "
                                 f"{json.dumps(params)[:200]}")
            msg = json.loads(line)
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

    def close(self, timeout=30):
        """Closes the server's input and waits for it to exit."""
        in_flight = sys.exc_info()[1]
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            # SIGTERM first: runuser passes it on to the server (a SIGKILL
            # would leave the server behind as an orphan).
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        err = ServerError(f"the server did not exit within {timeout} s of its input closing (stopped); "
                          f"its stderr ends: {self.stderr_tail() or '(nothing)'}")
        if in_flight is None:
            raise err
        print(f"# {' '.join(str(err).split())[:900]}", flush=True)
