"""Background processes over MCP (docs/services-bg.md): process_start,
run_command {background}, process_list, process_logs with its cursor,
process_signal, process_wait, the limits, and processes ending with their
sandbox and their session.  Real `nsbox serve` servers with real
sandboxes from the busybox fixture, over stdio and HTTP, as root and as
the unprivileged user nsboxtest (rootless, best-effort limits), each
combination under its own name prefix (stdio_root/..., http_user/...).

Run as root: `flock /tmp/nsbox-tests.lock python3 tests/services/bg.py`.
Environment: NSBOX (default build/nsbox), NSBOX_FIXTURES
(/var/cache/nsbox/fixtures), SUITE (default services_bg)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="services_bg")

NSBOX_SRC = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
F = os.environ.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures")
USER = "nsboxtest"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bg.py", "version": "1"}}
LOCK = threading.Lock()
T = tempfile.mkdtemp(prefix="nsbox-bg.")
os.chmod(T, 0o755)
NSBOX = os.path.join(T, "nsbox")  # a copy every user can run
shutil.copy(NSBOX_SRC, NSBOX)
os.chmod(NSBOX, 0o755)


def as_user(user):
    return ["runuser", "-u", user, "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
            f"HOME=/home/{user}", "NSBOX_LIMITS=best-effort"] if user else []


def setup_store(user):
    store = os.path.join(T, f"store-{user or 'root'}")
    if user:
        os.mkdir(store, 0o700)
        shutil.chown(store, user, user)
    for cmd in (["pull", "--quiet", f"oci:{F}/oci/busybox:latest"],
                ["tag", f"oci:{F}/oci/busybox:latest", "busybox"]):
        subprocess.run(as_user(user) + [NSBOX, "--store", store, *cmd], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return store


class Stdio:
    def __init__(self, user, store, extra):
        self.p = subprocess.Popen(as_user(user) + [NSBOX, "--store", store, "serve", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.n = 0
        self.lock = threading.Lock()
        self.rpc("initialize", INIT)

    def rpc(self, method, params):
        with self.lock:
            self.n += 1
            self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                           "params": params}) + "\n")
            self.p.stdin.flush()
            while True:
                msg = json.loads(self.p.stdout.readline())
                if msg.get("id") == self.n:
                    return msg

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


class Http:
    def __init__(self, user, store, extra):
        self.p = subprocess.Popen(as_user(user) + [NSBOX, "--store", store, "serve", "--http",
                                                   "127.0.0.1:0", *extra],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        self.port, end = None, time.time() + 30
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
        self.n, self.sid = 0, None
        r = self.rpc("initialize", INIT)
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.sid)

    def rpc(self, method, params):
        with LOCK:  # requests may run at once on their own connections
            self.n += 1
            n = self.n
        r = mcphttp.post(self.port, {"jsonrpc": "2.0", "id": n, "method": method, "params": params},
                         self.sid, timeout=300)
        self.sid = self.sid or r.headers.get("mcp-session-id")
        return r.response(n)

    def close(self):
        mcphttp.request(self.port, "DELETE", headers={"Mcp-Session-Id": self.sid})
        self.p.terminate()
        self.p.wait(timeout=60)


def call(c, tname, **args):
    """The CallToolResult of a tools/call."""
    return c.rpc("tools/call", {"name": tname, "arguments": args})["result"]


def tool(c, tname, **args):
    """The structured result; a tool error raises nt.Check."""
    r = call(c, tname, **args)
    nt.ok(not r.get("isError"), lambda: f"{tname}: {r['content'][0]['text']}")
    return r["structuredContent"]


def error_of(c, tname, **args):
    r = call(c, tname, **args)
    nt.ok(r.get("isError"), lambda: f"{tname} was accepted: {r}")
    return r["content"][0]["text"]


# Markers (tests/markers.md): `sleep 4711` (a sandbox's stop), `sleep 4712`
# (a session's end), whole command lines.
M_STOP, M_SESSION = "4711", "4712"


def host_pids(marker):
    """Host pids whose whole command line is `sleep MARKER` (the sandbox's
    processes are the host's too, in a child pid namespace)."""
    out = subprocess.run(["pgrep", "-f", f"^sleep {marker}$"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_for(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def read_all(c, handle, max_bytes, streams="both", until_eof=True, seconds=60):
    """Reads with the cursor until eof: the text of each stream and the
    dropped bytes."""
    cursor, out, err, dropped, end = None, [], [], 0, time.time() + seconds
    while time.time() < end:
        args = {"handle": handle, "max_bytes": max_bytes, "stream": streams}
        if cursor:
            args["cursor"] = cursor
        r = tool(c, "process_logs", **args)
        cursor = r["cursor"]
        out.append(r.get("stdout", ""))
        err.append(r.get("stderr", ""))
        dropped += r["dropped_bytes"]
        if r["eof"] or not until_eof:
            return "".join(out), "".join(err), dropped, r
        if not r.get("stdout") and not r.get("stderr"):
            time.sleep(0.05)
    raise nt.Check("no eof within %d s" % seconds)


def suite(rep, c, small, sb, sb_small):
    seq_cmd = ('i=1; while [ $i -le 3000 ]; do echo "line $i"; '
               '[ $((i % 400)) = 0 ] && sleep 0.1; i=$((i+1)); done')
    expected = "".join(f"line {i}\n" for i in range(1, 3001))

    def outlives_its_call():
        s = tool(c, "process_start", sandbox_id=sb, command="echo early; sleep 1; echo late", name="late")
        nt.ok(s["running"] and s["handle"].startswith(sb + "/p") and s["name"] == "late", f"start: {s}")
        listed = tool(c, "process_list", sandbox_id=sb)["processes"]
        nt.ok(any(p["handle"] == s["handle"] and p["running"] for p in listed), f"list: {listed}")
        w = tool(c, "process_wait", handle=s["handle"], timeout_s=30)
        nt.ok(not w["running"] and w["exit_code"] == 0, f"wait: {w}")
        out, _, _, _ = read_all(c, s["handle"], 4096)
        nt.ok(out == "early\nlate\n", f"stdout {out!r}")
    rep.run("outlives_its_call", outlives_its_call)

    def cursor_reads_each_byte_once():
        s = tool(c, "process_start", sandbox_id=sb, command=seq_cmd)
        # Pieces of odd sizes while it writes: no byte lost, none twice.
        out, err, dropped, last = read_all(c, s["handle"], 777)
        nt.ok(dropped == 0, f"dropped {dropped}")
        nt.ok(out == expected, lambda: f"{len(out)} bytes, want {len(expected)}; first difference at "
              f"{next((i for i, (a, b) in enumerate(zip(out, expected)) if a != b), min(len(out), len(expected)))}")
        nt.ok(last["cursor"] == f"{len(expected)}:0" and err == "", f"cursor {last['cursor']}, stderr {err!r}")
        # Reading again from the end gives nothing; from 0 the same bytes.
        again = tool(c, "process_logs", handle=s["handle"], cursor=last["cursor"])
        nt.ok(again["stdout"] == "" and again["eof"], f"again: {again}")
    rep.run("cursor_reads_each_byte_once", cursor_reads_each_byte_once)

    def stdout_and_stderr_apart():
        s = tool(c, "process_start", sandbox_id=sb,
                 command="echo out1; echo err1 >&2; echo out2; printf 'x\\377\\303\\251' >&2")
        tool(c, "process_wait", handle=s["handle"], timeout_s=30)
        out, err, _, _ = read_all(c, s["handle"], 4096)
        nt.ok(out == "out1\nout2\n", f"stdout {out!r}")
        nt.ok(err == "err1\nx?\u00e9", f"stderr {err!r} (an invalid byte becomes '?')")
        only = tool(c, "process_logs", handle=s["handle"], stream="stderr")
        nt.ok("stdout" not in only and only["stderr"] == err and only["cursor"] == "0:9", f"stderr alone: {only}")
    rep.run("stdout_and_stderr_apart", stdout_and_stderr_apart)

    def run_command_background():
        s = tool(c, "run_command", sandbox_id=sb, command="echo bg-$((6*7))", background=True)
        nt.ok("handle" in s and s["running"] in (True, False), f"run_command: {s}")
        w = tool(c, "process_wait", handle=s["handle"], timeout_s=30)
        out, _, _, _ = read_all(c, s["handle"], 4096)
        nt.ok(w["exit_code"] == 0 and out == "bg-42\n", f"wait {w}, stdout {out!r}")
        why = error_of(c, "run_command", command="sleep 1", background=True)
        nt.ok("sandbox_id" in why, why)
        why = error_of(c, "run_command", sandbox_id=sb, command="cat", background=True, stdin="x")
        nt.ok("not stdin" in why, why)
    rep.run("run_command_background", run_command_background)

    def signal_ends_it():
        s = tool(c, "process_start", sandbox_id=sb, command="trap 'echo got-term; exit 9' TERM; "
                 "echo ready; while :; do sleep 0.1; done")
        nt.ok(wait_for(lambda: tool(c, "process_logs", handle=s["handle"])["stdout"] == "ready\n", 20),
              "never ready")
        g = tool(c, "process_signal", handle=s["handle"], signal="TERM")
        nt.ok(g["sent"] and g["signal"] == "TERM", f"signal: {g}")
        w = tool(c, "process_wait", handle=s["handle"], timeout_s=30)
        nt.ok(not w["running"] and w["exit_code"] == 9, f"wait after TERM (trapped): {w}")
        k = tool(c, "process_start", sandbox_id=sb, command="sleep 300")
        tool(c, "process_signal", handle=k["handle"], signal="KILL")
        w = tool(c, "process_wait", handle=k["handle"], timeout_s=30)
        nt.ok(not w["running"] and w["exit_code"] == -1 and w["signal"] == 9, f"wait after KILL: {w}")
        why = error_of(c, "process_signal", handle=k["handle"], signal="INT")
        nt.ok("already ended" in why, why)
    rep.run("signal_ends_it", signal_ends_it)

    def wait_times_out():
        s = tool(c, "process_start", sandbox_id=sb, command="sleep 300")
        t0 = time.time()
        w = tool(c, "process_wait", handle=s["handle"], timeout_s=0.5)
        took = time.time() - t0
        nt.ok(w["running"] and "exit_code" not in w, f"wait: {w}")
        nt.ok(0.4 <= took < 10, f"took {took:.2f} s")
        tool(c, "process_signal", handle=s["handle"], signal="KILL")
        e = tool(c, "process_start", sandbox_id=sb, command="sleep 0.3; exit 7")
        w = tool(c, "process_wait", handle=e["handle"], timeout_s=30)
        nt.ok(not w["running"] and w["exit_code"] == 7, f"wait: {w}")
    rep.run("wait_times_out", wait_times_out)

    def bad_handles_refused():
        for h, want in ((f"{sb}/p999", "no background process"), ("nosuch/p1", "no sandbox"),
                        ("p1", "SANDBOX_ID/pN")):
            why = error_of(c, "process_logs", handle=h)
            nt.ok(want in why, f"{h}: {why}")
        why = error_of(c, "process_logs", handle=f"{sb}/p1", cursor="soon")
        nt.ok("OUT:ERR" in why, why)
    rep.run("bad_handles_refused", bad_handles_refused)

    def never_ran_says_why():
        s = tool(c, "process_start", sandbox_id=sb, command="echo no", workdir="/no/such/dir")
        w = tool(c, "process_wait", handle=s["handle"], timeout_s=30)
        _, err, _, _ = read_all(c, s["handle"], 4096)
        nt.ok(not w["running"] and w["exit_code"] in (126, 127) and not w.get("ended_with_sandbox"), f"wait: {w}")
        nt.ok(err.startswith("nsbox: ") and "/no/such/dir" in err, f"stderr {err!r}")
    rep.run("never_ran_says_why", never_ran_says_why)

    def dropped_bytes_reported():
        # A 4 KiB ring per stream (--process-log-kb 4): 20000 bytes at once.
        s = tool(small, "process_start", sandbox_id=sb_small,
                 command="i=0; while [ $i -lt 2000 ]; do printf '%09d\\n' $i; i=$((i+1)); done")
        tool(small, "process_wait", handle=s["handle"], timeout_s=30)
        r = tool(small, "process_logs", handle=s["handle"], cursor="0:0", max_bytes=100000)
        want = "".join("%09d\n" % i for i in range(2000))
        nt.ok(r["dropped_bytes"] == len(want) - 4096 and r["stdout_dropped"] == len(want) - 4096,
              f"dropped {r['dropped_bytes']}, want {len(want) - 4096}")
        nt.ok(r["stdout"] == want[-4096:] and r["cursor"] == f"{len(want)}:0" and r["eof"],
              f"kept {len(r['stdout'])} bytes, cursor {r['cursor']}")
    rep.run("dropped_bytes_reported", dropped_bytes_reported)

    def limit_refused_clearly():
        # --max-processes 2: a third running one is refused, saying why.
        a = tool(small, "process_start", sandbox_id=sb_small, command="sleep 300")
        tool(small, "process_start", sandbox_id=sb_small, command="sleep 300")
        why = error_of(small, "process_start", sandbox_id=sb_small, command="sleep 300")
        nt.ok("--max-processes" in why and "2" in why, why)
        tool(small, "process_signal", handle=a["handle"], signal="KILL")
        tool(small, "process_wait", handle=a["handle"], timeout_s=30)
        tool(small, "process_start", sandbox_id=sb_small, command="true")
    rep.run("limit_refused_clearly", limit_refused_clearly)

    def ends_with_its_sandbox():
        marker = M_STOP
        nt.ok(not host_pids(marker), f"a `sleep {marker}` already runs on this host")
        box = tool(c, "sandbox_create", image="busybox")["sandbox_id"]
        tool(c, "process_start", sandbox_id=box, command=f"exec sleep {marker}")
        # First proof that what must vanish is there.
        nt.ok(wait_for(lambda: host_pids(marker), 10), "the process never showed on the host")
        tool(c, "sandbox_stop", sandbox_id=box)
        nt.ok(wait_for(lambda: not host_pids(marker), 20), lambda: f"still on the host: {host_pids(marker)}")
    rep.run("ends_with_its_sandbox", ends_with_its_sandbox)

    def wait_ends_with_a_stop():
        # A process_wait in flight answers when its sandbox is stopped.
        box = tool(c, "sandbox_create", image="busybox")["sandbox_id"]
        s = tool(c, "process_start", sandbox_id=box, command="sleep 300")
        got = {}
        th = threading.Thread(target=lambda: got.update(r=call(c, "process_wait", handle=s["handle"],
                                                                timeout_s=120)))
        if isinstance(c, Http):  # stdio answers one at a time on its pipe: not here
            th.start()
            time.sleep(0.5)
            t0 = time.time()
            tool(c, "sandbox_stop", sandbox_id=box)
            th.join(60)
            nt.ok(not th.is_alive() and time.time() - t0 < 30, "the wait did not end with the stop")
            nt.ok(got["r"].get("isError") and "stopped" in got["r"]["content"][0]["text"],
                  f"the wait answered {got['r']}")
        else:
            tool(c, "sandbox_stop", sandbox_id=box)
        why = error_of(c, "process_logs", handle=s["handle"])
        nt.ok("no sandbox" in why, why)
    rep.run("wait_ends_with_a_stop", wait_ends_with_a_stop)


def session_end_kills(rep, kind, user, store):
    def ends_with_its_session():
        marker = M_SESSION
        nt.ok(not host_pids(marker), f"a `sleep {marker}` already runs on this host")
        c = kind(user, store, [])
        try:
            box = tool(c, "sandbox_create", image="busybox")["sandbox_id"]
            tool(c, "process_start", sandbox_id=box, command=f"exec sleep {marker}")
            nt.ok(wait_for(lambda: host_pids(marker), 10), "never showed on the host")
        finally:
            c.close()
        nt.ok(wait_for(lambda: not host_pids(marker), 30), lambda: f"still on the host: {host_pids(marker)}")
    rep.run("ends_with_its_session", ends_with_its_session)


def main():
    subprocess.run([os.path.join(HERE, "..", "setup-users.sh")], check=True)
    stores = {}
    try:
        stores[""] = setup_store("")
        stores[USER] = setup_store(USER)
    except subprocess.CalledProcessError as e:
        nt.fail("setup", f"cannot pull the busybox fixture: {e.stderr.decode()[-300:]}")
        return
    for kind, kname in ((Stdio, "stdio"), (Http, "http")):
        for user, uname in (("", "root"), (USER, "user")):
            rep = nt.Reporter(prefix=f"{kname}_{uname}/",
                              suite=os.environ.get("SUITE") or "services_bg")
            c = small = None
            try:
                c = kind(user, stores[user], [])
                small = kind(user, stores[user], ["--process-log-kb", "4", "--max-processes", "2"])
                sb = tool(c, "sandbox_create", image="busybox")["sandbox_id"]
                sb_small = tool(small, "sandbox_create", image="busybox")["sandbox_id"]
                suite(rep, c, small, sb, sb_small)
            except Exception as e:  # a server that did not start: one FAIL, the next combination runs
                rep.fail("setup", f"{type(e).__name__}: {e}")
            finally:
                for s in (c, small):
                    if s is not None:
                        s.close()
            session_end_kills(rep, kind, user, stores[user])
    subprocess.run(["rm", "-rf", T])


if __name__ == "__main__":
    try:
        main()
    finally:
        nt.finish()
