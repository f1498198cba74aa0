#!/usr/bin/env python3
"""`nsbox serve` (stdio) killed with SIGKILL in the middle of its work, for
tests/integration/faults.sh: a kept sandbox running a long command, a
one-shot run in progress, a sandbox on the persistent workspace "w" (files
written), and the spare sandbox the server keeps.

Asserted: every process that was in those sandboxes' pid namespaces is
gone after the kill (init dies when the server's end of its control socket
closes, and the kernel kills the rest of its namespace); the next `nsbox
serve` removes, before it answers `initialize`, the dead sandboxes' state
directories (STORE/sandboxes/ID), their cgroups (as root: cgroup v1
memory/pids/cpu) and any mount left on their state directories (one is
planted, as a crash between the idmapped mount and its unmount leaves it),
even when one of those directories cannot be removed (an immutable file is
planted); and the workspace is usable again with its files intact.

Environment: NSBOX (the command: nsbox or a wrapper that execs it as
another user), NSBOX_STORE, SUITE, MARK (three digits: the long commands
are sleep MARK1 and sleep MARK2, tests/markers.md), ROOTLESS=1 (no cgroups;
no mount is planted)."""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
MARK = os.environ["MARK"]
ROOTLESS = os.environ.get("ROOTLESS") == "1"
STATES = os.path.join(STORE, "sandboxes")


def sc(r):
    return r.get("result", {}).get("structuredContent") or r


def starttime(pid):
    """Field 22 of /proc/PID/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def alive(proc):
    """proc is (pid, starttime): the same process still exists (a zombie
    waiting to be reaped by a reaper outside counts as gone)."""
    pid, start = proc
    if starttime(pid) != start:
        return False
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except OSError:
        return False


def state(sid):
    try:
        with open(os.path.join(STATES, sid, "state")) as f:
            return dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
    except OSError:
        return {}


def sandbox_processes():
    """Every (pid, starttime) in the pid namespace of a live sandbox init."""
    namespaces = set()
    for sid in os.listdir(STATES):
        pid = state(sid).get("pid")  # none for .ranges
        try:
            namespaces.add(os.readlink(f"/proc/{pid}/ns/pid"))
        except (OSError, TypeError):
            pass
    procs = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.readlink(f"/proc/{p}/ns/pid") in namespaces:
                    procs.append((int(p), starttime(p)))
            except OSError:
                pass
    return namespaces, procs


def pgrep(pattern):
    """Pids whose whole command line matches pattern (tests/markers.md:
    faults' markers are sleep 4300-4319)."""
    out = subprocess.run(["pgrep", "-f", f"^{pattern}$"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_for(pred, secs):
    end = time.time() + secs
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def send(s, name, **args):
    """A tools/call whose answer is not waited for."""
    s.n += 1
    s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": s.n, "method": "tools/call",
                                "params": {"name": name, "arguments": args}}) + "\n")
    s.p.stdin.flush()


# -- the server at work ----------------------------------------------------------
s = Server([], STORE)
w = sc(s.call("sandbox_create", language="sh", workspace="w"))
wid = w.get("sandbox_id")
s.call("write_file", sandbox_id=wid, path="notes.txt", content="kept\n")
r = sc(s.call("run_command", sandbox_id=wid,
              command="mkdir -p sub && head -c 200000 /dev/urandom > sub/blob && sha256sum sub/blob"))
digest = r.get("stdout", "").split(" ")[0]
kept = sc(s.call("sandbox_create", language="sh")).get("sandbox_id")
send(s, "run_command", sandbox_id=kept, command=f"sleep {MARK}1")
send(s, "execute_code", language="sh", code=f"sleep {MARK}2")
running = wait_for(lambda: pgrep(f"sleep {MARK}1") and pgrep(f"sleep {MARK}2"), 60)
namespaces, procs = sandbox_processes()
sleeps = set(pgrep(f"sleep {MARK}[12]"))
ids = sorted(i for i in os.listdir(STATES) if len(i) == 32)  # not .ranges
setup_ok = (wid and kept and len(digest) == 64 and running and len(ids) >= 3
            and sleeps <= {p for p, _ in procs})
