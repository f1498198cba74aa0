"""The hostile suite's harness (tests/hostile/hostile.py): its environment
(read at import: NSBOX, NSBOX_RL, IMAGE, the canaries, ONLY, RACE_SECONDS;
see hostile.py), `outputs` (every stdout, stderr and response a front saw,
for the canary scan), the probe's JSON lines (probe_lines), what the host
sees (this suite's sandboxed processes, its mounts, a file's sha256) and
the four fronts (Front: the CLI or the MCP server over stdio, as root or
rootless; create, exec, run, stop whatever the front).  Judges nothing:
the cases and the check after each are hostile.py's and its case
modules'."""
import hashlib
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
import stdio_client  # noqa: E402
from disk_cases import DISK_CLI_MB, WORKSPACE_BUDGET_MB  # noqa: E402

E = os.environ
NSBOX, NSBOX_RL = E["NSBOX"], E["NSBOX_RL"]
IMAGE = E["IMAGE"]
CANARY_ENV = E["CANARY_ENV"]
CANARY_FILE = E["CANARY_FILE"]
CANARY_DIR = E["CANARY_DIR"]
USER = E.get("ROOTLESS_USER", "nsboxtest")
ONLY = re.compile(E.get("ONLY", ""))
RACE_SECONDS = float(E.get("RACE_SECONDS", "8"))
# Against the ASan build (NSBOX_ASAN=1) a file tool call takes about three
# times as long: the file tools' race runs three times as long, for the
# same floor of 100 calls against the exchanges (the floor proves the race
# overlapped; its duration only measures this machine).  On 2026-11-29,
# 8 s gave 39 and 85 calls under ASan.
FILE_TOOLS_RACE_SECONDS = RACE_SECONDS * (3 if E.get("NSBOX_ASAN") == "1" else 1)
outputs = []          # every stdout/stderr/response seen, for the canary scan


def probe_lines(text):
    """The probe's JSON lines in a command's stdout, by check name (the last of each)."""
    out = {}
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and "check" in d:
            out[d["check"]] = d   # the last line of a check (actions print progress first)
    return out


# -- what the host sees ---------------------------------------------------------

def _proc(pid):
    """(nspid_depth, ppid, state, starttime, cmdline) of a process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M)
    fields = stat.rsplit(")", 1)[1].split()
    return (len(nspid.group(1).split()) if nspid else 1, int(fields[1]), fields[0], fields[19], cmd)


def _ours(pid):
    """Whether a sandboxed process belongs to this suite: the first process
    above it outside any sandbox is one of our nsbox processes (its command
    line names our work directory), or pid 1 when the orphaned init's own
    command line (the nsbox that forked it) names our work directory.
    Other test suites may run sandboxes on the same machine."""
    inner = ""
    for _ in range(64):
        info = _proc(pid)
        if info is None:
            return True
        if info[0] < 2:
            return E["WORK"] in (inner if pid == 1 else info[4])
        inner = info[4]
        pid = info[1]
    return True


def sandboxed_processes():
    """{(pid, starttime): (ppid, cmdline)} of this suite's processes in a
    child pid namespace (NSpid has more than one entry), zombies aside."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        info = _proc(pid)
        if info is None or info[0] < 2 or info[2] == "Z" or not _ours(int(pid)):
            continue
        found[(int(pid), info[3])] = (info[1], info[4][:80])
    return found


def is_zygote(cmd):
    """Whether a command line (NULs as spaces) is a spare's zygote."""
    return cmd.startswith(("python3 -c # nsbox's python zygote", "node -e // nsbox's node zygote"))


def host_mounts():
    """The host's mounts that could be this suite's: under its work directory
    (stores, sandboxes) or of the kinds a sandbox mounts."""
    with open("/proc/1/mountinfo") as f:
        return len([l for l in f if E["WORK"] in l or " - overlay " in l])


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# -- the four fronts ------------------------------------------------------------

