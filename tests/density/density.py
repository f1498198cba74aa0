"""Density (issue #29, docs/density.md): what the server holds per idle
sandbox, and that a sandbox whose handles were dropped still works.

A real `nsbox serve` over stdio with 20 kept sandboxes of the busybox
fixture, as root and as the unprivileged user nsboxtest (rootless), each
under its own name prefix (root/..., user/...):

  fds_idle            the server's open fds grow by at most 2 per idle
                      sandbox (it holds 1: the control socket)
  files_changed       a command's result lists the file it wrote (the
                      tmpfs disk's fd is handed over again on demand)
  disk_used           sandbox_list counts 200 KiB written (statfs of the disk)
  read_file           the file reads back
  commit              sandbox_commit of the sandbox (its writable layer
                      opened through the disk's fd again), root only
  fds_after_use       after all that, still at most 2 fds per sandbox
  live_stop           the stop of an idle sandbox kills its init (pidfd
                      opened again) and reaps it: its pid is gone, its
                      state directory too
  dead_init_refused   a command in a sandbox whose init was killed from
                      outside fails with an error, at once
  dead_init_stop      its stop answers, reaps the zombie and removes it
  others_answer       every other sandbox still answers
  long_store_refused  a store whose sandboxes' state directory would not
                      fit the server's compact record (1,023 bytes) is
                      refused at creation with the reason, never truncated
                      (root only)

Run as root: `flock /tmp/nsbox-tests.lock python3 tests/density/density.py`.
Environment: NSBOX (default build/nsbox), NSBOX_FIXTURES, SUITE."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="density")

NSBOX_SRC = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
F = os.environ.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures")
USER = "nsboxtest"
N = 20
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "density", "version": "1"}}
T = tempfile.mkdtemp(prefix="nsbox-density.")
os.chmod(T, 0o755)
NSBOX = os.path.join(T, "nsbox")  # a copy every user can run
shutil.copy(NSBOX_SRC, NSBOX)
os.chmod(NSBOX, 0o755)


def as_user(user):
    return ["runuser", "-u", user, "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
            f"HOME=/home/{user}", "NSBOX_LIMITS=best-effort"] if user else []


def setup_store(user):
    store = os.path.join(T, f"store-{user or 'root'}")
    os.mkdir(store, 0o700)
    if user:
        shutil.chown(store, user, user)
    for cmd in (["pull", "--quiet", f"oci:{F}/oci/busybox:latest"],
                ["tag", f"oci:{F}/oci/busybox:latest", "busybox"]):
        subprocess.run(as_user(user) + [NSBOX, "--store", store, *cmd], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return store


class Stdio:
    def __init__(self, user, store):
        self.p = subprocess.Popen(as_user(user) + [NSBOX, "--store", store, "serve",
                                                   "--max-sandboxes", str(N + 4),
                                                   "--max-total-sandboxes", str(N + 8)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.n = 0
        self.rpc("initialize", INIT)

    def pid(self):
        """The server's own pid (under runuser: runuser's child)."""
        pid = self.p.pid
        for _ in range(3):
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "nsbox":
                    return pid
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                pid = int(f.read().split()[0])
        raise RuntimeError("no nsbox server process found")

    def rpc(self, method, params):
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
        self.p.wait(timeout=120)


def call(c, tname, **args):
    return c.rpc("tools/call", {"name": tname, "arguments": args})["result"]


def tool(c, tname, **args):
    r = call(c, tname, **args)
    nt.ok(not r.get("isError"), lambda: f"{tname}: {r['content'][0]['text']}")
    return r["structuredContent"]


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def init_pid(store, sb):
    with open(os.path.join(store, "sandboxes", sb, "state")) as f:
        return int(re.search(r"^pid=(\d+)$", f.read(), re.M).group(1))


def gone(pid, ppid):
    """pid is no process, or no longer ppid's child (reused)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1]) != ppid
    except FileNotFoundError:
        return True


