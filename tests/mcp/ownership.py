#!/usr/bin/env python3
"""Who owns a sandbox while calls use it (issue #10): every tool that takes
a sandbox_id, sent at the same moment as sandbox_stop (and a second stop)
on the same id, round after round, over stdio and over HTTP; a session that
ends (stdio EOF, HTTP DELETE) while calls run; notifications/cancelled
stopping a long copy_in.

Every call must be answered (a result, or an isError with a clear
message), the server must stay up, exactly one of two stops succeeds, and
no sandbox may be left: no state directory in the store, no process of a
sandbox.  Before the fix the server died of SIGSEGV in the first rounds
(a use-after-free of the sandbox record).

usage: ownership.py STORE HOSTDIR      (NSBOX: the binary; SUITE: the prefix)
Prints PASS/FAIL lines; exits 1 when a test failed."""
import json
import os
import re
import select
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="mcp_ownership")

NSBOX = os.environ.get("NSBOX") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox")
ROUNDS = int(os.environ.get("OWNERSHIP_ROUNDS", "12"))
STORE, HOSTDIR = sys.argv[1], sys.argv[2]

INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "ownership.py", "version": "1"}}
# An error answer must say what happened: "no sandbox ..." once a stop has
# it, "was stopped while this ran", "cancelled", or the operation's own
# outcome (a delete that ran before the write it raced: no such file).
# What a record freed or a socket closed under a call looks like is not
# an answer: the server said those before it owned its sandboxes.
UNCLEAR = re.compile(r"^\s*$|broken pipe|bad file descriptor|not connected|sandbox died|"
                     r"cannot send|out of memory|internal", re.I)


def calls_on(sid):
    """One call of every tool that takes a sandbox_id, plus two stops."""
    return [
        ("execute_code", {"sandbox_id": sid, "code": "import time; time.sleep(0.2); print(7)"}),
        ("sandbox_stop", {"sandbox_id": sid}),
        ("read_file", {"sandbox_id": sid, "path": "/etc/hostname"}),
        ("run_command", {"sandbox_id": sid, "command": "echo hi > /workspace/x; sleep 0.1"}),
        ("write_file", {"sandbox_id": sid, "path": "/workspace/a.txt", "content": "a"}),
        ("sandbox_stop", {"sandbox_id": sid}),
        ("list_directory", {"sandbox_id": sid, "path": "/workspace"}),
        ("create_directory", {"sandbox_id": sid, "path": "/workspace/d"}),
        ("delete_path", {"sandbox_id": sid, "path": "/workspace/a.txt"}),
        ("project_structure", {"sandbox_id": sid, "path": "/workspace"}),
        ("copy_in", {"sandbox_id": sid, "host_path": os.path.join(HOSTDIR, "in.txt"),
                     "path": "/workspace/in.txt"}),
        ("copy_out", {"sandbox_id": sid, "path": "/etc/hostname",
                      "host_path": os.path.join(HOSTDIR, f"out-{sid}"), "overwrite": True}),
    ]


def judge(answers, expect):
    """None when every call got an answer, a clear one when it failed, and
    exactly one stop stopped the sandbox; else the reason."""
    stops = 0
    for (name, _), msg in zip(expect, answers):
        if msg is None:
            return f"{name} got no answer"
        if "error" in msg:
            return f"{name}: JSON-RPC error {msg['error']}"
        res = msg["result"]
        if res.get("isError"):
            text = res["content"][0]["text"]
            if UNCLEAR.search(text):
                return f"{name}: unclear error {text!r}"
        elif name == "sandbox_stop":
            stops += 1
    return None if stops == 1 else f"{stops} stops succeeded, not 1"


def sandbox_dirs():
    d = os.path.join(STORE, "sandboxes")
    return [n for n in os.listdir(d) if not n.startswith(".")] if os.path.isdir(d) else []


