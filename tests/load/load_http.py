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
flood) is generous.

The driver's phases, their assertions and main are here; the pieces live
beside it: load_client.py (the MCP session over HTTP, the exceptions, raw
connections), load_proc.py (the server seen from /proc) and
load_workers.py (the child processes this file runs as `session`, `flood`
and `slowloris`)."""
import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="load_http")

from load_client import (Client, Session, Unexpected, WrongOutput, fmt_lat,  # noqa: E402
                         is_closed, open_from, percentile, split_closed)
from load_proc import (Sampler, Server, lone_inits, processes_of, quiesce,  # noqa: E402
                       sandbox_of, settle)
from load_workers import main_flood, main_slowloris, run_session  # noqa: E402

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
