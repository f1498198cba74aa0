#!/usr/bin/env python3
"""Raw HTTP checks of `nsbox serve --http`: the status codes and headers of
MCP Streamable HTTP, the DNS-rebinding and token checks, sessions as
tenants, SSE routing, cancellation, DELETE, huge bodies and many
connections.  Speaks HTTP with http.client (it can send any Host header).

usage: http_raw.py main PORT           (a server without a token)
       http_raw.py token PORT TOKEN    (a server with that token)
       http_raw.py hold PORT           (leaves a session with running processes)
       http_raw.py expire PORT         (a server with --session-timeout 2)

Prints one line per test: PASS: mcp_http/NAME or FAIL: mcp_http/NAME: why.
Exits 1 when a test failed."""
import http.client
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

nt.configure(default_suite="mcp_http")

MODE, PORT = sys.argv[1], int(sys.argv[2])
TOKEN = sys.argv[3] if len(sys.argv) > 3 else None
ADDR = "127.0.0.1"
BOTH = mcphttp.BOTH


Resp = mcphttp.Resp


def auth(headers=None, host=None):
    """The headers of a request to this server: its token, any Host."""
    h = {} if host is None else {"Host": host}
    if TOKEN:
        h["Authorization"] = f"Bearer {TOKEN}"
    h.update(headers or {})
    return h


def connect(timeout=60):
    return mcphttp.connect(PORT, timeout)


def send(c, method, body=None, headers=None, host=None, path="/mcp"):
    mcphttp.send(c, method, path, auth(headers, host), body)


def request(method, body=None, headers=None, timeout=60, host=None, path="/mcp", chunked=False):
    return mcphttp.request(PORT, method, path, auth(headers, host), body, timeout, chunked=chunked)


def post(sid, msg, accept=BOTH, extra=None, host=None, **kw):
    return mcphttp.post(PORT, msg, sid, headers=auth(extra, host), accept=accept, **kw)


_next_id = [100]


def rpc(sid, method, params=None, accept=BOTH, rid=None, **kw):
    if rid is None:
        _next_id[0] += 1
        rid = _next_id[0]
    r = post(sid, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}},
             accept, **kw)
    return r, r.response(rid)


INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "http_raw.py", "version": "1"}}


