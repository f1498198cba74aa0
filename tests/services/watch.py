#!/usr/bin/env python3
"""File watches (issue #28): resources/subscribe on
nsbox://sandboxes/ID/files/PATH and notifications/resources/updated, over
stdio and Streamable HTTP (the session's standalone GET stream), and the
2026-07-28 form (subscriptions/listen's resourceSubscriptions).

Checked: a write arrives as one updated; a burst of 1,000 writes gives
few notifications and one after the last write; unsubscribe stops them; a
directory watch sees an entry made; a file that does not exist yet can be
watched (its parent must exist); --max-watches refuses clearly and a
stopped sandbox gives its watches back; a symlink swapped to /etc (or a
host directory) watches the sandbox's, never the host's; another
session's or an unknown sandbox is "resource not found".

usage: watch.py            (starts its own servers; runs as root or as a
                            rootless user alike)
Environment: NSBOX, NSBOX_STORE (the python image), SUITE.
Prints PASS/FAIL lines; exits 1 when a test failed."""
import json
import os
import queue
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="services", prefix="watch/")

NSBOX = os.environ.get("NSBOX") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE", "")
UPDATED = "notifications/resources/updated"
NOT_FOUND_LEGACY = -32002
MAX_WATCHES = 4
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


def store_args():
    return ["--store", STORE] if STORE else []


class Stdio:
    """`nsbox serve` over stdio; a reader thread files responses by id and
    keeps every notification with the time it came."""

    def __init__(self, modern=False, extra=()):
        self.p = subprocess.Popen([NSBOX, *store_args(), "serve", "--max-watches", str(MAX_WATCHES), *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.n, self.modern = 0, modern
        self.lock = threading.Lock()
        self.responses, self.notes = {}, []
        self.cond = threading.Condition(self.lock)
        threading.Thread(target=self._read, daemon=True).start()
        if not modern:
            self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "watch.py", "version": "1"}})
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)
            with self.cond:
                if "method" in msg:
                    self.notes.append((time.time(), msg))
                else:
                    self.responses[msg.get("id")] = msg
                self.cond.notify_all()

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def req(self, method, params, id_=None, timeout=120):
        self.n += 1
        rid = id_ if id_ is not None else self.n
        if self.modern:
            params = dict(params, _meta=MODERN)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        end = time.time() + timeout
        with self.cond:
            while rid not in self.responses:
                if not self.cond.wait(max(0.01, end - time.time())) and time.time() > end:
                    raise RuntimeError(f"{method}: no response")
            return self.responses.pop(rid)

    def tool(self, name, **args):
        return self.req("tools/call", {"name": name, "arguments": args})["result"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


class Http:
    """One Streamable HTTP session of a `serve --http` started here, with its
    standalone GET stream read on a thread."""

    def __init__(self, server):
        self.port, self.sid, self.n = server.port, None, 0
        self.lock = threading.Lock()
        self.notes, self.post_notes = [], []
        self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "watch.py", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.get = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        mcphttp.send(self.get, "GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": self.sid})
        r = self.get.getresponse()
        nt.ok(r.status == 200, f"GET stream: HTTP {r.status}")
        threading.Thread(target=self._read, args=(r,), daemon=True).start()
        time.sleep(0.3)

    def _read(self, r):
        try:
            for ev in mcphttp.parse_sse(iter(r.readline, b"")):
                for m in mcphttp.messages_of([ev]):
                    with self.lock:
                        self.notes.append((time.time(), m))
        except Exception:  # the stream closed
            pass

    def post(self, msg):
        r = mcphttp.post(self.port, msg, self.sid, timeout=300)
        self.sid = self.sid or r.headers.get("mcp-session-id")
        return r.messages

    def req(self, method, params):
        self.n += 1
        for m in self.post({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}):
            if m.get("method") == UPDATED:
                with self.lock:
                    self.post_notes.append(m)
            if m.get("id") == self.n:
                return m
        raise RuntimeError(f"{method}: no response")

    def tool(self, name, **args):
        return self.req("tools/call", {"name": name, "arguments": args})["result"]

    def close(self):
        mcphttp.request(self.port, "DELETE", headers={"Mcp-Session-Id": self.sid}, timeout=60)
        self.get.close()


class HttpServer:
    def __init__(self):
        env = dict(os.environ)
        env.pop("NSBOX_TOKEN", None)
        self.p = subprocess.Popen([NSBOX, *store_args(), "serve", "--http", "127.0.0.1:0",
                                   "--max-watches", str(MAX_WATCHES)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=env)
        self.port = None
        end = time.time() + 30
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

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=60)


