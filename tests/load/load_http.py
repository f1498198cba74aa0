#!/usr/bin/env python3
"""Load on `nsbox serve --http` over loopback (tests/integration/load_http.sh).

usage: load_http.py run --port P --pid PID --store DIR --seconds N --sessions N
                        --max-sandboxes N --max-total N --idle-timeout S --ids FILE
       load_http.py session JSON      (one session; prints its report as JSON)
       load_http.py flood JSON        (a flooding client; prints JSON reports)
       load_http.py slowloris JSON    (a client that dribbles header bytes)

`run` drives the phases against a server started with exactly those caps,
and prints one line per test (PASS: load_http/NAME or FAIL: load_http/NAME:
why) and the figures as `# ...` lines:
  1. warm-up: every session does one round, then the baselines are taken
     (fds, threads, children, VmRSS of the server);
  2. load: N sessions, each its own process, loop for the given seconds:
     sandbox_create, run_command and execute_code in the kept sandbox, file
     tools, one-shot execute_code and run_command, sandbox_stop; some
     ("greedy") sessions keep creating sandboxes until refused; at the end
     every session is DELETEd;
  3. leaks: fds, threads, sandbox processes back to the baseline, VmRSS
     within its bound;
  4. the server-wide cap, filled on purpose;
  5. calls longer than --idle-timeout, and a quiet GET stream;
  6. a slowloris client and a flooding client (each from a loopback
     address of its own) against a well-behaved session;
  7. the total connection cap, and the baselines once more.
Only the Python 3.11 standard library.  Assertions never depend on speed:
latencies are reported; the one time bound (a well-behaved call under the
flood) is generous."""
import argparse
import http.client
import json
import math
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="load_http")

BOTH = mcphttp.BOTH
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "load_http.py", "version": "1"}}
HEX32 = re.compile(r"[0-9a-f]{32}")
# A well-behaved call under the flood must be answered within this: the
# server's own bounds are 60 s of silence and 1 s ticks, so starvation
# would show as tens of seconds or no answer at all; this leaves the
# 2-core CI machine, busy with other tests, a wide margin.
STARVATION_BOUND_S = 15.0
# VmRSS may grow this much over the load compared with after the warm-up
# (which ran the same sessions once, so glibc's per-thread arenas and its
# cache of thread stacks are already there).  Measured: +0.2 to +0.6 MiB,
# whether over 2,500 calls or 52,000 (`make load`); the rest is room for
# arenas on a busier machine.  A leak of about 1 KiB per call (a response,
# a session's state) passes it within the ~7,000 calls of a 45 s run.
RSS_BOUND_KB = 8 * 1024



class Unexpected(Exception):
    """Anything but a correct result or a cap's refusal."""


# ------------------------------------------------------------------ HTTP


class Client:
    """One client address; a new connection per request (as a browser-less
    client under load would churn them), so every request costs the server
    an accept and a thread."""

    def __init__(self, port, source="127.0.0.1", timeout=120):
        self.port, self.source, self.timeout = port, source, timeout

    def request(self, method, body=None, headers=None):
        return mcphttp.request(self.port, method, "/mcp", headers, body, self.timeout, self.source)


