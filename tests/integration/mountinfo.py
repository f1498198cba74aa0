#!/usr/bin/env python3
"""No mount in a sandbox names a host path, but the volumes the user asked
for (issue #24; run by tests/integration/mountinfo.sh, as root and as an
unprivileged user).

Every kind of sandbox reads its own /proc/self/mountinfo: one-shot (`nsbox
run`, also with its writable layer in the store: --disk unlimited), kept
(`nsbox create` + `exec`), networked (an egress allow-list), with a
persistent workspace, and an MCP kept sandbox running an interpreter cell
(`execute_code`, which mounts nsbox's drivers at /.nsbox/drivers) and a
command.  Each field of each line (root, mount point, options, optional
fields, type, source, super options; octal escapes decoded) is checked for
the host paths this very run uses: the store, its state and workspace and
drivers directories, the test's temporary directory, $HOME, the nsbox
binary's directory, the repository, /var/lib/nsbox, /var/cache, /tmp/nsbox-*,
each also as its path within its filesystem (what a bind's root field
shows), and the device the store's filesystem is mounted from (a bind's
source field).  Each of those that this run made must exist, so that a
wrong path cannot make the scan pass by finding nothing.

Positive control: a `-v` volume from the test's directory, whose host path
the kernel shows in its root field; the scan must report it there (and is
then told that /v is allowed).

Environment: NSBOX, NSBOX_STORE, MI_IMAGE (a tagged python image in that
store), MI_VOLUME (a directory in MI_TMP), MI_TMP (the test's directory),
MI_PORT (a port for the allow-list), MI_MODE (root or rootless), SUITE."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import configure, finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

NSBOX = os.environ["NSBOX"]
STORE = os.environ["NSBOX_STORE"]
IMAGE = os.environ["MI_IMAGE"]
VOLUME = os.environ["MI_VOLUME"]
TMP = os.environ["MI_TMP"]
PORT = os.environ["MI_PORT"]
MODE = os.environ["MI_MODE"]
configure(prefix=f"{MODE}/")  # every name: MODE/name
REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
READ = "cat /proc/self/mountinfo"


def nsbox(*args, timeout=120):
    return subprocess.run([NSBOX, "--store", STORE, *args], capture_output=True, text=True, timeout=timeout)


# ---- what may not show ---------------------------------------------------

def host_mounts():
    """The host's mounts as (mount point, root, source), longest first."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fl = line.split()
            sep = fl.index("-")
            out.append((unescape(fl[4]), unescape(fl[3]), unescape(fl[sep + 2])))
    return sorted(out, key=lambda m: len(m[0]), reverse=True)


def within_fs(path, mounts):
    """path as a bind's root field shows it (its path within its
    filesystem), and the mount source of that filesystem."""
    for point, root, source in mounts:
        if path == point or path.startswith(point.rstrip("/") + "/"):
            rest = path[len(point.rstrip("/")):]
            return (root.rstrip("/") + rest) or "/", source
    return path, ""


def forbidden():
    """[(label, text, prefix_only)]: text may not occur in any field (as a
    whole path component run, or anywhere when prefix_only)."""
    made = {  # this run's own paths: each must exist
        "the store": STORE,
        "the state dir": os.path.join(STORE, "sandboxes"),
        "the workspaces dir": os.path.join(STORE, "workspaces"),
        "the drivers dir": os.path.join(STORE, "cache", "drivers"),
        "the test's temporary directory": TMP,
        "$HOME": os.environ["HOME"],
        "the nsbox binary's directory": os.path.dirname(os.path.realpath(NSBOX)),
        "the repository": REPO,
    }
    out = [("/var/lib/nsbox", "/var/lib/nsbox", False), ("/var/cache", "/var/cache", False),
           ("/tmp/nsbox-*", "/tmp/nsbox-", True)]
    mounts = host_mounts()
    sources = {}
    for label, path in made.items():
        real = os.path.realpath(path)
        out += [(label, p, False) for p in {path, real}]
        rel, source = within_fs(real, mounts)
        if rel not in (real, "/"):
            out.append((label + " within its filesystem", rel, False))
        # The device (or other path) the filesystem is mounted from: a
        # bind's source field.  "tmpfs", "overlay" and the like name none.
        if source.startswith("/"):
            sources.setdefault(source, label)
    out += [(f"the device of {label}'s filesystem", src, False) for src, label in sources.items()]
    return out, made


def unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


FIELDS = ("mount id", "parent id", "major:minor", "root", "mount point", "mount options")


def fields(line):
    f = line.split(" ")
    sep = f.index("-")
    named = list(zip(FIELDS, f[:6])) + [("optional field", x) for x in f[6:sep]]
    named += list(zip(("fs type", "source", "super options"), f[sep + 1:]))
    return [(n, unescape(v)) for n, v in named]


def names(value, text, prefix_only):
    """Whether value holds the path text: anywhere if prefix_only, else
    as whole components (not /rootfs for /root)."""
    for m in re.finditer(re.escape(text), value):
        if prefix_only:
            return True
        before = value[m.start() - 1] if m.start() > 0 else ""
        after = value[m.end()] if m.end() < len(value) else ""
        if before in ("", "=", ",", ":", " ") and after in ("", "/", ",", ":", " "):
            return True
    return False


def scan(text, forb, allowed=()):
    """Every (mount point, field, value, label) where a line names a
    forbidden path; mounts at an allowed point are not looked at."""
    problems = []
    for line in text.splitlines():
        fl = fields(line)
        point = fl[4][1]
        if point in allowed:
            continue
        for field, value in fl:
            for label, text, prefix_only in forb:
                if names(value, text, prefix_only):
                    problems.append((point, field, value, label))
    return problems


def assert_clean(name, text, forb, want_points, allowed=()):
    """name passes when text is a real mountinfo (the expected mount points
    among many lines) and names no forbidden path."""
    lines = text.splitlines()
    try:
        points = {fields(line)[4][1] for line in lines}
        problems = scan(text, forb, allowed)
    except (ValueError, IndexError) as e:
        result(name, False, f"not a mountinfo ({e}): {text[:300]!r}")
        return
    lacking = set(want_points) - points
    if len(lines) < 12 or lacking:
        result(name, False, f"{len(lines)} lines, lacking {sorted(lacking)}: {text[:300]!r}")
        return
    # Every field in full on a '# ' line; the FAIL line says where.
    where = {}
    for point, field, value, label in problems:
        where.setdefault(point, {}).setdefault((field, value), []).append(label)
    for point, found in where.items():
        for (field, value), labels in found.items():
            print(f"# {MODE}/{name}: {point}: {field} {value!r} names {', '.join(labels)}", flush=True)
    why = "host paths in " + "; ".join(f"{p} ({', '.join(sorted({f for f, _ in found}))})"
                                       for p, found in where.items())
    result(name, not problems, why)


BASE = ("/", "/proc", "/dev", "/dev/null", "/tmp", "/sys")


def volume_control(name, text, forb):
    """The positive control: the volume's host path shows in /v's root
    field, and its device in the source field when it is one of the
    forbidden ones, and the scan says so."""
    seen = {(f, v) for p, f, v, _ in scan(text, forb) if p == "/v"}
    want = {("root", VOLUME)}
    device = within_fs(os.path.realpath(VOLUME), host_mounts())[1]
    if any(t == device for _, t, _ in forb):
        want.add(("source", device))
    result(name, want <= seen, f"wanted {sorted(want)}, the scan found at /v: {sorted(seen)}; "
                              f"mountinfo: {text[:400]!r}")


# ---- the sandboxes -----------------------------------------------------