result("setup_busy_server", setup_ok,
       f"workspace={wid} kept={kept} digest={digest!r} running={running} ids={ids} "
       f"sleeps={sleeps} in_namespaces={len(procs)}")

s.p.kill()
s.p.wait()
gone = wait_for(lambda: not any(alive(p) for p in procs), 20)
left = [p for p in procs if alive(p)]
result("no_sandbox_process_survives", setup_ok and gone and not pgrep(f"sleep {MARK}[12]"),
       f"{len(left)} of {len(procs)} processes in {len(namespaces)} sandbox pid namespaces left: "
       f"{left[:5]}")
for pid, _ in left:
    try:
        os.kill(pid, 9)
    except OSError:
        pass

# -- what the dead server left, and what the next start must remove ---------------
stale = [i for i in ids if os.path.isdir(os.path.join(STATES, i))]
cgroups = []
if not ROOTLESS:
    for i in ids:
        st = state(i)
        cgroups += [st[k] for k in ("mem", "pids", "cpu") if st.get(k) and os.path.isdir(st[k])]
planted = ""
if not ROOTLESS and kept in stale:
    # As a crash between the idmapped mount of the rootfs and its unmount
    # would leave it.
    planted = os.path.join(STATES, kept, "lower")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "nsbox-fault", planted], check=True)


# One state dir that cannot be removed (an immutable file in it, which
# only root can clear) must not keep the next start from removing the
# others: pinned is the first the cleanup meets (readdir order).
order = [i for i in os.listdir(STATES) if i in stale]
pinned = os.path.join(STATES, order[0], "pinned") if order else ""
if pinned:
    open(pinned, "w").close()
    subprocess.run(["chattr", "+i", pinned], check=True)


def mounts_of(sids):
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if any(f"/sandboxes/{i}" in l.split()[4] for i in sids)]


print(f"# after the kill: {len(stale)} state dirs, {len(cgroups)} cgroup dirs, "
      f"{len(mounts_of(ids))} mounts", flush=True)
result("state_left_by_the_dead_server", len(stale) == len(ids) and (ROOTLESS or cgroups)
       and (ROOTLESS or mounts_of(ids)), f"stale={stale} cgroups={cgroups}")

s = Server([], STORE)  # answers initialize after its cleanup
left = [i for i in ids if os.path.exists(os.path.join(STATES, i))]
result("stale_state_dirs_removed", pinned and left == order[:1],
       f"left {left}, expected only the pinned {order[:1]}")
if pinned:
    subprocess.run(["chattr", "-i", pinned])
if not ROOTLESS:
    result("stale_cgroups_removed", not [c for c in cgroups if os.path.exists(c)],
           [c for c in cgroups if os.path.exists(c)])
    result("stale_mounts_removed", not mounts_of(ids), mounts_of(ids))
    if mounts_of(ids):
        subprocess.run(["umount", "-l", planted])

# -- the workspace: free again, files intact ---------------------------------------
w2 = sc(s.call("sandbox_create", language="sh", workspace="w"))
wid2 = w2.get("sandbox_id")
notes = sc(s.call("read_file", sandbox_id=wid2, path="notes.txt")).get("content") if wid2 else None
again = sc(s.call("run_command", sandbox_id=wid2, command="sha256sum sub/blob")).get("stdout", "") if wid2 else ""
disk = os.path.join(STORE, "workspaces", "w")
on_disk = open(os.path.join(disk, "notes.txt")).read() if os.path.exists(os.path.join(disk, "notes.txt")) else None
try:
    with open(os.path.join(disk, "sub", "blob"), "rb") as f:
        disk_digest = hashlib.sha256(f.read()).hexdigest()
except OSError as e:
    disk_digest = repr(e)
result("workspace_survives_with_its_files", wid2 is not None and notes == "kept\n" and on_disk == "kept\n"
       and again.split(" ")[0] == digest == disk_digest, (w2, notes, on_disk, again, digest, disk_digest))
s.p.stdin.close()
s.p.wait(timeout=60)
finish()