def open_session(accept=BOTH):
    r, resp = rpc(None, "initialize", INIT, accept)
    sid = r.headers.get("mcp-session-id")
    if r.status != 200 or not sid or resp is None or "result" not in resp:
        raise RuntimeError(f"initialize failed: {r}")
    n = post(sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    if n.status != 202:
        raise RuntimeError(f"notifications/initialized: {n}")
    return sid


def call_tool(sid, name, args, accept=BOTH, **kw):
    r, resp = rpc(sid, "tools/call", {"name": name, "arguments": args}, accept, **kw)
    if resp is None or "result" not in resp:
        raise RuntimeError(f"{name}: no result: {r}")
    return resp["result"], r


def delete(sid):
    return request("DELETE", headers={"Mcp-Session-Id": sid} if sid else {})


def pgrep(pattern):
    """Pids whose whole command line matches pattern (tests/markers.md:
    mcp_http's markers are sleep 4240-4249)."""
    out = subprocess.run(["pgrep", "-f", f"^{pattern}$"], capture_output=True, text=True).stdout
    return [p for p in out.split() if p.strip()]


def wait_until(cond, seconds, step=0.2):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def expect(r, status, what=""):
    if r.status != status:
        return f"{what} expected HTTP {status}, got {r}"
    return None


# ---------------------------------------------------------------- main mode


def main_tests():
    @nt.test("initialize_sse")
    def _():
        r, resp = rpc(None, "initialize", INIT)
        sid = r.headers.get("mcp-session-id", "")
        if r.status != 200 or not r.sse:
            return f"expected an SSE answer: {r}"
        if not re.fullmatch(r"[0-9a-f]{32}", sid):
            return f"Mcp-Session-Id is not 128 bits of hex: {sid!r}"
        if not resp or resp["result"]["protocolVersion"] != "2025-11-25":
            return f"bad initialize result: {resp}"
        delete(sid)

    @nt.test("initialize_json")
    def _():
        r, resp = rpc(None, "initialize", INIT, accept="application/json")
        if r.status != 200 or not r.headers.get("content-type", "").startswith("application/json"):
            return f"expected application/json: {r}"
        if not r.headers.get("mcp-session-id") or not resp or "result" not in resp:
            return f"no session or result: {r}"
        delete(r.headers["mcp-session-id"])

    sid = open_session()

    @nt.test("notification_202")
    def _():
        r = post(sid, {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        if r.status != 202 or r.body:
            return f"expected 202 without a body: {r}"

    @nt.test("initialize_with_session_400")
    def _():
        r, _ = rpc(sid, "initialize", INIT)
        return expect(r, 400)

    @nt.test("missing_session_400")
    def _():
        r, _ = rpc(None, "tools/list")
        return expect(r, 400, "tools/list without Mcp-Session-Id")

    @nt.test("unknown_session_404")
    def _():
        for bogus in ("0123456789abcdef0123456789abcdef", sid[:-1] + ("0" if sid[-1] != "0" else "1"),
                      "x", sid + "00"):
            r, _ = rpc(bogus, "ping")
            if r.status != 404:
                return f"session {bogus!r}: {r}"
        r = request("GET", headers={"Accept": "text/event-stream",
                                    "Mcp-Session-Id": "0123456789abcdef0123456789abcdef"})
        return expect(r, 404, "GET with an unknown session")

    @nt.test("put_405")
    def _():
        r = request("PUT", b"{}", {"Content-Type": "application/json", "Mcp-Session-Id": sid})
        if r.status != 405 or "POST" not in r.headers.get("allow", ""):
            return f"expected 405 with Allow: {r} {r.headers}"

    @nt.test("not_acceptable_406")
    def _():
        r, _ = rpc(sid, "ping", accept="text/html")
        return expect(r, 406)

    @nt.test("accept_json_only")
    def _():
        r, resp = rpc(sid, "ping", accept="application/json")
        if r.status != 200 or r.sse or resp is None:
            return f"expected a JSON answer: {r}"

    @nt.test("unsupported_media_415")
    def _():
        r = request("POST", b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                    {"Content-Type": "text/plain", "Accept": BOTH, "Mcp-Session-Id": sid})
        return expect(r, 415)

    @nt.test("wrong_path_404")
    def _():
        r = request("POST", b"{}", {"Content-Type": "application/json", "Accept": BOTH},
                    path="/other")
        return expect(r, 404)

    @nt.test("host_foreign_403")
    def _():
        for host in ("evil.example.com", f"evil.example.com:{PORT}", f"localhost:{PORT + 1}",
                     f"localhost.evil.example.com:{PORT}", ""):
            r, _ = rpc(sid, "ping", host=host)
            if r.status != 403:
                return f"Host {host!r}: {r}"

    @nt.test("host_loopback_names")
    def _():
        for host in (f"localhost:{PORT}", f"127.0.0.1:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"):
            r, resp = rpc(sid, "ping", host=host)
            if r.status != 200 or resp is None:
                return f"Host {host!r}: {r}"

    @nt.test("origin_foreign_403")
    def _():
        for origin in ("http://evil.example.com", f"http://evil.example.com:{PORT}", "null",
                       "http://localhost.evil.example.com", "file://"):
            r, _ = rpc(sid, "ping", extra={"Origin": origin})
            if r.status != 403:
                return f"Origin {origin!r}: {r}"

    @nt.test("origin_loopback_ok")
    def _():
        for origin in ("http://localhost:5173", f"http://127.0.0.1:{PORT}", "https://[::1]"):
            r, resp = rpc(sid, "ping", extra={"Origin": origin})
            if r.status != 200 or resp is None:
                return f"Origin {origin!r}: {r}"

    @nt.test("protocol_version_header")
    def _():
        r, _ = rpc(sid, "ping", extra={"MCP-Protocol-Version": "1999-01-01"})
        if r.status != 400:
            return f"unsupported version: {r}"
        for v in ("2025-03-26", "2024-11-05", "2025-06-18", "2025-11-25"):
            r, resp = rpc(sid, "ping", extra={"MCP-Protocol-Version": v})
            if r.status != 200 or resp is None:
                return f"version {v}: {r}"

    @nt.test("batch_400")
    def _():
        r = post(sid, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        if r.status != 400 or not r.messages or r.messages[0]["error"]["code"] != -32600:
            return f"expected 400 with -32600: {r}"

    @nt.test("parse_error_400")
    def _():
        r = post(sid, b'{"jsonrpc":')
        if r.status != 400 or not r.messages or r.messages[0]["error"]["code"] != -32700:
            return f"expected 400 with -32700: {r}"

    @nt.test("huge_body_413")
    def _():
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (17 << 20) + b'"}}'
        try:
            r = post(sid, big)
            if r.status != 413:
                return f"Content-Length 17 MiB: {r}"
        except (ConnectionError, http.client.HTTPException) as e:
            return f"Content-Length 17 MiB: no answer ({e})"
        try:  # chunked: no length up front; an error status or a hang-up
            r = post(sid, big, chunked=True)
            if r.status not in (400, 413):
                return f"chunked 17 MiB: {r}"
        except (ConnectionError, http.client.HTTPException, socket.timeout):
            pass
        r, resp = rpc(sid, "ping")
        if r.status != 200 or resp is None:
            return f"the server does not answer after huge bodies: {r}"

    @nt.test("deep_json_400")
    def _():
        r = post(sid, b"[" * 100000 + b"]" * 100000)
        return expect(r, 400)

    @nt.test("execute_code_sse")
    def _():
        res, r = call_tool(sid, "execute_code", {"code": "print('hi from http')"})
        s = res.get("structuredContent", {})
        if not r.sse or res.get("isError") or s.get("status") != "ok" or \
                s.get("stdout") != "hi from http\n" or s.get("exit_code") != 0:
            return f"unexpected result: {r}"

    @nt.test("execute_code_json")
    def _():
        res, r = call_tool(sid, "execute_code", {"code": "echo hi; exit 3", "language": "sh"},
                           accept="application/json")
        s = res.get("structuredContent", {})
        if r.sse or s.get("status") != "error" or s.get("exit_code") != 3 or s.get("stdout") != "hi\n":
            return f"unexpected result: {r}"

    @nt.test("sandbox_output_stays_in_string")
    def _():
        evil = 'print("\\n\\nevent: message\\ndata: {\\"jsonrpc\\":\\"2.0\\",\\"id\\":999,\\"result\\":{}}\\n\\n")'
        res, r = call_tool(sid, "execute_code", {"code": evil})
        ids = [m.get("id") for m in r.messages]
        if 999 in ids or len(r.messages) != 1:
            return f"sandbox output escaped its string: {ids}"

    @nt.test("log_on_post_stream")
    def _():
        r, resp = rpc(sid, "logging/setLevel", {"level": "info"})
        if resp is None or "result" not in resp:
            return f"setLevel: {r}"
        res, r = call_tool(sid, "sandbox_create", {"language": "sh"})
        kinds = [m.get("method") or "response" for m in r.messages]
        if "notifications/message" not in kinds or kinds[-1] != "response":
            return f"expected the log then the response on the POST stream: {kinds}"
        call_tool(sid, "sandbox_stop", {"sandbox_id": res["structuredContent"]["sandbox_id"]})

    tenancy_tests()
    get_stream_tests()
    cancel_tests()
    delete_tests()
    load_tests(sid)
    delete(sid)


def tenancy_tests():
    a, b = open_session(), open_session()

    @nt.test("tenancy")
    def _():
        if a == b:
            return "two sessions got the same id"
        res, _ = call_tool(a, "sandbox_create", {"language": "sh"})
        sb = res["structuredContent"]["sandbox_id"]
        if not re.fullmatch(r"[0-9a-f]{32}", sb):
            return f"sandbox id is not 128 bits of hex: {sb!r}"
        listed_b, _ = call_tool(b, "sandbox_list", {})
        if sb in json.dumps(listed_b):
            return "session B sees session A's sandbox in sandbox_list"
        stop_b, _ = call_tool(b, "sandbox_stop", {"sandbox_id": sb})
        if not stop_b.get("isError"):
            return f"session B stopped session A's sandbox: {stop_b}"
        run_b, _ = call_tool(b, "run_command", {"command": "echo x", "sandbox_id": sb})
        if not run_b.get("isError"):
            return f"session B ran a command in session A's sandbox: {run_b}"
        listed_a, _ = call_tool(a, "sandbox_list", {})
        if sb not in json.dumps(listed_a):
            return "session A lost its sandbox"
        run_a, _ = call_tool(a, "run_command", {"command": "echo mine", "sandbox_id": sb})
        if run_a.get("structuredContent", {}).get("stdout") != "mine\n":
            return f"session A cannot use its sandbox: {run_a}"

    delete(a)
    delete(b)


class Reader(threading.Thread):
    """Reads an SSE stream (a GET, or a POST answered with SSE) in the
    background; .messages grows, .done is set when the stream ends."""

    def __init__(self, method, sid, body=None, accept="text/event-stream"):
        super().__init__(daemon=True)
        self.messages, self.status, self.done, self.error = [], None, threading.Event(), None
        self.c = connect(60)
        h = {"Accept": accept, "Mcp-Session-Id": sid}
        if body is not None:
            h["Content-Type"] = "application/json"
        send(self.c, method, json.dumps(body).encode() if body is not None else None, h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("content-type", "")
        self.start()

    def run(self):
        try:
            if self.ctype.startswith("text/event-stream"):
                for ev in mcphttp.parse_sse(iter(self.r.readline, b"")):
                    self.messages += mcphttp.messages_of([ev])
        except Exception as e:  # noqa: BLE001
            self.error = e
        self.done.set()

    def close(self):
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.c.close()


def get_stream_tests():
    sid = open_session()
    g = Reader("GET", sid)

    @nt.test("get_stream")
    def _():
        if g.status != 200 or not g.ctype.startswith("text/event-stream"):
            return f"GET: HTTP {g.status} {g.ctype}"
        second = request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid})
        if second.status != 409:
            return f"a second GET stream: {second}"
        rpc(sid, "logging/setLevel", {"level": "info"}, accept="application/json")
        # Answered as JSON: the log has no POST stream to ride, so it goes
        # on the GET stream.
        res, r = call_tool(sid, "sandbox_create", {"language": "sh"}, accept="application/json")
        if not wait_until(lambda: any(m.get("method") == "notifications/message"
                                      for m in g.messages), 10):
            return f"no notifications/message on the GET stream: {g.messages}"
        if any("id" in m for m in g.messages):
            return f"a response went out on the GET stream: {g.messages}"

    @nt.test("delete_ends_get_stream")
    def _():
        r = delete(sid)
        if r.status not in (200, 204):
            return f"DELETE: {r}"
        if not g.done.wait(10):
            return "the GET stream is still open 10 s after DELETE"

    g.close()


def cancel_tests():
    # Each test has a session of its own and ends it: DELETE returns once
    # every call of the session has finished, so no sandbox teardown runs
    # on while the next test creates one.
    sid = open_session()

    @nt.test("cancel_ends_post_stream")
    def _():
        body = {"jsonrpc": "2.0", "id": 501, "method": "tools/call",
                "params": {"name": "run_command",
                           "arguments": {"command": "sleep 4241", "timeout_s": 60}}}
        s = Reader("POST", sid, body, accept=BOTH)
        if not wait_until(lambda: pgrep("sleep 4241"), 20):
            return "the command never started"
        n = post(sid, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 501, "reason": "test"}})
        if n.status != 202:
            return f"notifications/cancelled: {n}"
        if not s.done.wait(10):
            return "the POST stream is still open 10 s after the cancellation"
        if any(m.get("id") == 501 for m in s.messages):
            return "a response was sent for a cancelled request"
        if not wait_until(lambda: not pgrep("sleep 4241"), 10):
            return "the cancelled command still runs"

    delete(sid)
    sid = open_session()

    @nt.test("duplicate_request_id_400")
    def _():
        body = {"jsonrpc": "2.0", "id": 601, "method": "tools/call",
                "params": {"name": "run_command",
                           "arguments": {"command": "sleep 4242", "timeout_s": 60}}}
        s = Reader("POST", sid, body, accept=BOTH)
        if not wait_until(lambda: pgrep("sleep 4242"), 20):
            return "the command never started"
        r, _ = rpc(sid, "ping", rid=601)
        post(sid, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 601}})
        s.done.wait(10)
        return expect(r, 400, "a second request with a running id")

    # The positive side: an id is the client's again once its response
    # came.  A client that numbers every request 1 (the response read
    # before the next request goes out) must never be told the id is still
    # running: the server freed the id only after sending the response,
    # and under load the next request came first (drain's
    # wrong_prefix_sandbox_id_unknown, 2026-11-29).
    @nt.test("answered_id_reusable_at_once")
    def _():
        for i in range(300):
            r, resp = rpc(sid, "tools/call", {"name": "sandbox_list", "arguments": {}}, rid=602)
            if r.status != 200 or resp is None or "result" not in resp:
                return f"call {i + 1} of 300 with id 602: {r}"
        return None

    delete(sid)


