#!/usr/bin/env python3
"""Tasks (docs/tools.md, "Tasks"): a long run the client polls, in raw JSON-RPC.

Three servers, run side by side so the suite takes about as long as its
longest run (70 s, past the 60 s at which client SDKs give up on a call):
  - A, stdio, 2025-11-25's experimental tasks: params.task on tools/call
    gets a CreateTaskResult at once; tasks/get shows the output tail,
    tasks/result blocks until the end and returns the call's result,
    tasks/list, tasks/cancel kills the task's processes, a TTL past which
    the task is gone, unknown ids refused, progress and status
    notifications;
  - B, stdio, 2026-07-28's io.modelcontextprotocol/tasks: no initialize;
    a run from a request that declares the extension becomes a task past
    --task-after (2 s here), a short one answers as usual, tasks/get
    inlines the result, tasks/update and tasks/cancel are acks, requests
    without the extension get -32021, tasks/result and tasks/list do not
    exist;
  - C, HTTP, two 2025-11-25 sessions: one cannot see, poll or cancel the
    other's task.

Prints `PASS: SUITE/name` or `FAIL: SUITE/name: why` per test, like
tests/lib.sh; exits 1 when any failed.  Environment: NSBOX, NSBOX_STORE
(python and busybox tagged), SUITE (default mcp_stdio), MCP_LOG_DIR.
"""
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402
from nsbox_test import Check, ok  # noqa: E402

nt.configure(default_suite="mcp_stdio", prefix="tasks/")

HERE = os.path.dirname(os.path.abspath(__file__))
NSBOX = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE", "")
LOGDIR = os.environ.get("MCP_LOG_DIR") or tempfile.mkdtemp(prefix="nsbox-tasks.")
EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
# The long run outlasts the 60 s after which client SDKs give up on a call.
# Under ASan too: make test runs this suite once, under ASan, and the wait
# costs no CPU while other suites run beside it.
LONG_S = 70
# Process markers (tests/markers.md: mcp_stdio's are 3130-3139), matched
# as whole command lines.
MARK_CANCEL, MARK_MODERN = "sleep 3138", "sleep 3139"

def short(v, n=400):
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= n else s[:n] + "..."


def pgrep(cmdline):
    """Pids whose whole command line is cmdline."""
    out = subprocess.run(["pgrep", "-f", f"^{cmdline}$"], capture_output=True, text=True).stdout
    return [p for p in out.split() if p.strip() and int(p) != os.getpid()]


def wait_for(cond, seconds, step=0.2):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def poll_until(get, cond, seconds, step=0.3):
    """get() every step s until cond(value) holds or seconds pass; the last
    value either way."""
    end = time.monotonic() + seconds
    v = get()
    while not cond(v) and time.monotonic() < end:
        time.sleep(step)
        v = get()
    return v


