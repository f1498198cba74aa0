#!/usr/bin/env python3
"""Raw HTTP checks of MCP 2026-07-28 over `nsbox serve --http`: requests
without initialize and without a session (the stateless path), the request
metadata headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name,
Mcp-Param-*), and tenants (one per token of --token-file).

usage: stateless_http.py main PORT TOKEN_A TOKEN_B
           a server with --token-file holding TOKEN_A and TOKEN_B and
           --max-sandboxes-per-tenant 2
       stateless_http.py idle PORT TOKEN
           a server with --stateless-idle-timeout 3

Prints one line per test: PASS: SUITE/NAME or FAIL: SUITE/NAME: why.
Exits 1 when a test failed."""
import base64
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="mcp_http", prefix="stateless_")

MODE, PORT = sys.argv[1], int(sys.argv[2])
TOKENS = sys.argv[3:]
A = TOKENS[0] if TOKENS else None
B = TOKENS[1] if len(TOKENS) > 1 else None
V = "2026-07-28"
BOTH = mcphttp.BOTH
HEADER = "Mcp-Param-Sandbox-Id"  # sandbox_id's x-mcp-header (mcp/tools/args.c)


def meta(extra=None):
    m = {"io.modelcontextprotocol/protocolVersion": V,
         "io.modelcontextprotocol/clientInfo": {"name": "stateless_http.py", "version": "1"},
         "io.modelcontextprotocol/clientCapabilities": {}}
    m.update(extra or {})
    return m


def headers_for(method, params, token, accept=BOTH):
    h = {"Host": f"localhost:{PORT}", "Content-Type": "application/json", "Accept": accept,
         "MCP-Protocol-Version": V, "Mcp-Method": method}
    if token:
        h["Authorization"] = f"Bearer {token}"
    name = params.get("name") if method in ("tools/call", "prompts/get") else \
        params.get("uri") if method == "resources/read" else None
    if name is not None:
        h["Mcp-Name"] = name
    return h