class Front:
    """One way in: `cli` or `mcp`, as `root` or `rootless`."""

    def __init__(self, kind, mode):
        self.kind, self.mode = kind, mode
        self.name = f"{kind}-{mode}"
        self.rootless = mode == "rootless"
        self.nsbox = NSBOX_RL if self.rootless else NSBOX
        self.store = E["STORE_RL"] if self.rootless else E["STORE"]
        # A host fd without O_CLOEXEC: it must not reach any sandbox.
        self.leak_fd = os.open(CANARY_FILE, os.O_RDONLY)
        os.set_inheritable(self.leak_fd, True)
        self.server = None

    def prefix(self):
        env = ["env", f"NSBOX_HOSTILE_CANARY={CANARY_ENV}"]
        if self.rootless:
            # No shared image store: the MCP server would import root's
            # default image (1.1 GB) in the background while the disk cases
            # measure what the store's filesystem loses.
            return ["runuser", "-u", USER, "--"] + env + ["NSBOX_LIMITS=best-effort", f"HOME=/home/{USER}",
                                                           f"NSBOX_CONFIG={E['NO_SHARED_CONF']}"]
        return env

    def cli(self, args, timeout=120, stdin=subprocess.DEVNULL):
        p = subprocess.run(self.prefix() + [self.nsbox, "--store", self.store] + args,
                           stdin=stdin, capture_output=True, timeout=timeout,
                           pass_fds=(self.leak_fd,))
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        outputs.append(out + err)
        return p.returncode, out, err

    # The MCP server of this front, started on first use.
    def mcp(self):
        if self.server is None:
            self.server = stdio_client.Server(
                store=self.store, argv_prefix=self.prefix(), nsbox=self.nsbox,
                extra=["--allow-host-dir", self.hostdir()] + (["--limits=best-effort"] if self.rootless else []),
                pass_fds=(self.leak_fd,))
            self.server.req("notifications/initialized", None, notify=True)
        return self.server

    def hostdir(self):
        d = os.path.join(E["WORK"], f"hostdir-{self.mode}")
        if not os.path.isdir(d):
            os.makedirs(d)
            if self.rootless:
                subprocess.run(["chown", USER, d], check=True)
        return d

    def tool(self, name, **args):
        r = self.mcp().call(name, **args)
        outputs.append(json.dumps(r))
        if "result" not in r:
            raise RuntimeError(f"{name}: {r}")
        return r["result"]

    # Sandboxes, whatever the front.
    def create(self, memory=None, pids=None, cpus=None, workspace=None, image=None, disk=None):
        """(sandbox id, None) or (None, the error).  self.limits: what the
        sandbox reports in force.  disk: MiB (the CLI only; MCP sandboxes
        get the default, DISK_DEFAULT_MB)."""
        image = image or IMAGE
        if self.kind == "cli":
            args = ["create"] + (["--memory", f"{memory}m"] if memory else []) + \
                (["--disk", f"{disk}M"] if disk else []) + \
                (["--pids", str(pids)] if pids else []) + (["--cpus", str(cpus)] if cpus else []) + [image]
            rc, out, err = self.cli(args)
            if rc != 0:
                return None, err.strip()
            return out.strip(), None
        a = {"image": image}
        if workspace:
            a["workspace_mb"] = WORKSPACE_BUDGET_MB
        for k, v in (("memory_mb", memory), ("pids", pids), ("cpus", cpus), ("workspace", workspace),
                     ("disk_mb", disk)):
            if v:
                a[k] = v
        r = self.tool("sandbox_create", **a)
        if r.get("isError"):
            return None, r["content"][0]["text"]
        self.limits = r["structuredContent"]["limits"]["enforced"]
        return r["structuredContent"]["sandbox_id"], None

    def exec(self, sid, cmd, timeout=30):
        """The result record of `sh -c cmd` in sandbox sid."""
        if self.kind == "cli":
            rc, out, err = self.cli(["exec", "--json", "--timeout", str(timeout), sid, "--", "sh", "-c", cmd],
                                    timeout=timeout + 60)
            return record(rc, out, err)
        # The whole captured output inline (max_inline_kb at its default
        # ceiling), as the CLI front prints it: these cases judge the
        # runtime's caps, not the inline cut (tests/mcp/resources.py).
        r = self.tool("run_command", command=cmd, sandbox_id=sid, timeout_s=timeout, max_inline_kb=1024)
        if r.get("isError"):
            return {"nsbox_error": r["content"][0]["text"]}
        return r["structuredContent"]

    def stop(self, sid):
        if self.kind == "cli":
            self.cli(["rm", sid])
        else:
            self.tool("sandbox_stop", sandbox_id=sid)

    def run(self, cmd, memory=None, pids=None, cpus=None, timeout=30, image=None, disk=None):
        """A fresh sandbox for one command, removed afterwards: the result
        record, with "limits" (what was in force) on both fronts."""
        if self.kind == "cli":
            args = ["run", "--json", "--timeout", str(timeout)] + \
                (["--memory", f"{memory}m"] if memory else []) + (["--cpus", str(cpus)] if cpus else []) + \
                (["--disk", f"{disk}M"] if disk else []) + \
                (["--pids", str(pids)] if pids else []) + [image or IMAGE, "--", "sh", "-c", cmd]
            rc, out, err = self.cli(args, timeout=timeout + 60)
            return record(rc, out, err)
        sid, why = self.create(memory=memory, pids=pids, cpus=cpus, image=image, disk=disk)
        if sid is None:
            return {"nsbox_error": why}
        try:
            return dict(self.exec(sid, cmd, timeout), limits=self.limits)
        finally:
            self.stop(sid)

    def disk_mb(self):
        """The writable layer's limit the disk cases ask for: 64 MiB (--disk
        through the CLI, disk_mb through MCP)."""
        return DISK_CLI_MB

    def answers(self):
        if self.kind == "cli":
            rc, out, _ = self.cli(["ps"])
            return rc == 0
        return self.mcp().req("ping", {}).get("result") == {}

    def close(self):
        if self.server:
            self.server.close()
            self.server = None


def record(rc, out, err):
    if rc == 125 or not out.strip().startswith("{"):
        return {"nsbox_error": err.strip(), "rc": rc}
    r = json.loads(out)
    r["rc"] = rc
    return r
