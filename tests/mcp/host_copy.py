#!/usr/bin/env python3
"""copy_in / copy_out against `nsbox serve --allow-host-dir DIR` over
stdio: the tools exist only with an allowed directory; copies work both
ways; host paths that climb out ("..", absolute elsewhere) or pass a
symlink are refused in both directions (CVE-2018-15664 class), and host
files outside the allowed directory never change.  PASS/FAIL lines like
tests/lib.sh.  Environment: NSBOX, NSBOX_STORE, SUITE (default mcp_host)."""
import os, shutil, tempfile
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server as _Server  # noqa: E402

STORE = os.environ.get("NSBOX_STORE", "")
os.environ.setdefault("SUITE", "mcp_host")


def Server(extra):
    return _Server(extra, STORE)


share = tempfile.mkdtemp(prefix="nsbox-share.")
outside = tempfile.mkdtemp(prefix="nsbox-outside.")
try:
    with open(os.path.join(share, "in.txt"), "w") as f:
        f.write("from host\n")
    with open(os.path.join(outside, "secret"), "w") as f:
        f.write("outside\n")
    os.symlink(os.path.join(outside, "secret"), os.path.join(share, "link"))
    os.symlink(outside, os.path.join(share, "dirlink"))

    s = Server([])
    names = [t["name"] for t in s.req("tools/list", {})["result"]["tools"]]
    r = s.call("copy_in", sandbox_id="0" * 32, host_path="/etc/passwd", path="x")
    result("absent_without_allowed_dir", "copy_in" not in names and "copy_out" not in names and "error" in r, names)
    s.close()

    s = Server(["--allow-host-dir", share])
    names = [t["name"] for t in s.req("tools/list", {})["result"]["tools"]]
    result("listed_with_allowed_dir", "copy_in" in names and "copy_out" in names, names)
    sid = s.call("sandbox_create")["result"]["structuredContent"]["sandbox_id"]
    r = s.call("copy_in", sandbox_id=sid, host_path=share + "/in.txt", path="in.txt")["result"]
    out = s.call("run_command", sandbox_id=sid, command="cat in.txt; echo made inside > o.txt")["result"]["structuredContent"]["stdout"]
    result("copy_in", not r.get("isError") and out == "from host\n", (r, out))
    r = s.call("copy_out", sandbox_id=sid, path="o.txt", host_path=share + "/o.txt")["result"]
    result("copy_out", not r.get("isError") and open(share + "/o.txt").read() == "made inside\n", r)
    r = s.call("copy_out", sandbox_id=sid, path="o.txt", host_path=share + "/o.txt")["result"]
    r2 = s.call("copy_out", sandbox_id=sid, path="in.txt", host_path=share + "/o.txt", overwrite=True)["result"]
    result("copy_out_overwrite_only_when_asked", r.get("isError") and not r2.get("isError")
           and open(share + "/o.txt").read() == "from host\n", (r, r2))
    escapes = [share + "/../" + os.path.basename(outside) + "/secret", "/etc/passwd", share + "/link",
               share + "/dirlink/secret", share + "/sub/../../etc/passwd"]
    bad = [p for p in escapes if not s.call("copy_in", sandbox_id=sid, host_path=p, path="x")["result"].get("isError")]
    result("copy_in_escapes_refused", not bad, bad)
    passwd = open("/etc/passwd").read()
    bad = [p for p in escapes if not s.call("copy_out", sandbox_id=sid, path="o.txt", host_path=p, overwrite=True)["result"].get("isError")]
    result("copy_out_escapes_refused", not bad and open(os.path.join(outside, "secret")).read() == "outside\n"
           and open("/etc/passwd").read() == passwd, bad)
    s.call("run_command", sandbox_id=sid, command="mkfifo fifo; python3 -c \"open('big','wb').truncate(20<<20)\"")
    r = s.call("copy_out", sandbox_id=sid, path="fifo", host_path=share + "/fifo")["result"]
    r2 = s.call("copy_out", sandbox_id=sid, path="big", host_path=share + "/big")["result"]
    result("copy_out_fifo_and_oversize_refused", r.get("isError") and r2.get("isError")
           and not os.path.exists(share + "/fifo") and not os.path.exists(share + "/big"), (r, r2))
    s.close()
finally:
    shutil.rmtree(share, ignore_errors=True)
    shutil.rmtree(outside, ignore_errors=True)
finish()
