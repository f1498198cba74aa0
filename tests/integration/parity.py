#!/usr/bin/env python3
"""The front ends alike (issue #26): the same scenarios through the `nsbox`
command line (create, exec --json, cp) and through `nsbox serve` over
stdio (sandbox_create, run_command, copy_in/copy_out, write_file), with
the same outcome asserted, because both now run through one door
(boxes/run.h, files.h, copy.h): a command's result record and exit code,
the files it changed, a timeout that kills everything the command
started, the network audit, and the workspace budget (a command that goes
over it is stopped mid-run with the same status, the next command and
every write or copy in are refused, reads and copies out still work, files
deleted on the host count at once, a copy that crosses the budget is
stopped, and -t is watched too).  Root, one store for both (the fixtures'
python image, tagged "python").  Environment: NSBOX, NSBOX_STORE, SUITE
(parity)."""
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
NSBOX = os.environ["NSBOX"]
os.environ.setdefault("SUITE", "parity")
MiB = 1 << 20
# What must be the same in both records (box_result_json's fields).
KEYS = ("status", "exit_code", "signal", "stdout", "stderr", "timed_out", "oom_killed")


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"marker-parity\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
P = httpd.server_address[1]
FETCH = ("import sys, urllib.request\n"
         "for u in sys.argv[1:]:\n"
         "    try:\n"
         "        print(urllib.request.urlopen(u, timeout=10).read().decode().strip())\n"
         "    except Exception as e:\n"
         "        print('ERR', type(e).__name__)\n")

HOST = tempfile.mkdtemp(prefix="nsbox-parity.")
with open(os.path.join(HOST, "blob"), "wb") as f:
    f.write(b"x" * 4096)
with open(os.path.join(HOST, "big"), "wb") as f:
    f.write(b"y" * (3 * MiB))
os.makedirs(os.path.join(HOST, "dir"))
with open(os.path.join(HOST, "dir", "a"), "w") as f:
    f.write("a")
TREE = os.path.join(HOST, "tree")
os.makedirs(TREE)
for i in range(200):
    with open(os.path.join(TREE, f"t{i:03}"), "wb") as f:
        f.write(os.urandom(64 << 10))


def cli(*args, timeout=120):
    """(exit status, stdout, stderr) of `nsbox --store STORE ARGS...`."""
    p = subprocess.run([NSBOX, "--store", STORE, *args], capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def cli_record(*args, timeout=120):
    """(exit status, the --json record or {}, stderr) of `nsbox exec --json ARGS...`."""
    rc, out, err = cli("exec", "--json", *args, timeout=timeout)
    try:
        return rc, json.loads(out.strip().splitlines()[-1]), err
    except (ValueError, IndexError):
        return rc, {}, err


def text_of(r):
    return r.get("content", [{}])[0].get("text", "")


def sc(r):
    return r.get("structuredContent") or {}


def pick(rec):
    """The fields both must have alike; the workspace's name (each front
    end has its own) as W."""
    out = {k: rec.get(k) for k in KEYS}
    for name in ("pcli", "pmcp"):
        out["stderr"] = (out["stderr"] or "").replace(f'"{name}"', '"W"')
    return out


def docker_code(rec):
    """The exit code the CLI exits with for a record (boxes/result.c):
    the command's status, or 128+N for signal N (exit_code is -1 then)."""
    code = rec.get("exit_code", -2)
    return code if code >= 0 else 128 + rec.get("signal", 0)


def files_of(rec):
    return sorted((e.get("path"), e.get("change"), e.get("size")) for e in rec.get("files", []))


def verdicts(rec):
    return {(e.get("host"), e.get("port"), e.get("verdict")) for e in rec.get("network", [])}


def ws_dir(name):
    return os.path.join(STORE, "workspaces", name)


def empty_workspace(name):
    """Deletes the workspace's files on the host (the way out the refusal names)."""
    for e in os.listdir(ws_dir(name)):
        p = os.path.join(ws_dir(name), e)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)