class Stdio:
    """`nsbox serve ARGS` over stdio; a reader thread files every message:
    responses by id, notifications in a list (with their arrival time)."""

    def __init__(self, label, *args):
        self.errf = open(os.path.join(LOGDIR, f"tasks-{label}.log"), "wb")
        self.proc = subprocess.Popen([NSBOX, "--store", STORE, "serve", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errf)
        self.lock = threading.Condition()
        self.responses, self.notes, self.next_id, self.closed = {}, [], 0, False
        self.wlock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            m = json.loads(line)
            with self.lock:
                if "id" in m and "method" not in m:
                    self.responses[m["id"]] = (time.monotonic(), m)
                else:
                    self.notes.append((time.monotonic(), m))
                self.lock.notify_all()
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def send(self, method, params=None):
        with self.wlock:
            self.next_id += 1
            rid = self.next_id
            msg = {"jsonrpc": "2.0", "id": rid, "method": method}
            if params is not None:
                msg["params"] = params
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        return rid

    def wait(self, rid, timeout=30):
        end = time.monotonic() + timeout
        with self.lock:
            while rid not in self.responses:
                left = end - time.monotonic()
                ok(left > 0 and not self.closed, f"no answer to request {rid} within {timeout} s")
                self.lock.wait(left)
            return self.responses[rid][1]

    def answered(self, rid):
        with self.lock:
            return rid in self.responses

    def request(self, method, params=None, timeout=30):
        return self.wait(self.send(method, params), timeout)

    def result(self, method, params=None, timeout=30):
        m = self.request(method, params, timeout)
        ok("result" in m, lambda: f"{method} {short(params or {})} -> {short(m)}")
        return m["result"]

    def error(self, method, params, code):
        m = self.request(method, params)
        ok("error" in m and m["error"].get("code") == code,
           lambda: f"{method} {short(params)}: wanted error {code}, got {short(m)}")
        return m["error"]

    def notes_where(self, pred):
        with self.lock:
            return [(t, m) for t, m in self.notes if pred(m)]

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def legacy_get(a, tid):
    return a.result("tasks/get", {"taskId": tid})


def check_task_shape(t, era):
    ok(re.fullmatch(r"[0-9a-f]{32}", t.get("taskId", "")), lambda: f"taskId: {short(t)}")
    for k in ("createdAt", "lastUpdatedAt"):
        ok(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", t.get(k, "")), lambda: f"{k}: {short(t)}")
    ttl, poll = ("ttlMs", "pollIntervalMs") if era == "modern" else ("ttl", "pollInterval")
    other = ("ttl", "pollInterval") if era == "modern" else ("ttlMs", "pollIntervalMs")
    ok(isinstance(t.get(ttl), int) and t[ttl] > 0, lambda: f"{ttl}: {short(t)}")
    ok(isinstance(t.get(poll), int) and t[poll] > 0, lambda: f"{poll}: {short(t)}")
    ok(not any(k in t for k in other), lambda: f"the other era's field names: {short(t)}")


# ---- A: 2025-11-25 over stdio ----

LONG_CODE = ("import time\n"
             f"for i in range({LONG_S}):\n"
             "    print('tick', i, flush=True)\n"
             "    time.sleep(1)\n"
             "print('done')\n")


def legacy_start(a):
    init = a.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "tasks.py", "version": "1"}})
    caps = init["capabilities"].get("tasks", {})
    ok(caps.get("requests", {}).get("tools", {}).get("call") == {} and "list" in caps and
       "cancel" in caps, lambda: f"capabilities.tasks: {short(init['capabilities'])}")
    tools = {t["name"]: t for t in a.result("tools/list")["tools"]}
    for name in ("execute_code", "run_command", "install_packages"):
        if name in tools:
            ok(tools[name].get("execution") == {"taskSupport": "optional"},
               lambda: f"{name}.execution: {short(tools[name].get('execution'))}")
    ok("execution" not in tools["list_languages"], "list_languages declares task support")
    t0 = time.monotonic()
    r = a.result("tools/call", {"name": "execute_code",
                                "arguments": {"code": LONG_CODE, "timeout_s": LONG_S + 40},
                                "task": {"ttl": 600000}, "_meta": {"progressToken": "long"}})
    ok(time.monotonic() - t0 < 5, f"the CreateTaskResult took {time.monotonic() - t0:.1f} s")
    t = r.get("task", {})
    check_task_shape(t, "legacy")
    ok(t["status"] == "working" and t["ttl"] == 600000, lambda: short(r))
    return t["taskId"]


def legacy_working(a, tid):
    # The run prints a tick a second: wait (with deadlines) for the tail to
    # show one, then to move, then for three progress notifications.
    t = poll_until(lambda: legacy_get(a, tid), lambda t: "tick" in t.get("statusMessage", ""), 30)
    ok("tick" in t.get("statusMessage", ""), lambda: f"no output tail in statusMessage in 30 s: {short(t)}")
    ok(t["status"] == "working", lambda: short(t))
    first = t["statusMessage"]
    t = poll_until(lambda: legacy_get(a, tid), lambda t: t.get("statusMessage") != first, 20)
    ok(t.get("statusMessage") != first, lambda: f"the tail did not move in 20 s: {short(t)}")
    ok(t["status"] == "working", lambda: short(t))

    def progress():
        return a.notes_where(lambda m: m.get("method") == "notifications/progress" and
                             m["params"].get("progressToken") == "long")
    ok(wait_for(lambda: len(progress()) >= 3, 20), f"{len(progress())} progress notifications of a task with a progressToken")
    # The newest notification with output (a heartbeat between ticks has
    # none: docs/tools.md, "Progress").
    prog = [x for x in progress() if "io.nsbox/stream" in (x[1]["params"].get("_meta") or {})]
    ok(prog, lambda: f"no progress with output: {short(progress())}")
    p = prog[-1][1]["params"]
    ok("tick" in p.get("message", "") and p.get("_meta", {}).get(RELATED, {}).get("taskId") == tid,
       lambda: f"progress of a task: {short(p)}")


