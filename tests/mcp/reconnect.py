#!/usr/bin/env python3
"""Reconnect (issue #27; serve --reconnect-idle, mcp/http/tenants.h) over
HTTP with 2025-11-25 sessions and two tenants: a second session of the
same tenant reaches a sandbox by id while the first lives (its state
kept), and the first gets it back; a call holding it makes it "in use"
for the other; another tenant never reaches it; a sandbox outlives the
DELETE of its session and a later session of the tenant reaches it; once
parked and unused for --reconnect-idle it is stopped (its init gone);
a 2026-07-28 stateless request of the tenant reaches it too.  A server
without the option keeps today's lifetime: a session's DELETE stops its
sandboxes.  Environment: NSBOX, NSBOX_STORE, SUITE."""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402
from nsbox_test import finish, result  # noqa: E402

NSBOX = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE") or "/var/lib/nsbox"
os.environ.setdefault("SUITE", "reconnect")
VERSION = "2025-11-25"
IDLE = 3


class Server:
    def __init__(self, tmp, extra):
        self.tokens = {"a": "tok-a-" + os.urandom(8).hex(), "b": "tok-b-" + os.urandom(8).hex()}
        tf = os.path.join(tmp, "tokens")
        with open(os.open(tf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write("".join(f"{k} {v}\n" for k, v in self.tokens.items()))
        self.log = os.path.join(tmp, "serve.log")
        with open(self.log, "w") as err:
            self.p = subprocess.Popen([NSBOX, "-d", "--store", STORE, "serve", "--http", "127.0.0.1:0",
                                       "--token-file", tf, *extra],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=err)
        self.port = None
        for _ in range(100):
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", open(self.log).read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.1)
        if self.port is None:
            raise SystemExit("the server did not start: " + open(self.log).read()[-300:])

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=60)


class Session:
    def __init__(self, srv, tenant):
        self.srv, self.auth, self.n = srv, {"Authorization": "Bearer " + srv.tokens[tenant]}, 0
        r = mcphttp.post(srv.port, self.msg("initialize", {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "reconnect", "version": "1"}}), headers=self.auth)
        self.sid = r.headers.get("mcp-session-id")
        mcphttp.post(srv.port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     sid=self.sid, version=VERSION, headers=self.auth)

    def msg(self, method, params):
        self.n += 1
        return {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}

    def tool(self, name, **args):
        r = mcphttp.post(self.srv.port, self.msg("tools/call", {"name": name, "arguments": args}),
                         sid=self.sid, version=VERSION, headers=self.auth, timeout=120)
        return (r.response(self.n) or {}).get("result") or {}

    def delete(self):
        mcphttp.request(self.srv.port, "DELETE", headers=dict(self.auth, **{
            "Mcp-Session-Id": self.sid, "MCP-Protocol-Version": VERSION}))


def sc(r):
    return r.get("structuredContent") or {}


def text(r):
    return (r.get("content") or [{}])[0].get("text", "")


def init_alive(srv, sid):
    """Whether a process of the server is the sandbox's init (its state
    file names the pid)."""
    try:
        with open(os.path.join(STORE, "sandboxes", sid, "state")) as f:
            pid = int(re.search(r"^pid=(\d+)$", f.read(), re.M).group(1))
        os.kill(pid, 0)
        return True
    except (OSError, AttributeError, ValueError):
        return False


with tempfile.TemporaryDirectory() as tmp:
    srv = Server(tmp, ["--reconnect-idle", str(IDLE)])
    try:
        one, two, other = Session(srv, "a"), Session(srv, "a"), Session(srv, "b")
        sid = sc(one.tool("sandbox_create", language="python")).get("sandbox_id")
        one.tool("execute_code", sandbox_id=sid, code="x = 41")
        r = two.tool("execute_code", sandbox_id=sid, code="x += 1; x")
        result("same_tenant_reaches_it_while_the_first_lives", sc(r).get("result") == "42", r)
        r = one.tool("execute_code", sandbox_id=sid, code="x")
        result("first_session_gets_it_back_state_kept", sc(r).get("result") == "42", r)
        r = other.tool("execute_code", sandbox_id=sid, code="x")
        result("another_tenant_never_reaches_it",
               r.get("isError") and "no sandbox" in text(r), r)

        # A call holding it: the other session is told it is in use.
        got = {}
        t = threading.Thread(target=lambda: got.update(r=two.tool(
            "execute_code", sandbox_id=sid, code="import time; time.sleep(3); 'slept'")))
        t.start()
        time.sleep(1.5)
        busy = one.tool("execute_code", sandbox_id=sid, code="1")
        t.join()
        result("in_use_by_the_other_session",
               busy.get("isError") and "in use by another session" in text(busy)
               and sc(got.get("r", {})).get("result") == "'slept'", (busy, got))

        # The session that holds it ends: the sandbox outlives it.
        two.delete()
        time.sleep(0.5)
        three = Session(srv, "a")
        r = three.tool("execute_code", sandbox_id=sid, code="x")
        result("outlives_its_sessions_delete",
               sc(r).get("result") == "42" and init_alive(srv, sid), r)

        # 2026-07-28 stateless requests of the tenant reach it too.
        r = mcphttp.post(srv.port, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"sandbox_id": sid, "code": "x"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}},
            version="2026-07-28", headers=dict(one.auth, **{"Mcp-Method": "tools/call",
                                                             "Mcp-Name": "execute_code",
                                                             "Mcp-Param-Sandbox-Id": sid}))
        res = (r.response(7) or {}).get("result") or {}
        result("stateless_request_of_the_tenant_reaches_it", sc(res).get("result") == "42",
               (r.status, res))

        # Parked (its last session gone), unused for --reconnect-idle: stopped.
        three.tool("execute_code", sandbox_id=sid, code="1")
        three.delete()
        one.delete()
        alive_before = init_alive(srv, sid)
        time.sleep(IDLE + 3)
        four = Session(srv, "a")
        r = four.tool("execute_code", sandbox_id=sid, code="x")
        result("stopped_after_reconnect_idle",
               alive_before and not init_alive(srv, sid) and r.get("isError")
               and "no sandbox" in text(r), (alive_before, r))
        log = open(srv.log).read()
        result("log_says_kept_and_stopped",
               "kept for its tenant" in log and f"unused for {IDLE} s: stopping it" in log,
               log[-600:])
    finally:
        srv.close()

    # Without the option: today's lifetime.
    srv = Server(tmp, [])
    try:
        one = Session(srv, "a")
        sid = sc(one.tool("sandbox_create", language="python")).get("sandbox_id")
        one.delete()
        time.sleep(0.5)
        two = Session(srv, "a")
        r = two.tool("execute_code", sandbox_id=sid, code="1")
        result("without_the_option_delete_stops_them",
               r.get("isError") and "no sandbox" in text(r) and not init_alive(srv, sid), r)
    finally:
        srv.close()
finish()
