#!/usr/bin/env python3
"""MCP 2026-07-28 over stdio, raw newline-delimited JSON-RPC, byte by byte
(the client libraries that speak it are in tests/clients/): a client that
never says initialize.

The whole workflow with per-request _meta (server/discover, tools/list with
its caching hints and x-mcp-header, sandbox_create, execute_code, write_file,
read_file, sandbox_stop), resultType and serverInfo on every modern result,
UnsupportedProtocolVersionError with its data, malformed _meta, the methods
the revision removed, the log level per request, cancellation, the
subscriptions/listen of a server whose lists never change, and a legacy
(initialize) client on the same stdio beside it, whose results stay as they
were.

Prints `PASS: SUITE/name` or `FAIL: SUITE/name: why` per test (plus "# ..."
notes); exits 1 when any failed.  Environment as tests/mcp/raw_protocol.py
(NSBOX, NSBOX_STORE, SUITE, MCP_LOG_DIR).
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_protocol as rp  # noqa: E402  (the Server harness)
from raw_protocol import Server, error_of, pgrep, short, wait_for  # noqa: E402
import nsbox_test as nt  # noqa: E402  (on the path raw_protocol set)
from nsbox_test import Check, ok  # noqa: E402

nt.configure(default_suite="mcp_stdio", prefix="modern/")
MODERN = "2026-07-28"
LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

def meta(version=MODERN, caps=True, level=None, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientInfo": {"name": "nsbox-modern-tests", "version": "1.0"}}
    if version is None:
        del m["io.modelcontextprotocol/protocolVersion"]
    if caps:
        m["io.modelcontextprotocol/clientCapabilities"] = {}
    if level:
        m["io.modelcontextprotocol/logLevel"] = level
    m.update(extra)
    return m


def modern_result(m, what):
    """The result of a modern response, checked for resultType and serverInfo."""
    ok(isinstance(m, dict) and "result" in m and "error" not in m, lambda: f"{what} -> {short(m)}")
    r = m["result"]
    ok(r.get("resultType") == "complete", lambda: f"{what}: resultType {short(r.get('resultType'))}, want complete")
    info = (r.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") or {}
    ok(info.get("name") == "nsbox" and isinstance(info.get("version"), str),
       lambda: f"{what}: _meta serverInfo {short(r.get('_meta'))}")
    return r


def legacy_result(m, what):
    ok(isinstance(m, dict) and "result" in m and "error" not in m, lambda: f"{what} -> {short(m)}")
    r = m["result"]
    for k in ("resultType", "ttlMs", "cacheScope"):
        ok(k not in r, lambda: f"{what}: a legacy result carries {k}: {short(r)}")
    ok("io.modelcontextprotocol/serverInfo" not in (r.get("_meta") or {}),
       lambda: f"{what}: a legacy result carries serverInfo in _meta")
    return r


def call(s, name, args, level=None, timeout=120, **extra):
    """tools/call as a modern request; returns (result, notifications sent meanwhile)."""
    before = len(s.notes)
    m = s.request("tools/call", {"name": name, "arguments": args, "_meta": meta(level=level, **extra)},
                  timeout=timeout)
    r = modern_result(m, f"tools/call {name}")
    ok(r.get("isError") is False, lambda: f"tools/call {name} {short(args)} failed: {short(r)}")
    return r, s.notes[before:]


def logs(notes):
    return [n for n in notes if n.get("method") == "notifications/message"]


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


SRV = None


def server():
    """One server for most tests, never initialized (until legacy_side_by_side)."""
    global SRV
    if SRV is None or not SRV.alive():
        SRV = Server("modern")
    return SRV


@test
def discover_without_initialize():
    s = server()
    r = modern_result(s.request("server/discover", {"_meta": meta()}), "server/discover")
    ok(r.get("supportedVersions") == [MODERN] + LEGACY,
       lambda: f"supportedVersions {short(r.get('supportedVersions'))}")
    print(f"# modern: server/discover without initialize: supportedVersions {r['supportedVersions']}, "
          f"ttlMs {r.get('ttlMs')}, cacheScope {r.get('cacheScope')}", flush=True)
    caps = r.get("capabilities") or {}
    ok(isinstance(caps.get("tools"), dict), lambda: f"capabilities {short(caps)}")
    ok(isinstance(r.get("instructions"), str) and r["instructions"], "no instructions")
    ok(isinstance(r.get("ttlMs"), int) and r["ttlMs"] >= 0, lambda: f"ttlMs {short(r.get('ttlMs'))}")
    ok(r.get("cacheScope") in ("public", "private"), lambda: f"cacheScope {short(r.get('cacheScope'))}")
    # clientInfo is a SHOULD: a request without it is served.
    m = meta()
    del m["io.modelcontextprotocol/clientInfo"]
    modern_result(s.request("server/discover", {"_meta": m}), "server/discover without clientInfo")


@test
def tools_list_cacheable_with_headers():
    s = server()
    r = modern_result(s.request("tools/list", {"_meta": meta()}), "tools/list")
    ok(isinstance(r.get("ttlMs"), int) and r["ttlMs"] >= 0, lambda: f"ttlMs {short(r.get('ttlMs'))}")
    ok(r.get("cacheScope") in ("public", "private"), lambda: f"cacheScope {short(r.get('cacheScope'))}")
    names = [t.get("name") for t in r.get("tools", [])]
    missing = sorted(set(rp.TOOL_NAMES) - set(names))
    ok(not missing, lambda: f"tools/list lacks {missing}")
    with_id = 0
    for t in r["tools"]:
        props = (t.get("inputSchema") or {}).get("properties") or {}
        seen = set()
        for pname, p in props.items():
            h = p.get("x-mcp-header")
            if h is None:
                continue
            ok(TOKEN.match(h) and h.lower() not in seen, lambda: f"{t['name']}.{pname}: x-mcp-header {h!r}")
            ok(p.get("type") in ("string", "integer", "boolean"), lambda: f"{t['name']}.{pname}: x-mcp-header on {p.get('type')}")
            seen.add(h.lower())
        if "sandbox_id" in props:
            with_id += 1
            ok(props["sandbox_id"].get("x-mcp-header") == "Sandbox-Id",
               lambda: f"{t['name']}.sandbox_id: x-mcp-header {short(props['sandbox_id'].get('x-mcp-header'))}")
    ok(with_id >= 8, lambda: f"only {with_id} tools take sandbox_id")
    again = modern_result(s.request("tools/list", {"_meta": meta()}), "tools/list again")
    ok([t.get("name") for t in again["tools"]] == names, "tools/list changed its order between calls")


@test
def workflow_without_initialize():
    s = server()
    r, _ = call(s, "sandbox_create", {"language": "python"})
    sid = (r.get("structuredContent") or {}).get("sandbox_id")
    ok(isinstance(sid, str) and len(sid) >= 32, lambda: f"sandbox_create -> {short(r)}")
    try:
        r, notes = call(s, "execute_code", {"sandbox_id": sid, "code": "open('made.txt','w').write('from code')\nprint(6*7)"},
                        progressToken="p-modern")
        sc = r.get("structuredContent") or {}
        ok(sc.get("stdout") == "42\n" and sc.get("status") == "ok", lambda: f"execute_code -> {short(sc)}")
        r, _ = call(s, "write_file", {"sandbox_id": sid, "path": "/workspace/in.txt", "content": "hello modern"})
        r, _ = call(s, "read_file", {"sandbox_id": sid, "path": "/workspace/in.txt"})
        ok("hello modern" in json.dumps(r), lambda: f"read_file in.txt -> {short(r)}")
        r, _ = call(s, "read_file", {"sandbox_id": sid, "path": "/workspace/made.txt"})
        ok("from code" in json.dumps(r), lambda: f"read_file made.txt -> {short(r)}")
    finally:
        r, _ = call(s, "sandbox_stop", {"sandbox_id": sid})
    m = s.request("tools/call", {"name": "execute_code", "arguments": {"sandbox_id": sid, "code": "print(1)"},
                                 "_meta": meta()})
    r = modern_result(m, "execute_code in a stopped sandbox")
    ok(r.get("isError") is True, lambda: f"a stopped sandbox still ran code: {short(r)}")


@test
def unsupported_version_error():
    s = server()
    for v, i in (("1900-01-01", "uv-1"), ("v999.0.0", 31), (LEGACY[0], "uv-legacy")):
        m = s.request("server/discover", {"_meta": meta(version=v)}, id_=i)
        error_of(m, [-32022], [i], f"protocolVersion {v}")
        data = m["error"].get("data") or {}
        ok(data.get("requested") == v, lambda: f"{v}: data.requested {short(data)}")
        ok(MODERN in (data.get("supported") or []) and set(data["supported"]) <= set([MODERN] + LEGACY),
           lambda: f"{v}: data.supported {short(data)}")
    # On any method, before anything runs.
    i = s.fresh_id()
    s.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "run_command", "arguments": {"command": "sleep 3136"}, "_meta": meta(version="2099-01-01")}})
    error_of(s.recv(15), [-32022], [i], "tools/call with an unsupported version")
    ok(not pgrep("sleep 3136"), "a tools/call with an unsupported version ran")


@test
def malformed_meta_rejected():
    s = server()
    cases = [
        ("server/discover", {}, "server/discover without _meta"),
        ("server/discover", None, "server/discover without params"),
        ("tools/list", {"_meta": meta(version=None)}, "without protocolVersion"),
        ("tools/list", {"_meta": meta(caps=False)}, "without clientCapabilities"),
        ("tools/list", {"_meta": meta(**{"io.modelcontextprotocol/clientCapabilities": []})}, "clientCapabilities an array"),
        ("tools/list", {"_meta": meta(level="loud")}, "an unknown logLevel"),
        ("tools/call", {"name": "run_command", "arguments": {"command": "sleep 3136"}, "_meta": meta(caps=False)},
         "tools/call without clientCapabilities"),
        ("subscriptions/listen", {"notifications": {}}, "subscriptions/listen without _meta"),
    ]
    for method, params, what in cases:
        i = s.fresh_id()
        msg = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        s.send(msg)
        error_of(s.recv(15), [-32602], [i], what)
    ok(not pgrep("sleep 3136"), "a tools/call with malformed _meta ran")


@test
def removed_methods_not_found():
    s = server()
    for method, params in (("ping", {}), ("logging/setLevel", {"level": "debug"}),
                           ("initialize", {"protocolVersion": MODERN, "capabilities": {},
                                           "clientInfo": {"name": "x", "version": "1"}}),
                           ("resources/subscribe", {"uri": "nsbox://x"}), ("nsbox/nope", {})):
        i = s.fresh_id()
        s.send({"jsonrpc": "2.0", "id": i, "method": method, "params": dict(params, _meta=meta())})
        error_of(s.recv(15), [-32601], [i], f"modern {method}")


@test
def log_level_per_request():
    s = server()
    r, quiet = call(s, "sandbox_create", {"language": "sh"})
    sid1 = r["structuredContent"]["sandbox_id"]
    ok(not logs(quiet), lambda: f"notifications/message for a request without logLevel: {short(logs(quiet))}")
    r, loud = call(s, "sandbox_create", {"language": "sh"}, level="info")
    sid2 = r["structuredContent"]["sandbox_id"]
    got = logs(loud)
    ok(any(sid2 in json.dumps(n) for n in got), lambda: f"no notifications/message with logLevel info: {short(loud)}")
    ok(all(n["params"].get("level") in ("info", "notice", "warning", "error", "critical", "alert", "emergency")
           for n in got), lambda: f"a message below info: {short(got)}")
    r, above = call(s, "sandbox_create", {"language": "sh"}, level="error")
    sid3 = r["structuredContent"]["sandbox_id"]
    ok(not logs(above), lambda: f"an info message for logLevel error: {short(logs(above))}")
    for sid in (sid1, sid2, sid3):
        call(s, "sandbox_stop", {"sandbox_id": sid})


@test
def cancel_modern_call():
    s = server()
    i = s.fresh_id()
    s.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "run_command", "arguments": {"command": "sleep 3137"}, "_meta": meta()}})
    ok(wait_for(lambda: pgrep("sleep 3137"), 30), "the command never started")
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i, "reason": "test"}})
    ok(wait_for(lambda: not pgrep("sleep 3137"), 10), "the cancelled command still runs")
    try:
        m = s.recv(2)
        raise Check(f"a cancelled request was answered: {short(m)}")
    except Check as e:
        if "no answer" not in str(e):
            raise
    modern_result(s.request("server/discover", {"_meta": meta()}), "server/discover after a cancel")


@test
def subscriptions_listen():
    s = Server("listen")
    try:
        before = len(s.notes)
        s.send({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
                "params": {"_meta": meta(), "notifications": {"toolsListChanged": True, "promptsListChanged": True}}})
        modern_result(s.request("server/discover", {"_meta": meta()}), "server/discover beside a listen")
        acks = [n for n in s.notes[before:] if n.get("method") == "notifications/subscriptions/acknowledged"]
        ok(len(acks) == 1, lambda: f"acknowledgments: {short(s.notes[before:])}")
        p = acks[0].get("params") or {}
        ok((p.get("_meta") or {}).get("io.modelcontextprotocol/subscriptionId") == "sub-1",
           lambda: f"ack _meta {short(p)}")
        # nsbox's lists never change: it honours none of the kinds.
        ok(p.get("notifications") == {}, lambda: f"ack notifications {short(p.get('notifications'))}")
        # Cancelled by the client: ends without a response.
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub-1"}})
        # Another left open: closed gracefully when the server ends.
        s.send({"jsonrpc": "2.0", "id": 77, "method": "subscriptions/listen",
                "params": {"_meta": meta(), "notifications": {}}})
        modern_result(s.request("server/discover", {"_meta": meta()}), "server/discover beside a listen")
        # At most 8 open: a 9th is refused, and calls still have slots.
        for i in range(7):
            s.send({"jsonrpc": "2.0", "id": f"more-{i}", "method": "subscriptions/listen",
                    "params": {"_meta": meta(), "notifications": {}}})
        m = s.request("subscriptions/listen", {"_meta": meta(), "notifications": {}}, id_="ninth")
        error_of(m, None, ["ninth"], "a 9th subscriptions/listen")
        r, _ = call(s, "list_languages", {})
        for i in range(7):
            s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": f"more-{i}"}})
        n_before = len(s.notes)
        s.proc.stdin.close()
        m = s.recv(15)
        r = modern_result(m, "the listen's closing response")
        ok(m.get("id") == 77 and r["_meta"].get("io.modelcontextprotocol/subscriptionId") == 77,
           lambda: f"closing response {short(m)} (want id 77, the others were cancelled)")
        ok(s.proc.wait(10) == 0, lambda: f"the server exited {s.proc.returncode}")
        rest = []
        while (x := s.q.get(timeout=10)) is not None:  # up to the end of stdout
            rest.append(x)
        bye = [n for n in s.notes[n_before:] + rest if n.get("method") == "notifications/cancelled"]
        ok(len(bye) == 1 and bye[0]["params"].get("requestId") == 77,
           lambda: f"notifications/cancelled after the closing response: {short(s.notes[n_before:])}")
    finally:
        s.close()


@test
def legacy_side_by_side():
    s = server()
    # A legacy client on the same stdio: initialize, then as before.
    r = s.initialize(LEGACY[0])
    ok(r.get("protocolVersion") == LEGACY[0] and "resultType" not in r, lambda: f"initialize -> {short(r)}")
    s.ping("legacy, beside modern requests")
    lt = legacy_result(s.request("tools/list", {}), "legacy tools/list")
    for t in lt["tools"]:
        ok("x-mcp-header" not in json.dumps(t.get("inputSchema")), lambda: f"legacy {t['name']} shows x-mcp-header")
    s.result("logging/setLevel", {"level": "debug"})
    # The legacy session's level applies to legacy calls only.
    before = len(s.notes)
    m = s.request("tools/call", {"name": "sandbox_create", "arguments": {"language": "sh"}}, timeout=120)
    r = legacy_result(m, "legacy sandbox_create")
    sid = r["structuredContent"]["sandbox_id"]
    ok(logs(s.notes[before:]), "the legacy session set debug but its sandbox_create logged nothing")
    r, notes = call(s, "sandbox_create", {"language": "sh"})
    sid2 = r["structuredContent"]["sandbox_id"]
    ok(not logs(notes), lambda: f"a modern request without logLevel got the legacy session's messages: {short(logs(notes))}")
    # Modern requests stay modern in an initialized process, and the
    # handle is the state: the legacy client's sandbox answers by its id.
    r, _ = call(s, "run_command", {"sandbox_id": sid, "command": "echo side-by-side"})
    ok(r["structuredContent"].get("stdout") == "side-by-side\n", lambda: f"run_command -> {short(r)}")
    legacy_result(s.request("tools/call", {"name": "sandbox_stop", "arguments": {"sandbox_id": sid2}}),
                  "legacy sandbox_stop of a modern request's sandbox")
    call(s, "sandbox_stop", {"sandbox_id": sid})
    m = s.request("ping", {"_meta": meta()})
    error_of(m, [-32601], what="modern ping after a legacy initialize")
    s.result("logging/setLevel", {"level": "warning"})


@test
def initialize_naming_2026():
    """A client that says initialize is a legacy one: 2026-07-28 there is
    answered with the newest legacy version, as any version nsbox does not
    negotiate."""
    s = Server("init-2026")
    try:
        r = s.initialize(MODERN)
        ok(r.get("protocolVersion") == LEGACY[0], lambda: f"initialize 2026-07-28 -> {short(r)}")
        ok("resultType" not in r, lambda: f"initialize result carries resultType: {short(r)}")
        s.ping("after initialize 2026-07-28")
    finally:
        s.close()


@test
def legacy_session_ignores_other_meta_keys():
    """Issue #24: Mastra's MCPClient pinned to the 2025 protocol adds
    io.modelcontextprotocol/logLevel to the _meta of every request,
    initialize included.  protocolVersion alone makes a request 2026-07-28;
    in a session initialize opened the other keys are unknown, ignored."""
    s = Server("legacy-meta")
    try:
        lvl = {"io.modelcontextprotocol/logLevel": "info"}
        m = s.request("initialize", {"protocolVersion": LEGACY[1], "capabilities": {},
                                     "clientInfo": {"name": "mastra-like", "version": "1"}, "_meta": lvl})
        r = legacy_result(m, "initialize with logLevel in _meta")
        ok(r.get("protocolVersion") == LEGACY[1], lambda: f"initialize -> {short(r)}")
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        lt = legacy_result(s.request("tools/list", {"_meta": lvl}), "tools/list with logLevel in _meta")
        ok("execute_code" in [t["name"] for t in lt.get("tools", [])], lambda: f"tools/list -> {short(lt)}")
        extra = dict(lvl, **{"io.modelcontextprotocol/clientCapabilities": {},
                             "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"}})
        m = s.request("tools/call", {"name": "execute_code", "arguments": {"language": "sh", "code": "echo legacy-meta"},
                                     "_meta": extra}, timeout=120)
        r = legacy_result(m, "tools/call with the other 2026-07-28 keys in _meta")
        ok(r.get("structuredContent", {}).get("stdout") == "legacy-meta\n", lambda: f"execute_code -> {short(r)}")
    finally:
        s.close()


@test
def stdout_is_only_jsonrpc():
    stray = [l for srv in (SRV,) if srv for l in srv.stray]
    ok(not stray, lambda: f"non-JSON-RPC lines on stdout: {short(repr(stray[:3]))}")


def main():
    if not rp.STORE:
        nt.fail("setup", "NSBOX_STORE is not set (run through tests/integration/mcp_stdio.sh)")
        return 1
    for marker in ("sleep 3136", "sleep 3137"):
        if pgrep(marker):
            nt.fail("setup", f'a "{marker}" process already runs on this host')
            return 1
    for fn in TESTS:
        nt.run(fn.__name__, fn)
    if SRV is not None and SRV.alive():
        SRV.close()
    return nt.status()


if __name__ == "__main__":
    sys.exit(main())