def delete_tests():
    sid = open_session()

    @nt.test("delete_stops_sandboxes")
    def _():
        res, _ = call_tool(sid, "sandbox_create", {"language": "sh"})
        sb = res["structuredContent"]["sandbox_id"]
        body = {"jsonrpc": "2.0", "id": 701, "method": "tools/call",
                "params": {"name": "run_command",
                           "arguments": {"command": "sleep 4243", "sandbox_id": sb,
                                         "timeout_s": 120}}}
        s = Reader("POST", sid, body, accept=BOTH)
        if not wait_until(lambda: pgrep("sleep 4243"), 20):
            return "the command never started"
        t0 = time.monotonic()
        r = delete(sid)
        if r.status not in (200, 204):
            return f"DELETE: {r}"
        if pgrep("sleep 4243"):
            return "the session's processes survive its DELETE"
        if not s.done.wait(10):
            return "the running call's stream is still open after DELETE"
        if time.monotonic() - t0 > 30:
            return "DELETE took more than 30 s"
        r, _ = rpc(sid, "ping")
        if r.status != 404:
            return f"the ended session still answers: {r}"
        r = delete(sid)
        return expect(r, 404, "a second DELETE")

    @nt.test("delete_without_session_400")
    def _():
        return expect(delete(None), 400)


