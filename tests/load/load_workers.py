"""The child processes of tests/load/load_http.py (its modes `session`,
`flood` and `slowloris`; each prints its report as JSON lines and asserts
nothing, the driver judges):
  run_session      one load session for the shared deadline: normal rounds
                   (kept and one-shot sandboxes, commands, code, file
                   tools) or greedy ones (sandboxes until the session's cap
                   refuses); errors and wrong outputs counted, not raised;
  main_flood       connections past the per-address cap, keep-alive pings
                   on the rest, and churn;
  main_slowloris   header bytes dribbled, then silence until closed."""
import json
import random
import threading
import time

from load_client import (HEX32, INIT, Client, Session, Unexpected, WrongOutput,
                         is_closed, open_from, split_closed)


# ------------------------------------------------------- one load session


def expect_eq(what, got, want):
    if got != want:
        raise WrongOutput(f"{what}: expected {want!r}, got {got!r}")


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