def wait_until(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


# ---- stdio: requests written at once, answers read in any order

class Stdio:
    def __init__(self):
        self.p = subprocess.Popen([NSBOX, "--store", STORE, "serve", "--max-sandboxes", "64",
                                   "--allow-host-dir", HOSTDIR],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.n = 0
        self.buf = b""
        r = self.request("initialize", INIT)
        if "result" not in r:
            raise RuntimeError(f"initialize: {r}")
        self.notify("notifications/initialized", {})

    def write(self, msgs):
        self.p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
        self.p.stdin.flush()

    def notify(self, method, params):
        self.write([{"jsonrpc": "2.0", "method": method, "params": params}])

    def send_many(self, reqs):
        ids = []
        msgs = []
        for method, params in reqs:
            self.n += 1
            ids.append(self.n)
            msgs.append({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        self.write(msgs)
        return ids

    def collect(self, ids, seconds=60):
        want = set(ids)
        got = {}
        end = time.time() + seconds
        while want - got.keys() and time.time() < end:
            line = self.readline(end - time.time())
            if line is None:
                break
            msg = json.loads(line)
            if msg.get("id") in want:
                got[msg["id"]] = msg
        return [got.get(i) for i in ids]

    def readline(self, timeout):
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            r, _, _ = select.select([fd], [], [], max(timeout, 0))
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def request(self, method, params, seconds=60):
        return self.collect(self.send_many([(method, params)]), seconds)[0]

    def tool(self, name, args):
        r = self.request("tools/call", {"name": name, "arguments": args})
        if r is None or "result" not in r:
            raise RuntimeError(f"{name}: {r}")
        return r["result"]

    def alive(self):
        return self.p.poll() is None and self.request("ping", {}, 10) is not None

    def close(self, seconds=30):
        self.p.stdin.close()
        try:
            return self.p.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None


def create(client):
    res = client.tool("sandbox_create", {})
    if res.get("isError"):
        raise RuntimeError(f"sandbox_create: {res['content'][0]['text']}")
    return res["structuredContent"]["sandbox_id"]


def stdio_rounds():
    srv = Stdio()
    try:
        for r in range(ROUNDS):
            sid = create(srv)
            expect = calls_on(sid)
            ids = srv.send_many([("tools/call", {"name": n, "arguments": a}) for n, a in expect])
            why = judge(srv.collect(ids), expect)
            if why:
                return f"round {r}: {why} (server {'up' if srv.p.poll() is None else 'died: %s' % srv.p.returncode})"
            if not srv.alive():
                return f"round {r}: the server died ({srv.p.returncode})"
        left = srv.tool("sandbox_list", {})["structuredContent"]["sandboxes"]
        if left:
            return f"sandboxes left in the session: {left}"
    finally:
        rc = srv.close()
    if rc != 0:
        return f"the server exited {rc}"
    if sandbox_dirs():
        return f"state left in the store: {sandbox_dirs()}"
    return None


def stdio_eof():
    """stdin closes while calls run: the server cancels them, stops every
    sandbox and exits 0 promptly."""
    srv = Stdio()
    sid = create(srv)
    srv.send_many([("tools/call", {"name": "run_command", "arguments": {"sandbox_id": sid, "command": "sleep 60"}}),
                   ("tools/call", {"name": "read_file", "arguments": {"sandbox_id": sid, "path": "/etc/hostname"}}),
                   ("tools/call", {"name": "execute_code", "arguments": {"code": "import time; time.sleep(60)"}}),
                   ("tools/call", {"name": "sandbox_stop", "arguments": {"sandbox_id": sid}})])
    time.sleep(0.5)
    t0 = time.time()
    rc = srv.close(seconds=30)
    if rc != 0:
        return f"the server exited {rc} (None: still running after 30 s)"
    if time.time() - t0 > 15:
        return f"exit took {time.time() - t0:.1f} s"
    if not wait_until(lambda: not sandbox_dirs(), 10):
        return f"state left in the store: {sandbox_dirs()}"
    return None


def cancel_copy_in():
    """A copy_in into a sandbox held at 1% of a CPU, beside a spinning
    process, takes long: notifications/cancelled must end it now."""
    srv = Stdio()
    try:
        res = srv.tool("sandbox_create", {"cpus": 0.01})
        if res.get("isError"):
            return f"sandbox_create: {res['content'][0]['text']}"
        sid = res["structuredContent"]["sandbox_id"]
        spin = srv.tool("run_command", {"sandbox_id": sid, "timeout_s": 5,
                                        "command": "nohup sh -c 'while :; do :; done' >/dev/null 2>&1 & echo started"})
        if spin.get("isError"):
            return f"spinner: {spin['content'][0]['text']}"
        [cid] = srv.send_many([("tools/call", {"name": "copy_in", "arguments": {
            "sandbox_id": sid, "host_path": os.path.join(HOSTDIR, "big.bin"), "path": "/workspace/big.bin"}})])
        early = srv.collect([cid], 1.0)[0]
        if early is not None:
            return f"copy_in finished within 1 s, nothing to cancel: {early}"
        srv.notify("notifications/cancelled", {"requestId": cid, "reason": "test"})
        t0 = time.time()
        # The next call on the sandbox waits for the copy: it must come soon.
        after = srv.request("tools/call", {"name": "run_command", "arguments": {
            "sandbox_id": sid, "command": "stat -c %s /workspace/big.bin 2>/dev/null || echo none"}}, 60)
        waited = time.time() - t0
        late = srv.collect([cid], 0.5)[0]
        if after is None or "result" not in after:
            return f"no answer after the cancel: {after}"
        if waited > 10:
            return f"the cancelled copy_in still held the sandbox for {waited:.1f} s"
        if late is not None:
            return f"a cancelled request was answered: {late}"
        out = after["result"]["structuredContent"]["stdout"].strip()
        if out == str(os.path.getsize(os.path.join(HOSTDIR, "big.bin"))):
            return "the file was copied completely despite the cancel"
        print(f"# copy_in cancelled; the next call ran {waited:.2f} s later; file: {out}", flush=True)
    finally:
        srv.close()
    return None


# ---- HTTP: one thread per request, all released together

class Http:
    def __init__(self):
        self.p = subprocess.Popen([NSBOX, "--store", STORE, "serve", "--http", "127.0.0.1:0",
                                   "--max-sandboxes", "64", "--allow-host-dir", HOSTDIR],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
        threading.Thread(target=self.p.stderr.read, daemon=True).start()
        self.n = 0
        self.lock = threading.Lock()

    def rpc(self, sid, method, params, timeout=90):
        with self.lock:
            self.n += 1
            rid = self.n
        r = mcphttp.post(self.port, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                         sid, timeout=timeout)
        return r.response(rid), r.headers.get("mcp-session-id")

    def session(self):
        r, sid = self.rpc(None, "initialize", INIT)
        if r is None or "result" not in r or not sid:
            raise RuntimeError(f"initialize: {r}")
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        return sid

    def tool(self, sid, name, args):
        r, _ = self.rpc(sid, "tools/call", {"name": name, "arguments": args})
        if r is None or "result" not in r:
            raise RuntimeError(f"{name}: {r}")
        return r["result"]

    def at_once(self, sid, reqs, timeout=90):
        answers = [None] * len(reqs)
        go = threading.Barrier(len(reqs))

        def one(i, method, params):
            go.wait()
            try:
                answers[i] = self.rpc(sid, method, params, timeout)[0]
            except Exception as e:  # noqa: BLE001 -- a dropped connection is no answer
                answers[i] = {"error": {"message": f"{type(e).__name__}: {e}"}}
        ts = [threading.Thread(target=one, args=(i, m, p)) for i, (m, p) in enumerate(reqs)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout + 5)
        return answers

    def delete(self, sid):
        return mcphttp.request(self.port, "DELETE", headers={"Mcp-Session-Id": sid}).status

    def close(self):
        self.p.terminate()
        try:
            return self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None


def http_rounds():
    srv = Http()
    try:
        sid_s = srv.session()
        for r in range(ROUNDS):
            sid = srv.tool(sid_s, "sandbox_create", {})["structuredContent"]["sandbox_id"]
            expect = calls_on(sid)
            answers = srv.at_once(sid_s, [("tools/call", {"name": n, "arguments": a}) for n, a in expect])
            why = judge(answers, expect)
            if why:
                return f"round {r}: {why} (server {'up' if srv.p.poll() is None else 'died: %s' % srv.p.returncode})"
        r, _ = srv.rpc(sid_s, "ping", {}, 10)
        if r is None or srv.p.poll() is not None:
            return "the server died"
        left = srv.tool(sid_s, "sandbox_list", {})["structuredContent"]["sandboxes"]
        if left:
            return f"sandboxes left: {left}"
        # A session deleted while its calls run: answered or cut, never a crash.
        sid2 = srv.session()
        box = srv.tool(sid2, "sandbox_create", {})["structuredContent"]["sandbox_id"]
        reqs = [("tools/call", {"name": n, "arguments": a}) for n, a in calls_on(box)[:5]]
        reqs.append(("tools/call", {"name": "run_command", "arguments": {"sandbox_id": box, "command": "sleep 60"}}))
        out = []
        t = threading.Thread(target=lambda: out.append(srv.at_once(sid2, reqs, 60)))
        t.start()
        time.sleep(0.3)
        t0 = time.time()
        status = srv.delete(sid2)
        t.join(70)
        if status != 200:
            return f"DELETE answered {status}"
        if time.time() - t0 > 20:
            return f"DELETE with running calls took {time.time() - t0:.1f} s"
        r, _ = srv.rpc(sid_s, "ping", {}, 10)
        if r is None or srv.p.poll() is not None:
            return "the server died after DELETE"
    finally:
        rc = srv.close()
    if rc != 0:
        return f"the server exited {rc}"
    if not wait_until(lambda: not sandbox_dirs(), 10):
        return f"state left in the store: {sandbox_dirs()}"
    return None


with open(os.path.join(HOSTDIR, "in.txt"), "w") as f:
    f.write("from the host\n")
with open(os.path.join(HOSTDIR, "big.bin"), "wb") as f:
    f.write(os.urandom(1 << 20) * 15)

nt.test("stdio/stop_races_every_tool")(stdio_rounds)
nt.test("stdio/eof_while_calls_run")(stdio_eof)
nt.test("stdio/cancel_stops_copy_in")(cancel_copy_in)
nt.test("http/stop_races_every_tool_and_delete")(http_rounds)
nt.finish()
