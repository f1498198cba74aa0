"""The server seen from /proc, for tests/load/load_http.py: its fds,
threads, VmRSS and children (Server), the sandboxes' processes (by pid
namespace and by the cgroup nsbox/ID), a sampler of the peaks during the
load (Sampler), and waits for the server to settle back to a baseline or
to go still (settle, quiesce).  Reads only; asserts nothing."""
import os
import re
import threading
import time

from load_client import HEX32


# ------------------------------------------------------ the server, seen from /proc


class Server:
    def __init__(self, pid, store):
        self.pid, self.sandboxes = pid, os.path.join(store, "sandboxes")

    def alive(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().split(") ")[-1][0] not in "ZX"
        except OSError:
            return False

    def status(self, field):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return -1

    def fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def fd_kinds(self):
        kinds = {}
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                t = os.readlink(f"/proc/{self.pid}/fd/{fd}")
            except OSError:
                continue
            t = re.sub(r"\[\d+\]", "", t.split(":")[0] if ":[" in t else t)
            kinds[t] = kinds.get(t, 0) + 1
        return kinds

    def children(self):
        """The server's children in a pid namespace of their own: each a
        sandbox's init (the short-lived helper that clones one stays in
        the server's namespace)."""
        out = []
        for task in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{task}/children") as f:
                    out += [int(p) for p in f.read().split()]
            except OSError:
                pass
        own = pid_ns(self.pid)
        return [p for p in out if pid_ns(p) not in (own, None)]

    def state_dirs(self):
        """The ids of the sandboxes with a state directory."""
        try:
            return [n for n in os.listdir(self.sandboxes) if HEX32.fullmatch(n)]
        except OSError:
            return []

    def snapshot(self):
        return {"fds": self.fds(), "threads": self.status("Threads"),
                "children": len(self.children()), "rss_kb": self.status("VmRSS"),
                "anon_kb": self.status("RssAnon")}


def pid_ns(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def processes_in(namespaces):
    """Every process on the host whose pid namespace is one of these (live
    ones: the inode of a namespace that ended may be reused by anyone)."""
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit() and pid_ns(p) in namespaces:
            found.append(int(p))
    return found


CGROUP_ID = re.compile(r"/nsbox/([0-9a-f]{32})\b")


def sandbox_of(pid):
    """The id of the sandbox pid runs in (its cgroup is nsbox/ID), or None."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            m = CGROUP_ID.search(f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def processes_of(ids):
    """Every process on the host in one of these sandboxes: ids are 128
    random bits, so other tests' sandboxes never match."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and sandbox_of(p) in ids]


class Sampler(threading.Thread):
    """Peak live sandboxes (the server's children, each a sandbox's init;
    state directories too), the id of every sandbox seen, and the server's
    peak threads and fds."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.srv, self.stop = srv, threading.Event()
        self.peak_children = self.peak_dirs = self.peak_threads = self.peak_fds = 0
        self.ids = set()

    def run(self):
        tick = 0
        while not self.stop.wait(0.05):
            try:
                kids = self.srv.children()
                self.peak_children = max(self.peak_children, len(kids))
                dirs = self.srv.state_dirs()
                self.peak_dirs = max(self.peak_dirs, len(dirs))
                self.ids.update(dirs)
                tick += 1
                if tick % 4 == 0:
                    self.ids.update(i for i in map(sandbox_of, kids) if i)
                    self.peak_threads = max(self.peak_threads, self.srv.status("Threads"))
                    self.peak_fds = max(self.peak_fds, self.srv.fds())
            except OSError:
                pass


def settle(srv, base, seconds=30):
    """Waits until fds, threads and children are back to base (or seconds
    pass); returns the last snapshot."""
    end = time.monotonic() + seconds
    while True:
        snap = srv.snapshot()
        same = all(snap[k] == base[k] for k in ("fds", "threads", "children"))
        if same or time.monotonic() > end:
            return snap
        time.sleep(0.25)


def quiesce(srv, seconds=20):
    """The snapshot once fds, threads and children have not changed for a
    second (the spare's refill and removals run on after the calls)."""
    end, last, same = time.monotonic() + seconds, None, 0
    while time.monotonic() < end and same < 4:
        snap = srv.snapshot()
        key = (snap["fds"], snap["threads"], snap["children"])
        same = same + 1 if key == last else 0
        last = key
        time.sleep(0.25)
    return srv.snapshot()


def lone_inits(srv):
    """Sandbox processes beyond the inits: each child of the server must be
    alone in its pid namespace once nothing runs (a leftover daemon or a
    command that outlived its call would be a second process there)."""
    extra = []
    kids = srv.children()
    spaces = {pid_ns(k): k for k in kids}
    for p in processes_in(set(spaces) - {None}):
        if p not in kids and not spare_zygote(p, kids):
            extra.append(p)
    return kids, extra


def spare_zygote(pid, inits):
    """Whether pid is a spare's zygote (docs/warm.md): the interpreter a
    spare sandbox keeps started for its one-shot call, init's child."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return ppid in inits and cmd.startswith((b"python3\0-c\0# nsbox's python zygote",
                                            b"node\0-e\0// nsbox's node zygote"))