def uri_of(sid, path):
    return f"nsbox://sandboxes/{sid}/files/{path.lstrip('/')}"


def updates(c, uri, since=0.0):
    """The times of the updated notifications for uri that came after since."""
    with c.lock:
        return [t for t, m in c.notes if m.get("method") == UPDATED
                and m["params"].get("uri") == uri and t > since]


def wait_update(c, uri, since, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        if updates(c, uri, since):
            return True
        time.sleep(0.02)
    return False


def ok_result(r, what):
    nt.ok("result" in r and r["result"] == {} or ("result" in r and "resultType" in r["result"]),
          f"{what}: {json.dumps(r)[:300]}")


def shell(c, sid, cmd):
    r = c.tool("run_command", sandbox_id=sid, command=cmd)
    out = r.get("structuredContent") or {}
    nt.ok(out.get("exit_code") == 0, f"{cmd!r}: {json.dumps(r)[:300]}")
    return out.get("stdout", "")


def core(c, label):
    """The tests every transport runs on client c."""
    sid = c.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
    f = uri_of(sid, "/workspace/a.txt")

    @nt.test(f"{label}/write_arrives")
    def _():
        # a.txt does not exist yet: watched through /workspace.
        ok_result(c.req("resources/subscribe", {"uri": f}), "subscribe")
        t0 = time.time()
        r = c.tool("write_file", sandbox_id=sid, path="/workspace/a.txt", content="one")
        nt.ok(not r.get("isError"), f"write_file: {r}")
        nt.ok(wait_update(c, f, t0), "no notifications/resources/updated within 5 s of write_file")
        r = c.req("resources/subscribe", {"uri": f})  # twice: one watch
        ok_result(r, "a second subscribe to the same URI")

    @nt.test(f"{label}/burst_coalesced_last_change_notified")
    def _():
        time.sleep(0.5)
        t0 = time.time()
        out = shell(c, sid, "python3 -c \"import time\n"
                            "for i in range(1000):\n"
                            "    f = open('/workspace/a.txt', 'a'); f.write(str(i)); f.close()\n"
                            "print(repr(time.time()))\"")
        last_write = float(out.strip())
        time.sleep(1.5)
        got = updates(c, f, t0)
        nt.note(f"{label}: 1,000 writes gave {len(got)} notifications")
        nt.ok(1 <= len(got) <= 40, f"{len(got)} notifications for 1,000 writes (want 1..40)")
        nt.ok(max(got) >= last_write, f"the last notification ({max(got):.3f}) came before "
                                      f"the last write ({last_write:.3f})")
        gaps = [b - a for a, b in zip(got, got[1:])]
        nt.ok(all(g > 0.05 for g in gaps), f"notifications closer than 50 ms: {gaps}")

    @nt.test(f"{label}/unsubscribe_stops")
    def _():
        ok_result(c.req("resources/unsubscribe", {"uri": f}), "unsubscribe")
        time.sleep(0.4)
        t0 = time.time()
        shell(c, sid, "echo more >> /workspace/a.txt; rm /workspace/a.txt")
        time.sleep(1.0)
        nt.ok(not updates(c, f, t0), "a notification after unsubscribe")
        ok_result(c.req("resources/unsubscribe", {"uri": f}), "unsubscribe of what is not watched")

    d = uri_of(sid, "/workspace/d")

    @nt.test(f"{label}/directory_entry_created")
    def _():
        shell(c, sid, "mkdir -p /workspace/d/sub")
        ok_result(c.req("resources/subscribe", {"uri": d}), "subscribe to a directory")
        t0 = time.time()
        shell(c, sid, "touch /workspace/d/new")
        nt.ok(wait_update(c, d, t0), "no updated for an entry made in the directory")
        time.sleep(0.5)
        t1 = time.time()
        shell(c, sid, "touch /workspace/d/sub/deeper")  # not recursive
        time.sleep(0.8)
        nt.ok(not updates(c, d, t1), "a file two levels down fired a one-level watch")

    @nt.test(f"{label}/directory_removed_ends_watch")
    def _():
        t0 = time.time()
        shell(c, sid, "rm -rf /workspace/d")
        nt.ok(wait_update(c, d, t0), "no updated when the watched directory was removed")
        time.sleep(0.5)
        t1 = time.time()
        shell(c, sid, "mkdir -p /workspace/d && touch /workspace/d/again")
        time.sleep(0.8)
        nt.ok(not updates(c, d, t1), "the ended watch still fires")

    @nt.test(f"{label}/missing_parent_not_found")
    def _():
        r = c.req("resources/subscribe", {"uri": uri_of(sid, "/no/such/dir/file")})
        nt.ok(r.get("error", {}).get("code") in (NOT_FOUND_LEGACY, -32602), f"{r}")
        nt.ok("No such file" in r.get("error", {}).get("message", ""), f"{r}")

    @nt.test(f"{label}/unknown_sandbox_not_found")
    def _():
        u = uri_of(secrets.token_hex(16), "/workspace")
        r = c.req("resources/subscribe", {"uri": u})
        nt.ok(r.get("error", {}).get("code") == NOT_FOUND_LEGACY, f"{r}")
        nt.ok(r["error"].get("data", {}).get("uri") == u, f"{r}")
        r = c.req("resources/subscribe", {"uri": "file:///etc/passwd"})
        nt.ok(r.get("error", {}).get("code") == NOT_FOUND_LEGACY, f"{r}")

    @nt.test(f"{label}/symlink_swap_never_watches_host")
    def _():
        root = os.geteuid() == 0
        host_dir = "/etc" if root else tempfile.mkdtemp(prefix="nsbox-watch-host-")
        # The same path in the sandbox is a directory of its own.
        shell(c, sid, f"mkdir -p /workspace/s {host_dir} && touch /workspace/s/x")
        s = uri_of(sid, "/workspace/s")
        ok_result(c.req("resources/subscribe", {"uri": s}), "subscribe")
        # The sandbox swaps the watched directory for a symlink to host_dir.
        shell(c, sid, f"mv /workspace/s /workspace/s.old && ln -s {host_dir} /workspace/s")
        time.sleep(0.5)
        ok_result(c.req("resources/unsubscribe", {"uri": s}), "unsubscribe")
        ok_result(c.req("resources/subscribe", {"uri": s}), "subscribe through the symlink")
        time.sleep(0.3)
        t0 = time.time()
        probe = os.path.join(host_dir, "nsbox-watch-probe-" + secrets.token_hex(4))
        try:
            with open(probe, "w") as fh:
                fh.write("host")
            os.utime(probe)
            time.sleep(1.0)
        finally:
            os.unlink(probe)
        time.sleep(0.5)
        nt.ok(not updates(c, s, t0), f"a change of the host's {host_dir} was notified")
        # The watch is live, on the sandbox's own directory of that name.
        t1 = time.time()
        shell(c, sid, f"touch {host_dir}/nsbox-watch-in-sandbox")
        nt.ok(wait_update(c, s, t1), f"no updated for the sandbox's own {host_dir}")
        c.req("resources/unsubscribe", {"uri": s})
        if host_dir != "/etc":
            os.rmdir(host_dir)

    @nt.test(f"{label}/limit_refused_and_freed_by_sandbox_stop")
    def _():
        other = c.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
        for i in range(MAX_WATCHES):
            ok_result(c.req("resources/subscribe", {"uri": uri_of(other, f"/workspace/f{i}")}),
                      f"subscribe {i}")
        r = c.req("resources/subscribe", {"uri": uri_of(sid, "/workspace/over")})
        err = r.get("error", {})
        nt.ok(err.get("code") == -32600 and "--max-watches" in err.get("message", "")
              and err.get("data", {}).get("max") == MAX_WATCHES, f"over the limit: {r}")
        r = c.tool("sandbox_stop", sandbox_id=other)
        nt.ok(not r.get("isError"), f"sandbox_stop: {r}")
        g = uri_of(sid, "/workspace/g")
        ok_result(c.req("resources/subscribe", {"uri": g}), "a subscribe once the sandbox stopped")
        t0 = time.time()
        shell(c, sid, "echo g > /workspace/g")
        nt.ok(wait_update(c, g, t0), "no updated after the stopped sandbox's watches went")
        c.req("resources/unsubscribe", {"uri": g})

    return sid


def stdio_tests():
    c = Stdio()
    try:
        @nt.test("stdio/capability_declared")
        def _():
            r = c.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "w", "version": "1"}})
            caps = r["result"]["capabilities"]
            nt.ok(caps.get("resources", {}).get("subscribe") is True, f"{caps}")

        core(c, "stdio")

        @nt.test("stdio/hostile_rename_storm_bounded")
        def _():
            # A sandbox makes events as fast as it can for 3 s (a rename
            # storm and files made and removed): the client gets at most one
            # notification per 150 ms, and the server keeps answering.
            hsid = c.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
            h = uri_of(hsid, "/workspace/h")
            shell(c, hsid, "mkdir -p /workspace/h && touch /workspace/h/a")
            ok_result(c.req("resources/subscribe", {"uri": h}), "subscribe")
            time.sleep(0.3)
            t0 = time.time()
            done = {}

            def storm():
                done["out"] = c.tool("run_command", sandbox_id=hsid, command=(
                    "python3 -c \"import os, time\n"
                    "os.chdir('/workspace/h'); end = time.time() + 3; n = 0\n"
                    "while time.time() < end:\n"
                    "    os.rename('a', 'b'); os.rename('b', 'a'); open('f%d' % (n % 50), 'w').close(); n += 1\n"
                    "print(n)\""))
            th = threading.Thread(target=storm)
            th.start()
            pings = []
            time.sleep(0.5)
            while th.is_alive():
                p0 = time.time()
                c.req("ping", {})
                pings.append(time.time() - p0)
                time.sleep(0.2)
            th.join()
            time.sleep(0.5)
            got = updates(c, h, t0)
            rounds = int(done["out"]["structuredContent"]["stdout"].strip() or 0)
            nt.note(f"a 3 s storm of {rounds} rounds ({rounds * 3} events) gave {len(got)} notifications; "
                    f"slowest ping {max(pings or [0]) * 1000:.0f} ms")
            nt.ok(rounds > 1000, f"the storm made only {rounds} rounds")
            nt.ok(1 <= len(got) <= 3.5 / 0.15 + 3, f"{len(got)} notifications in a 3 s storm")
            nt.ok(pings and max(pings) < 2.0, f"ping took {max(pings or [0]):.2f} s during the storm")
            c.req("resources/unsubscribe", {"uri": h})
            c.tool("sandbox_stop", sandbox_id=hsid)

        @nt.test("stdio/other_session_sandbox_not_found")
        def _():
            o = Stdio()
            try:
                osid = o.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
                u = uri_of(osid, "/workspace")
                r = c.req("resources/subscribe", {"uri": u})
                nt.ok(r.get("error", {}).get("code") == NOT_FOUND_LEGACY, f"{r}")
            finally:
                o.close()
    finally:
        c.close()

    @nt.test("stdio/session_end_with_watches")
    def _():
        e = Stdio()
        esid = e.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
        ok_result(e.req("resources/subscribe", {"uri": uri_of(esid, "/workspace")}), "subscribe")
        t0 = time.time()
        e.close()  # waits for the server to exit
        nt.ok(time.time() - t0 < 30, "the server took over 30 s to end a session with a watch")


