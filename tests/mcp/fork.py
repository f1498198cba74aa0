"""sandbox_fork and the checkpoint tools (docs/fork.md) through real
`nsbox serve` servers with real sandboxes from the busybox fixture, as
root and as the unprivileged user nsboxtest (rootless, best-effort limits),
each under its own name prefix (root/..., user/...):
  fork        children get the parent's files as they are at the fork, a
              fresh identity (id, limits, no env or network of the
              parent's), all or none within the caps, and every result
              says state_lost with the reason CRIU gave;
  isolation   a write in a child leaves the parent and its sibling alone
              and the other way round; a child sees none of the parent's
              processes; a child has no network grant the call did not give;
  checkpoint  taken, listed, restored (after a server restart too),
              deleted; bounded by --max-checkpoints and --checkpoint-mb;
  tamper      a changed layer, a swapped MANIFEST, files moved between
              checkpoints, a forged HMAC, a planted symlink, a checkpoint
              directory swapped for a link, a key file opened to others:
              each refused and named, never restored, the server stays up;
  tenants     (root, HTTP) another tenant's checkpoint is answered as one
              that does not exist, and cannot be deleted.
Run as root: `flock /tmp/nsbox-tests.lock python3 tests/mcp/fork.py`.
Environment: NSBOX (default build/nsbox), NSBOX_FIXTURES
(/var/cache/nsbox/fixtures), SUITE (default fork)."""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="fork")
NSBOX_SRC = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
F = os.environ.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures")
USER = "nsboxtest"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "fork.py", "version": "1"}}
T = tempfile.mkdtemp(prefix="nsbox-fork.")
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
    def __init__(self, user, store, extra=()):
        self.p = subprocess.Popen(as_user(user) + [NSBOX, "--store", store, "serve", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.n = 0
        self.rpc("initialize", INIT)

    def rpc(self, method, params):
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                       "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"the server ended during {method}")
            msg = json.loads(line)
            if msg.get("id") == self.n:
                return msg

    def call(self, name, **args):
        r = self.rpc("tools/call", {"name": name, "arguments": args})
        return r.get("result") or {"isError": True, "content": [{"text": json.dumps(r.get("error"))}]}

    def tools(self):
        return [t["name"] for t in self.rpc("tools/list", {})["result"]["tools"]]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def sc(r):
    return (r or {}).get("structuredContent") or {}


def text(r):
    return " ".join(c.get("text", "") for c in (r or {}).get("content", []))


def out(srv, sid, cmd):
    return sc(srv.call("run_command", sandbox_id=sid, command=cmd)).get("stdout")


def fork_suite(p, user):
    res = lambda name, ok, detail="": nt.result(f"{p}/{name}", ok, detail)  # noqa: E731
    store = setup_store(user)
    srv = Stdio(user, store, ["--allow-net", "127.0.0.1:9", "--max-sandboxes", "6"])
    tools = srv.tools()
    res("tools_listed", all(t in tools for t in ("sandbox_fork", "sandbox_checkpoint", "sandbox_restore",
                                                 "checkpoint_list", "checkpoint_delete")), tools)
    r = srv.call("sandbox_create", image="busybox", memory_mb=300, env={"SECRET": "parent-only"},
                 network=["127.0.0.1:9"])
    parent = sc(r).get("sandbox_id")
    res("parent_created_with_grant", parent and sc(r).get("network_rules"), r)
    prep = ("echo parent > /workspace/a && mkdir -p /opt/x && echo y > /opt/x/y && rm /etc/group && "
            "echo tmp > /tmp/t")
    res("parent_prepared", sc(srv.call("run_command", sandbox_id=parent, command=prep)).get("exit_code") == 0)
    bg = srv.call("run_command", sandbox_id=parent, command="exec sleep 313", background=True)
    res("parent_background", not bg.get("isError"), bg)

    r = srv.call("sandbox_fork", sandbox_id=parent, count=2)
    kids = [c.get("sandbox_id") for c in sc(r).get("children", [])]
    reason = sc(r).get("state_lost_reason", "")
    res("fork_two_children", not r.get("isError") and len(kids) == 2 and parent not in kids
        and len(set(kids)) == 2, r)
    # The reason is CRIU's own words (this host: its vDSO error; rootless:
    # no --unprivileged mode), never a bare "not supported".
    res("fork_says_state_lost", sc(r).get("state_lost") is True and "criu" in reason.lower()
        and len(reason) > 40, reason)
    if user:
        res("fork_rootless_reason", reason.startswith("rootless:") and "CAP_CHECKPOINT_RESTORE" in reason,
            reason)
    k1, k2 = (kids + [None, None])[:2]
    c0 = (sc(r).get("children") or [{}])[0]
    res("child_limits_parent", c0.get("limits", {}).get("memory_mb") == 300, c0)
    res("child_no_network_grant", c0.get("network_rules") == [], c0)
    res("child_sees_files", out(srv, k1, "cat /workspace/a /opt/x/y; [ -e /etc/group ] || echo nogroup")
        == "parent\ny\nnogroup\n")
    res("child_no_tmp", out(srv, k1, "[ -e /tmp/t ] && echo t || echo none") == "none\n")
    res("child_not_parent_env", out(srv, k1, 'echo "${SECRET:-unset}"') == "unset\n")
    # Processes: the parent's sleep is not in a child's pid namespace.
    res("parent_sees_sleep", "313" in (out(srv, parent, "ps -o args") or ""))
    res("child_no_parent_process", "313" not in (out(srv, k1, "ps -o args") or "313"))
    # Writes stay where they are made.
    out(srv, k1, "echo child1 > /workspace/a; echo new > /workspace/k1")
    out(srv, parent, "echo parent2 > /workspace/a")
    res("child_write_not_in_parent", out(srv, parent, "cat /workspace/a; ls /workspace") == "parent2\na\n")
    res("parent_write_not_in_child", out(srv, k2, "cat /workspace/a; ls /workspace") == "parent\na\n")
    res("sibling_apart", out(srv, k1, "cat /workspace/a") == "child1\n")
    # A child cannot reach what the parent was granted.
    r = srv.call("run_command", sandbox_id=k1,
                 command="nc -w 2 127.0.0.1 9 </dev/null && echo reached || echo refused")
    res("child_cannot_use_parent_grant", sc(r).get("stdout", "").endswith("refused\n"), r)

    # Its own limits, env and grant when asked.
    r = srv.call("sandbox_fork", sandbox_id=parent, memory_mb=200, env={"K": "v"}, network=["127.0.0.1:9"])
    c = (sc(r).get("children") or [{}])[0]
    k3 = c.get("sandbox_id")
    res("fork_own_limits_env_grant", c.get("limits", {}).get("memory_mb") == 200 and c.get("network_rules")
        and out(srv, k3, 'echo "$K ${SECRET:-unset}"') == "v unset\n", r)
    # Bounds: count, the session's cap (6: parent + 3 children live), all or none.
    r = srv.call("sandbox_fork", sandbox_id=parent, count=11)
    res("count_over_10_refused", r.get("isError") is True and "count" in text(r), r)
    r = srv.call("sandbox_fork", sandbox_id=parent, count=3)
    listed = [x["sandbox_id"] for x in sc(srv.call("sandbox_list")).get("sandboxes", [])]
    res("cap_all_or_none", r.get("isError") is True and len(listed) == 4, f"{text(r)} {listed}")
    r = srv.call("sandbox_fork", sandbox_id="0" * 32)
    res("unknown_sandbox_refused", r.get("isError") is True and "no sandbox" in text(r), r)
    r = srv.call("sandbox_fork", sandbox_id=parent, network=["evil.example:443"])
    res("grant_beyond_ceiling_refused", r.get("isError") is True, r)
    for k in (k1, k2, k3):
        srv.call("sandbox_stop", sandbox_id=k)
    # The fork's image is the server's alone: no name of it is left.
    imgs = subprocess.run(as_user(user) + [NSBOX, "--store", store, "images"], capture_output=True,
                          text=True).stdout
    res("no_fork_name_left", "nsbox-fork" not in imgs, imgs)

    # ---- checkpoints ----
    r = srv.call("sandbox_checkpoint", sandbox_id=parent)
    ck = sc(r).get("checkpoint_id", "")
    res("checkpoint_taken", re.fullmatch(r"ck-[0-9a-f]{16}", ck) is not None and sc(r).get("state_lost") is True
        and sc(r).get("memory") is False, r)
    ckdir = os.path.join(store, "checkpoints")
    key = os.path.join(ckdir, ".key")
    res("key_mode_0600", (os.stat(key).st_mode & 0o777) == 0o600 and os.stat(key).st_size == 32)
    res("listed", ck in [c["checkpoint_id"] for c in sc(srv.call("checkpoint_list")).get("checkpoints", [])])
    out(srv, parent, "echo after > /workspace/a")
    r = srv.call("sandbox_restore", checkpoint_id=ck)
    rid = sc(r).get("sandbox_id")
    res("restored", rid and sc(r).get("state_lost") is True and
        out(srv, rid, "cat /workspace/a /opt/x/y; [ -e /etc/group ] || echo nogroup") == "parent2\ny\nnogroup\n", r)
    res("restored_limits_kept", sc(r).get("limits", {}).get("memory_mb") == 300, r)
    srv.call("sandbox_stop", sandbox_id=rid)
    srv.call("sandbox_stop", sandbox_id=parent)
    srv.close()

    # A new server (a restart) restores it too.
    srv = Stdio(user, store, ["--max-checkpoints", "3", "--checkpoint-mb", "2"])
    r = srv.call("sandbox_restore", checkpoint_id=ck)
    rid = sc(r).get("sandbox_id")
    res("restored_after_restart", rid and out(srv, rid, "cat /opt/x/y") == "y\n", r)

    # ---- hostile checkpoints ----
    def fresh():
        return sc(srv.call("sandbox_checkpoint", sandbox_id=rid)).get("checkpoint_id")

    def refused(name, ckid, words):
        r = srv.call("sandbox_restore", checkpoint_id=ckid)
        res(name, r.get("isError") is True and "refused" in text(r) and words in text(r), text(r))

    def owned_copy(src, dst):
        shutil.copyfile(src, dst)
        st = os.stat(src)
        os.chown(dst, st.st_uid, st.st_gid)

    a = fresh()
    with open(os.path.join(ckdir, a, "layer.tar.gz"), "r+b") as f:
        f.seek(20)
        b = f.read(1)
        f.seek(20)
        f.write(bytes([b[0] ^ 1]))
    refused("tampered_layer", a, "layer.tar.gz is not what the store wrote")
    srv.call("checkpoint_delete", checkpoint_id=a)

    a, b = fresh(), fresh()
    owned_copy(os.path.join(ckdir, b, "MANIFEST"), os.path.join(ckdir, a, "MANIFEST"))
    refused("swapped_manifest", a, "not what the store wrote")
    for n in ("MANIFEST", "meta.json", "layer.tar.gz"):  # all of b's files moved into a
        owned_copy(os.path.join(ckdir, b, n), os.path.join(ckdir, a, n))
    refused("files_moved_between_checkpoints", a, "names checkpoint " + b)
    for x in (a, b):
        srv.call("checkpoint_delete", checkpoint_id=x)

    a = fresh()
    m = open(os.path.join(ckdir, a, "MANIFEST")).read()
    forged = re.sub(r"hmac-sha256 [0-9a-f]+", "hmac-sha256 " + "0" * 64, m)
    open(os.path.join(ckdir, a, "MANIFEST"), "w").write(forged)
    refused("forged_hmac", a, "does not verify")
    open(os.path.join(ckdir, a, "MANIFEST"), "w").write(m)
    os.symlink("/etc/shadow", os.path.join(ckdir, a, "evil"))
    refused("planted_symlink", a, "evil, which is not a regular file")
    os.unlink(os.path.join(ckdir, a, "evil"))
    layer = os.path.join(ckdir, a, "layer.tar.gz")
    os.rename(layer, os.path.join(T, f"layer-{p}"))
    os.symlink(os.path.join(T, f"layer-{p}"), layer)  # the right bytes, through a link
    refused("layer_is_symlink", a, "layer.tar.gz")
    os.unlink(layer)
    os.rename(os.path.join(T, f"layer-{p}"), layer)
    res("untampered_again_restores", not srv.call("sandbox_restore", checkpoint_id=a).get("isError"))
    c = fresh()
    shutil.rmtree(os.path.join(ckdir, c))
    os.symlink(os.path.join(ckdir, a), os.path.join(ckdir, c))
    refused("checkpoint_dir_symlink", c, "not a directory the store wrote")
    os.unlink(os.path.join(ckdir, c))
    os.chmod(key, 0o644)
    r = srv.call("sandbox_restore", checkpoint_id=a)
    res("open_key_refuses_all", r.get("isError") is True and "mode 0600" in text(r), text(r))
    os.chmod(key, 0o600)
    r = srv.call("sandbox_restore", checkpoint_id="../" + a)
    res("bad_id_not_found", r.get("isError") is True and "no checkpoint" in text(r), r)
    lst = sc(srv.call("checkpoint_list"))
    res("server_up_after_hostile", isinstance(lst.get("checkpoints"), list), lst)

    # ---- budgets ----
    n = len(lst.get("checkpoints", []))
    while n < 3:
        fresh()
        n += 1
    r = srv.call("sandbox_checkpoint", sandbox_id=rid)
    res("max_checkpoints_refused", r.get("isError") is True and "--max-checkpoints" in text(r), r)
    for x in sc(srv.call("checkpoint_list")).get("checkpoints", []):
        srv.call("checkpoint_delete", checkpoint_id=x["checkpoint_id"])
    out(srv, rid, "head -c 3000000 /dev/urandom > /workspace/big")
    r = srv.call("sandbox_checkpoint", sandbox_id=rid)
    left = sc(srv.call("checkpoint_list")).get("checkpoints")
    res("checkpoint_mb_refused_and_removed", r.get("isError") is True and "--checkpoint-mb" in text(r)
        and left == [] and not [e for e in os.listdir(ckdir) if e.startswith(".tmp")], f"{text(r)} {left}")
    srv.close()
    srv = Stdio(user, store, ["--max-checkpoints", "0"])
    tools = srv.tools()
    res("max_checkpoints_0_no_tools", "sandbox_checkpoint" not in tools and "sandbox_fork" in tools)
    srv.close()


class Http:
    def __init__(self, store, token_file):
        self.p = subprocess.Popen([NSBOX, "--store", store, "serve", "--http", "127.0.0.1:0",
                                   "--token-file", token_file],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        deadline = time.time() + 30
        while self.port is None and time.time() < deadline:
            line = self.p.stderr.readline()
            if not line:
                break
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            raise RuntimeError("the HTTP server did not start")

    def call(self, token, name, args):
        params = {"name": name, "arguments": args,
                  "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {}}}
        h = {"Content-Type": "application/json", "Accept": mcphttp.BOTH, "MCP-Protocol-Version": "2026-07-28",
             "Mcp-Method": "tools/call", "Mcp-Name": name, "Authorization": f"Bearer {token}"}
        if "sandbox_id" in args:
            h["Mcp-Param-Sandbox-Id"] = args["sandbox_id"]
        r = mcphttp.request(self.port, "POST", headers=h, body=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode(), timeout=120)
        resp = r.response(1)
        return (resp or {}).get("result") or {"isError": True, "content": [{"text": str(resp)}]}

    def close(self):
        self.p.terminate()
        self.p.wait(60)


def tenants():
    res = nt.result
    store = os.path.join(T, "store-root")  # fork_suite("root") made it
    tokens = {"alice": secrets.token_hex(16), "bob": secrets.token_hex(16)}
    tf = os.path.join(T, "tokens")
    with open(tf, "w") as f:
        f.write("".join(f"{k} {v}\n" for k, v in tokens.items()))
    os.chmod(tf, 0o600)
    srv = Http(store, tf)
    alice = lambda n, a: srv.call(tokens["alice"], n, a)  # noqa: E731
    bob = lambda n, a: srv.call(tokens["bob"], n, a)  # noqa: E731
    try:
        sid = sc(alice("sandbox_create", {"image": "busybox"})).get("sandbox_id")
        alice("run_command", {"sandbox_id": sid, "command": "echo alice > /workspace/secret"})
        ck = sc(alice("sandbox_checkpoint", {"sandbox_id": sid})).get("checkpoint_id")
        res("tenants/alice_checkpoint", ck is not None)
        missing = "ck-" + "0" * 16
        want = text(bob("sandbox_restore", {"checkpoint_id": missing})).replace(missing, "ID")
        r = bob("sandbox_restore", {"checkpoint_id": ck})
        res("tenants/bob_cannot_restore_alice", r.get("isError") is True and
            text(r).replace(ck, "ID") == want and "no checkpoint ID" in want, f"{text(r)} / {want}")
        res("tenants/bob_does_not_list_alice",
            ck not in json.dumps(sc(bob("checkpoint_list", {}))))
        r = bob("checkpoint_delete", {"checkpoint_id": ck})
        res("tenants/bob_cannot_delete_alice", r.get("isError") is True and
            ck in json.dumps(sc(alice("checkpoint_list", {}))), r)
        r = alice("sandbox_restore", {"checkpoint_id": ck})
        rid = sc(r).get("sandbox_id")
        got = sc(alice("run_command", {"sandbox_id": rid, "command": "cat /workspace/secret"})).get("stdout")
        res("tenants/alice_restores_own", got == "alice\n", r)
        alice("checkpoint_delete", {"checkpoint_id": ck})
    finally:
        srv.close()


try:
    fork_suite("root", None)
    tenants()
    subprocess.run(["/usr/bin/env", "bash", os.path.join(HERE, "..", "setup-users.sh")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fork_suite("user", USER)
finally:
    subprocess.run(["rm", "-rf", T])
nt.finish()