def post_raw(body, headers, timeout=60):
    """POSTs body (a dict, or bytes as they are) with exactly these headers."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return mcphttp.request(PORT, "POST", headers=headers, body=data, timeout=timeout)


def rpc(method, params=None, token=A, rid=1, accept=BOTH, headers=None, drop=(), m=None,
        timeout=60):
    """A modern request with conformant headers (headers overrides, drop
    removes); returns (Resp, the response message or None)."""
    params = dict(params or {})
    params["_meta"] = meta(m)
    h = headers_for(method, params, token, accept)
    h.update(headers or {})
    for k in drop:
        h.pop(k, None)
    r = post_raw({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, h, timeout)
    return r, r.response(rid)


def call(name, args, token=A, rid=1, **kw):
    r, resp = rpc("tools/call", {"name": name, "arguments": args}, token, rid, **kw)
    if resp is None or "result" not in resp:
        raise RuntimeError(f"{name}: no result: {r}")
    return resp["result"], r


def ok(res):
    return not res.get("isError") and res.get("structuredContent") is not None


def create(token=A):
    res, _ = call("sandbox_create", {"language": "sh"}, token)
    if not ok(res):
        raise RuntimeError(f"sandbox_create: {res}")
    return res["structuredContent"]["sandbox_id"]


def run_in(sb, code, token=A, rid=1, **kw):
    return call("execute_code", {"sandbox_id": sb, "language": "sh", "code": code}, token, rid,
                headers={HEADER: sb}, **kw)


def expect_error(r, resp, status, code):
    if r.status != status:
        return f"expected HTTP {status}, got {r}"
    if resp is None or resp.get("error", {}).get("code") != code:
        return f"expected error {code} echoing the id, got {r}"
    return None


# ---- legacy (2025-11-25) sessions, to show tenants apply to them too

INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "stateless_http.py", "version": "1"}}


def legacy(sid, method, params, token, rid=1):
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if rid is not None:
        body["id"] = rid
    r = mcphttp.post(PORT, body, sid, "2025-11-25" if sid else None,
                     headers={"Authorization": f"Bearer {token}"})
    return r, r.response(rid)


def legacy_session(token):
    r, resp = legacy(None, "initialize", INIT, token)
    sid = r.headers.get("mcp-session-id")
    if r.status != 200 or not sid:
        raise RuntimeError(f"initialize: {r}")
    legacy(sid, "notifications/initialized", {}, token, rid=None)
    return sid


def legacy_call(sid, name, args, token):
    r, resp = legacy(sid, "tools/call", {"name": name, "arguments": args}, token)
    if resp is None or "result" not in resp:
        raise RuntimeError(f"{name} over 2025-11-25: {r}")
    return resp["result"]


# ---------------------------------------------------------------- main


def workflow_tests():
    @nt.test("discover")
    def _():
        r, resp = rpc("server/discover")
        if r.status != 200 or resp is None or "result" not in resp:
            return f"no result: {r}"
        if "mcp-session-id" in r.headers:
            return "a stateless answer carries Mcp-Session-Id"
        if V not in resp["result"].get("supportedVersions", []):
            return f"supportedVersions lacks {V}: {resp}"
        return None

    @nt.test("tools_list")
    def _():
        r, resp = rpc("tools/list", rid="list-1", accept="application/json")
        names = [t["name"] for t in (resp or {}).get("result", {}).get("tools", [])]
        if r.status != 200 or "execute_code" not in names:
            return f"no tools: {r}"
        if "mcp-session-id" in r.headers:
            return "a stateless answer carries Mcp-Session-Id"
        return None

    @nt.test("workflow_without_initialize")
    def _():
        sb = create()
        if len(sb) != 32 or any(ch not in "0123456789abcdef" for ch in sb):
            return f"the handle is not 128 bits of hex: {sb}"
        res, _ = run_in(sb, "echo stateless > /tmp/out.txt; cat /tmp/out.txt")
        if res.get("structuredContent", {}).get("stdout") != "stateless\n":
            return f"execute_code: {res}"
        res, _ = call("read_file", {"sandbox_id": sb, "path": "/tmp/out.txt"},
                      headers={HEADER: sb})
        if "stateless" not in json.dumps(res):
            return f"read_file: {res}"
        res, _ = call("sandbox_stop", {"sandbox_id": sb}, headers={HEADER: sb})
        if res.get("isError"):
            return f"sandbox_stop: {res}"
        res, _ = run_in(sb, "echo again")
        if not res.get("isError"):
            return f"the stopped sandbox still runs code: {res}"
        return None


def header_tests():
    @nt.test("version_header_missing")
    def _():
        r, resp = rpc("tools/list", rid=11, drop=("MCP-Protocol-Version",))
        return expect_error(r, resp, 400, -32020)

    @nt.test("version_header_mismatch")
    def _():
        r, resp = rpc("tools/list", rid=12, headers={"MCP-Protocol-Version": "2025-11-25"})
        return expect_error(r, resp, 400, -32020)

    @nt.test("version_meta_missing")
    def _():
        h = headers_for("tools/list", {}, A)
        r = post_raw({"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": {}}, h)
        return expect_error(r, r.response(13), 400, -32602)

    @nt.test("version_unsupported")
    def _():
        r, resp = rpc("tools/list", rid=14, headers={"MCP-Protocol-Version": "2099-01-01"},
                      m={"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
        why = expect_error(r, resp, 400, -32022)
        data = (resp or {}).get("error", {}).get("data", {})
        if why is None and (data.get("requested") != "2099-01-01" or V not in data.get("supported", [])):
            why = f"UnsupportedProtocolVersionError data: {data}"
        return why

    @nt.test("method_header_missing")
    def _():
        r, resp = rpc("tools/list", rid=15, drop=("Mcp-Method",))
        return expect_error(r, resp, 400, -32020)

    @nt.test("method_header_mismatch")
    def _():
        r, resp = rpc("tools/list", rid=16, headers={"Mcp-Method": "TOOLS/LIST"})
        return expect_error(r, resp, 400, -32020)

    @nt.test("name_header_missing")
    def _():
        r, resp = rpc("tools/call", {"name": "sandbox_list", "arguments": {}}, rid=17,
                      drop=("Mcp-Name",))
        return expect_error(r, resp, 400, -32020)

    @nt.test("name_header_mismatch")
    def _():
        r, resp = rpc("tools/call", {"name": "sandbox_list", "arguments": {}}, rid=18,
                      headers={"Mcp-Name": "sandbox_stop"})
        return expect_error(r, resp, 400, -32020)

    @nt.test("name_header_base64")
    def _():
        enc = "=?base64?" + base64.b64encode(b"sandbox_list").decode() + "?="
        r, resp = rpc("tools/call", {"name": "sandbox_list", "arguments": {}}, rid=19,
                      headers={"Mcp-Name": enc})
        if r.status != 200 or resp is None or "result" not in resp:
            return f"a base64-encoded Mcp-Name was refused: {r}"
        bad = "=?base64?c2FuZGJ!!!veF9saXN0?="  # no base64
        r, resp = rpc("tools/call", {"name": "sandbox_list", "arguments": {}}, rid=20,
                      headers={"Mcp-Name": bad})
        return expect_error(r, resp, 400, -32020)

    @nt.test("unknown_method_404")
    def _():
        for i, method in enumerate(["unknown/method", "initialize", "ping", "logging/setLevel"]):
            r, resp = rpc(method, rid=30 + i)
            why = expect_error(r, resp, 404, -32601)
            if why:
                return f"{method}: {why}"
        return None

    @nt.test("param_header")
    def _():
        r, resp = rpc("tools/list", rid=40)
        tools = {t["name"]: t for t in resp["result"]["tools"]}
        prop = tools["execute_code"]["inputSchema"]["properties"].get("sandbox_id", {})
        if prop.get("x-mcp-header") != HEADER[len("Mcp-Param-"):]:
            return f"execute_code's sandbox_id has no x-mcp-header {HEADER}: {prop}"
        args = {"sandbox_id": "0" * 32, "code": "true", "language": "sh"}
        r, resp = rpc("tools/call", {"name": "execute_code", "arguments": args}, rid=41)
        why = expect_error(r, resp, 400, -32020)  # the header is missing
        if why:
            return f"missing {HEADER}: {why}"
        r, resp = rpc("tools/call", {"name": "execute_code", "arguments": args}, rid=42,
                      headers={HEADER: "1" * 32})
        why = expect_error(r, resp, 400, -32020)
        if why:
            return f"mismatched {HEADER}: {why}"
        enc = "=?base64?" + base64.b64encode(("0" * 32).encode()).decode() + "?="
        r, resp = rpc("tools/call", {"name": "execute_code", "arguments": args}, rid=43,
                      headers={HEADER.lower(): enc})
        if resp is None or "result" not in resp or not resp["result"].get("isError"):
            return f"a matching (base64) header: expected a tool error (no such sandbox): {r}"
        return None


def first_sse_event(method, params, rid, token=A, wait=5):
    """POSTs a modern request asking for SSE, reads its first event, then
    closes the connection (which cancels it)."""
    params = dict(params)
    params["_meta"] = meta()
    h = headers_for(method, params, token, "text/event-stream")
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    c = mcphttp.connect(PORT, wait)
    try:
        mcphttp.send(c, "POST", "/mcp", h, body)
        for ev in mcphttp.parse_sse(iter(c.getresponse().readline, b"")):
            for m in mcphttp.messages_of([ev]):
                return m
        raise RuntimeError("the stream ended without a message")
    finally:
        c.close()


def listen_tests():
    @nt.test("listen_ack_names_the_clients_id")
    def _():
        # Two listens of one tenant with the same id, one after the other:
        # the subscription is named by the client's id, not nsbox's own,
        # and closing the stream ends it (else the second would find the
        # id taken or the slots full).
        for _ in range(3):
            ev = first_sse_event("subscriptions/listen", {"notifications": {}}, "L1")
            sub = ev.get("params", {}).get("_meta", {}).get("io.modelcontextprotocol/subscriptionId")
            if ev.get("method") != "notifications/subscriptions/acknowledged" or sub != "L1":
                return f"first event: {ev}"
        return None


def tenant_tests():
    state = {}

    @nt.test("tenant_b_cannot_use_a_handle")
    def _():
        sb = state["a_sb"] = create(A)
        res, _ = run_in(sb, "echo from-b", token=B)
        if not res.get("isError") or "from-b" in json.dumps(res):
            return f"tenant B ran code in tenant A's sandbox: {res}"
        res, _ = call("sandbox_stop", {"sandbox_id": sb}, token=B,
                      headers={HEADER: sb})
        if not res.get("isError"):
            return f"tenant B stopped tenant A's sandbox: {res}"
        res, _ = run_in(sb, "echo mine")
        if res.get("structuredContent", {}).get("stdout") != "mine\n":
            return f"A's sandbox after B's attempts: {res}"
        return None

    @nt.test("tenant_b_legacy_cannot_use_a_handle")
    def _():
        sid = legacy_session(B)
        res = legacy_call(sid, "execute_code",
                          {"sandbox_id": state["a_sb"], "code": "echo x", "language": "sh"}, B)
        if not res.get("isError"):
            return f"tenant B's 2025-11-25 session ran code in A's sandbox: {res}"
        return None

    @nt.test("tenant_b_cannot_use_a_session")
    def _():
        sid = state["a_sid"] = legacy_session(A)
        r, _ = legacy(sid, "tools/list", {}, B, rid=5)
        if r.status != 404:
            return f"tenant B's token on A's session: expected 404, got {r}"
        r, resp = legacy(sid, "tools/list", {}, A, rid=6)
        if r.status != 200 or resp is None or "result" not in resp:
            return f"A's own session after that: {r}"
        return None

    @nt.test("tenant_cap")
    def _():
        # A has a stateless sandbox; one more in A's legacy session reaches 2.
        res = legacy_call(state["a_sid"], "sandbox_create", {"language": "sh"}, A)
        if res.get("isError"):
            return f"second sandbox of A refused: {res}"
        res, _ = call("sandbox_create", {"language": "sh"}, A)
        text = json.dumps(res)
        if not res.get("isError") or "per-tenant" not in text:
            return f"a third sandbox of tenant A: expected a per-tenant limit error: {res}"
        b = create(B)  # B's cap is its own
        call("sandbox_stop", {"sandbox_id": b}, B, headers={HEADER: b})
        call("sandbox_stop", {"sandbox_id": state["a_sb"]}, A,
             headers={HEADER: state["a_sb"]})
        again = create(A)  # a slot is free again
        call("sandbox_stop", {"sandbox_id": again}, A, headers={HEADER: again})
        return None


def concurrency_tests():
    @nt.test("same_ids_two_clients")
    def _():
        sb = create(A)
        out, errs = {}, []

        def client(tag, accept):
            try:
                res, r = run_in(sb, f"sleep 1; echo {tag}", rid=7, accept=accept,
                                m={"progressToken": "p"})
                out[tag] = (res.get("structuredContent", {}).get("stdout"), r)
            except Exception as e:  # noqa: BLE001
                errs.append(f"{tag}: {e}")

        # One sandbox runs one command at a time: the calls queue but both
        # are in flight in the tenant session with id 7 at once.
        ts = [threading.Thread(target=client, args=(f"client{i}", BOTH if i % 2 else
                                                    "application/json")) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        call("sandbox_stop", {"sandbox_id": sb}, A, headers={HEADER: sb})
        if errs:
            return "; ".join(errs)
        for tag, (stdout, r) in out.items():
            if stdout != f"{tag}\n":
                return f"{tag} got {stdout!r}: {r}"
            for msg in r.messages:
                if msg.get("method") == "notifications/progress" and \
                        msg["params"].get("progressToken") != "p":
                    return f"{tag}: a progress notification with another token: {msg}"
        return None


def heartbeat(sb):
    """The heartbeat file.  It queues behind the running call (one command
    at a time per sandbox): a call that was not cancelled makes this time
    out (the run itself would go on for 300 s)."""
    res, _ = run_in(sb, "cat /tmp/hb 2>/dev/null || echo none", accept="application/json",
                    timeout=20)
    return res.get("structuredContent", {}).get("stdout")


def cancel_tests():
    for accept in ("text/event-stream", "application/json"):
        @nt.test(f"close_stream_cancels_{'sse' if 'event' in accept else 'json'}")
        def _(accept=accept):
            sb = create(A)
            try:
                params = {"name": "execute_code", "arguments": {
                    "sandbox_id": sb, "language": "sh", "timeout_s": 300,
                    "code": "i=0; while :; do i=$((i+1)); echo $i > /tmp/hb; sleep 0.2; done"}}
                params["_meta"] = meta()
                h = headers_for("tools/call", params, A, accept)
                h[HEADER] = sb
                body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                                   "params": params}).encode()
                c = mcphttp.connect(PORT)
                mcphttp.send(c, "POST", "/mcp", h, body)
                time.sleep(2.5)
                c.close()  # the client gives up: MCP 2026-07-28 says that cancels
                start = time.monotonic()
                first = heartbeat(sb)  # waits for the run to be killed
                took = time.monotonic() - start
                time.sleep(1.2)
                second = heartbeat(sb)
                if first in (None, "none\n") or int(first) < 5:
                    return f"the run never beat: {first!r}"
                if first != second:
                    return f"the heartbeat goes on after the stream closed: {first!r} {second!r}"
                if took > 15:
                    return f"the run was killed {took:.1f} s after the stream closed"
                return None
            finally:
                call("sandbox_stop", {"sandbox_id": sb}, A, headers={HEADER: sb})


def pgrep(pattern):
    """Pids whose whole command line matches pattern (tests/markers.md:
    mcp_http's markers are sleep 4240-4249)."""
    out = subprocess.run(["pgrep", "-f", f"^{pattern}$"], capture_output=True, text=True).stdout
    return out.split()


def hold_tests():
    """Leaves a stateless sandbox with a background process (sleep 4245):
    the caller stops the server and looks for the marker."""

    @nt.test("hold_setup")
    def _():
        sb = create(A)
        run_in(sb, "sleep 4245 >/dev/null 2>&1 &")
        if not pgrep("sleep 4245"):
            return "the marker process never started"
        return None


def idle_tests():
    @nt.test("idle_sandbox_stopped")
    def _():
        sb = create(A)
        keep = create(A)
        res, _ = run_in(sb, "sleep 4244 >/dev/null 2>&1 & echo alive")
        if res.get("structuredContent", {}).get("stdout") != "alive\n" or not pgrep("sleep 4244"):
            return f"{res}"
        # keep is used every second; sb not at all: after 3 s (+ the
        # reaper's 1 s tick) sb is stopped and keep is not.
        for _ in range(7):
            time.sleep(1)
            run_in(keep, "true")
        res, _ = run_in(sb, "echo still")
        if not res.get("isError"):
            return f"an idle stateless sandbox still runs after the idle timeout: {res}"
        if pgrep("sleep 4244"):
            return "the idle sandbox's processes survive it"
        res, _ = run_in(keep, "echo kept")
        if res.get("structuredContent", {}).get("stdout") != "kept\n":
            return f"a sandbox in use was stopped: {res}"
        return None


if MODE == "main":
    workflow_tests()
    header_tests()
    listen_tests()
    tenant_tests()
    concurrency_tests()
    cancel_tests()
    hold_tests()
elif MODE == "idle":
    idle_tests()
else:
    sys.exit(f"unknown mode {MODE}")
nt.finish()