def load_tests(sid):
    @nt.test("many_connections")
    def _():
        for i in range(100):
            r, resp = rpc(sid, "ping", timeout=10)
            if r.status != 200 or resp is None:
                return f"connection {i}: {r}"

    @nt.test("idle_and_slow_connections_do_not_starve")
    def _():
        socks = []
        try:
            for i in range(40):
                s = socket.create_connection((ADDR, PORT), timeout=5)
                if i % 2:  # half send a request line and stall
                    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost:%d\r\nContent-Le" % PORT)
                socks.append(s)
            t0 = time.monotonic()
            r, resp = rpc(sid, "ping", timeout=10)
            if r.status != 200 or resp is None:
                return f"ping with 40 stalled connections open: {r}"
            if time.monotonic() - t0 > 2:
                return f"ping took {time.monotonic() - t0:.1f} s with stalled connections open"
        finally:
            for s in socks:
                s.close()

    @nt.test("per_ip_connection_limit")
    def _():
        socks, closed = [], 0
        try:
            for _ in range(72):
                socks.append(socket.create_connection((ADDR, PORT), timeout=5))
            time.sleep(0.5)
            for s in socks:  # the server hangs up on those over its per-IP limit
                s.settimeout(0.05)
                try:
                    if s.recv(1) == b"":
                        closed += 1
                except (socket.timeout, ConnectionError):
                    pass
        finally:
            for s in socks:
                s.close()
        if closed < 72 - 64:
            return f"only {closed} of 72 connections from one address were refused (limit 64)"
        def ping_ok():
            try:
                return rpc(sid, "ping", timeout=10)[0].status == 200
            except (ConnectionError, http.client.HTTPException, socket.timeout):
                return False  # the server has not seen every close yet

        if not wait_until(ping_ok, 10):
            return "the server does not answer once the connections are closed"

    @nt.test("session_cap_503")
    def _():
        made, refused = [], None
        try:
            for _ in range(70):
                r, _ = rpc(None, "initialize", INIT, accept="application/json")
                if r.status == 200:
                    made.append(r.headers["mcp-session-id"])
                else:
                    refused = r
                    break
            if refused is None or refused.status != 503 or b"too many sessions" not in refused.body:
                return f"expected a clear 503 after at most 64 sessions, made {len(made)}: {refused}"
        finally:
            for m in made:
                delete(m)
        r, _ = rpc(None, "initialize", INIT, accept="application/json")
        if r.status != 200:
            return f"no new session after the others ended: {r}"
        delete(r.headers["mcp-session-id"])