def legacy_cancel(a, long_tid):
    r = a.result("tools/call", {"name": "run_command", "arguments": {"command": MARK_CANCEL},
                                "task": {}})
    tid = r["task"]["taskId"]
    ok(wait_for(lambda: pgrep(MARK_CANCEL), 20), "the task's command never started")
    # notifications/cancelled is for requests, and this one was answered.
    a.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": a.next_id}}) + "\n").encode())
    a.proc.stdin.flush()
    # The server reads in order: once a ping after it is answered, the
    # notification was handled; a kill it sent would show within 3 s.
    a.result("ping")
    ok(not wait_for(lambda: not pgrep(MARK_CANCEL), 3),
       "notifications/cancelled with the task's request id killed it")
    c = a.result("tasks/cancel", {"taskId": tid})
    ok(c.get("status") == "cancelled" and c.get("taskId") == tid, lambda: short(c))
    ok(wait_for(lambda: not pgrep(MARK_CANCEL), 10), "the cancelled task's process is still there")
    time.sleep(1)
    t = legacy_get(a, tid)
    ok(t["status"] == "cancelled", lambda: f"after its run ended: {short(t)}")
    e = a.error("tasks/cancel", {"taskId": tid}, -32602)
    ok("terminal" in e.get("message", ""), lambda: short(e))
    ok(legacy_get(a, long_tid)["status"] == "working", "cancelling one task touched another")
    listed = {t["taskId"]: t["status"] for t in a.result("tasks/list")["tasks"]}
    ok(listed.get(tid) == "cancelled" and listed.get(long_tid) == "working",
       lambda: f"tasks/list: {short(listed)}")


def legacy_errors(a):
    for m in ("tasks/get", "tasks/result", "tasks/cancel"):
        a.error(m, {"taskId": "0" * 32}, -32602)
        a.error(m, {}, -32602)
    a.error("tasks/list", {"cursor": "x"}, -32602)
    e = a.error("tools/call", {"name": "list_languages", "arguments": {}, "task": {}}, -32601)
    # tasks/update is the extension's, not 2025-11-25's: an error either
    # way (which one is the era decision's, mcp/protocol/era.c)
    m = a.request("tasks/update", {"taskId": "0" * 32, "inputResponses": {}})
    ok("error" in m, lambda: f"a 2025-11-25 tasks/update: {short(m)}")
    # an ordinary call beside the tasks still answers as usual
    r = a.result("tools/call", {"name": "execute_code", "arguments": {"code": "print(6*7)"}})
    ok("task" not in r and r["structuredContent"]["stdout"] == "42\n", lambda: short(r))


def legacy_ttl(a):
    r = a.result("tools/call", {"name": "execute_code", "arguments": {"code": "print(1)"},
                                "task": {"ttl": 1500}})
    tid = r["task"]["taskId"]
    ok(r["task"]["ttl"] == 1500, lambda: short(r))
    ok(wait_for(lambda: legacy_get(a, tid)["status"] == "completed", 20), "never completed")
    time.sleep(2)
    e = a.error("tasks/get", {"taskId": tid}, -32602)
    a.error("tasks/result", {"taskId": tid}, -32602)
    ok(tid not in [t["taskId"] for t in a.result("tasks/list")["tasks"]], "expired, still listed")
    # a ttl past the operator's --max-task-ttl (900 s here) is cut to it
    r = a.result("tools/call", {"name": "execute_code", "arguments": {"code": "print(1)"},
                                "task": {"ttl": 10 ** 9}})
    ok(r["task"]["ttl"] == 900000, lambda: f"ttl not capped: {short(r)}")


def status_notes(a, tid):
    return [m["params"] for _, m in a.notes_where(
        lambda m: m.get("method") == "notifications/tasks/status" and
        m["params"].get("taskId") == tid)]