def landlock_tests():
    @nt.test("landlock/refused")
    def _():
        # No mount namespace: a path would be the host's.  Refused, clearly.
        c = Stdio(extra=("--isolation", "landlock"))
        try:
            sid = c.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
            r = c.req("resources/subscribe", {"uri": uri_of(sid, "/tmp")})
            err = r.get("error", {})
            nt.ok(err.get("code") == -32602 and "landlock" in err.get("message", ""), f"{r}")
        finally:
            c.close()


def http_tests():
    server = HttpServer()
    try:
        c = Http(server)
        try:
            core(c, "http")

            @nt.test("http/on_the_get_stream_only")
            def _():
                with c.lock:
                    n = len([m for _, m in c.notes if m.get("method") == UPDATED])
                nt.ok(n > 0, "nothing came on the GET stream")
                nt.ok(not c.post_notes, f"updated on a POST's stream: {c.post_notes[:2]}")
        finally:
            c.close()
    finally:
        server.close()


def modern_tests():
    c = Stdio(modern=True)
    try:
        sid = c.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
        w = uri_of(sid, "/workspace")
        bogus = uri_of(secrets.token_hex(16), "/workspace")

        @nt.test("modern/discover_declares_subscribe")
        def _():
            r = c.req("server/discover", {})
            nt.ok(r["result"]["capabilities"].get("resources", {}).get("subscribe") is True, f"{r}")

        @nt.test("modern/resources_subscribe_is_legacy_only")
        def _():
            r = c.req("resources/subscribe", {"uri": w})
            nt.ok(r.get("error", {}).get("code") == -32601, f"{r}")

        @nt.test("modern/listen_resource_subscriptions")
        def _():
            c.send({"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen",
                    "params": {"_meta": MODERN, "notifications": {"resourceSubscriptions": [w, bogus]}}})
            end = time.time() + 30
            ack = None
            while ack is None and time.time() < end:
                with c.lock:
                    ack = next((m for _, m in c.notes
                                if m.get("method") == "notifications/subscriptions/acknowledged"), None)
                time.sleep(0.05)
            nt.ok(ack is not None, "no acknowledgment")
            p = ack["params"]
            nt.ok(p["_meta"].get("io.modelcontextprotocol/subscriptionId") == "L1", f"{ack}")
            nt.ok(p["notifications"].get("resourceSubscriptions") == [w], f"honoured: {ack}")
            t0 = time.time()
            c.tool("write_file", sandbox_id=sid, path="/workspace/m.txt", content="m")
            nt.ok(wait_update(c, w, t0), "no updated on the listen")
            with c.lock:
                m = [m for t, m in c.notes if m.get("method") == UPDATED and t > t0][0]
            nt.ok(m["params"].get("_meta", {}).get("io.modelcontextprotocol/subscriptionId") == "L1",
                  f"no subscriptionId: {m}")
            c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L1"}})
            time.sleep(0.5)
            t1 = time.time()
            c.tool("write_file", sandbox_id=sid, path="/workspace/n.txt", content="n")
            time.sleep(1.0)
            nt.ok(not updates(c, w, t1), "updated after the listen was cancelled")
    finally:
        c.close()


