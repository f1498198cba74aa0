#!/usr/bin/env python3
"""Persistent named workspaces (sandbox_create {workspace: NAME}) against
`nsbox serve` over stdio: files survive the sandbox and a server killed
with SIGKILL; one sandbox at a time per workspace; names cannot climb out;
the mount is nosuid,nodev; `files` sees workspace changes, also from a
working directory below the mount.  Run as root and
(with NSBOX_TEST_AS=user) rootless.  PASS/FAIL lines like tests/lib.sh.
Environment: NSBOX, NSBOX_STORE, SUITE (default mcp_workspaces)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server as _Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
os.environ.setdefault("SUITE", "mcp_workspaces")


def Server(extra=()):
    return _Server(extra, STORE)


s = Server()
r = s.tool("sandbox_create", workspace="proj")
sid = r.get("structuredContent", {}).get("sandbox_id")
result("create_with_workspace", sid is not None and r["structuredContent"].get("workspace") == "proj", r)
out = s.tool("run_command", sandbox_id=sid, command="echo kept > notes.txt; mkdir -p sub; echo x > sub/f; grep ' /workspace ' /proc/self/mountinfo")["structuredContent"]
result("workspace_mount_nosuid_nodev", "nosuid" in out["stdout"] and "nodev" in out["stdout"], out["stdout"])
result("files_sees_workspace_changes", {f.get("path") for f in out["files"]} >= {"notes.txt", "sub/f"}, out["files"])
# A working directory below the workspace's mount: the run's files land in
# the workspace, not the upper layer, so that is where they must be looked
# for (the upper layer was walked before, and the result said nothing).
out = s.tool("run_command", sandbox_id=sid, command="echo y > below.txt", workdir="/workspace/sub")["structuredContent"]
result("files_sees_changes_below_workspace", [f.get("path") for f in out.get("files", [])] == ["below.txt"], out)
r = s.tool("sandbox_create", workspace="proj")
result("one_sandbox_per_workspace", r.get("isError") and "in use" in r["content"][0]["text"], r)
bad = [n for n in ("../escape", ".hidden", "", "a/b", "x" * 65, "-opt", "Proj")
       if not s.tool("sandbox_create", workspace=n).get("isError")]
result("workspace_names_validated", not bad and not os.path.exists(os.path.join(STORE, "escape")), bad)
s.p.kill()
s.p.wait()

s = Server()
r = s.tool("sandbox_create", workspace="proj")
sid2 = r.get("structuredContent", {}).get("sandbox_id")
out = s.tool("run_command", sandbox_id=sid2, command="cat notes.txt sub/f; stat -c %u notes.txt")["structuredContent"] if sid2 else {}
result("files_survive_server_sigkill", out.get("stdout") == "kept\nx\n0\n", out or r)
s.tool("sandbox_stop", sandbox_id=sid2)
r = s.tool("sandbox_create", workspace="proj")
result("reusable_after_stop", not r.get("isError"), r)
s.p.stdin.close()
s.p.wait(timeout=30)
disk = os.path.join(STORE, "workspaces", "proj", "notes.txt")
st = os.stat(disk)
owner_ok = st.st_uid == 0 if os.geteuid() == 0 else st.st_uid == os.geteuid()
result("on_disk_owner_canonical", owner_ok and open(disk).read() == "kept\n", (st.st_uid, os.geteuid()))
# The server-wide cap: every session's sandboxes and one-shots count.
s = Server(["--max-total-sandboxes", "2"])
a = s.tool("sandbox_create")
b = s.tool("sandbox_create")
c = s.tool("sandbox_create")
d = s.tool("execute_code", code="print(1)")
s.tool("sandbox_stop", sandbox_id=a["structuredContent"]["sandbox_id"])
e = s.tool("sandbox_create")
result("server_wide_sandbox_cap", not a.get("isError") and not b.get("isError") and c.get("isError")
       and "limit" in c["content"][0]["text"] and d.get("isError") and not e.get("isError"), (c, d, e))
s.p.stdin.close()
s.p.wait(timeout=30)
# At that cap, one-shot runs one after another beside a kept sandbox: each
# one's sandbox is removed off its response's path, so the next call may
# find the cap reached by a removal still under way; it waits for that
# slot instead of being refused (pool.c).  And an idle spare gives its
# slot to a call: after a one-shot (which leaves a spare ready when there
# is room), two kept sandboxes still fit under a cap of 2.
s = Server(["--max-total-sandboxes", "2"])
kept = s.tool("sandbox_create")
runs = [s.tool("execute_code", code=f"print({i} * 2)", language="python") for i in range(12)]
bad = [(i, r) for i, r in enumerate(runs)
       if r.get("isError") or r["structuredContent"].get("stdout") != f"{i * 2}\n"]
result("one_shots_at_the_cap_wait_for_removals", not kept.get("isError") and not bad, bad[:2])
s.tool("sandbox_stop", sandbox_id=kept["structuredContent"]["sandbox_id"])
one = s.tool("execute_code", code="print('spare next')", language="python")
time.sleep(1)  # the refill, if it is to happen, has happened
a = s.tool("sandbox_create")
b = s.tool("sandbox_create")
c = s.tool("sandbox_create")
result("spare_yields_its_slot_to_a_call",
       not one.get("isError") and not a.get("isError") and not b.get("isError")
       and c.get("isError") and "its limit" in c["content"][0]["text"], (a, b, c))
s.p.stdin.close()
s.p.wait(timeout=30)
finish()
