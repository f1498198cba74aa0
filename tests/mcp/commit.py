#!/usr/bin/env python3
"""sandbox_commit through `nsbox serve` over stdio (issue #13: a prepared
environment kept as an image): a kept sandbox's changes (a module
installed under /usr/lib/python3, a file in /opt, a deleted base file)
saved as localhost/nsbox-commit/NAME, and a later sandbox_create {image}
starts from them; a name is never replaced, bad names and unknown
sandboxes are refused with a clear error, --max-commits caps the images
(0: no such tool), and the server stays up.  Run as root and rootless.
Environment: NSBOX, NSBOX_STORE, SUITE (default mcp_commit)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
os.environ.setdefault("SUITE", "mcp_commit")
REPO = "localhost/nsbox-commit/"


def text_of(r):
    return r.get("content", [{}])[0].get("text", "")


def sc(r):
    return r.get("structuredContent") or {}


def commit(srv, **args):
    """The whole response to a sandbox_commit call (Server.call's own
    first parameter is called name)."""
    return srv.req("tools/call", {"name": "sandbox_commit", "arguments": args})


def tool_names(s):
    return [t["name"] for t in s.req("tools/list", {})["result"]["tools"]]


# -- off: --max-commits 0 offers no such tool ------------------------------
off = Server(["--max-commits", "0"], STORE)
result("max_commits_0_not_listed", "sandbox_commit" not in tool_names(off))
r = commit(off, sandbox_id="0" * 32, name="x")
result("max_commits_0_call_refused", "error" in r or r.get("result", {}).get("isError"), r)
off.close()

s = Server(["--max-commits", "2"], STORE)
tools = s.req("tools/list", {})["result"]["tools"]
t = next((t for t in tools if t["name"] == "sandbox_commit"), None)
result("listed_with_schema", t is not None and t["inputSchema"]["required"] == ["sandbox_id", "name"]
       and t["annotations"].get("readOnlyHint") is False, t)

# -- prepare an environment, commit it --------------------------------------
r = s.tool("sandbox_create", image="python")
sid = sc(r).get("sandbox_id")
result("create", sid is not None, r)
prep = ("mkdir -p /opt/env && echo prepared > /opt/env/marker && "
        "printf 'X = 42\\n' > /usr/lib/python3/dist-packages/prepared_mod.py && "
        "rm /etc/debian_version && echo in-workspace > /workspace/w.txt")
r = s.tool("run_command", sandbox_id=sid, command=prep)
result("prepare", sc(r).get("exit_code") == 0, r)
r = commit(s, sandbox_id=sid, name="env1", message="prepared by a test")["result"]
img = sc(r).get("image")
result("commit", not r.get("isError") and img == REPO + "env1:latest"
       and sc(r).get("digest", "").startswith("sha256:"), r)
r = s.tool("run_command", sandbox_id=sid, command="cat /opt/env/marker")
result("sandbox_runs_on_after_commit", sc(r).get("stdout") == "prepared\n", r)

# -- a later sandbox starts from it ------------------------------------------
r = s.tool("sandbox_create", image=img)
sid2 = sc(r).get("sandbox_id")
result("create_from_commit", sid2 is not None and sc(r).get("digest") != "", r)
r = s.tool("execute_code", sandbox_id=sid2, code="import prepared_mod; print(prepared_mod.X)", fresh=True)
result("module_kept", sc(r).get("stdout") == "42\n", r)
r = s.tool("run_command", sandbox_id=sid2,
           command="cat /opt/env/marker /workspace/w.txt; test -e /etc/debian_version && echo still-there")
result("files_and_deletion_kept", sc(r).get("stdout") == "prepared\nin-workspace\n", r)
r = s.tool("list_images")
names = [n for i in sc(r).get("images", []) for n in i.get("names", [])]
result("list_images_shows_it", img in names, names)

# -- refusals ------------------------------------------------------------------
r = commit(s, sandbox_id=sid, name="env1")["result"]
result("existing_name_never_replaced", r.get("isError") and "exists already" in text_of(r), r)
for bad in ["../x", "Upper", "a/b", "x:", ":t", "-x", "a" * 65, "docker.io/library/python"]:
    r = commit(s, sandbox_id=sid, name=bad)["result"]
    result(f"bad_name_refused/{bad[:12]}", r.get("isError") and "is not NAME[:TAG]" in text_of(r), r)
r = commit(s, sandbox_id="f" * 32, name="nosuch")["result"]
result("unknown_sandbox_refused", r.get("isError") and "sandbox" in text_of(r), r)
r = commit(s, sandbox_id=sid, name="env2:v1.0")["result"]
result("tagged_name", sc(r).get("image") == REPO + "env2:v1.0", r)
r = commit(s, sandbox_id=sid, name="env3")["result"]
result("cap_refused_naming_option", r.get("isError") and "--max-commits" in text_of(r), r)
r = s.tool("run_command", command="echo up")
result("server_up", sc(r).get("stdout") == "up\n", r)
s.close()
finish()