# --------------------------------------------------------------- token mode


def token_tests():
    global TOKEN
    good = TOKEN

    def init_with(auth, host=None):
        global TOKEN
        TOKEN = None
        try:
            extra = {"Authorization": auth} if auth is not None else {}
            r, _ = rpc(None, "initialize", INIT, accept="application/json", extra=extra, host=host)
        finally:
            TOKEN = good
        if r.status == 200:
            delete(r.headers["mcp-session-id"])
        return r

    @nt.test("token_missing_401")
    def _():
        r = init_with(None)
        if r.status != 401 or not r.headers.get("www-authenticate", "").startswith("Bearer"):
            return f"expected 401 with WWW-Authenticate: Bearer: {r} {r.headers}"

    @nt.test("token_wrong_401")
    def _():
        for auth in (f"Bearer {good[:-1]}x", f"Bearer {good}x", f"Bearer {good[:-1]}", "Bearer ",
                     f"Basic {good}", good, f"Bearer {good.upper() if good != good.upper() else good.lower()}"):
            r = init_with(auth)
            if r.status != 401:
                return f"Authorization {auth[:12]!r}...: {r}"

    @nt.test("token_right_200")
    def _():
        for auth in (f"Bearer {good}", f"bearer {good}"):
            r = init_with(auth)
            if r.status != 200:
                return f"Authorization {auth[:12]!r}...: {r}"

    @nt.test("token_every_request")
    def _():
        sid = open_session()
        global TOKEN
        TOKEN = None
        try:
            r, _ = rpc(sid, "ping")
            if r.status != 401:
                return f"a request in a session without the token: {r}"
        finally:
            TOKEN = good
        r, resp = rpc(sid, "ping")
        delete(sid)
        if r.status != 200 or resp is None:
            return f"with the token: {r}"

    @nt.test("token_host_checked_first")
    def _():
        r = init_with(f"Bearer {good}", host="evil.example.com")
        return expect(r, 403)