def alike(name, cli_side, mcp_side, ok, extra=""):
    result(name, ok, f"cli {cli_side} mcp {mcp_side} {extra}")


s = Server(["--allow-host-dir", HOST, "--max-workspace", "64",
            "--allow-net", f"127.0.0.1:{P},test.example=127.0.0.1:{P}"], STORE)
ids = []
try:
    # -- one sandbox each, a 2 MiB workspace each --------------------------
    rc, out, err = cli("create", "--workspace", "pcli", "--workspace-size", "2m", "python")
    cid = out.strip()
    ids.append(cid)
    r = s.tool("sandbox_create", image="python", workspace="pmcp", workspace_mb=2)
    sid = sc(r).get("sandbox_id")
    if rc != 0 or not cid or sid is None:
        result("setup", False, f"cli: {rc} {err} mcp: {r}")
        finish()

    # -- results: a status, an exit code, output ---------------------------
    cmd = "echo out; echo err >&2; exit 3"
    rc, c, _ = cli_record(cid, "--", "sh", "-c", cmd)
    m = sc(s.tool("run_command", sandbox_id=sid, command=cmd))
    alike("results_exit_status_alike", (rc, pick(c)), pick(m),
          rc == 3 and pick(c) == pick(m) and m.get("exit_code") == 3 and m.get("stdout") == "out\n")
    rc, c, _ = cli_record(cid, "--", "sh", "-c", "kill -9 $$")
    m = sc(s.tool("run_command", sandbox_id=sid, command="kill -9 $$"))
    alike("results_signal_alike", (rc, pick(c)), pick(m),
          rc == 137 and pick(c) == pick(m) and m.get("status") == "signaled")

    # -- the files a command changed ----------------------------------------
    cmd = "printf hello > made.txt"
    rc, c, _ = cli_record(cid, "--", "sh", "-c", cmd)
    m = sc(s.tool("run_command", sandbox_id=sid, command=cmd))
    alike("changed_files_alike", files_of(c), files_of(m),
          rc == 0 and files_of(c) == files_of(m) == [("made.txt", "created", 5)])

    # -- cancellation: a timeout kills the command and what it started ------
    cmd = "sleep 60 & sleep 60; echo never"
    t0 = time.monotonic()
    rc, c, _ = cli_record("--timeout", "1", cid, "--", "sh", "-c", cmd)
    t1 = time.monotonic()
    m = sc(s.tool("run_command", sandbox_id=sid, command=cmd, timeout_s=1))
    t2 = time.monotonic()
    alike("timeout_alike", (rc, pick(c)), pick(m),
          pick(c) == pick(m) and m.get("timed_out") is True and m.get("status") == "timeout"
          and rc == docker_code(m) == 137 and t1 - t0 < 20 and t2 - t1 < 20, f"{t1 - t0:.1f}s {t2 - t1:.1f}s")
    # Proof that something ran to kill: the sleeps were started (the
    # record's wall time), and none is left in either sandbox.
    count = "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$'"
    rc, c2, _ = cli_record(cid, "--", "sh", "-c", count)
    m2 = sc(s.tool("run_command", sandbox_id=sid, command=count))
    result("timeout_kills_in_both",
           c.get("wall_ms", 0) >= 900 and m.get("wall_ms", 0) >= 900
           and c2.get("stdout") == "0\n" and m2.get("stdout") == "0\n", (c2, m2))

    # -- the network audit ---------------------------------------------------
    rc, out, err = cli("create", "--net", f"127.0.0.1:{P}", "--net", f"test.example=127.0.0.1:{P}", "python")
    nid = out.strip()
    ids.append(nid)
    r = s.tool("sandbox_create", image="python", network=[f"127.0.0.1:{P}", "test.example"])
    nsid = sc(r).get("sandbox_id")
    urls = [f"http://127.0.0.1:{P}/marker.txt", f"http://other.example:{P}/marker.txt"]
    rc, c, _ = cli_record(nid, "--", "python3", "-c", FETCH, *urls)
    m = sc(s.tool("run_command", sandbox_id=nsid,
                  command="python3 -c " + shlex.quote(FETCH) + " " + " ".join(urls)))
    alike("network_audit_alike", (c.get("stdout"), verdicts(c)), (m.get("stdout"), verdicts(m)),
          verdicts(c) == verdicts(m) and ("127.0.0.1", P, "allowed") in verdicts(m)
          and ("other.example", 53, "refused") in verdicts(m)
          and c.get("stdout") == m.get("stdout") == "marker-parity\nERR URLError\n")
    s.tool("sandbox_stop", sandbox_id=nsid)

    # -- the workspace budget ------------------------------------------------
    # Up to 10 MiB, 256 KiB every 0.1 s: the watch must stop it on the way.
    fill = ("i=0; while [ $i -lt 40 ]; do dd if=/dev/zero of=f$i bs=256k count=1 2>/dev/null; "
            "i=$((i+1)); sleep 0.1; done; echo finished")
    rc, c, cerr = cli_record(cid, "--", "sh", "-c", fill)
    m = sc(s.tool("run_command", sandbox_id=sid, command=fill))
    result("budget_workspaces_measured",
           c.get("workspace_disk") == m.get("workspace_disk") == "measured"
           and c.get("workspace_limit_bytes") == m.get("workspace_limit_bytes") == 2 * MiB, (c, m))
    ok = all(r.get("workspace_over_budget") is True and "finished" not in r.get("stdout", "")
             and "went over its budget of 2 MiB" in r.get("stderr", "")
             and r.get("workspace_used_bytes", 1 << 40) < 9 * MiB for r in (c, m))
    alike("budget_stops_command_alike", (rc, pick(c)), pick(m),
          ok and rc == docker_code(m) == 137 and pick(c) == pick(m) and m.get("status") == "signaled")
    rc, out, err = cli("exec", cid, "--", "echo", "ran")
    r = s.tool("run_command", sandbox_id=sid, command="echo ran")
    alike("budget_refuses_next_command_alike", (rc, err), r,
          rc == 125 and "over its budget" in err and out == ""
          and r.get("isError") and "over its budget" in text_of(r))
    rc, out, err = cli("cp", os.path.join(HOST, "blob"), f"{cid}:blob")
    r = s.tool("copy_in", sandbox_id=sid, host_path=os.path.join(HOST, "blob"), path="blob")
    alike("budget_refuses_copy_in_alike", (rc, err), r,
          rc == 1 and "over its budget" in err and r.get("isError") and "over its budget" in text_of(r)
          and not os.path.exists(os.path.join(ws_dir("pcli"), "blob"))
          and not os.path.exists(os.path.join(ws_dir("pmcp"), "blob")))
    rc, out, err = cli("cp", os.path.join(HOST, "dir"), f"{cid}:dir")
    r1 = s.tool("write_file", sandbox_id=sid, path="w.txt", content="x")
    r2 = s.tool("create_directory", sandbox_id=sid, path="d")
    alike("budget_refuses_writes_alike", (rc, err), (r1, r2),
          rc == 1 and "over its budget" in err
          and all(r.get("isError") and "over its budget" in text_of(r) for r in (r1, r2)))
    rc, out, err = cli("cp", f"{cid}:made.txt", os.path.join(HOST, "cli-made.txt"))
    r = s.tool("copy_out", sandbox_id=sid, path="made.txt", host_path=os.path.join(HOST, "mcp-made.txt"))
    got = [open(os.path.join(HOST, n)).read() if os.path.exists(os.path.join(HOST, n)) else None
           for n in ("cli-made.txt", "mcp-made.txt")]
    alike("budget_copy_out_still_works_alike", (rc, err), r,
          rc == 0 and not r.get("isError") and got == ["hello", "hello"], got)
    # The way out the refusal names: deleting files on the host.
    empty_workspace("pcli")
    empty_workspace("pmcp")
    rc, c, _ = cli_record(cid, "--", "echo", "back")
    m = sc(s.tool("run_command", sandbox_id=sid, command="echo back"))
    alike("under_budget_again_alike", (rc, pick(c)), pick(m),
          rc == 0 and pick(c) == pick(m) and m.get("stdout") == "back\n")

    # -- copies that cross the budget ----------------------------------------
    # A tree of 200 files of 64 KiB (12.5 MiB) into 2 MiB: cp stops on the
    # way (the watch between writes) and says why.
    rc, out, err = cli("cp", TREE, f"{cid}:tree", timeout=300)
    n = len(os.listdir(os.path.join(ws_dir("pcli"), "tree"))) if os.path.isdir(
        os.path.join(ws_dir("pcli"), "tree")) else -1
    result("cp_tree_stopped_at_budget", rc == 1 and "over its budget" in err and 0 < n < 200,
           f"exit {rc}, {n} files copied: {err[-300:]}")
    # A single file under the budget when it starts goes whole (3 MiB into
    # an empty 2 MiB workspace, as copy_in's one write); the next is refused.
    empty_workspace("pcli")
    rc, out, err = cli("cp", os.path.join(HOST, "big"), f"{cid}:big")
    r = s.tool("copy_in", sandbox_id=sid, host_path=os.path.join(HOST, "big"), path="big")
    rc2, out2, err2 = cli("cp", os.path.join(HOST, "blob"), f"{cid}:blob")
    r2 = s.tool("copy_in", sandbox_id=sid, host_path=os.path.join(HOST, "blob"), path="blob")
    alike("copy_crossing_budget_then_refused_alike", (rc, rc2, err2), (r, r2),
          rc == 0 and not r.get("isError") and rc2 == 1 and "over its budget" in err2
          and r2.get("isError") and "over its budget" in text_of(r2))

    # -- the watch covers -t too (the CLI's terminal relay) ------------------
    empty_workspace("pcli")
    rc, out, err = cli("exec", "-t", cid, "--", "sh", "-c", fill)
    result("budget_stops_tty_command", rc == 137 and "finished" not in out
           and "went over its budget of 2 MiB" in err, f"exit {rc}: {out[-200:]} {err[-300:]}")

    # -- the watch when others free space on the same filesystem -----------
    # The watch is cheap while the filesystem's free space falls by no more
    # than the budget's room; space others free beside it (a rootfs
    # removed) hides the command's writes from that count.  40 files of
    # 4 MiB on the workspace's filesystem, one removed every 0.1 s while
    # the command fills 256 KiB every 0.1 s: free space only rises, and
    # both fronts must still stop it.
    def freeing(d, stop):
        for i in range(40):
            if stop.is_set():
                return
            os.unlink(os.path.join(d, f"g{i}"))
            time.sleep(0.1)

    def under_freeing(run):
        d = tempfile.mkdtemp(prefix="free.", dir=os.path.dirname(ws_dir("pcli")))
        for i in range(40):
            with open(os.path.join(d, f"g{i}"), "wb") as f:
                f.write(b"\0" * (4 * MiB))
                f.flush()
                os.fsync(f.fileno())
        stop = threading.Event()
        t = threading.Thread(target=freeing, args=(d, stop))
        try:
            t.start()
            return run()
        finally:
            stop.set()
            t.join()
            shutil.rmtree(d, ignore_errors=True)

    empty_workspace("pcli")
    empty_workspace("pmcp")
    rc, c, cerr = under_freeing(lambda: cli_record(cid, "--", "sh", "-c", fill))
    m = sc(under_freeing(lambda: s.tool("run_command", sandbox_id=sid, command=fill)))
    ok = all(r.get("workspace_over_budget") is True and "finished" not in r.get("stdout", "")
             and "went over its budget of 2 MiB" in r.get("stderr", "") for r in (c, m))
    alike("budget_stops_command_while_others_free_space", (rc, pick(c)), pick(m),
          ok and rc == 137 and m.get("status") == "signaled")
finally:
    s.tool("sandbox_stop", sandbox_id=sid) if "sid" in dir() and sid else None
    s.close()
    for i in ids:
        if i:
            cli("rm", i)
    httpd.shutdown()
    shutil.rmtree(HOST, ignore_errors=True)
finish()
