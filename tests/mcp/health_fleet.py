#!/usr/bin/env python3
"""A fleet's server side over raw HTTP (tests/integration/drain.sh): node
ids on session and sandbox ids, /healthz and /readyz, draining on SIGTERM.

usage: health_fleet.py ids PORT TOKEN NODE       a server with --node-id NODE, --token-file
       health_fleet.py probes PORT TOKEN NODE LOG  the same server, started with -d, LOG its stderr
       health_fleet.py broken PORT STORE           a server whose store this test breaks
       health_fleet.py noimage PORT                a server whose store has no image
       health_fleet.py cap PORT                    a server with --max-total-sandboxes 1
       health_fleet.py drain PORT PID NODE         a server with --node-id NODE and
                                                   --shutdown-grace 30; this test sends SIGTERM
       health_fleet.py grace PORT PID MARKER       a server with --shutdown-grace 2; SIGTERM
                                                   while a call runs `sleep MARKER`
       health_fleet.py second PORT PID MARKER      --shutdown-grace 60; two SIGTERMs

Prints one line per test: PASS: SUITE/NAME or FAIL: SUITE/NAME: why.
Exits 1 when a test failed."""
import json
import os
import re
import shutil
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="drain")

MODE, PORT = sys.argv[1], int(sys.argv[2])
ARGS = sys.argv[3:]
LEGACY, MODERN = "2025-11-25", "2026-07-28"
HEX32 = "[0-9a-f]{32}"
DRAINING = "this node is draining"
TOKEN = None


def auth():
    return {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}


# ---- 2025-11-25 sessions

def initialize():
    r = mcphttp.post(PORT, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": LEGACY, "capabilities": {},
                                       "clientInfo": {"name": "health_fleet.py", "version": "1"}}},
                     headers=auth())
    sid = r.headers.get("mcp-session-id")
    if r.status != 200 or not sid:
        raise RuntimeError(f"initialize: {r}")
    mcphttp.post(PORT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, LEGACY,
                 headers=auth())
    return sid


def rpc(sid, method, params, rid=2, timeout=120):
    r = mcphttp.post(PORT, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                     sid, LEGACY, headers=auth(), timeout=timeout)
    return r, r.response(rid)


def call(sid, name, args, rid=2, timeout=120):
    r, resp = rpc(sid, "tools/call", {"name": name, "arguments": args}, rid, timeout)
    if resp is None or "result" not in resp:
        raise RuntimeError(f"{name}: no result: {r}")
    return resp["result"]


def create(sid, language="sh"):
    res = call(sid, "sandbox_create", {"language": language})
    if res.get("isError"):
        raise RuntimeError(f"sandbox_create: {res}")
    return res["structuredContent"]["sandbox_id"]


def run_in(sid, sb, code, rid=2, timeout=120):
    return call(sid, "execute_code", {"sandbox_id": sb, "language": "sh", "code": code}, rid,
                timeout)


def text_of(res):
    return " ".join(c.get("text", "") for c in res.get("content", []))


# ---- 2026-07-28 stateless requests (tests/conformance/stateless_http.py's shape)