# ------------------------------------------------- hold and expire modes


def hold():
    """A session with a background process (sleep 4247) and a running call
    (sleep 4248) in its sandbox; then this client goes away without a
    DELETE.  The caller stops the server and looks for the markers."""

    @nt.test("hold_setup")
    def _():
        sid = open_session()
        res, _ = call_tool(sid, "sandbox_create", {"language": "sh"})
        sb = res["structuredContent"]["sandbox_id"]
        call_tool(sid, "run_command", {"command": "sleep 4247 >/dev/null 2>&1 &", "sandbox_id": sb})
        body = {"jsonrpc": "2.0", "id": 801, "method": "tools/call",
                "params": {"name": "run_command",
                           "arguments": {"command": "sleep 4248", "sandbox_id": sb,
                                         "timeout_s": 300}}}
        Reader("POST", sid, body, accept=BOTH)
        if not wait_until(lambda: pgrep("sleep 4247") and pgrep("sleep 4248"), 20):
            return "the marker processes never started"


def expire():
    """Run against a server with --session-timeout 2."""

    @nt.test("unused_session_expires")
    def _():
        kept = open_session()
        g = Reader("GET", kept)  # an open GET stream keeps a session alive
        sid = open_session()
        res, _ = call_tool(sid, "sandbox_create", {"language": "sh"})
        sb = res["structuredContent"]["sandbox_id"]
        call_tool(sid, "run_command", {"command": "sleep 4246 >/dev/null 2>&1 &", "sandbox_id": sb})
        if not pgrep("sleep 4246"):
            return "the marker process never started"
        if not wait_until(lambda: not pgrep("sleep 4246"), 30):
            return "the unused session's sandbox still runs after 30 s"
        r, _ = rpc(sid, "ping")
        if r.status != 404:
            return f"the expired session still answers: {r}"
        r, resp = rpc(kept, "ping")
        g.close()
        if r.status != 200 or resp is None:
            return f"a session with an open GET stream expired: {r}"
        delete(kept)


if MODE == "main":
    main_tests()
elif MODE == "token":
    token_tests()
elif MODE == "hold":
    hold()
elif MODE == "expire":
    expire()
else:
    sys.exit(f"unknown mode {MODE}")
nt.finish()