def suite(rep, user, store):
    c = Stdio(user, store)
    try:
        time.sleep(1)  # the server's own start (stdio, logs) settles
        spid = c.pid()
        f0 = nfds(spid)
        ids = [tool(c, "sandbox_create", image="busybox")["sandbox_id"] for _ in range(N)]
        time.sleep(0.5)
        per = (nfds(spid) - f0) / N
        rep.result("fds_idle", per <= 2, f"{per:.2f} fds per idle sandbox (over 2)")
        rep.note(f"{user or 'root'}: {per:.2f} server fds per idle sandbox")

        sb = ids[0]

        @rep.test("files_changed")
        def _():
            st = tool(c, "run_command", sandbox_id=sb,
                      command="head -c 204800 /dev/zero > /workspace/big.bin; echo hi > /workspace/a.txt")
            paths = sorted(f["path"] for f in st.get("files", []))
            nt.ok(paths == ["a.txt", "big.bin"], lambda: f"files {paths}, want a.txt and big.bin")
            nt.ok(st.get("disk") == "tmpfs", lambda: f"disk {st.get('disk')}, want tmpfs")

        @rep.test("disk_used")
        def _():
            lst = tool(c, "sandbox_list")["sandboxes"]
            used = [x.get("disk_used_bytes", 0) for x in lst if x["sandbox_id"] == sb]
            nt.ok(used and used[0] >= 204800, lambda: f"disk_used_bytes {used}, want >= 204800")

        @rep.test("read_file")
        def _():
            st = tool(c, "read_file", sandbox_id=sb, path="/workspace/a.txt")
            nt.ok(st["content"] == "hi\n", lambda: f"content {st['content']!r}")

        if not user:
            @rep.test("commit")
            def _():
                st = tool(c, "sandbox_commit", sandbox_id=sb, name="density-commit")
                b = tool(c, "sandbox_create", image=st["image"])["sandbox_id"]
                out = tool(c, "run_command", sandbox_id=b, command="cat /workspace/a.txt")
                tool(c, "sandbox_stop", sandbox_id=b)
                nt.ok(out["stdout"] == "hi\n", lambda: f"the commit's file reads {out['stdout']!r}")

        time.sleep(0.5)
        per = (nfds(spid) - f0) / N
        rep.result("fds_after_use", per <= 2, f"{per:.2f} fds per sandbox after use (over 2)")

        @rep.test("live_stop")
        def _():
            live = ids.pop()
            pid = init_pid(store, live)
            nt.ok(not gone(pid, spid), lambda: f"init {pid} is not the server's child before the stop")
            tool(c, "sandbox_stop", sandbox_id=live)
            nt.ok(gone(pid, spid), lambda: f"init {pid} still the server's child after the stop")
            nt.ok(not os.path.exists(os.path.join(store, "sandboxes", live)), lambda: "state left")

        dead = ids.pop()
        pid = init_pid(store, dead)
        os.kill(pid, 9)
        for _ in range(100):  # dies, and stays the server's zombie until the stop
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.05)

        @rep.test("dead_init_refused")
        def _():
            t0 = time.time()
            r = call(c, "run_command", sandbox_id=dead, command="echo no")
            nt.ok(r.get("isError") or r["structuredContent"].get("status") != "ok",
                  lambda: f"a command ran in a sandbox whose init is dead: {r}")
            nt.ok(time.time() - t0 < 10, lambda: f"took {time.time() - t0:.1f} s")

        @rep.test("dead_init_stop")
        def _():
            tool(c, "sandbox_stop", sandbox_id=dead)
            nt.ok(gone(pid, spid), lambda: f"dead init {pid} not reaped by the stop")
            nt.ok(not os.path.exists(os.path.join(store, "sandboxes", dead)), lambda: "state left")

        @rep.test("others_answer")
        def _():
            for i in ids:
                st = tool(c, "run_command", sandbox_id=i, command="echo ok")
                nt.ok(st["stdout"] == "ok\n", lambda: f"{i}: {st}")

        for i in ids:
            call(c, "sandbox_stop", sandbox_id=i)
    finally:
        c.close()


def long_store(rep):
    """A store path of about 1,010 bytes: sandbox_create says it is too long."""
    d = T
    while len(d) < 1010:
        d = os.path.join(d, "d" * min(200, 1010 - len(d)))
    os.makedirs(d)
    os.chmod(d, 0o700)
    subprocess.run([NSBOX, "--store", d, "pull", "--quiet", f"oci:{F}/oci/busybox:latest"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    c = Stdio("", d)
    try:
        r = call(c, "sandbox_create", image=f"oci:{F}/oci/busybox:latest")
        text = r["content"][0]["text"] if r.get("content") else ""
        rep.result("long_store_refused", r.get("isError") and "too long" in text,
                   f"len {len(d)}: {str(r)[:300]}")
        left = os.listdir(os.path.join(d, "sandboxes")) if os.path.isdir(os.path.join(d, "sandboxes")) else []
        rep.note(f"long store: {text[:160]}; left in sandboxes/: {left}")
    finally:
        c.close()


def main():
    for user in ("", USER):
        rep = nt.Reporter(prefix=f"{'user' if user else 'root'}/",
                          suite=os.environ.get("SUITE") or "density")
        try:
            store = setup_store(user)
            suite(rep, user, store)
            if not user:
                long_store(rep)
        except Exception as e:
            rep.fail("setup", f"{type(e).__name__}: {e}")
    subprocess.run(["rm", "-rf", T])


if __name__ == "__main__":
    try:
        main()
    finally:
        nt.finish()