def modern(name, args, sandbox=None, rid=7):
    params = {"name": name, "arguments": args,
              "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                        "io.modelcontextprotocol/clientInfo": {"name": "health_fleet.py",
                                                               "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {}}}
    h = {"Content-Type": "application/json", "Accept": mcphttp.BOTH,
         "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    h.update(auth())
    if sandbox:
        h["Mcp-Param-Sandbox-Id"] = sandbox
    r = mcphttp.request(PORT, "POST", headers=h, body=json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode())
    resp = r.response(rid)
    if resp is None or "result" not in resp:
        raise RuntimeError(f"{name} (stateless): no result: {r}")
    return resp["result"]


# ---- probes

def probe(path, method="GET", headers=None):
    r = mcphttp.request(PORT, method, path, headers=headers or {})
    return r, (json.loads(r.body) if r.body else None)


def wait_for(cond, seconds):
    """Polls cond until it holds (True) or seconds pass (False)."""
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def runs_under(pid, cmdline):
    """Whether a descendant of pid (the server: its sandboxes' processes)
    has exactly cmdline as its command line."""
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") != cmdline:
                    continue
            up = int(p)
            for _ in range(64):
                with open(f"/proc/{up}/stat") as f:
                    up = int(f.read().rsplit(")", 1)[1].split()[1])
                if up == pid:
                    return True
                if up <= 1:
                    break
        except (OSError, ValueError):
            pass
    return False


def draining():
    """/readyz says draining (503)."""
    r, b = probe("/readyz")
    return r.status == 503 and (b or {}).get("status") == "draining"


def body_shape(b, node):
    """Why the probe body b breaks the contract, or None."""
    keys = {"status", "node", "draining", "sessions", "sandboxes", "checks"}
    if b is None or set(b) != keys:
        return f"keys {sorted(b or {})} are not {sorted(keys)}"
    if b["status"] not in ("ok", "fail", "draining") or b["node"] != node or \
            not isinstance(b["draining"], bool) or not isinstance(b["sessions"], int) or \
            not isinstance(b["sandboxes"], int) or set(b["checks"]) != {"store", "sandbox"}:
        return f"bad body {b}"
    return None


# ================================================================ modes

def ids_tests(node):
    prefix = re.compile(f"^{re.escape(node)}\\.{HEX32}$")
    sid = initialize()
    state = {}

    @nt.test("session_id_has_node_prefix")
    def _():
        return None if prefix.match(sid) else f"Mcp-Session-Id {sid!r}"

    @nt.test("sandbox_id_has_node_prefix")
    def _():
        sb = state["sb"] = create(sid)
        if not prefix.match(sb):
            return f"sandbox_id {sb!r}"
        res = run_in(sid, sb, "echo fleet > /tmp/f.txt; cat /tmp/f.txt")
        if res.get("structuredContent", {}).get("stdout") != "fleet\n":
            return f"execute_code in it: {res}"
        listed = call(sid, "sandbox_list", {})["structuredContent"]["sandboxes"]
        if [s["sandbox_id"] for s in listed] != [sb]:
            return f"sandbox_list: {listed}"
        return None

    @nt.test("resource_uri_has_node_prefix")
    def _():
        sb = state["sb"]
        uri = f"nsbox://sandboxes/{sb}/files/tmp/f.txt"
        r, resp = rpc(sid, "resources/read", {"uri": uri})
        got = ((resp or {}).get("result") or {}).get("contents", [{}])[0]
        if got.get("text") != "fleet\n" or got.get("uri") != uri:
            return f"resources/read {uri}: {r}"
        other = f"nsbox://sandboxes/other-9.{sb.split('.', 1)[1]}/files/tmp/f.txt"
        r, resp = rpc(sid, "resources/read", {"uri": other}, rid=3)
        if resp is None or "error" not in resp:
            return f"another node's URI was read: {r}"
        return None

    @nt.test("file_url_with_node_prefix")
    def _():
        sb = state["sb"]
        res = call(sid, "upload_url", {"sandbox_id": sb, "path": "/tmp/up.txt"})
        url = res.get("structuredContent", {}).get("url", "")
        m = re.match(r"^http://[^/]+(/files/.+)$", url)
        if not m:
            return f"upload_url: {res}"
        r = mcphttp.request(PORT, "PUT", m.group(1), body=b"uploaded\n",
                            headers={"Content-Type": "application/octet-stream"})
        if r.status not in (200, 201, 204):
            return f"PUT {url}: {r}"
        res = run_in(sid, sb, "cat /tmp/up.txt")
        if res.get("structuredContent", {}).get("stdout") != "uploaded\n":
            return f"the upload did not land: {res}"
        return None

    @nt.test("wrong_prefix_sandbox_id_unknown")
    def _():
        sb = state["sb"]
        hexpart = sb.split(".", 1)[1]
        for wrong in (f"other-9.{hexpart}", hexpart, f"{node}x.{hexpart}"):
            res = run_in(sid, wrong, "echo no")
            if not res.get("isError") or "no sandbox" not in text_of(res):
                return f"{wrong!r} was accepted: {res}"
            res = call(sid, "sandbox_stop", {"sandbox_id": wrong})
            if not res.get("isError"):
                return f"sandbox_stop {wrong!r} stopped something: {res}"
        res = run_in(sid, sb, "echo still")
        if res.get("structuredContent", {}).get("stdout") != "still\n":
            return f"the sandbox suffered from the attempts: {res}"
        return None

    @nt.test("wrong_prefix_session_id_404")
    def _():
        hexpart = sid.split(".", 1)[1]
        for wrong in (f"other-9.{hexpart}", hexpart, sid + "0", sid[:-1]):
            r, _ = rpc(wrong, "tools/list", {})
            if r.status != 404:
                return f"session id {wrong!r}: {r}"
        r, _ = rpc(sid, "tools/list", {})
        return None if r.status == 200 else f"the real session: {r}"

    @nt.test("task_id_has_node_prefix")
    def _():
        r, resp = rpc(sid, "tools/call", {"name": "execute_code", "task": {"ttl": 60000},
                                          "arguments": {"language": "sh", "code": "echo t"}},
                      rid=11)
        tid = ((resp or {}).get("result") or {}).get("task", {}).get("taskId", "")
        if not prefix.match(tid):
            return f"taskId: {r}"
        for i in range(50):
            r, resp = rpc(sid, "tasks/get", {"taskId": tid}, rid=12)
            if ((resp or {}).get("result") or {}).get("status") not in ("working", None):
                break
            time.sleep(0.1)
        if ((resp or {}).get("result") or {}).get("taskId") != tid:
            return f"tasks/get: {r}"
        r, resp = rpc(sid, "tasks/get", {"taskId": "other-9." + tid.split(".", 1)[1]}, rid=13)
        if resp is None or "error" not in resp:
            return f"another node's task id was found: {r}"
        return None

    @nt.test("stateless_sandbox_id_has_node_prefix")
    def _():
        res = modern("sandbox_create", {"language": "sh"})
        sb = res.get("structuredContent", {}).get("sandbox_id", "")
        if not prefix.match(sb):
            return f"stateless sandbox_create: {res}"
        res = modern("execute_code", {"sandbox_id": sb, "language": "sh", "code": "echo m"}, sb)
        if res.get("structuredContent", {}).get("stdout") != "m\n":
            return f"stateless execute_code: {res}"
        wrong = "other-9." + sb.split(".", 1)[1]
        res = modern("execute_code", {"sandbox_id": wrong, "language": "sh", "code": "echo m"},
                     wrong)
        if not res.get("isError") or "no sandbox" not in text_of(res):
            return f"another node's stateless handle was accepted: {res}"
        modern("sandbox_stop", {"sandbox_id": sb}, sb)
        return None


def probes_tests(node, log):
    @nt.test("healthz_ok_body")
    def _():
        r, b = probe("/healthz")
        if r.status != 200 or body_shape(b, node) or b["status"] != "ok" or \
                b["checks"] != {"store": "ok", "sandbox": "ok"} or b["draining"]:
            return f"{r} {body_shape(b, node)}"
        return None

    @nt.test("readyz_ok_body")
    def _():
        r, b = probe("/readyz")
        if r.status != 200 or body_shape(b, node) or b["status"] != "ok":
            return f"{r}"
        return None

    @nt.test("probe_counts_sessions_and_sandboxes")
    def _():
        _, before = probe("/readyz")
        sid = initialize()
        sb = create(sid)
        _, after = probe("/readyz")
        call(sid, "sandbox_stop", {"sandbox_id": sb})
        if after["sessions"] != before["sessions"] + 1 or after["sandboxes"] < before["sandboxes"] + 1:
            return f"before {before}, after a session and a sandbox {after}"
        return None

    @nt.test("probe_head_and_methods")
    def _():
        r = mcphttp.request(PORT, "HEAD", "/healthz")
        if r.status != 200 or r.body:
            return f"HEAD: {r}"
        for m in ("POST", "PUT", "DELETE"):
            r = mcphttp.request(PORT, m, "/readyz", body=b"" if m != "DELETE" else None)
            if r.status != 405:
                return f"{m} /readyz: {r}"
        return None

    @nt.test("probe_needs_no_token_and_any_host")
    def _():
        # The server has a token: /mcp without it is 401, the probes are not.
        r = mcphttp.request(PORT, "GET", "/mcp", headers={"Accept": "text/event-stream"})
        if r.status != 401:
            return f"/mcp without a token: {r}"
        for h in ({"Host": "10.244.1.7:8080"}, {"Host": "nsbox-0.nsbox.default.svc"}):
            r, b = probe("/healthz", headers=h)
            if r.status != 200:
                return f"{h}: {r}"
        r, _ = probe("/healthz", headers={"Origin": "https://evil.example"})
        if r.status != 403:
            return f"a foreign Origin is not refused: {r}"
        return None

    def checks_run():
        with open(log, encoding="utf-8", errors="replace") as f:
            return f.read().count("health: the sandbox check passed")

    @nt.test("probe_flood_makes_at_most_one_sandbox_per_30s")
    def _():
        # The probes above ran the check once; a flood within 30 s of it
        # makes no sandbox, however many probes, in parallel or not.
        t0, n0 = time.monotonic(), checks_run()
        codes = []

        def worker():
            for _ in range(10):
                codes.append(probe("/healthz" if len(codes) % 2 else "/readyz")[0].status)
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        n1, took = checks_run(), time.monotonic() - t0
        if n0 != 1:
            return f"{n0} sandbox checks ran before the flood (expected 1)"
        if codes.count(200) != 80:
            return f"codes {sorted(set(codes))}"
        if n1 - n0 > (0 if took < 25 else 1):
            return f"{n1 - n0} more sandbox checks for 80 probes in {took:.1f} s"
        return None


def broken_tests(store):
    refs = os.path.join(store, "refs.json")

    @nt.test("healthz_ok_before")
    def _():
        r, b = probe("/healthz")
        return None if r.status == 200 and b["status"] == "ok" and b["node"] is None else f"{r}"

    @nt.test("healthz_fails_on_a_broken_store")
    def _():
        with open(refs, "rb") as f:
            saved = f.read()
        try:
            with open(refs, "w") as f:
                f.write("{ not json")
            r, b = probe("/healthz")
            r2, b2 = probe("/readyz")
        finally:
            with open(refs, "wb") as f:
                f.write(saved)
        if r.status != 503 or b["status"] != "fail" or b["checks"]["store"] == "ok":
            return f"healthz: {r}"
        if r2.status != 503 or b2["checks"]["store"] == "ok":
            return f"readyz: {r2}"
        r, b = probe("/healthz")
        return None if r.status == 200 and b["checks"]["store"] == "ok" else f"after repair: {r}"

    @nt.test("healthz_fails_when_the_store_is_gone")
    def _():
        moved = store + ".moved"
        os.rename(store, moved)
        try:
            r, b = probe("/healthz")
        finally:
            if os.path.exists(store):  # made by the server meanwhile: a failure below
                shutil.rmtree(store, ignore_errors=True)
                print(f"# something made {store} while it was gone", flush=True)
            os.rename(moved, store)
        if r.status != 503 or b["status"] != "fail" or store not in b["checks"]["store"]:
            return f"{r}"
        return None


def noimage_tests():
    @nt.test("healthz_fails_without_an_image")
    def _():
        r, b = probe("/healthz")
        if r.status != 503 or body_shape(b, None) or b["status"] != "fail" or \
                b["checks"]["store"] != "ok" or "python" not in b["checks"]["sandbox"]:
            return f"{r}"
        r, b = probe("/readyz")
        return None if r.status == 503 else f"readyz: {r}"


def cap_tests():
    @nt.test("healthz_ok_at_the_sandbox_cap")
    def _():
        sid = initialize()
        create(sid)  # the only one --max-total-sandboxes 1 allows
        res = call(sid, "sandbox_create", {"language": "sh"}, rid=3)
        if not res.get("isError") or "limit" not in text_of(res):
            return f"a second sandbox was made: {res}"
        r, b = probe("/healthz")
        r2, _ = probe("/readyz")
        if r.status != 200 or r2.status != 200 or b["checks"]["sandbox"] != "ok":
            return f"a full node fails its probes: {r} {r2}"
        return None


def drain_tests(pid, node):
    sid = initialize()
    busy, idle = create(sid), create(sid)
    out = {}

    def long_call():
        t = time.monotonic()
        out["res"] = run_in(sid, busy, "sleep 4; echo finished", rid=9)
        out["took"] = time.monotonic() - t

    t = threading.Thread(target=long_call)
    t.start()
    # SIGTERM once the call's command runs (not after a guessed second),
    # then the probes once the server says it drains.
    started = wait_for(lambda: runs_under(pid, "sleep 4"), 30)
    os.kill(pid, signal.SIGTERM)
    wait_for(draining, 10)

    @nt.test("readyz_503_draining")
    def _():
        r, b = probe("/readyz")
        if r.status != 503 or body_shape(b, node) or b["status"] != "draining" or not b["draining"]:
            return f"{r}"
        return None

    @nt.test("healthz_200_while_draining")
    def _():
        r, b = probe("/healthz")
        return None if r.status == 200 and b["draining"] else f"{r}"

    @nt.test("new_sandbox_refused_while_draining")
    def _():
        res = call(sid, "sandbox_create", {"language": "sh"}, rid=3)
        if not res.get("isError") or DRAINING not in text_of(res):
            return f"sandbox_create: {res}"
        res = call(sid, "execute_code", {"language": "sh", "code": "echo one-shot"}, rid=4)
        if not res.get("isError") or DRAINING not in text_of(res):
            return f"one-shot execute_code: {res}"
        res = modern("execute_code", {"language": "sh", "code": "echo stateless"})
        if not res.get("isError") or DRAINING not in text_of(res):
            return f"stateless one-shot: {res}"
        return None

    @nt.test("new_session_503_while_draining")
    def _():
        try:
            initialize()
        except RuntimeError as e:
            return None if "503" in str(e) and DRAINING in str(e) else str(e)
        return "initialize succeeded"

    @nt.test("existing_sandbox_served_while_draining")
    def _():
        res = run_in(sid, idle, "echo served", rid=5)
        return None if res.get("structuredContent", {}).get("stdout") == "served\n" else f"{res}"

    t.join(60)

    @nt.test("running_call_finishes_with_its_result")
    def _():
        if not started:
            return "the call's sleep 4 was never seen running before SIGTERM"
        res = out.get("res") or {}
        if res.get("structuredContent", {}).get("stdout") != "finished\n":
            return f"{res}"
        return None if out["took"] >= 3.5 else f"it took {out['took']:.1f} s (cut short?)"


def grace_tests(pid, marker):
    sid = initialize()
    sb = create(sid)
    out = {}

    def long_call():
        try:
            out["res"] = run_in(sid, sb, f"sleep {marker}; echo late", rid=9, timeout=60)
        except Exception as e:  # noqa: BLE001 -- the call may end without an answer
            out["err"] = e

    t = threading.Thread(target=long_call)
    t.start()
    started = wait_for(lambda: runs_under(pid, f"sleep {marker}"), 30)
    os.kill(pid, signal.SIGTERM)
    t.join(60)

    @nt.test("grace_cancels_a_call_that_outlives_it")
    def _():
        if not started:
            return f"the call's sleep {marker} was never seen running"
        res = out.get("res")
        if res is not None and res.get("structuredContent", {}).get("stdout") == "late\n":
            return "the call ran to its end"
        return None


def second_tests(pid, marker):
    sid = initialize()
    sb = create(sid)
    t = threading.Thread(target=lambda: run_in(sid, sb, f"sleep {marker}", rid=9, timeout=60),
                         daemon=True)
    t.start()
    started = wait_for(lambda: runs_under(pid, f"sleep {marker}"), 30)
    os.kill(pid, signal.SIGTERM)
    wait_for(draining, 10)
    r, b = probe("/readyz")

    @nt.test("first_signal_drains")
    def _():
        if not started:
            return f"the call's sleep {marker} was never seen running"
        return None if r.status == 503 and b["status"] == "draining" else f"{r}"

    os.kill(pid, signal.SIGTERM)


if __name__ == "__main__":
    if MODE == "ids":
        TOKEN = ARGS[0]
        ids_tests(ARGS[1])
    elif MODE == "probes":
        TOKEN = ARGS[0]
        probes_tests(ARGS[1], ARGS[2])
    elif MODE == "broken":
        broken_tests(ARGS[0])
    elif MODE == "noimage":
        noimage_tests()
    elif MODE == "cap":
        cap_tests()
    elif MODE == "drain":
        drain_tests(int(ARGS[0]), ARGS[1])
    elif MODE == "grace":
        grace_tests(int(ARGS[0]), ARGS[1])
    elif MODE == "second":
        second_tests(int(ARGS[0]), ARGS[1])
    else:
        sys.exit(f"unknown mode {MODE}")
    nt.finish()
