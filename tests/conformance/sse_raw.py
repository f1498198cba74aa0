#!/usr/bin/env python3
"""Raw HTTP checks of the SSE parts of `nsbox serve --http`:
  - the legacy HTTP+SSE transport (MCP 2024-11-05: GET /sse, POST
    /messages?sessionId=): the endpoint event, responses on the stream,
    every refusal (400, 401, 403, 404, 405, 406, 413, 415) with the server
    still up afterwards, legacy and Streamable HTTP sessions kept apart,
    sandbox output that cannot forge an event, the one table of 64
    sessions shared with /mcp, a closed stream ending its session and its
    sandboxes, keep-alives and the reaper leaving an open stream's session
    alone;
  - the priming event of 2025-11-25 on a POST's SSE stream (an id and a
    retry field first, then the messages), absent for 2025-06-18 and
    2025-03-26 sessions, and GET with Last-Event-ID answered 405.
Speaks HTTP with http.client and sockets (any Host header, any body).

usage: sse_raw.py main PORT           (a server without a token)
       sse_raw.py token PORT TOKEN    (a server with that token)
       sse_raw.py idle PORT           (--session-timeout 2 --idle-timeout 2)

Prints one line per test: PASS: mcp_http/sse_raw_NAME or FAIL: ...: why.
Exits 1 when a test failed."""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="mcp_http", prefix="sse_raw_")

MODE, PORT = sys.argv[1], int(sys.argv[2])
TOKEN = sys.argv[3] if len(sys.argv) > 3 else None


def headers(extra=None, auth=True):
    h = {"Host": f"localhost:{PORT}"}
    if TOKEN and auth:
        h["Authorization"] = f"Bearer {TOKEN}"
    h.update(extra or {})
    return {k: v for k, v in h.items() if v is not None}


def request(method, path, body=None, extra=None, auth=True, timeout=30):
    return mcphttp.request(PORT, method, path, headers(extra, auth), body, timeout)


def post_messages(sid, msg, extra=None, **kw):
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    h = {"Content-Type": "application/json"}
    h.update(extra or {})
    path = "/messages" if sid is None else f"/messages?sessionId={sid}"
    return request("POST", path, body, h, **kw)


class Events(threading.Thread):
    """An SSE response read in the background: .events grows with dicts
    (event, id, retry, data), .comments counts keep-alives, .done is set
    when the stream ends."""

    def __init__(self, method, path, body=None, extra=None, source="127.0.0.1"):
        super().__init__(daemon=True)
        self.events, self.comments, self.done = [], 0, threading.Event()
        self.c = mcphttp.connect(PORT, 120, source)
        mcphttp.send(self.c, method, path, headers(extra), body)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("content-type", "")
        if self.ctype.startswith("text/event-stream"):
            self.start()
        else:
            self.body = self.r.read()
            self.done.set()

    def run(self):
        def comment(_):
            self.comments += 1
        try:
            for ev in mcphttp.parse_sse(iter(self.r.readline, b""), comment):
                self.events.append(ev)
        except Exception:  # noqa: BLE001 -- closed under the reader (close())
            pass
        self.done.set()

    def messages(self):
        return mcphttp.messages_of(list(self.events))

    def response(self, rid, seconds=30):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for m in self.messages():
                if m.get("id") == rid and ("result" in m or "error" in m):
                    return m
            if self.done.is_set():
                break
            time.sleep(0.05)
        return None

    def close(self):
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.c.close()


def wait_until(cond, seconds, step=0.2):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def pgrep(pattern):
    """Pids whose whole command line matches pattern (tests/markers.md:
    mcp_http's markers are sleep 4240-4249)."""
    out = subprocess.run(["pgrep", "-f", f"^{pattern}$"], capture_output=True, text=True).stdout
    return [p for p in out.split() if p.strip()]