def legacy_failed(a):
    """A tool error is a failed task in 2025-11-25; tasks/result returns the
    call's own result (isError) with the related-task _meta."""
    r = a.result("tools/call", {"name": "execute_code",
                                "arguments": {"code": "1", "sandbox_id": "nope"}, "task": {}})
    tid = r["task"]["taskId"]
    ok(wait_for(lambda: legacy_get(a, tid)["status"] != "working", 10), "still working")
    ok(legacy_get(a, tid)["status"] == "failed", lambda: short(legacy_get(a, tid)))
    res = a.result("tasks/result", {"taskId": tid})
    ok(res.get("isError") is True and res["_meta"][RELATED]["taskId"] == tid, lambda: short(res))
    ok(wait_for(lambda: status_notes(a, tid), 5), "no notifications/tasks/status")
    st = status_notes(a, tid)
    ok(st[-1]["status"] == "failed", lambda: f"status notification: {st}")


def legacy_result(a, tid, waiting_rid, t_asked):
    """tasks/result sent early is answered only at the end, with the result."""
    m = a.wait(waiting_rid, LONG_S + 60)
    took = a.responses[waiting_rid][0] - t_asked
    ok("result" in m, lambda: short(m))
    res = m["result"]
    out = res["structuredContent"]["stdout"]
    ok(res["isError"] is False and f"tick {LONG_S - 1}\ndone\n" in out, lambda: short(res))
    ok(res["structuredContent"]["wall_ms"] > min(60000, (LONG_S - 2) * 1000),
       lambda: short(res["structuredContent"]))
    ok(took > LONG_S * 3 / 7, f"tasks/result answered after {took:.0f} s, before the run ended")
    ok(res.get("_meta", {}).get(RELATED, {}).get("taskId") == tid, lambda: short(res.get("_meta")))
    t = legacy_get(a, tid)
    ok(t["status"] == "completed", lambda: short(t))
    again = a.result("tasks/result", {"taskId": tid})
    ok(again["structuredContent"]["stdout"] == out, "a second tasks/result differs")
    st = status_notes(a, tid)  # sent before the result
    ok(st and st[-1]["status"] == "completed", lambda: f"status notification: {st}")
    a.error("tasks/cancel", {"taskId": tid}, -32602)


def legacy_cap(a):
    """At most 32 tasks in a session, ended ones counted until their TTL."""
    made = len(a.result("tasks/list")["tasks"])
    ok(0 < made < 32, f"{made} tasks before the cap test")
    while made < 32:
        r = a.result("tools/call", {"name": "run_command", "arguments": {"command": "true"},
                                    "task": {}})
        ok("task" in r, lambda: short(r))
        made += 1
    e = a.error("tools/call", {"name": "run_command", "arguments": {"command": "true"},
                               "task": {}}, -32600)
    ok("too many tasks" in e["message"], lambda: short(e))
    ok(len(a.result("tasks/list")["tasks"]) == 32, "tasks/list does not show the 32")
    r = a.result("tools/call", {"name": "run_command", "arguments": {"command": "echo still"}})
    ok(r["structuredContent"]["stdout"] == "still\n", lambda: f"an ordinary call: {short(r)}")


# ---- B: 2026-07-28 over stdio ----

def meta(ext=True, **kw):
    m = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
         "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}} if ext else {}}
    m.update(kw)
    return m


def modern(b, method, params=None, ext=True, **kw):
    p = dict(params or {})
    p["_meta"] = meta(ext, **kw)
    return b.request(method, p, timeout=60)


def modern_result(b, method, params=None, ext=True, **kw):
    m = modern(b, method, params, ext, **kw)
    ok("result" in m, lambda: f"{method} {short(params or {})} -> {short(m)}")
    return m["result"]


def modern_error(b, method, params, code, ext=True):
    m = modern(b, method, params, ext)
    ok("error" in m and m["error"]["code"] == code,
       lambda: f"{method} {short(params)}: wanted {code}, got {short(m)}")
    return m["error"]


