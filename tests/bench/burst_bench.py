#!/usr/bin/env python3
"""Burst (issue #29, docs/burst.md; tests/bench/run.sh burst).

usage: burst_bench.py NSBOX STORE RUNS [IMAGE]

The ComputeSDK benchmark's burst mode, through nsbox's MCP tools: each
item is one sandbox_create followed by its first run_command {echo}, timed
from the moment every item is released at once to that command's answer.

  burst_http4    100 items at once over one `serve --http` with 4 MCP
                 sessions (25 each, so 25 calls at once per session,
                 under its bound of 64): median and max of the 100
                 (target: max <= 500 ms)
  reference      the same with NSBOX_SPAWNER=0: sandboxes cloned from the
                 server itself, as before runtime/spawner.c
  burst_stdio1   50 items at once through one stdio session (context:
                 the issue's first figure)
  baseline       the same item, one at a time through one stdio session
                 (ComputeSDK's sequential mode): what one create and its
                 first command cost with nothing else running.  The burst
                 figures over it say what contention adds; a burst that
                 serialized every create would take ~100x it in all.

Also printed: the CPU the whole machine was busy during the HTTP burst
(other work on the host counts too: compare with the load).  Each round
starts its own servers, so no round inherits another's
sandboxes; every sandbox is stopped (the session's end) before the next
side runs.  RUNS rounds after one untimed warm-up.  Prints a table and
result lines in benchlib.py's format; reports, never asserts; exits
non-zero only when an item fails."""
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import line, spread, table_header, table_row  # noqa: E402

N_HTTP = int(os.environ.get("BENCH_BURST_N", "100"))
N_SESSIONS = 4
N_STDIO = int(os.environ.get("BENCH_BURST_STDIO_N", "50"))
N_SEQ = int(os.environ.get("BENCH_BURST_SEQ_N", "20"))
TARGET_MS = 500
VERSION = "2025-11-25"
ECHO = "echo burst-ok"
CREATE = {}  # sandbox_create's arguments: {"image": IMAGE} when given


def die(msg):
    sys.exit(f"burst_bench: {msg}")


def text_of(res):
    sc = res.get("structuredContent") or {}
    return sc


class Http:
    """`nsbox serve --http 127.0.0.1:0` with bounds that let 100 kept
    sandboxes and connections in (the defaults: 16 sandboxes a session,
    64 connections from one address)."""

    def __init__(self, nsbox, store, extra=(), env=None):
        self.tmp = tempfile.mkdtemp(prefix="nsbox-burst-")
        self.log = os.path.join(self.tmp, "serve.log")
        with open(self.log, "w") as err:
            self.p = subprocess.Popen(
                [nsbox, "--store", store, "serve", "--http", "127.0.0.1:0", "--max-sandboxes", "64",
                 "--max-total-sandboxes", "256", "--max-connections-per-ip", "256", *extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                env=dict(os.environ, **(env or {})))
        self.port = None
        for _ in range(200):
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", open(self.log).read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if self.port is None:
            die("the server did not start: " + open(self.log).read()[-300:])

    def post(self, msg, sid=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            h = {"Host": f"localhost:{self.port}", "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": VERSION}
            if sid:
                h["Mcp-Session-Id"] = sid
            c.request("POST", "/mcp", body=json.dumps(msg).encode(), headers=h)
            r = c.getresponse()
            body = r.read().decode()
            sid_out = r.getheader("mcp-session-id")
        finally:
            c.close()
        msgs = []
        if body.lstrip().startswith("{"):
            msgs = [json.loads(body)]
        else:
            for ln in body.splitlines():
                if ln.startswith("data:") and ln[5:].strip():
                    msgs.append(json.loads(ln[5:]))
        for m in msgs:
            if m.get("id") == msg.get("id") and ("result" in m or "error" in m):
                return m, sid_out
        return None, sid_out

    def session(self):
        m, sid = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "burst", "version": "1"}}})
        if not sid:
            die(f"no session: {m}")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        return sid

    def delete(self, sid):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        c.request("DELETE", "/mcp", headers={"Host": f"localhost:{self.port}", "Mcp-Session-Id": sid,
                                             "MCP-Protocol-Version": VERSION})
        c.getresponse().read()
        c.close()

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def item_http(srv, sid, k, go, out):
    """One burst item: sandbox_create, then run_command echo in it;
    out[k] = ms from go to the command's answer, or an error text."""
    go.wait()
    t0 = GO_T[0]
    try:
        m, _ = srv.post({"jsonrpc": "2.0", "id": 2 * k + 1, "method": "tools/call",
                         "params": {"name": "sandbox_create", "arguments": CREATE}}, sid)
        res = (m or {}).get("result") or {}
        if res.get("isError") or not res:
            out[k] = f"create: {m}"
            return
        sb = res["structuredContent"]["sandbox_id"]
        m, _ = srv.post({"jsonrpc": "2.0", "id": 2 * k + 2, "method": "tools/call",
                         "params": {"name": "run_command", "arguments": {"sandbox_id": sb, "command": ECHO}}}, sid)
        res = (m or {}).get("result") or {}
        if res.get("isError") or "burst-ok" not in json.dumps(res):
            out[k] = f"run_command: {m}"
            return
        out[k] = (time.perf_counter() - t0) * 1000
    except Exception as e:  # noqa: BLE001
        out[k] = f"{type(e).__name__}: {e}"


