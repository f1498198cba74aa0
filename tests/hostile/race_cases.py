"""The hostile suite's races (run by tests/hostile/hostile.py on the fronts
its table names): a process in the sandbox swaps a directory and a symlink
to a host directory with RENAME_EXCHANGE (the probe's `exchange`) while the
runtime works through the path: the MCP file tools and copy_out
(CVE-2018-15664 class), the walk of the changed files after each run, and
new sandboxes' mounts (CVE-2021-30465 class).  Each case returns (ok, why)
with its counts; the host directory and the secret are the canaries."""
import os
import time

from hostile_lib import (CANARY_DIR, CANARY_FILE, FILE_TOOLS_RACE_SECONDS, RACE_SECONDS, outputs,
                         probe_lines)


# -- races ---------------------------------------------------------------------------

def exchange_setup(front, sid):
    """/workspace/d (a dir with 'secret' = inside) and /workspace/l (a symlink
    to CANARY_DIR, which exists on the host, not in the sandbox)."""
    r = front.exec(sid, f"mkdir -p /workspace/d && echo inside > /workspace/d/secret && "
                        f"ln -sfn {CANARY_DIR} /workspace/l && echo ok")
    return r.get("stdout") == "ok\n"


def canary_dir_state():
    return sorted((n, open(os.path.join(CANARY_DIR, n), "rb").read()) for n in os.listdir(CANARY_DIR))


def file_tools_race_case(front):
    """CVE-2018-15664 class: a process in the sandbox swaps a directory and a
    symlink to a host directory with RENAME_EXCHANGE while the MCP file tools
    (and copy_out) work on paths through it.  Every answer is the sandbox's
    file or a clear error; the host directory never changes and its secret
    never shows."""
    sid, why = front.create()
    if sid is None:
        return False, why
    before = canary_dir_state()
    counts = {"read_ok": 0, "read_err": 0, "write_ok": 0, "write_err": 0, "list": 0, "copy_out": 0}
    bad = []
    try:
        if not exchange_setup(front, sid):
            return False, "setup"
        front.exec(sid, f"cd /workspace && probe exchange d l {int(FILE_TOOLS_RACE_SECONDS) + 2} >/tmp/x.jsonl 2>&1 &")
        end, i = time.time() + FILE_TOOLS_RACE_SECONDS, 0
        hostdir = front.hostdir()
        while time.time() < end:
            i += 1
            r = front.tool("read_file", sandbox_id=sid, path="d/secret")
            if r.get("isError"):
                counts["read_err"] += 1
            elif r["structuredContent"]["content"] == "inside\n":
                counts["read_ok"] += 1
            else:
                bad.append(("read", r["structuredContent"]))
            w = front.tool("write_file", sandbox_id=sid, path=f"d/new{i % 50}", content="x")
            counts["write_ok" if not w.get("isError") else "write_err"] += 1
            front.tool("list_directory", sandbox_id=sid, path="d")
            counts["list"] += 1
            if i % 10 == 0:
                dst = os.path.join(hostdir, f"out{i}")
                c = front.tool("copy_out", sandbox_id=sid, path="d/secret", host_path=dst)
                if not c.get("isError"):
                    counts["copy_out"] += 1
                    if open(dst).read() != "inside\n":
                        bad.append(("copy_out", open(dst).read()))
        time.sleep(3)
        x = probe_lines(front.exec(sid, "cat /tmp/x.jsonl").get("stdout", "")).get("exchange", {})
        counts["exchanges"] = x.get("ret")
    finally:
        front.stop(sid)
    after = canary_dir_state()
    secret = open(CANARY_FILE).read().strip()
    leaked = any(secret in o for o in outputs[-50:])
    calls = sum(v for k, v in counts.items() if k != "exchanges")
    ok = (not bad and after == before and not leaked and (counts.get("exchanges") or 0) > 1000
          and counts["read_ok"] > 0 and calls >= 100)
    return ok, {"bad": bad[:3], "host_dir_changed": after != before, "calls": calls, **counts}