def modern_flow(b):
    d = modern_result(b, "server/discover")
    ok(d["capabilities"].get("extensions", {}).get(EXT) == {} and "tasks" not in d["capabilities"],
       lambda: f"discover capabilities: {short(d['capabilities'])}")
    tools = modern_result(b, "tools/list")["tools"]
    ok(not any("execution" in t for t in tools), "2026-07-28 tools/list carries execution")
    quick = modern_result(b, "tools/call", {"name": "execute_code",
                                            "arguments": {"code": "print(5)"}})
    ok(quick.get("resultType") == "complete" and "taskId" not in quick and
       quick["structuredContent"]["stdout"] == "5\n", lambda: f"a quick run: {short(quick)}")
    code = "import time\nfor i in range(7):\n    print('step', i, flush=True)\n    time.sleep(1)\n"
    t0 = time.monotonic()
    c = modern_result(b, "tools/call", {"name": "execute_code", "arguments": {"code": code}},
                      progressToken="m1")
    took = time.monotonic() - t0
    ok(c.get("resultType") == "task" and "task" not in c and "result" not in c,
       lambda: f"not a flat CreateTaskResult: {short(c)}")
    check_task_shape(c, "modern")
    ok(c["status"] == "working" and c["ttlMs"] == 900000, lambda: short(c))
    ok(1.5 < took < 5, f"the task handle came after {took:.1f} s (--task-after 2)")
    tid, t_created = c["taskId"], time.monotonic()
    g = poll_until(lambda: modern_result(b, "tasks/get", {"taskId": tid}),
                   lambda g: "step" in g.get("statusMessage", ""), 10)
    ok(g["status"] == "working" and g["resultType"] == "complete" and "step" in
       g.get("statusMessage", "") and "result" not in g, lambda: f"working: {short(g)}")
    late = b.notes_where(lambda m: m.get("method") == "notifications/progress" and
                         m["params"].get("progressToken") == "m1")
    ok(late, "no progress before the task was made")
    ok(wait_for(lambda: modern_result(b, "tasks/get", {"taskId": tid})["status"] != "working", 20,
                0.5), "the task never ended")
    g = modern_result(b, "tasks/get", {"taskId": tid})
    ok(g["status"] == "completed" and "step 6" in g["result"]["structuredContent"]["stdout"],
       lambda: f"completed: {short(g)}")
    ok(RELATED not in g["result"].get("_meta", {}), "related-task _meta on the inlined result")
    after = [t for t, m in b.notes_where(lambda m: m.get("method") == "notifications/progress" and
                                         m["params"].get("progressToken") == "m1")
             if t > t_created + 1]
    ok(not after, f"{len(after)} progress notifications for a 2026-07-28 task")


def modern_gates(b):
    e = modern_error(b, "tasks/get", {"taskId": "0" * 32}, -32021, ext=False)
    ok(e.get("data", {}).get("requiredCapabilities", {}).get("extensions", {}).get(EXT) == {},
       lambda: short(e))
    modern_error(b, "tasks/cancel", {"taskId": "0" * 32}, -32021, ext=False)
    modern_error(b, "tasks/update", {"taskId": "0" * 32, "inputResponses": {}}, -32021, ext=False)
    for m in ("tasks/get", "tasks/cancel", "tasks/update"):
        modern_error(b, m, {"taskId": "0" * 32, "inputResponses": {}}, -32602)
    modern_error(b, "tasks/result", {"taskId": "0" * 32}, -32601)
    modern_error(b, "tasks/list", {}, -32601)
    # without the extension a long run answers as usual, however long
    t0 = time.monotonic()
    r = modern_result(b, "tools/call", {"name": "execute_code", "arguments": {
        "code": "import time; time.sleep(3); print('slow')"}}, ext=False)
    ok("taskId" not in r and r["structuredContent"]["stdout"] == "slow\n" and
       time.monotonic() - t0 > 2.5, lambda: f"without the extension: {short(r)}")
    # a 2025-11-25 params.task is unknown to the extension: ignored
    r = modern_result(b, "tools/call", {"name": "list_languages", "arguments": {}, "task": {}})
    ok("taskId" not in r and r.get("resultType") == "complete", lambda: short(r))


def modern_cancel(b):
    c = modern_result(b, "tools/call", {"name": "run_command",
                                        "arguments": {"command": MARK_MODERN}})
    ok(c.get("resultType") == "task", lambda: short(c))
    tid = c["taskId"]
    ok(pgrep(MARK_MODERN), "the task's command is not running")
    u = modern_result(b, "tasks/update", {"taskId": tid, "inputResponses": {"x": {}}})
    ok(set(u) <= {"resultType", "_meta"} and u["resultType"] == "complete", lambda: short(u))
    a = modern_result(b, "tasks/cancel", {"taskId": tid})
    ok(set(a) <= {"resultType", "_meta"} and a["resultType"] == "complete",
       lambda: f"the cancel ack carries more: {short(a)}")
    ok(wait_for(lambda: not pgrep(MARK_MODERN), 10), "the cancelled task's process is still there")
    g = modern_result(b, "tasks/get", {"taskId": tid})
    ok(g["status"] == "cancelled", lambda: short(g))
    a = modern_result(b, "tasks/cancel", {"taskId": tid})
    ok(a["resultType"] == "complete", "cancelling an ended task is not the same ack")