class Session:
    def __init__(self, client, sse=True):
        self.c, self.sse, self.sid, self.next_id = client, sse, None, 0
        self.lat = {}       # label -> [ms]
        self.calls = 0
        self.logs = 0       # notifications/message seen on POST streams
        self.cap_checks = 0  # refusals by the session's cap, at exactly the cap

    def send(self, method, body=None, accept=BOTH):
        """One HTTP request in this session; a broken connection raises
        Unexpected."""
        h = {"Accept": accept}
        if body is not None:
            h["Content-Type"] = "application/json"
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        try:
            r = self.c.request(method, json.dumps(body).encode() if body is not None else None, h)
        except (OSError, http.client.HTTPException) as e:
            raise Unexpected(f"{method} {body and body.get('method')}: "
                             f"{type(e).__name__}: {e}") from None
        self.calls += 1
        return r

    def rpc(self, method, params=None, accept=None):
        """The result of a request, or raises Unexpected."""
        self.next_id += 1
        rid = self.next_id
        r = self.send("POST", {"jsonrpc": "2.0", "id": rid, "method": method,
                               "params": params or {}},
                      accept or (BOTH if self.sse else "application/json"))
        if r.status != 200:
            raise Unexpected(f"{method}: {r}")
        # Exactly one response, ours, and last; anything before it is a
        # notification (a log line).
        if not r.messages or r.messages[-1].get("id") != rid:
            raise Unexpected(f"{method}: no response with id {rid}: {r}")
        for m in r.messages[:-1]:
            if "id" in m or m.get("method") != "notifications/message":
                raise Unexpected(f"{method}: a stray message on the stream: {m}")
            self.logs += 1
        resp = r.messages[-1]
        if "error" in resp or "result" not in resp:
            raise Unexpected(f"{method}: JSON-RPC error: {resp}")
        if method == "initialize":
            self.sid = r.headers.get("mcp-session-id")
        return resp["result"]

    def initialize(self, log_level=None):
        t0 = time.monotonic()
        self.rpc("initialize", INIT)
        if not self.sid or not HEX32.fullmatch(self.sid):
            raise Unexpected(f"initialize: bad Mcp-Session-Id {self.sid!r}")
        self.lat.setdefault("initialize", []).append((time.monotonic() - t0) * 1000)
        r = self.send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"})
        if r.status != 202:
            raise Unexpected(f"notifications/initialized: {r}")
        if log_level:
            self.rpc("logging/setLevel", {"level": log_level})

    def tool(self, name, args, label=None, caps=(), accept=None):
        """structuredContent of a tool's result; a cap's refusal (one of
        the exact messages in caps) comes back as the string; anything else
        raises Unexpected."""
        t0 = time.monotonic()
        res = self.rpc("tools/call", {"name": name, "arguments": args}, accept)
        ms = (time.monotonic() - t0) * 1000
        if res.get("isError"):
            text = "".join(c.get("text", "") for c in res.get("content", []))
            if text in caps:
                return text
            raise Unexpected(f"{name}: isError: {text!r}")
        self.lat.setdefault(label or name, []).append(ms)
        if "structuredContent" not in res:
            raise Unexpected(f"{name}: no structuredContent: {res}")
        return res["structuredContent"]

    def ping(self):
        t0 = time.monotonic()
        res = self.rpc("ping")
        if res != {}:
            raise Unexpected(f"ping: {res}")
        self.lat.setdefault("ping", []).append((time.monotonic() - t0) * 1000)

    def delete(self):
        """DELETE, then the session must be gone (404)."""
        t0 = time.monotonic()
        r = self.send("DELETE")
        if r.status != 200:
            raise Unexpected(f"DELETE: {r}")
        self.lat.setdefault("DELETE", []).append((time.monotonic() - t0) * 1000)
        r = self.send("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        if r.status != 404:
            raise Unexpected(f"a request after DELETE: {r}")

    def ping_without_session(self):
        """400 with a JSON-RPC error: the server read and answered."""
        r = self.send("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        if r.status != 400:
            raise Unexpected(f"ping without a session: {r}")


def percentile(values, q):
    """Nearest rank."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else float("nan")


def fmt_lat(values):
    return (f"p50 {percentile(values, .5):.0f} ms, p95 {percentile(values, .95):.0f} ms, "
            f"p99 {percentile(values, .99):.0f} ms, max {max(values):.0f} ms")


# ------------------------------------------------------- one load session


def expect_eq(what, got, want):
    if got != want:
        raise WrongOutput(f"{what}: expected {want!r}, got {got!r}")


class WrongOutput(Exception):
    pass


def run_session(cfg):
    """One session for cfg["deadline"] (CLOCK_MONOTONIC, shared by every
    process): at least one round.  Returns the report."""
    idx, role = cfg["index"], cfg["role"]
    per_session = (f"this session already has {cfg['max_sandboxes']} sandboxes (the limit); "
                   f"stop one with sandbox_stop")
    total = (f"the server runs {cfg['max_total']} sandboxes, its limit; try again when "
             f"some have finished")
    caps = (per_session, total)
    rep = {"index": idx, "role": role, "rounds": 0, "unexpected": [], "n_unexpected": 0,
           "wrong": [], "n_wrong": 0, "refused": {"session": 0, "total": 0},
           "deleted": False, "lat": {}, "calls": 0, "logs": 0, "cap_checks": 0}
    # Half the sessions take SSE answers and their log lines with them.
    s = Session(Client(cfg["port"]), sse=idx % 2 == 0)

    def refused(msg):
        rep["refused"]["session" if msg == per_session else "total"] += 1
        time.sleep(random.uniform(0.05, 0.2))  # the server is full: back off

    def trouble(kind, e):
        rep["n_" + kind] += 1
        if len(rep[kind]) < 5:
            rep[kind].append(f"session {idx} round {rep['rounds']}: {e}")

    try:
        s.initialize("info" if s.sse else None)
    except Unexpected as e:
        trouble("unexpected", e)
        return rep
    rnd = 0
    while True:
        try:
            (greedy_round if role == "greedy" else normal_round)(s, cfg, idx, rnd, caps,
                                                                 refused)
        except Unexpected as e:
            trouble("unexpected", e)
        except WrongOutput as e:
            trouble("wrong", e)
        except (KeyError, TypeError, ValueError) as e:
            trouble("unexpected", f"malformed result: {type(e).__name__}: {e}")
        rnd += 1
        rep["rounds"] = rnd
        if time.monotonic() >= cfg["deadline"]:
            break
    try:
        s.delete()
        rep["deleted"] = True
    except Unexpected as e:
        trouble("unexpected", e)
    rep.update(lat=s.lat, calls=s.calls, logs=s.logs, cap_checks=s.cap_checks)
    return rep


def normal_round(s, cfg, idx, rnd, caps, refused):
    tag = f"s{idx}r{rnd}"
    lang = "python" if rnd % 2 == 0 else "sh"
    sb = None
    r = s.tool("sandbox_create", {"language": lang}, caps=caps)
    if isinstance(r, str):
        refused(r)
    else:
        sb = r["sandbox_id"]
        if not HEX32.fullmatch(sb):
            raise WrongOutput(f"sandbox_id {sb!r}")
    if sb:
        out = s.tool("run_command", {"command": f"echo {tag}-$((6*7))", "sandbox_id": sb})
        expect_eq("run_command", (out["status"], out["stdout"]), ("ok", f"{tag}-42\n"))
        out = s.tool("create_directory", {"sandbox_id": sb, "path": "d"})
        expect_eq("create_directory", out, {"path": "d", "created": True})
        content = f"{tag}-content-" * 3
        out = s.tool("write_file", {"sandbox_id": sb, "path": "d/f.txt", "content": content})
        expect_eq("write_file", out["bytes_written"], len(content))
        out = s.tool("read_file", {"sandbox_id": sb, "path": "d/f.txt"})
        expect_eq("read_file", (out["content"], out["truncated"]), (content, False))
        out = s.tool("list_directory", {"sandbox_id": sb, "path": "d"})
        expect_eq("list_directory", [(e["path"], e["type"], e["size"]) for e in out["entries"]],
                  [("f.txt", "file", len(content))])
        if lang == "python":
            code = "print(open('d/f.txt').read().upper())"
        else:
            code = "tr a-z A-Z < d/f.txt; echo"
        out = s.tool("execute_code", {"code": code, "language": lang, "sandbox_id": sb})
        expect_eq("execute_code in the kept sandbox", out["stdout"], content.upper() + "\n")
        out = s.tool("sandbox_list", {})
        expect_eq("sandbox_list", [x["sandbox_id"] for x in out["sandboxes"]], [sb])
    n = idx * 100000 + rnd
    out = s.tool("execute_code", {"code": f"print({idx} * 100000 + {rnd})"},
                 "execute_code/one-shot", caps)
    if isinstance(out, str):
        refused(out)
    else:
        expect_eq("one-shot execute_code", (out["status"], out["stdout"]), ("ok", f"{n}\n"))
    out = s.tool("run_command", {"command": f"echo one-{tag}"}, "run_command/one-shot", caps)
    if isinstance(out, str):
        refused(out)
    else:
        expect_eq("one-shot run_command", out["stdout"], f"one-{tag}\n")
    if sb:
        out = s.tool("sandbox_stop", {"sandbox_id": sb})
        expect_eq("sandbox_stop", out, {"sandbox_id": sb, "stopped": True})


def greedy_round(s, cfg, idx, rnd, caps, refused):
    """Creates sandboxes until refused: the session's cap must refuse
    exactly the one past --max-sandboxes (the server's may refuse any)."""
    per_session, total = caps
    held = []
    try:
        while len(held) <= cfg["max_sandboxes"]:
            r = s.tool("sandbox_create", {"language": "sh"}, caps=caps)
            if not isinstance(r, str):
                held.append(r["sandbox_id"])
                continue
            if (r == per_session) != (len(held) == cfg["max_sandboxes"]):
                raise WrongOutput(f"holding {len(held)} sandboxes, refused with {r!r}")
            if r == per_session:
                s.cap_checks += 1
            refused(r)
            break
        if len(held) > cfg["max_sandboxes"]:
            raise WrongOutput(f"a session got {len(held)} sandboxes, over its cap")
        # One-shot runs do not count against the session's cap.
        out = s.tool("execute_code", {"code": f"echo g{idx}r{rnd}", "language": "sh"},
                     "execute_code/one-shot", caps)
        if isinstance(out, str):
            if out != total:
                raise WrongOutput(f"a one-shot run refused with {out!r}")
            refused(out)
        else:
            expect_eq("one-shot execute_code", out["stdout"], f"g{idx}r{rnd}\n")
        for k, sb in enumerate(held):
            out = s.tool("run_command", {"command": f"echo g{idx}r{rnd}k{k}", "sandbox_id": sb})
            expect_eq("run_command", out["stdout"], f"g{idx}r{rnd}k{k}\n")
    finally:
        for sb in held:
            out = s.tool("sandbox_stop", {"sandbox_id": sb})
            expect_eq("sandbox_stop", out, {"sandbox_id": sb, "stopped": True})


# ------------------------------------------------------ the server, seen from /proc


class Server:
    def __init__(self, pid, store):
        self.pid, self.sandboxes = pid, os.path.join(store, "sandboxes")

    def alive(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().split(") ")[-1][0] not in "ZX"
        except OSError:
            return False

    def status(self, field):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return -1

    def fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def fd_kinds(self):
        kinds = {}
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                t = os.readlink(f"/proc/{self.pid}/fd/{fd}")
            except OSError:
                continue
            t = re.sub(r"\[\d+\]", "", t.split(":")[0] if ":[" in t else t)
            kinds[t] = kinds.get(t, 0) + 1
        return kinds

    def children(self):
        """The server's children in a pid namespace of their own: each a
        sandbox's init (the short-lived helper that clones one stays in
        the server's namespace)."""
        out = []
        for task in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{task}/children") as f:
                    out += [int(p) for p in f.read().split()]
            except OSError:
                pass
        own = pid_ns(self.pid)
        return [p for p in out if pid_ns(p) not in (own, None)]

    def state_dirs(self):
        """The ids of the sandboxes with a state directory."""
        try:
            return [n for n in os.listdir(self.sandboxes) if HEX32.fullmatch(n)]
        except OSError:
            return []

    def snapshot(self):
        return {"fds": self.fds(), "threads": self.status("Threads"),
                "children": len(self.children()), "rss_kb": self.status("VmRSS"),
                "anon_kb": self.status("RssAnon")}


def pid_ns(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def processes_in(namespaces):
    """Every process on the host whose pid namespace is one of these (live
    ones: the inode of a namespace that ended may be reused by anyone)."""
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit() and pid_ns(p) in namespaces:
            found.append(int(p))
    return found


CGROUP_ID = re.compile(r"/nsbox/([0-9a-f]{32})\b")


def sandbox_of(pid):
    """The id of the sandbox pid runs in (its cgroup is nsbox/ID), or None."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            m = CGROUP_ID.search(f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def processes_of(ids):
    """Every process on the host in one of these sandboxes: ids are 128
    random bits, so other tests' sandboxes never match."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and sandbox_of(p) in ids]


class Sampler(threading.Thread):
    """Peak live sandboxes (the server's children, each a sandbox's init;
    state directories too), the id of every sandbox seen, and the server's
    peak threads and fds."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.srv, self.stop = srv, threading.Event()
        self.peak_children = self.peak_dirs = self.peak_threads = self.peak_fds = 0
        self.ids = set()

    def run(self):
        tick = 0
        while not self.stop.wait(0.05):
            try:
                kids = self.srv.children()
                self.peak_children = max(self.peak_children, len(kids))
                dirs = self.srv.state_dirs()
                self.peak_dirs = max(self.peak_dirs, len(dirs))
                self.ids.update(dirs)
                tick += 1
                if tick % 4 == 0:
                    self.ids.update(i for i in map(sandbox_of, kids) if i)
                    self.peak_threads = max(self.peak_threads, self.srv.status("Threads"))
                    self.peak_fds = max(self.peak_fds, self.srv.fds())
            except OSError:
                pass


def settle(srv, base, seconds=30):
    """Waits until fds, threads and children are back to base (or seconds
    pass); returns the last snapshot."""
    end = time.monotonic() + seconds
    while True:
        snap = srv.snapshot()
        same = all(snap[k] == base[k] for k in ("fds", "threads", "children"))
        if same or time.monotonic() > end:
            return snap
        time.sleep(0.25)


def quiesce(srv, seconds=20):
    """The snapshot once fds, threads and children have not changed for a
    second (the spare's refill and removals run on after the calls)."""
    end, last, same = time.monotonic() + seconds, None, 0
    while time.monotonic() < end and same < 4:
        snap = srv.snapshot()
        key = (snap["fds"], snap["threads"], snap["children"])
        same = same + 1 if key == last else 0
        last = key
        time.sleep(0.25)
    return srv.snapshot()


def lone_inits(srv):
    """Sandbox processes beyond the inits: each child of the server must be
    alone in its pid namespace once nothing runs (a leftover daemon or a
    command that outlived its call would be a second process there)."""
    extra = []
    kids = srv.children()
    spaces = {pid_ns(k): k for k in kids}
    for p in processes_in(set(spaces) - {None}):
        if p not in kids and not spare_zygote(p, kids):
            extra.append(p)
    return kids, extra


def spare_zygote(pid, inits):
    """Whether pid is a spare's zygote (docs/warm.md): the interpreter a
    spare sandbox keeps started for its one-shot call, init's child."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return ppid in inits and cmd.startswith((b"python3\0-c\0# nsbox's python zygote",
                                            b"node\0-e\0// nsbox's node zygote"))


# ------------------------------------------------------------- the phases


def spawn(mode, cfg):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), mode, json.dumps(cfg)],
                            stdout=subprocess.PIPE, text=True)


def run_sessions(a, seconds, roles):
    deadline = time.monotonic() + seconds
    procs = [spawn("session", {"port": a.port, "index": i, "role": role, "deadline": deadline,
                               "max_sandboxes": a.max_sandboxes, "max_total": a.max_total})
             for i, role in enumerate(roles)]
    reports = []
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=seconds + 600)
        try:
            reports.append(json.loads(out.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            reports.append({"index": i, "crashed": f"exit {p.returncode}: {out[-300:]!r}"})
    return reports


def check_sessions(name, reports):
    """The assertions every phase of sessions shares."""
    crashed = [r["crashed"] for r in reports if "crashed" in r]
    if crashed:
        nt.report(f"{name}_sessions", f"{len(crashed)} session processes crashed: {crashed[0]}")
        return False
    bad = [r for r in reports if r["rounds"] < 1 or not r["deleted"]]
    nt.report(f"{name}_sessions_complete",
              None if not bad else f"{len(bad)} sessions did not complete a round and DELETE: "
                                f"{bad[0]['unexpected'][:1]}")
    n = sum(r["n_unexpected"] for r in reports)
    first = [u for r in reports for u in r["unexpected"]][:3]
    nt.report(f"{name}_no_errors_but_caps",
              None if n == 0 else f"{n} errors other than the caps' refusals, e.g. {first}")
    n = sum(r["n_wrong"] for r in reports)
    first = [u for r in reports for u in r["wrong"]][:3]
    nt.report(f"{name}_outputs_exact", None if n == 0 else f"{n} wrong results, e.g. {first}")
    return True


def merge_lat(reports):
    lat = {}
    for r in reports:
        for k, v in r.get("lat", {}).items():
            lat.setdefault(k, []).extend(v)
    return lat


def phase_load(a, srv, roles):
    sampler = Sampler(srv)
    sampler.start()
    t0 = time.monotonic()
    reports = run_sessions(a, a.seconds, roles)
    elapsed = time.monotonic() - t0
    sampler.stop.set()
    sampler.join()
    if not check_sessions("load", reports):
        return sampler
    calls = sum(r["calls"] for r in reports)
    refused = {k: sum(r["refused"][k] for r in reports) for k in ("session", "total")}
    nt.note(f"load: {len(roles)} sessions ({roles.count('greedy')} greedy) for {elapsed:.0f} s: "
         f"{calls} calls, {calls / elapsed:.0f} calls/s, "
         f"{sum(r['rounds'] for r in reports)} rounds, {sum(r['logs'] for r in reports)} "
         f"log notifications")
    nt.note(f"load: refused by the caps: {refused['session']} by the session's "
         f"(--max-sandboxes {a.max_sandboxes}), {refused['total']} by the server's "
         f"(--max-total-sandboxes {a.max_total})")
    lat = merge_lat(reports)
    for k in sorted(lat):
        nt.note(f"load: {k:24s} {len(lat[k]):6d} calls, {fmt_lat(lat[k])}")
    nt.note(f"load: peak live sandboxes {sampler.peak_children} (state directories "
         f"{sampler.peak_dirs}); server peak {sampler.peak_threads} threads, "
         f"{sampler.peak_fds} fds")
    checks = sum(r["cap_checks"] for r in reports)
    nt.report("session_cap_exact",
              None if checks > 0 else "no greedy session ever reached --max-sandboxes")
    # A sandbox counts until its init is reaped and its state removed.
    nt.report("total_cap_held",
              None if max(sampler.peak_children, sampler.peak_dirs) <= a.max_total else
              f"{sampler.peak_children} sandbox inits and {sampler.peak_dirs} state directories "
              f"at once, cap {a.max_total}")
    return sampler


def normalize_spare(a, srv):
    """One one-shot python run in a quiet server, so that a spare python
    sandbox is ready (its refill may have been refused at the cap during
    the load), then the snapshot once the server is still."""
    s = Session(Client(a.port))
    s.initialize()
    out = s.tool("execute_code", {"code": "print(6 * 7)"})
    s.delete()
    if out["stdout"] != "42\n":
        raise WrongOutput(f"one-shot execute_code: {out}")
    return quiesce(srv)


def phase_leaks(a, srv, base, sampler, when):
    try:
        normalize_spare(a, srv)
    except (Unexpected, WrongOutput) as e:
        nt.report(f"{when}_one_shot", e)
    snap = settle(srv, base)
    kids, extra = lone_inits(srv)
    nt.note(f"{when}: server fds {base['fds']} -> {snap['fds']}, threads {base['threads']} -> "
         f"{snap['threads']}, children {base['children']} -> {snap['children']}, VmRSS "
         f"{base['rss_kb']} -> {snap['rss_kb']} kB (RssAnon {base['anon_kb']} -> "
         f"{snap['anon_kb']} kB)")
    nt.report(f"{when}_no_leaked_fds",
              None if snap["fds"] == base["fds"] else
              f"{snap['fds']} fds, {base['fds']} after the warm-up: {srv.fd_kinds()}")
    nt.report(f"{when}_no_leaked_threads",
              None if snap["threads"] == base["threads"] else
              f"{snap['threads']} threads, {base['threads']} after the warm-up")
    # What may remain is the spare sandbox for one-shot runs, alone in its
    # namespace; no other sandbox seen during the load has a process.
    spare = {sandbox_of(k) for k in kids}
    left = processes_of(sampler.ids - spare) if sampler else []
    why = None
    if snap["children"] > base["children"]:
        why = f"{snap['children']} sandboxes live, {base['children']} after the warm-up"
    elif extra:
        why = f"processes beside the sandboxes' inits: {extra[:10]}"
    elif left:
        why = f"processes in the cgroups of ended sandboxes: {left[:10]}"
    nt.report(f"{when}_no_leaked_processes", why)
    return snap


def phase_total_cap(a, srv):
    """Fills the server to --max-total-sandboxes with kept sandboxes from
    as many sessions as that takes (the spare gives its slot to the last
    of them: pool.c); the next sandbox_create is refused with exactly the
    cap's message, while the live sandboxes number exactly the cap."""
    total = (f"the server runs {a.max_total} sandboxes, its limit; try again when some "
             f"have finished")
    sessions, held, why, cur = [], [], None, None

    def new_session():
        ns = Session(Client(a.port))
        ns.initialize()
        sessions.append(ns)
        return ns

    try:
        refusal = None
        while refusal is None and len(held) <= a.max_total:
            if len(held) % a.max_sandboxes == 0:
                cur = new_session()
            r = cur.tool("sandbox_create", {"language": "sh"}, caps=(total,))
            if isinstance(r, str):
                refusal = r
            else:
                held.append((cur, r["sandbox_id"]))
        live = len(srv.children())
        if refusal is None:
            why = f"{len(held)} sandboxes and never refused (cap {a.max_total})"
        elif live != a.max_total:
            why = f"refused with {live} live sandboxes, cap {a.max_total}"
        else:
            nt.note(f"server cap: {len(held)} kept sandboxes in {len(sessions)} sessions + "
                 f"{live - len(held)} spare, then refused")
            # Refused in a fresh session too; room again once one stops.
            other = new_session()
            if other.tool("sandbox_create", {"language": "sh"}, caps=(total,)) != total:
                why = "a fresh session was not refused at the cap"
            else:
                owner, sb = held.pop()
                owner.tool("sandbox_stop", {"sandbox_id": sb})
                r = other.tool("sandbox_create", {"language": "sh"}, caps=(total,))
                if isinstance(r, str):
                    why = "still refused after a sandbox was stopped"
    except Unexpected as e:
        why = str(e)
    for s in sessions:
        try:
            s.delete()
        except Unexpected as e:
            why = why or str(e)
    nt.report("total_cap_exact", why)
    # The sessions just ended take their sandboxes with them off their
    # responses' path: a call made now, while they are being removed,
    # waits for their slots instead of being refused for a removal it
    # cannot see (pool.c).
    why = None
    try:
        ns = Session(Client(a.port))
        ns.initialize()
        r = ns.tool("sandbox_create", {"language": "sh"}, caps=(total,))
        out = ns.tool("execute_code", {"code": "echo after", "language": "sh"}, caps=(total,))
        if isinstance(r, str) or isinstance(out, str):
            why = f"refused while the ended sessions' sandboxes were being removed: {r} {out}"
        elif out["stdout"] != "after\n":
            why = f"execute_code after the cap: {out}"
        ns.delete()
    except Unexpected as e:
        why = str(e)
    nt.report("cap_waits_for_removals", why)


def phase_long_calls(a):
    """Calls that outlast --idle-timeout, answered as SSE and as JSON, and
    a GET stream quieter than that: MHD closes a connection that sent
    nothing for its timeout once our content reader returns, so before
    SSE streams carried keep-alive comments, such a call lost its answer
    after the headers (and with the default 60 s, any call over a minute)."""
    secs = a.idle_timeout + 3
    got, threads = {}, []

    def call(accept):
        try:
            s = Session(Client(a.port))
            s.initialize()
            out = s.tool("run_command", {"command": f"sleep {secs}; echo late",
                                         "timeout_s": secs + 60}, accept=accept)
            got[accept] = out["stdout"]
            s.delete()
        except (Unexpected, KeyError) as e:
            got[accept] = str(e)

    for accept in ("text/event-stream", "application/json"):
        threads.append(threading.Thread(target=call, args=(accept,)))
        threads[-1].start()
    g = Session(Client(a.port))
    why = None
    try:
        g.initialize()
        c = mcphttp.connect(a.port, secs + 30)
        mcphttp.send(c, "GET", "/mcp", {"Accept": "text/event-stream", "Mcp-Session-Id": g.sid})
        r = c.getresponse()
        end, comments = time.monotonic() + secs, 0
        while r.status == 200 and time.monotonic() < end:
            line = r.readline()
            if not line:
                why = f"the quiet GET stream was closed after {secs - (end - time.monotonic()):.1f} s"
                break
            comments += line.startswith(b":")
        if r.status != 200:
            why = f"GET: HTTP {r.status}"
        elif why is None and comments == 0:
            why = "no keep-alive comment on a quiet GET stream"
        c.close()
        g.delete()
    except (OSError, http.client.HTTPException, Unexpected) as e:
        why = f"GET stream: {type(e).__name__}: {e}"
    for t in threads:
        t.join()
    for accept in ("text/event-stream", "application/json"):
        nt.report(f"call_outlives_idle_timeout_{accept.split('/')[1].replace('-', '_')}",
                  None if got.get(accept) == "late\n" else
                  f"a {secs} s call answered as {accept} (--idle-timeout {a.idle_timeout}): "
                  f"{got.get(accept)!r}")
    nt.report("quiet_get_stream_kept_open", why)


def last_json(proc):
    out = proc.communicate(timeout=120)[0].strip().splitlines()
    try:
        return json.loads(out[-1])
    except (ValueError, IndexError):
        return {"crashed": f"exit {proc.returncode}: {out[-3:]}"}


def wait_ready(proc, what):
    line = proc.stdout.readline()
    try:
        return json.loads(line)
    except ValueError:
        raise RuntimeError(f"{what}: {line!r}") from None


def wb_loop(s, sb, seconds, tag):
    """A well-behaved session's loop: ping, a command in its sandbox, a
    one-shot run.  Returns every call's latency in ms."""
    lat, i, end = [], 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for name, args, want in (
                ("ping", None, None),
                ("run_command", {"command": f"echo {tag}{i}", "sandbox_id": sb}, f"{tag}{i}\n"),
                ("execute_code", {"code": f"echo {tag}{i}x", "language": "sh"}, f"{tag}{i}x\n")):
            t0 = time.monotonic()
            if name == "ping":
                s.ping()
            else:
                out = s.tool(name, args)
                if out["stdout"] != want:
                    raise WrongOutput(f"{name}: {out['stdout']!r}, expected {want!r}")
            lat.append((time.monotonic() - t0) * 1000)
        i += 1
    return lat


def phase_flood(a, srv):
    """A well-behaved session alone, then beside a slowloris client and a
    flooding client, each on a loopback address of its own."""
    s = Session(Client(a.port, timeout=120))
    try:
        s.initialize()
        sb = s.tool("sandbox_create", {"language": "sh"})["sandbox_id"]
        alone = wb_loop(s, sb, 6, "a")
    except (Unexpected, WrongOutput) as e:
        nt.report("flood_baseline", e)
        try:
            s.delete()  # its sandbox is not the leak checks' to find
        except Unexpected:
            pass
        return
    flood_s, dribble_s = 14, 14
    slow = spawn("slowloris", {"port": a.port, "source": "127.0.0.3", "n": 72,
                               "dribble_s": dribble_s, "idle_timeout": a.idle_timeout})
    flood = spawn("flood", {"port": a.port, "source": "127.0.0.2", "n": 72, "seconds": flood_s})
    why = None
    try:
        rs, rf = wait_ready(slow, "slowloris"), wait_ready(flood, "flood")
        under = wb_loop(s, sb, 8, "f")
    except (Unexpected, WrongOutput, RuntimeError) as e:
        why, under = str(e), []
    fr, sr = last_json(flood), last_json(slow)
    try:
        s.delete()
    except Unexpected as e:
        why = why or str(e)
    nt.note(f"flood: a well-behaved session alone: {len(alone)} calls, {fmt_lat(alone)}")
    if under:
        nt.note(f"flood: the same beside {rf['kept']} flooding and {rs['kept']} slowloris "
             f"connections: {len(under)} calls, {fmt_lat(under)} "
             f"(p99 x{percentile(under, .99) / max(percentile(alone, .99), 1):.1f})")
    nt.note(f"flood: the flooder got {fr.get('answered', 0)} answers "
         f"({fr.get('answered', 0) / flood_s:.0f}/s) on its connections, "
         f"{fr.get('errors', 0)} errors; {fr.get('churn', 0)} more connections attempted, "
         f"{fr.get('churn_closed', 0)} closed at once")
    if why is None and under and max(under) > STARVATION_BOUND_S * 1000:
        why = f"a call took {max(under) / 1000:.1f} s under the flood (bound {STARVATION_BOUND_S} s)"
    nt.report("no_starvation_by_flood_and_slowloris", why)
    # Exactly the documented per-address cap: of 72 connections from one
    # address, the 8 past 64 are closed at once; the rest are served.
    for who, r in (("flood", rf), ("slowloris", rs)):
        nt.report(f"per_address_cap_{who}",
                  None if (r["kept"], r["closed"]) == (64, 8) else
                  f"of 72 connections from one address {r['kept']} kept, {r['closed']} closed "
                  f"(expected 64 and 8)")
    nt.report("flooder_was_served",
              None if fr.get("answered", 0) > 0 and fr.get("errors", 1) == 0 else
              f"the flood's own connections: {fr}")
    nt.report("churn_refused_at_once",
              None if fr.get("churn", 0) > 0 and fr["churn_closed"] == fr["churn"] else
              f"connections past the cap: {fr.get('churn_closed')} of {fr.get('churn')} closed")
    # MHD times silence, not slowness: connections that dribble a byte
    # every half second stay (the per-address cap is what bounds them);
    # once silent they are closed after --idle-timeout.
    nt.report("slowloris_dribbling_held",
              None if sr.get("open_after_dribble") == 64 else
              f"{sr.get('open_after_dribble')} of 64 dribbling connections open after "
              f"{dribble_s} s")
    nt.note(f"slowloris: silent connections closed {sr.get('closed_after_s', -1):.1f} s after "
         f"going silent (--idle-timeout {a.idle_timeout})")
    nt.report("slowloris_silent_closed",
              None if sr.get("all_closed") and sr["closed_after_s"] <= a.idle_timeout + 10 else
              f"silent connections: {sr}")


def open_from(port, source, n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def is_closed(s, wait=0):
    """Whether the server closed s (EOF or reset), waiting at most wait
    seconds for it."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except (socket.timeout, BlockingIOError):
        return False
    except OSError:
        return True


def split_closed(socks, n_open):
    """(kept, closed): waits up to 3 s for the server to close those past
    n_open, then looks once more (well inside --idle-timeout)."""
    end = time.monotonic() + 3
    closed = []
    while time.monotonic() < end:
        closed = [s for s in socks if s in closed or is_closed(s)]
        if len(closed) >= len(socks) - n_open:
            break
        time.sleep(0.1)
    time.sleep(0.2)
    closed = [s for s in socks if s in closed or is_closed(s)]
    return [s for s in socks if s not in closed], closed


def phase_connection_cap(a, srv, base):
    """256 connections from four addresses, 64 each: all held; any more,
    from a fifth address, closed at once; then the server answers again."""
    settle(srv, base, 20)  # the flood's connections are gone
    held, extra, why = [], [], None
    try:
        for k in range(4):
            held += open_from(a.port, f"127.0.0.{20 + k}", 64)
        extra = open_from(a.port, "127.0.0.24", 4)
        _, closed = split_closed(extra, 0)
        closed = len(closed)
        # Checked well inside --idle-timeout: these say nothing at all.
        early = sum(is_closed(s) for s in held)
        if closed != 4 or early:
            why = (f"with 256 open, {closed} of 4 more connections closed at once, "
                   f"{early} of the 256 closed")
    finally:
        for s in held + extra:
            s.close()
    t0, ok = time.monotonic(), False
    while not ok and time.monotonic() - t0 < 20:
        try:
            Session(Client(a.port, timeout=10)).ping_without_session()
            ok = True
        except Unexpected:
            time.sleep(0.2)
    if why is None and not ok:
        why = "the server does not answer 20 s after the connections closed"
    nt.report("total_connection_cap", why)


def main_run(a):
    srv = Server(a.pid, a.store)
    if not srv.alive():
        nt.report("setup", f"no server process {a.pid}")
        return
    n_greedy = max(2, a.sessions // 5)
    roles = ["normal"] * (a.sessions - n_greedy) + ["greedy"] * n_greedy
    random.Random(1).shuffle(roles)
    # 1. Warm-up: every session once, and the baselines after it.
    reports = run_sessions(a, 0, roles)
    if not check_sessions("warmup", reports):
        return
    try:
        base = normalize_spare(a, srv)
    except (Unexpected, WrongOutput) as e:
        nt.report("baseline", e)
        return
    nt.note(f"baseline after the warm-up: {base}")
    # 2. Load, 3. leaks.
    sampler = phase_load(a, srv, roles)
    after = phase_leaks(a, srv, base, sampler, "load")
    growth = after["rss_kb"] - base["rss_kb"]
    nt.report("load_memory_bounded",
              None if growth <= RSS_BOUND_KB else
              f"VmRSS grew {growth} kB over the load (bound {RSS_BOUND_KB} kB)")
    nt.note(f"load: {len(sampler.ids)} sandboxes seen")
    with open(a.ids, "w") as f:
        f.write("".join(i + "\n" for i in sorted(sampler.ids)))
    # 4. The server's cap, 5. long calls, 6. slow and flooding clients,
    # 7. connections, and the baselines once more.
    phase_total_cap(a, srv)
    phase_long_calls(a)
    phase_flood(a, srv)
    phase_connection_cap(a, srv, base)
    final = phase_leaks(a, srv, base, None, "final")
    nt.note(f"final VmRSS {final['rss_kb']} kB ({final['rss_kb'] - base['rss_kb']:+d} kB since "
         f"the warm-up, after the flood's threads and connections; not bounded here)")
    try:
        s = Session(Client(a.port, timeout=30))
        s.initialize()
        s.ping()
        s.delete()
        nt.report("server_still_answers", None if srv.alive() else "the server died")
    except Unexpected as e:
        nt.report("server_still_answers", e)


# ------------------------------------------------------ flood and slowloris


def main_flood(cfg):
    """n connections from one address: those past the cap must be closed at
    once; the others hammer ping on keep-alive connections; meanwhile new
    connections keep being tried (and closed) at about 100 a second."""
    port, source, n = cfg["port"], cfg["source"], cfg["n"]
    socks = open_from(port, source, n)
    kept, closed = split_closed(socks, 64)
    rep = {"kept": len(kept), "closed": len(closed), "answered": 0, "errors": 0,
           "churn": 0, "churn_closed": 0, "why": []}
    print(json.dumps(rep), flush=True)
    lock = threading.Lock()
    start = time.monotonic()
    end = start + cfg["seconds"]

    def exchange(s, f, body, sid=None):
        h = (f"POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json"
             f"\r\nAccept: application/json\r\nContent-Length: {len(body)}\r\n")
        if sid:
            h += f"Mcp-Session-Id: {sid}\r\n"
        s.sendall(h.encode() + b"\r\n" + body)
        status = f.readline()
        headers = {}
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        data = f.read(int(headers.get("content-length", 0)))
        return status, headers, data

    def hammer(k, s, sid):
        f = s.makefile("rb")
        s.settimeout(60)
        n = 0
        while time.monotonic() < end:
            # Ids are unique among a session's requests in flight.
            n += 1
            body = b'{"jsonrpc":"2.0","id":"%d-%d","method":"ping"}' % (k, n)
            try:
                status, _, data = exchange(s, f, body, sid)
                ok = status.startswith(b"HTTP/1.1 200") and b'"result"' in data
                why = f"{status!r} {data[:100]!r}"
            except OSError as e:
                ok, why = False, f"{type(e).__name__}: {e}"
            with lock:
                rep["answered" if ok else "errors"] += 1
                if not ok and len(rep["why"]) < 3:
                    rep["why"].append(f"after {time.monotonic() - start:.1f} s: {why}")
            if not ok:
                return

    def churn():
        while time.monotonic() < end:
            try:
                c = open_from(port, source, 1)[0]
                gone = is_closed(c, 2)
                c.close()
            except OSError:
                gone = True  # refused outright: as good as closed
            with lock:
                rep["churn"] += 1
                rep["churn_closed"] += gone
            time.sleep(0.01)

    sid = None
    if kept:
        kept[0].settimeout(60)
        f = kept[0].makefile("rb")
        status, headers, _ = exchange(kept[0], f, json.dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}).encode())
        sid = headers.get("mcp-session-id")
    threads = [threading.Thread(target=hammer, args=(k, s, sid)) for k, s in enumerate(kept)]
    threads.append(threading.Thread(target=churn))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    print(json.dumps(rep), flush=True)


def main_slowloris(cfg):
    """n connections from one address, each sending a request's first line
    and then a header one byte every half second; those past the cap must
    be closed at once.  Then silence: how long until the server closes
    them."""
    port, n = cfg["port"], cfg["n"]
    socks = open_from(port, cfg["source"], n)
    for s in socks:
        try:
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nX-Slow: ".encode())
        except OSError:
            pass
    kept, closed = split_closed(socks, 64)
    rep = {"kept": len(kept), "closed": len(closed)}
    print(json.dumps(rep), flush=True)
    end = time.monotonic() + cfg["dribble_s"]
    while time.monotonic() < end:
        for s in kept:
            try:
                s.sendall(b"a")
            except OSError:
                pass
        time.sleep(0.5)
    rep["open_after_dribble"] = sum(not is_closed(s) for s in kept)
    t0 = time.monotonic()
    limit = cfg["idle_timeout"] + 30
    pending = list(kept)
    while pending and time.monotonic() - t0 < limit:
        pending = [s for s in pending if not is_closed(s)]
        time.sleep(0.05)
    rep["all_closed"] = not pending
    rep["closed_after_s"] = time.monotonic() - t0
    for s in socks:
        s.close()
    print(json.dumps(rep), flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "session":
        print(json.dumps(run_session(json.loads(sys.argv[2]))), flush=True)
        return 0
    if mode == "flood":
        main_flood(json.loads(sys.argv[2]))
        return 0
    if mode == "slowloris":
        main_slowloris(json.loads(sys.argv[2]))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run"])
    for opt in ("port", "pid", "seconds", "sessions", "max-sandboxes", "max-total",
                "idle-timeout"):
        p.add_argument("--" + opt, type=int, required=True)
    p.add_argument("--store", required=True)
    p.add_argument("--ids", required=True)
    main_run(p.parse_args())
    return nt.status()


if __name__ == "__main__":
    sys.exit(main())