INIT = {"protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "sse_raw.py", "version": "1"}}
_ids = [0]


class Legacy:
    """One legacy session: the stream and its session id."""

    def __init__(self, initialize=True):
        self.s = Events("GET", "/sse", extra={"Accept": "text/event-stream"})
        if self.s.status != 200:
            raise RuntimeError(f"GET /sse: HTTP {self.s.status} {self.s.ctype}")
        if not wait_until(lambda: self.s.events, 10, 0.05):
            raise RuntimeError("no endpoint event")
        first = self.s.events[0]
        m = re.fullmatch(r"/messages\?sessionId=([0-9a-f]{32})", first.get("data", ""))
        if first.get("event") != "endpoint" or not m:
            raise RuntimeError(f"first event {first}")
        self.sid = m.group(1)
        if initialize:
            res = self.rpc("initialize", INIT)
            if res is None or "result" not in res:
                raise RuntimeError(f"initialize: {res}")
            r = post_messages(self.sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            if r.status != 202:
                raise RuntimeError(f"notifications/initialized: {r}")

    def rpc(self, method, params=None, seconds=60):
        _ids[0] += 1
        rid = _ids[0]
        r = post_messages(self.sid, {"jsonrpc": "2.0", "id": rid, "method": method,
                                     "params": params or {}})
        if r.status != 202 or r.body:
            raise RuntimeError(f"POST {method}: {r}")
        return self.s.response(rid, seconds)

    def call(self, name, args):
        res = self.rpc("tools/call", {"name": name, "arguments": args})
        if res is None or "result" not in res:
            raise RuntimeError(f"{name}: {res}")
        return res["result"]

    def close(self):
        self.s.close()


def expect(r, status, code=None, what=""):
    if r.status != status:
        return f"{what} expected HTTP {status}, got {r}"
    if code is not None and r.error_code() != code:
        return f"{what} expected JSON-RPC error {code}, got {r}"
    return None


# ---------------------------------------------------------------- main mode


def legacy_tests():
    @nt.test("endpoint_event")
    def _():
        s = Legacy(initialize=False)
        try:
            if not s.s.ctype.startswith("text/event-stream"):
                return f"content type {s.s.ctype}"
        finally:
            s.close()

    @nt.test("responses_on_stream")
    def _():
        s = Legacy()
        try:
            res = s.rpc("tools/list")
            names = [t["name"] for t in res["result"]["tools"]]
            if "execute_code" not in names:
                return f"tools/list: {names}"
            out = s.call("execute_code", {"code": "print(6 * 7)"})
            if out.get("structuredContent", {}).get("stdout") != "42\n":
                return f"execute_code: {out}"
            if any(e.get("id") for e in s.s.events):
                return f"an event id on a legacy stream: {s.s.events}"
        finally:
            s.close()

    # Threat model: sandbox output that looks like SSE and JSON-RPC stays
    # inside its JSON string on the one stream every message shares.
    @nt.test("sandbox_output_stays_in_string")
    def _():
        s = Legacy()
        try:
            evil = ('print("\\n\\nevent: message\\nid: 7\\ndata: {\\"jsonrpc\\":\\"2.0\\",'
                    '\\"id\\":999,\\"result\\":{}}\\n\\nevent: endpoint\\ndata: /x\\n\\n")')
            before = len(s.s.events)
            out = s.call("execute_code", {"code": evil})
            if "event: endpoint" not in out.get("structuredContent", {}).get("stdout", ""):
                return f"the output did not come back: {out}"
            time.sleep(0.5)
            new = s.s.events[before:]
            if any(e.get("event") != "message" or "id" in e for e in new):
                return f"sandbox output made an event of its own: {new}"
            if any(m.get("id") == 999 for m in s.s.messages()) or len(new) != 1:
                return f"sandbox output escaped its string: {new}"
        finally:
            s.close()

    @nt.test("refusals")
    def _():
        s = Legacy()
        try:
            big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (17 << 20) + b'"}}'
            cases = [
                ("no sessionId", post_messages(None, {"jsonrpc": "2.0", "id": 1, "method": "ping"}), 400, -32000),
                ("unknown session", post_messages("0" * 32, {"jsonrpc": "2.0", "id": 1, "method": "ping"}), 404, -32000),
                ("not hex", post_messages("../x", {"jsonrpc": "2.0", "id": 1, "method": "ping"}), 404, -32000),
                ("bad JSON", post_messages(s.sid, b"{not json"), 400, -32700),
                ("a batch", post_messages(s.sid, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'), 400, None),
                ("not JSON-RPC", post_messages(s.sid, {"hello": 1}), 400, -32600),
                ("too large", post_messages(s.sid, big), 413, -32000),
                ("text/plain", post_messages(s.sid, b"{}", {"Content-Type": "text/plain"}), 415, -32000),
                ("GET /messages", request("GET", f"/messages?sessionId={s.sid}"), 405, -32000),
                ("POST /sse", request("POST", "/sse", b"{}", {"Content-Type": "application/json"}), 405, -32000),
                ("DELETE /sse", request("DELETE", "/sse"), 405, -32000),
                ("GET /sse as JSON", request("GET", "/sse", extra={"Accept": "application/json"}), 406, -32000),
                ("bad version", post_messages(s.sid, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                              {"MCP-Protocol-Version": "1999-01-01"}), 400, -32000),
                ("Host", request("GET", "/sse", extra={"Host": "evil.example.com"}), 403, -32000),
                ("Host on POST", post_messages(s.sid, {"jsonrpc": "2.0", "method": "x"},
                                               {"Host": f"evil.example.com:{PORT}"}), 403, -32000),
                ("Origin", request("GET", "/sse", extra={"Origin": "http://evil.example.com"}), 403, -32000),
                ("Origin on POST", post_messages(s.sid, {"jsonrpc": "2.0", "method": "x"},
                                                 {"Origin": "https://evil.example.com"}), 403, -32000),
            ]
            for what, r, status, code in cases:
                why = expect(r, status, code, what)
                if why:
                    return why
            if request("GET", f"/messages?sessionId={s.sid}").headers.get("allow") != "POST":
                return "405 without Allow: POST"
            # The session and the server are still fine.
            if (s.rpc("ping") or {}).get("result") != {}:
                return "ping after the refusals failed"
            if s.s.done.is_set():
                return "the stream ended"
        finally:
            s.close()

    @nt.test("sessions_kept_apart")
    def _():
        s = Legacy()
        try:
            # A legacy session id is no Mcp-Session-Id, and the reverse.
            r = request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
                        {"Content-Type": "application/json", "Accept": "application/json",
                         "Mcp-Session-Id": s.sid})
            if r.status != 404:
                return f"/mcp with a legacy session id: {r}"
            init = request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                       "params": dict(INIT, protocolVersion="2025-06-18")}).encode(),
                           {"Content-Type": "application/json", "Accept": "application/json"})
            sid = init.headers.get("mcp-session-id")
            if init.status != 200 or not sid:
                return f"/mcp initialize: {init}"
            r = post_messages(sid, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
            request("DELETE", "/mcp", extra={"Mcp-Session-Id": sid})
            if r.status != 404:
                return f"/messages with a Streamable HTTP session id: {r}"
            # Two legacy sessions: each one's responses on its own stream.
            t = Legacy()
            try:
                a = t.call("sandbox_create", {"language": "sh"})["structuredContent"]["sandbox_id"]
                res = s.rpc("tools/call", {"name": "run_command",
                                           "arguments": {"sandbox_id": a, "command": "echo intruder"}})
                if not res or "intruder" in json.dumps(res) or not (
                        "error" in res or res.get("result", {}).get("isError")):
                    return f"one legacy session ran a command in another's sandbox: {res}"
                if any(m.get("id") == _ids[0] for m in t.s.messages()):
                    return "a response went to the other session's stream"
            finally:
                t.close()
        finally:
            s.close()

    @nt.test("close_ends_session")
    def _():
        s = Legacy()
        sb = s.call("sandbox_create", {"language": "sh"})["structuredContent"]["sandbox_id"]
        s.call("run_command", {"sandbox_id": sb, "command": "sleep 4245 >/dev/null 2>&1 &"})
        if not wait_until(lambda: pgrep("sleep 4245"), 10):
            return "the marker process never started"
        s.close()
        if not wait_until(lambda: not pgrep("sleep 4245"), 20):
            return "the sandbox of a closed stream still runs after 20 s"
        r = post_messages(s.sid, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        return expect(r, 404, -32000, "POST after the stream closed")

    @nt.test("many_sessions_open_and_close")
    def _():
        for _ in range(3):
            group = [Legacy(initialize=False) for _ in range(8)]
            if len({g.sid for g in group}) != 8:
                return "two streams share a session id"
            for g in group:
                g.close()
        s = Legacy()  # the server still serves, and its table has room
        s.close()


    # Legacy sessions come out of the one table of sessions (64): when it is
    # full, GET /sse and a Streamable HTTP initialize both get 503, and a
    # closed stream makes room at once.  The streams come from several
    # loopback addresses: one address may hold only 64 connections.
    @nt.test("session_cap_shared")
    def _():
        held = []
        try:
            full = None
            for i in range(80):
                e = Events("GET", "/sse", extra={"Accept": "text/event-stream"},
                           source=f"127.0.0.{2 + i % 4}")
                if e.status == 503:
                    full = e
                    break
                if e.status != 200:
                    return f"GET /sse #{i}: HTTP {e.status}"
                held.append(e)
            if full is None or len(held) > 64:
                return f"no 503 after {len(held)} sessions"
            init = request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                       "params": INIT}).encode(),
                           {"Content-Type": "application/json", "Accept": "application/json"})
            if init.status != 503:
                return f"initialize with the table full: {init}"
            held.pop().close()

            def room():
                held.append(Events("GET", "/sse", extra={"Accept": "text/event-stream"},
                                   source="127.0.0.6"))
                return held[-1].status == 200
            if not wait_until(room, 10, 0.5):
                return "a closed stream did not make room"
        finally:
            for e in held:
                e.close()
        # The room is back for Streamable HTTP too.
        sid = []

        def init_ok():
            r = request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                    "params": INIT}).encode(),
                        {"Content-Type": "application/json", "Accept": "application/json"})
            sid.append(r.headers.get("mcp-session-id"))
            return r.status == 200
        ok = wait_until(init_ok, 10, 0.5)
        if sid[-1]:
            request("DELETE", "/mcp", extra={"Mcp-Session-Id": sid[-1]})
        if not ok:
            return "initialize still refused after the streams closed"