# ---- C: two HTTP sessions ----

class Http:
    def __init__(self):
        self.errf = os.path.join(LOGDIR, "tasks-http.log")
        self.proc = subprocess.Popen([NSBOX, "--store", STORE, "serve", "--http", "127.0.0.1:0"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.errf, "wb"))
        self.port = None
        for _ in range(100):
            m = re.search(r"serving MCP on http://[^:]+:(\d+)/mcp", open(self.errf).read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.2)
        ok(self.port, "the HTTP server did not start")
        self.n = 0

    def post(self, sid, method, params):
        self.n += 1
        r = mcphttp.post(self.port, {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params},
                         sid, "2025-11-25" if sid else None)
        m = r.response(self.n)
        if m is None:
            raise Check(f"{method}: no answer in {r.body[:300]!r}")
        return r.headers.get("mcp-session-id") or sid, m

    def session(self):
        sid, m = self.post(None, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                "clientInfo": {"name": "tasks.py", "version": "1"}})
        ok(sid and "result" in m, lambda: short(m))
        return sid

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)


def http_isolation():
    h = Http()
    try:
        one, two = h.session(), h.session()
        _, m = h.post(one, "tools/call", {"name": "execute_code", "task": {}, "arguments": {
            "code": "import time; time.sleep(4); print('mine')"}})
        tid = m["result"]["task"]["taskId"]
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            _, e = h.post(two, method, {"taskId": tid})
            ok(e.get("error", {}).get("code") == -32602,
               lambda: f"{method} of another session's task: {short(e)}")
        _, lst = h.post(two, "tasks/list", {})
        ok(lst["result"]["tasks"] == [], lambda: f"another session lists {short(lst)}")
        _, g = h.post(one, "tasks/get", {"taskId": tid})
        ok(g["result"]["status"] == "working", lambda: short(g))
        _, r = h.post(one, "tasks/result", {"taskId": tid})
        ok(r["result"]["structuredContent"]["stdout"] == "mine\n", lambda: short(r))
    finally:
        h.close()


def main():
    if not STORE:
        nt.fail("setup", "NSBOX_STORE is not set")
        return 1
    for mark in (MARK_CANCEL, MARK_MODERN):
        if pgrep(mark):
            nt.fail("setup", f'a "{mark}" process already runs here')
            return 1
    a = Stdio("2025-11-25", "--max-task-ttl", "900")
    b = Stdio("2026-07-28", "--task-after", "2", "--max-task-ttl", "900")
    tid = [None]
    nt.run("legacy_create_at_once", lambda: tid.__setitem__(0, legacy_start(a)))
    if tid[0] is None:
        a.close(), b.close()
        return 1
    t_asked = time.monotonic()
    waiting = a.send("tasks/result", {"taskId": tid[0]})
    nt.run("legacy_working_tail_progress", lambda: legacy_working(a, tid[0]))
    nt.run("legacy_cancel_kills", lambda: legacy_cancel(a, tid[0]))
    nt.run("legacy_errors", lambda: legacy_errors(a))
    nt.run("legacy_ttl_expiry_and_cap", lambda: legacy_ttl(a))
    nt.run("legacy_tool_error_failed", lambda: legacy_failed(a))
    nt.run("legacy_session_cap", lambda: legacy_cap(a))
    nt.run("modern_task_after", lambda: modern_flow(b))
    nt.run("modern_gates_and_sync", lambda: modern_gates(b))
    nt.run("modern_cancel_kills", lambda: modern_cancel(b))
    nt.run("http_sessions_isolated", http_isolation)
    nt.run("legacy_70s_result", lambda: legacy_result(a, tid[0], waiting, t_asked))
    b.close()
    a.close()
    for s, label in ((a, "2025_11_25"), (b, "2026_07_28")):
        nt.run(f"exit_{label}", lambda: ok(s.proc.returncode == 0,
                                           f"the server exited {s.proc.returncode}"))
    return nt.status()


if __name__ == "__main__":
    sys.exit(main())