def one_shot(forb):
    r = nsbox("run", "-v", f"{VOLUME}:/v", IMAGE, "--", "sh", "-c", READ)
    assert_clean("run_no_host_path", r.stdout, forb, BASE + ("/v",), allowed=("/v",))
    volume_control("run_volume_path_seen", r.stdout, forb)
    # The writable layer on the store's filesystem, not on a tmpfs disk:
    # the overlay's upperdir and workdir are in the state dir.
    r = nsbox("run", "--disk", "unlimited", IMAGE, "--", "sh", "-c", READ)
    assert_clean("run_disk_on_store_no_host_path", r.stdout, forb, BASE)


def kept(forb):
    r = nsbox("create", "-v", f"{VOLUME}:/v", IMAGE)
    sid = r.stdout.strip()
    if r.returncode != 0:
        result("kept_no_host_path", False, f"create: {r.stderr}")
        return
    e = nsbox("exec", sid, "--", "sh", "-c", READ)
    assert_clean("kept_no_host_path", e.stdout, forb, BASE + ("/v",), allowed=("/v",))
    volume_control("kept_volume_path_seen", e.stdout, forb)
    nsbox("rm", sid)


def networked(forb):
    r = nsbox("create", "--net", f"127.0.0.1:{PORT}", IMAGE)
    sid = r.stdout.strip()
    if r.returncode != 0:
        result("net_no_host_path", False, f"create --net: {r.stderr}")
        return
    e = nsbox("exec", sid, "--", "sh", "-c", READ)
    assert_clean("net_no_host_path", e.stdout, forb, BASE + ("/etc/resolv.conf", "/etc/hosts"))
    nsbox("rm", sid)


def workspace(forb):
    r = nsbox("run", "--workspace", "mi", IMAGE, "--", "sh", "-c", f"echo kept > /workspace/f; {READ}")
    assert_clean("workspace_no_host_path", r.stdout, forb, BASE + ("/workspace",))
    try:
        with open(os.path.join(STORE, "workspaces", "mi", "f")) as f:
            kept_text = f.read()
    except OSError as e:
        kept_text = str(e)
    result("workspace_writes_reach_the_host", kept_text == "kept\n", kept_text)


def mcp(forb):
    s = Server(store=STORE, nsbox=NSBOX)
    try:
        r = s.tool("sandbox_create", image=IMAGE, workspace="mcp")
        sid = r.get("structuredContent", {}).get("sandbox_id")
        if sid is None:
            result("mcp_cell_no_host_path", False, f"sandbox_create: {r}")
            return
        code = "print(open('/proc/self/mountinfo').read(), end='')"
        r = s.tool("execute_code", sandbox_id=sid, language="python", code=code)
        out = r.get("structuredContent", {})
        # A cell, not a fresh process: the drivers were mounted and used.
        if out.get("interpreter") != "persistent":
            result("mcp_cell_no_host_path", False, f"not a persistent interpreter: {out}")
        else:
            assert_clean("mcp_cell_no_host_path", out.get("stdout", ""), forb,
                         BASE + ("/workspace", "/.nsbox/drivers"))
        r = s.tool("run_command", sandbox_id=sid, command=READ)
        assert_clean("mcp_command_no_host_path", r.get("structuredContent", {}).get("stdout", ""), forb,
                     BASE + ("/workspace", "/.nsbox/drivers"))
        s.tool("sandbox_stop", sandbox_id=sid)
    finally:
        s.close()


def main():
    forb, made = forbidden()
    one_shot(forb)
    kept(forb)
    networked(forb)
    workspace(forb)
    mcp(forb)
    # Checked last: the cases above made the state, workspace and drivers
    # directories.  A path that does not exist would make its scan vacuous.
    missing = [f"{k} ({v})" for k, v in made.items() if not os.path.isdir(v)]
    result("forbidden_paths_exist", not missing, f"missing: {missing}")
    print(f"# {MODE}: {len(forb)} forbidden paths: " + ", ".join(sorted({t for _, t, _ in forb})), flush=True)
    finish()


main()