def priming_tests():
    def session(version):
        init = request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                   "params": dict(INIT, protocolVersion=version)}).encode(),
                       {"Content-Type": "application/json", "Accept": "application/json"})
        sid = init.headers.get("mcp-session-id")
        if init.status != 200 or not sid:
            raise RuntimeError(f"initialize {version}: {init}")
        request("POST", "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                {"Content-Type": "application/json", "Mcp-Session-Id": sid})
        return sid

    def post_sse(sid, rid, method, params=None, version="2025-03-26"):
        # Sent with the header 2025-03-26 as the conformance suite does:
        # priming follows what the session negotiated.
        e = Events("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                               "params": params or {}}).encode(),
                   {"Content-Type": "application/json", "Mcp-Session-Id": sid,
                    "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version})
        e.done.wait(60)
        return e

    @nt.test("priming_2025_11_25")
    def _():
        sid = session("2025-11-25")
        try:
            ids = []
            for rid in (11, 12):
                e = post_sse(sid, rid, "tools/call", {"name": "execute_code", "arguments": {"code": "print(1)"}})
                if e.status != 200 or not e.events:
                    return f"POST: HTTP {e.status} {e.ctype} {e.events}"
                first = e.events[0]
                if not first.get("id") or first.get("data", None) != "" or not re.fullmatch(r"[0-9]+", first.get("retry", "")):
                    return f"the first event is no priming event: {e.events[:2]}"
                if e.response(rid, 1) is None:
                    return f"no response after the priming event: {e.events}"
                ids.append(first["id"])
            if ids[0] == ids[1]:
                return f"two streams of one session share the event id {ids[0]}"
            g = request("GET", "/mcp", extra={"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                                              "Last-Event-ID": ids[0]})
            if g.status != 405 or "allow" not in g.headers:
                return f"GET with Last-Event-ID: {g}"
        finally:
            request("DELETE", "/mcp", extra={"Mcp-Session-Id": sid})

    @nt.test("no_priming_before_2025_11_25")
    def _():
        for version in ("2025-06-18", "2025-03-26"):
            sid = session(version)
            try:
                e = post_sse(sid, 21, "ping", version=version)
                if e.status != 200 or not e.events:
                    return f"{version}: HTTP {e.status} {e.events}"
                if any("id" in ev or "retry" in ev or not ev.get("data") for ev in e.events):
                    return f"{version}: a priming event: {e.events}"
                if e.response(21, 1) is None:
                    return f"{version}: no response: {e.events}"
            finally:
                request("DELETE", "/mcp", extra={"Mcp-Session-Id": sid})

    @nt.test("initialize_primed")
    def _():
        e = Events("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                               "params": dict(INIT, protocolVersion="2025-11-25")}).encode(),
                   {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        e.done.wait(30)
        sid = e.r.getheader("mcp-session-id")
        request("DELETE", "/mcp", extra={"Mcp-Session-Id": sid})
        if not e.events or not e.events[0].get("id") or e.events[0].get("data") != "":
            return f"initialize of 2025-11-25 without priming: {e.events}"
        if e.response(1, 1) is None:
            return f"no InitializeResult: {e.events}"


# ---------------------------------------------------------------- other modes


def token_tests():
    @nt.test("token")
    def _():
        s = Legacy()
        try:
            for what, r in [
                ("GET /sse without a token", request("GET", "/sse", auth=False)),
                ("GET /sse with a wrong token", request("GET", "/sse", extra={"Authorization": "Bearer nope"})),
                ("POST without a token", post_messages(s.sid, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                                       auth=False)),
                ("POST with a wrong token", post_messages(s.sid, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                                          {"Authorization": "Bearer " + "x" * 40})),
            ]:
                why = expect(r, 401, -32000, what)
                if why:
                    return why
                if "www-authenticate" not in r.headers:
                    return f"{what}: no WWW-Authenticate"
            if (s.rpc("ping") or {}).get("result") != {}:
                return "ping with the token failed"
        finally:
            s.close()


def idle_tests():
    """Run against a server with --session-timeout 2 --idle-timeout 2."""

    @nt.test("stream_outlives_timeouts")
    def _():
        s = Legacy()
        try:
            time.sleep(6)
            if s.s.done.is_set():
                return "the stream ended while idle"
            if s.s.comments < 2:
                return f"{s.s.comments} keep-alive comments in 6 s"
            if (s.rpc("ping") or {}).get("result") != {}:
                return "the open stream's session was reaped"
        finally:
            s.close()


if MODE == "main":
    legacy_tests()
    priming_tests()
elif MODE == "token":
    token_tests()
elif MODE == "idle":
    idle_tests()
else:
    sys.exit(f"unknown mode {MODE}")
nt.finish()