GO_T = [0.0]
CPU = []


def busy_jiffies():
    """CPU time (ms, every core) the machine spent busy so far."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) * 1000 // os.sysconf("SC_CLK_TCK")


def burst_http(nsbox, store, n, env=None):
    """ms of each of n items from N_SESSIONS sessions, released at once."""
    srv = Http(nsbox, store, env=env)
    try:
        sids = [srv.session() for _ in range(N_SESSIONS)]
        go = threading.Event()
        out = [None] * n
        ts = [threading.Thread(target=item_http, args=(srv, sids[k % N_SESSIONS], k, go, out)) for k in range(n)]
        for t in ts:
            t.start()
        time.sleep(0.3)  # every thread waiting on go
        perf = None
        if os.environ.get("BENCH_BURST_PERF"):  # profiling aid: the burst alone
            perf = subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o", os.environ["BENCH_BURST_PERF"]])
            time.sleep(0.5)
        cpu0 = busy_jiffies()
        GO_T[0] = time.perf_counter()
        go.set()
        for t in ts:
            t.join()
        CPU.append(busy_jiffies() - cpu0)
        if perf:
            perf.send_signal(2)
            perf.wait()
        bad = [o for o in out if not isinstance(o, float)]
        if bad:
            die(f"{len(bad)} of {n} items failed over HTTP, e.g. {bad[0]}")
        for sid in sids:
            srv.delete(sid)
        return out
    finally:
        srv.close()


class Stdio:
    def __init__(self, nsbox, store, extra=()):
        self.p = subprocess.Popen([nsbox, "--store", store, "serve", "--max-sandboxes", "64",
                                   "--max-total-sandboxes", "256", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, bufsize=1)
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "burst", "version": "1"}}})
        self.recv_id(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def recv(self):
        ln = self.p.stdout.readline()
        if not ln:
            die("the stdio server closed its output")
        return json.loads(ln)

    def recv_id(self, rid):
        while True:
            m = self.recv()
            if m.get("id") == rid:
                return m

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=120)


def call(rid, name, args):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}


def burst_stdio(nsbox, store, n):
    """ms of each of n items sent at once through one stdio session: the
    creates in one write, each command sent as its create is answered."""
    srv = Stdio(nsbox, store)
    try:
        out = {}
        t0 = time.perf_counter()
        srv.p.stdin.write("".join(json.dumps(call(2 * k + 1, "sandbox_create", CREATE)) + "\n" for k in range(n)))
        srv.p.stdin.flush()
        while len(out) < n:
            m = srv.recv()
            rid = m.get("id")
            if not isinstance(rid, int) or rid == 0:
                continue
            res = m.get("result") or {}
            if res.get("isError") or "result" not in m:
                die(f"stdio item {rid} failed: {m}")
            if rid % 2 == 1:
                sb = res["structuredContent"]["sandbox_id"]
                srv.send(call(rid + 1, "run_command", {"sandbox_id": sb, "command": ECHO}))
            else:
                if "burst-ok" not in json.dumps(res):
                    die(f"stdio command {rid}: {m}")
                out[rid] = (time.perf_counter() - t0) * 1000
        return list(out.values())
    finally:
        srv.close()


def sequential(nsbox, store, n):
    """ms of each of n items, one after another through one stdio session."""
    srv = Stdio(nsbox, store)
    try:
        out = []
        for k in range(n):
            t0 = time.perf_counter()
            srv.send(call(2 * k + 1, "sandbox_create", CREATE))
            m = srv.recv_id(2 * k + 1)
            res = m.get("result") or {}
            if res.get("isError") or "result" not in m:
                die(f"sequential create: {m}")
            sb = res["structuredContent"]["sandbox_id"]
            srv.send(call(2 * k + 2, "run_command", {"sandbox_id": sb, "command": ECHO}))
            m = srv.recv_id(2 * k + 2)
            if "burst-ok" not in json.dumps(m.get("result") or {}):
                die(f"sequential command: {m}")
            out.append((time.perf_counter() - t0) * 1000)
            srv.send(call(10000 + k, "sandbox_stop", {"sandbox_id": sb}))
            srv.recv_id(10000 + k)
        return out
    finally:
        srv.close()


def main():
    if len(sys.argv) < 4:
        die("usage: burst_bench.py NSBOX STORE RUNS")
    nsbox, store, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if len(sys.argv) > 4:
        CREATE["image"] = sys.argv[4]
    only = os.environ.get("BENCH_BURST_ONLY", "")
    res = {"http_med": [], "http_max": [], "http_cpu": [], "nosp_med": [], "nosp_max": [], "stdio_med": [], "stdio_max": [], "seq": []}
    for rnd in range(runs + 1):
        sides = ["http", "nospawner", "stdio", "seq"]
        sides = sides[rnd % 4:] + sides[:rnd % 4]
        for side in sides:
            if only and side != only:
                continue
            if side == "http":
                v = burst_http(nsbox, store, N_HTTP)
                print(f"  round {rnd} http: median {statistics.median(v):.0f} max {max(v):.0f} cpu {CPU[-1]} ms", file=sys.stderr)
                if rnd:
                    res["http_med"].append(statistics.median(v))
                    res["http_max"].append(max(v))
                    res["http_cpu"].append(CPU[-1])
            elif side == "nospawner":
                v = burst_http(nsbox, store, N_HTTP, env={"NSBOX_SPAWNER": "0"})
                print(f"  round {rnd} http, no spawner: median {statistics.median(v):.0f} max {max(v):.0f}", file=sys.stderr)
                if rnd:
                    res["nosp_med"].append(statistics.median(v))
                    res["nosp_max"].append(max(v))
            elif side == "stdio":
                v = burst_stdio(nsbox, store, N_STDIO)
                print(f"  round {rnd} stdio: median {statistics.median(v):.0f} max {max(v):.0f}", file=sys.stderr)
                if rnd:
                    res["stdio_med"].append(statistics.median(v))
                    res["stdio_max"].append(max(v))
            else:
                v = sequential(nsbox, store, N_SEQ)
                print(f"  round {rnd} seq: median {statistics.median(v):.0f}", file=sys.stderr)
                if rnd:
                    res["seq"].append(statistics.median(v))
    print(f"\nburst: sandbox_create + first run_command, timed from release to the command's answer; "
          f"{runs} rounds after a warm-up; ms per round")
    print(table_header())
    if res["http_max"]:
        print(table_row(f"{N_HTTP} at once, {N_SESSIONS} HTTP sessions: median", res["http_med"]))
        print(table_row(f"{N_HTTP} at once, {N_SESSIONS} HTTP sessions: all answered", res["http_max"]))
        print(table_row("  context: CPU busy during it, all cores (ms)", res["http_cpu"]))
    if res["nosp_max"]:
        print(table_row("reference: the same, without the spawner: median", res["nosp_med"]))
        print(table_row("reference: the same, without the spawner: all answered", res["nosp_max"]))
    if res["stdio_max"]:
        print(table_row(f"{N_STDIO} at once, 1 stdio session: median", res["stdio_med"]))
        print(table_row(f"{N_STDIO} at once, 1 stdio session: all answered", res["stdio_max"]))
    if res["seq"]:
        print(table_row(f"baseline: one at a time, 1 stdio session ({N_SEQ})", res["seq"]))
    seq = statistics.median(res["seq"]) if res["seq"] else None
    if res["http_max"]:
        mx = statistics.median(res["http_max"])
        figs = [f"all_ms={spread(res['http_max'], '{:.0f}')}", f"median_ms={spread(res['http_med'], '{:.0f}')}"]
        if seq:
            figs += [f"baseline_ms={seq:.0f}", f"ratio={mx / seq:.2f}"]
        if res["nosp_max"]:
            figs += [f"no_spawner_all_ms={spread(res['nosp_max'], '{:.0f}')}"]
        print(line("burst_http4", figs, f"target<{TARGET_MS}", "OK" if mx <= TARGET_MS else "MISSED", runs))
    if res["stdio_max"]:
        mx = statistics.median(res["stdio_max"])
        figs = [f"all_ms={spread(res['stdio_max'], '{:.0f}')}", f"median_ms={spread(res['stdio_med'], '{:.0f}')}"]
        if seq:
            figs += [f"baseline_ms={seq:.0f}", f"ratio={mx / seq:.2f}"]
        print(line("burst_stdio1", figs, "target=none", "INFO", runs))


if __name__ == "__main__":
    main()
