#!/usr/bin/env python3
"""Writes on a full filesystem through `nsbox serve` (stdio), for
tests/integration/faults.sh, whose store (and so the workspace) lives on a
small ext4 image.

A sandbox on the workspace "w" writes keep.txt and big.txt, then a command
in it fills the filesystem.  Asserted: the command fails with ENOSPC in its
own stderr; write_file then fails with a clear "No space left on device"
for a new file, an overwrite and an append, and none of them changes
anything: big.txt and keep.txt keep their exact bytes (read through the
sandbox and on disk), no new.txt, no temporary file; once space is freed,
the same overwrite works.  Environment: NSBOX, NSBOX_STORE, SUITE."""
import base64
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
DISK = os.path.join(STORE, "workspaces", "w")


def sc(r):
    return r.get("result", {}).get("structuredContent") or r


def err_text(r):
    res = r.get("result", {})
    return res["content"][0]["text"] if res.get("isError") else ""


s = Server([], STORE)
sid = sc(s.call("sandbox_create", language="sh", workspace="w")).get("sandbox_id")
big = base64.b64encode(os.urandom(300000)).decode()
ok = (sc(s.call("write_file", sandbox_id=sid, path="keep.txt", content="keep me\n")).get("bytes_written") == 8
      and sc(s.call("write_file", sandbox_id=sid, path="big.txt", content=big)).get("bytes_written") == len(big))
fill = sc(s.call("run_command", sandbox_id=sid, command="dd if=/dev/zero of=fill bs=1M", timeout_s=120))
result("sandbox_write_gets_enospc", ok and fill.get("exit_code") == 1
       and "No space left on device" in fill.get("stderr", ""), (ok, fill))

payload = "x" * 2_000_000
attempts = {
    "new": s.call("write_file", sandbox_id=sid, path="new.txt", content=payload),
    "overwrite": s.call("write_file", sandbox_id=sid, path="big.txt", content=payload),
    "append": s.call("write_file", sandbox_id=sid, path="keep.txt", content=payload, append=True),
}
errors = {k: err_text(r) for k, r in attempts.items()}
result("write_file_enospc_is_a_clear_error",
       all(e.startswith("cannot write ") and e.endswith(": No space left on device") for e in errors.values()),
       errors)


def intact():
    """What is wrong with the workspace's files, seen inside and on disk."""
    wrong = []
    seen = sc(s.call("read_file", sandbox_id=sid, path="big.txt", length=1 << 20))
    if seen.get("content") != big:
        wrong.append(f"big.txt in the sandbox: {seen.get('size')} bytes")
    if sc(s.call("read_file", sandbox_id=sid, path="keep.txt")).get("content") != "keep me\n":
        wrong.append("keep.txt in the sandbox")
    for name, want in (("big.txt", big), ("keep.txt", "keep me\n")):
        with open(os.path.join(DISK, name)) as f:
            if f.read() != want:
                wrong.append(f"{name} on disk: {os.path.getsize(os.path.join(DISK, name))} bytes")
    extra = sorted(set(os.listdir(DISK)) - {"keep.txt", "big.txt", "fill"})
    if extra:
        wrong.append(f"left behind: {extra}")
    return wrong


wrong = intact()
result("failed_writes_leave_files_intact", not wrong, wrong)
gone = sc(s.call("delete_path", sandbox_id=sid, path="fill")).get("deleted")
r = sc(s.call("write_file", sandbox_id=sid, path="big.txt", content=payload))
back = sc(s.call("read_file", sandbox_id=sid, path="big.txt", length=1 << 22)).get("content")
result("writes_work_once_space_is_freed", gone is True and r.get("bytes_written") == len(payload)
       and back == payload, (gone, r))
s.p.stdin.close()
s.p.wait(timeout=60)
finish()