def changes_walk_race_case(front):
    """The host walks the sandbox's upper layer after each run to list the
    files it changed (and reads images among them).  A background process
    swaps a directory of pictures with a symlink to a host directory holding
    canary.png: the walk must never list or read the host's files."""
    sid, why = front.create()
    if sid is None:
        return False, why
    bad, runs = [], 0
    try:
        exchange_setup(front, sid)
        front.exec(sid, f"cd /workspace && probe exchange d l {int(RACE_SECONDS) + 2} >/tmp/x.jsonl 2>&1 &")
        end = time.time() + RACE_SECONDS
        canary_png = open(os.path.join(CANARY_DIR, "canary.png"), "rb").read()
        import base64
        while time.time() < end:
            runs += 1
            r = front.tool("run_command", sandbox_id=sid, command=f"cp /workspace/pic.png /workspace/d/p{runs % 20}.png 2>/dev/null; "
                                                                    f"printf '\\x89PNG\\r\\n\\x1a\\n' > /workspace/pic.png")
            files = r.get("structuredContent", {}).get("files", [])
            if any("canary" in f["path"] for f in files):
                bad.append(files)
            for c in r.get("content", []):
                if c.get("type") == "image" and base64.b64decode(c["data"]) == canary_png:
                    bad.append("canary.png content returned")
        time.sleep(3)
        x = probe_lines(front.exec(sid, "cat /tmp/x.jsonl").get("stdout", "")).get("exchange", {})
    finally:
        front.stop(sid)
    return not bad and runs > 20 and (x.get("ret") or 0) > 1000, {"bad": bad[:2], "runs": runs, "exchanges": x.get("ret")}


def mount_race_case(front):
    """CVE-2021-30465 class: mount targets swapped for symlinks while the
    runtime mounts.  A sandbox swaps directories and symlinks to / in a
    persistent workspace (left behind for the next tenant) while new
    sandboxes are set up next to it, from the same image: each must come up
    with exactly its own mounts, the next tenant of the workspace included,
    and the host's mount table must not change."""
    ws = f"race-{front.mode}"
    a, why = front.create(workspace=ws) if front.kind == "mcp" else front.create()
    if a is None:
        return False, why
    bad, made = [], 0
    try:
        # At least RACE_SECONDS and at least 6 sandboxes (a loaded host
        # makes fewer in that time; once 5 of 8 s under ASan with load 11),
        # within 3 x RACE_SECONDS, which the swappers outlast; the stop
        # ends them.
        front.exec(a, "cd /workspace && mkdir -p d tmp proc && for n in l workspace dev sys; do ln -sfn / $n; done; "
                      f"(probe exchange d l {int(RACE_SECONDS) * 3 + 2} >/dev/null 2>&1 &); "
                      f"(probe exchange tmp workspace {int(RACE_SECONDS) * 3 + 2} >/dev/null 2>&1 &); echo started")
        start = time.time()
        while time.time() < start + RACE_SECONDS or (made < 6 and time.time() < start + 3 * RACE_SECONDS):
            made += 1
            r = front.run("probe mountinfo")
            lines = probe_lines(r.get("stdout", "")).get("mountinfo", {}).get("lines", [])
            points = sorted(l.split()[4] for l in lines)
            for want in ("/", "/proc", "/dev", "/dev/shm", "/dev/pts", "/tmp", "/sys"):
                if want not in points:
                    bad.append((want, points))
            if any(" / " not in l and "/workspace/" in l.split()[4] for l in lines):
                bad.append(points)
    finally:
        front.stop(a)
    if front.kind == "mcp":
        # The next tenant of the hostile workspace: its own mounts, planted
        # symlinks are plain files of the workspace.
        b, why = front.create(workspace=ws)
        if b is None:
            return False, why
        try:
            r = front.exec(b, "probe mountinfo; readlink /workspace/l")
            points = sorted(l.split()[4] for l in probe_lines(r.get("stdout", ""))["mountinfo"]["lines"])
            if points.count("/workspace") != 1 or "/proc" not in points:
                bad.append(("next tenant", points))
        finally:
            front.stop(b)
    return not bad and made > 5, {"bad": bad[:2], "sandboxes": made}
