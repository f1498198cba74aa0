#!/usr/bin/env python3
"""The call queue (issue #29, serve --call-queue, docs/burst.md), over
stdio, with real sandboxes.

One kept sandbox runs one command at a time: a first run_command that
sleeps holds it, and every later run_command on it holds a call slot
while it waits.  So 64 calls fill the session's slots, the next ones go
to the queue (--call-queue 16), and the ones beyond both are refused.
Checked: every call within the bounds is answered with its own output
(none refused); exactly those beyond are refused, with the clear error;
a queued call that is cancelled never runs and is never answered; ping
is answered while the queue is full (before the sleeping call ends);
with --call-queue 0 the 65th call is refused at once, as before.
As root and as the rootless user nsboxtest, each with a store of its own
holding the busybox fixture.  Root also checks the spawner (runtime/
spawner.h): the server's children are the spawner and the sandboxes'
inits it cloned and handed over, reaped when stopped.  Environment: NSBOX,
NSBOX_FIXTURES, SUITE, BURST_STORE_ROOT and BURST_STORE_USER (the stores,
else made here)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="burst")
NSBOX_SRC = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
F = os.environ.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures")
USER = "nsboxtest"
T = tempfile.mkdtemp(prefix="nsbox-burst.")
os.chmod(T, 0o755)
NSBOX = os.path.join(T, "nsbox")  # a copy every user can run
shutil.copy(NSBOX_SRC, NSBOX)
os.chmod(NSBOX, 0o755)
SLOTS = 64
QUEUE = 16
EXTRA = 4
HOLD_S = 4


def as_user(user):
    return ["runuser", "-u", user, "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
            f"HOME=/home/{user}", "NSBOX_LIMITS=best-effort"] if user else []


def setup_store(user):
    """The user's store: the suite's (tests/integration/burst.sh seeds it
    with the run's default image, so that the server's start imports
    nothing), else a new one here."""
    store = os.environ.get("BURST_STORE_USER" if user else "BURST_STORE_ROOT")
    if not store:
        store = os.path.join(T, f"store-{user or 'root'}")
        os.mkdir(store, 0o700)
        if user:
            shutil.chown(store, user, user)
    for cmd in (["pull", "--quiet", f"oci:{F}/oci/busybox:latest"],
                ["tag", f"oci:{F}/oci/busybox:latest", "busybox"]):
        subprocess.run(as_user(user) + [NSBOX, "--store", store, *cmd], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return store


class Stdio:
    def __init__(self, user, store, extra):
        argv = as_user(user) + [NSBOX, "--store", store, "serve", *extra]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "q", "version": "1"}}})
        self.seen = {}
        self.wait_for(["init"])
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, rid, name, **args):
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": name, "arguments": args}})

    def wait_for(self, ids, timeout=120):
        """The responses to ids, in the order they came: [(id, msg)]
        (responses to other ids read meanwhile are kept for later)."""
        want, end = set(ids), time.time() + timeout
        while not want <= set(self.seen) and time.time() < end:
            line = self.p.stdout.readline()
            if not line:
                break
            m = json.loads(line)
            if "id" in m and ("result" in m or "error" in m):
                self.seen[m["id"]] = (len(self.seen), m)
        return sorted(((i, self.seen[i][1]) for i in want if i in self.seen),
                      key=lambda x: self.seen[x[0]][0])

    def close(self):
        # A server whose store lacked the default image imports it on start
        # (cli/serve.c, early import: up to minutes on a slow disk) and
        # waits for that at its end.
        self.p.stdin.close()
        self.p.wait(timeout=300)


def text(m):
    r = m.get("result") or {}
    return json.dumps(r.get("structuredContent") or r.get("content") or m.get("error"))


def refused(m):
    r = m.get("result") or {}
    return bool(r.get("isError")) and "too many calls running at once" in text(m)


def fill(srv, n):
    """A sandbox, a call holding it HOLD_S seconds, then n calls echoing
    their numbers.  Returns the sandbox id."""
    srv.call("c", "sandbox_create", image="busybox")
    (_, m), = srv.wait_for(["c"])
    sid = m["result"]["structuredContent"]["sandbox_id"]
    srv.call("hold", "run_command", sandbox_id=sid, command=f"sleep {HOLD_S}; echo held")
    time.sleep(0.5)  # the hold runs first (ordering only: nothing is timed)
    for i in range(n):
        srv.call(i, "run_command", sandbox_id=sid, command=f"echo out-{i}; echo {i} >> /tmp/ran")
    return sid


def queue_case(result, user, store):
    srv = Stdio(user, store, ["--call-queue", str(QUEUE)])
    try:
        n = SLOTS - 1 + QUEUE + EXTRA  # the hold takes one slot
        sid = fill(srv, n)
        cancelled = SLOTS - 1 + QUEUE // 2  # a queued one
        srv.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": cancelled, "reason": "test"}})
        srv.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        order = [rid for rid, _ in srv.wait_for(["ping", "hold"], timeout=60)]
        result("ping_answered_while_queue_full", order == ["ping", "hold"], f"order {order}")
        want = [i for i in range(n) if i != cancelled]
        got = dict(srv.wait_for(want, timeout=120))
        within = [i for i in range(SLOTS - 1 + QUEUE) if i != cancelled]
        beyond = list(range(SLOTS - 1 + QUEUE, n))
        bad = [i for i in within if i not in got or f"out-{i}" not in text(got[i])]
        result("queued_calls_all_answered", not bad,
               f"{len(within) - len(bad)}/{len(within)} answered with their output; first bad "
               f"{bad[:1] and (bad[0], text(got.get(bad[0], {}))[:200])}")
        ok_refused = [i for i in beyond if i in got and refused(got[i])]
        result("beyond_queue_refused_clearly", len(ok_refused) == EXTRA and
               all("waiting" in text(got[i]) for i in ok_refused),
               f"{len(ok_refused)}/{EXTRA} refused: {text(got[beyond[0]])[:160] if beyond[0] in got else 'none'}")
        # The cancelled call: no response (the rest all came, after it
        # would have), and its command never ran.
        srv.call("ran", "run_command", sandbox_id=sid, command="cat /tmp/ran")
        (_, m), = srv.wait_for(["ran"])
        late = [cancelled] if cancelled in srv.seen else []
        ran = set((m["result"]["structuredContent"].get("stdout") or "").split())
        result("queued_call_cancelled", not late and str(cancelled) not in ran and str(cancelled + 1) in ran,
               f"response {late[:1]}, ran {'it' if str(cancelled) in ran else 'not it'} "
               f"({len(ran)} commands ran)")
    finally:
        srv.close()


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            with open(f"/proc/{d}/status") as f:
                nspid = [ln.split()[1:] for ln in f if ln.startswith("NSpid:")][0]
        except (OSError, IndexError):
            continue
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append((int(d), st[st.index("(") + 1:st.rindex(")")], len(nspid)))
    return out


def spawner_case(result, store):
    """Root: the server's children are its spawner (nsbox-spawner) and,
    handed over by it, each sandbox's init (pid 1 of a pid namespace of
    its own); a stopped sandbox's init is reaped (no zombie left)."""
    srv = Stdio("", store, [])
    try:
        ids = []
        for k in range(3):
            srv.call(f"c{k}", "sandbox_create", image="busybox")
        for _, m in srv.wait_for(["c0", "c1", "c2"]):
            ids.append(m["result"]["structuredContent"]["sandbox_id"])
        kids = children(srv.p.pid)
        spawners = [k for k in kids if k[1] == "nsbox-spawner" and k[2] == 1]
        inits = [k for k in kids if k[2] == 2]
        srv.call("stop", "sandbox_stop", sandbox_id=ids[0])
        srv.wait_for(["stop"])
        after = children(srv.p.pid)
        gone = [k for k in inits if k[0] not in [a[0] for a in after]]
        result("inits_cloned_by_spawner_and_reaped", len(spawners) == 1 and len(inits) == 3 and len(gone) == 1,
               f"children {kids}; after a stop {after}")
    finally:
        srv.close()


def no_queue_case(result, user, store):
    srv = Stdio(user, store, ["--call-queue", "0"])
    try:
        n = SLOTS - 1 + 1
        fill(srv, n)
        got = dict(srv.wait_for(list(range(n)), timeout=120))
        last = got.get(n - 1, {})
        result("no_queue_refuses_at_once", refused(last) and "waiting" not in text(last) and
               all(f"out-{i}" in text(got.get(i, {})) for i in range(n - 1)),
               f"call {n - 1}: {text(last)[:160]}")
        srv.wait_for(["hold"], timeout=60)
    finally:
        srv.close()


try:
    for user in ("", USER):
        rep = nt.Reporter(prefix="rootless_" if user else "root_", default_suite="burst")
        store = setup_store(user)
        queue_case(rep.result, user, store)
        no_queue_case(rep.result, user, store)
        if not user:
            spawner_case(rep.result, store)
finally:
    shutil.rmtree(T, ignore_errors=True)
nt.finish()