def stateless_tests():
    """2026-07-28 over HTTP without a session (the tenant's session): the
    listen's own SSE stream carries its acknowledgment and its updates."""
    server = HttpServer()
    port = server.port

    def headers(method, params):
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if method == "tools/call":
            h["Mcp-Name"] = params["name"]
            if "sandbox_id" in params["arguments"]:  # its x-mcp-header
                h["Mcp-Param-Sandbox-Id"] = params["arguments"]["sandbox_id"]
        return h

    def rpc(method, params, rid):
        params = dict(params, _meta=dict(MODERN, **{"io.modelcontextprotocol/clientInfo":
                                                    {"name": "watch.py", "version": "1"}}))
        r = mcphttp.request(port, "POST", headers=headers(method, params), timeout=120,
                            body=json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                             "params": params}).encode())
        return r.response(rid)

    try:
        @nt.test("stateless/listen_stream_carries_updates")
        def _():
            r = rpc("tools/call", {"name": "sandbox_create", "arguments": {"language": "python"}}, 1)
            sid = r["result"]["structuredContent"]["sandbox_id"]
            w = uri_of(sid, "/workspace")
            params = {"notifications": {"resourceSubscriptions": [w]},
                      "_meta": dict(MODERN, **{"io.modelcontextprotocol/clientInfo":
                                               {"name": "watch.py", "version": "1"}})}
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mcphttp.send(c, "POST", headers=headers("subscriptions/listen", params),
                         body=json.dumps({"jsonrpc": "2.0", "id": "S1", "method": "subscriptions/listen",
                                          "params": params}).encode())
            resp = c.getresponse()
            got = queue.Queue()

            def read():
                try:
                    for ev in mcphttp.parse_sse(iter(resp.readline, b"")):
                        for m in mcphttp.messages_of([ev]):
                            got.put(m)
                except Exception:
                    pass
            threading.Thread(target=read, daemon=True).start()
            ack = got.get(timeout=30)
            nt.ok(ack.get("method") == "notifications/subscriptions/acknowledged"
                  and ack["params"]["notifications"].get("resourceSubscriptions") == [w], f"{ack}")
            r = rpc("tools/call", {"name": "write_file", "arguments": {
                "sandbox_id": sid, "path": "/workspace/s.txt", "content": "s"}}, 2)
            nt.ok("result" in r, f"write_file: {r}")
            m = got.get(timeout=5)
            nt.ok(m.get("method") == UPDATED and m["params"]["uri"] == w and
                  m["params"]["_meta"].get("io.modelcontextprotocol/subscriptionId") == "S1", f"{m}")
            c.close()  # ends the listen, and its watch
            rpc("tools/call", {"name": "sandbox_stop", "arguments": {"sandbox_id": sid}}, 3)
    finally:
        server.close()


nt.run("stdio", stdio_tests)
nt.run("stateless", stateless_tests)
nt.run("landlock", landlock_tests)
nt.run("http", http_tests)
nt.run("modern", modern_tests)
nt.finish()
