#!/usr/bin/env python3
"""The hostile suite: the threat model's cases (../shared/threat-model.md,
"Cases the test suite should cover"), each named after its attack (and CVE),
run through four fronts: the CLI and the MCP server (stdio), as root (cgroup
v1 limits on this host) and as an unprivileged user (best-effort limits:
this host delegates no cgroup v2).  The static probe (tests/probe) is the
oracle inside; outcomes are asserted exactly.

After every case: no process of the case is left in any sandbox, the host's
mount table is as before, and the server still answers `ping`.  Canaries:
a secret in the environment of every nsbox process, a secret file on the
host, an inheritable host fd, and the sha256 of the nsbox binaries; checked
against every result and at the end.

Environment (set by tests/hostile/run.sh): NSBOX, NSBOX_RL (the rootless
copy), STORE, STORE_RL, IMAGE (probe image ref), PROBE_OCI (oci:DIR:TAG),
CANARY_ENV, CANARY_FILE (path), CANARY_DIR (a host dir the races aim at),
ROOTLESS_USER, ONLY (a regex: run matching cases only), RACE_SECONDS,
BIGFILE_IMAGE (the probe image with a 96 MiB /data/big), DISK_DEFAULT_MB,
WORKSPACE_BUDGET_MB.  After every case the store's filesystem must have
lost at most the sandbox's disk limit (the disk cases print the figures).
Prints PASS/FAIL lines; exits 1 on any failure.  An exception outside a
case (the harness's own code, an import) is `FAIL: hostile/harness: ...`
with the traceback's last line, and exit status 2.  How many lines each
front prints is tests/hostile/counts.py's, from the tables below.

Here: the check after every case, the case runner, the cases of the
kernel surface, the runtime's CVE classes, resources and leaks, the table
(cases_for) and main.  Beside it: hostile_lib.py (the environment, what
the host sees, the four fronts), disk_cases.py (the disk layer's cases)
and race_cases.py (the symlink-exchange and mount races)."""
import os
import sys

# First: an exception from here on (an import too) is hostile/harness.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(suite="hostile")

import json  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from disk_cases import (DISK_CASES, DISK_DEFAULT_MB, DISK_SLACK, MiB,  # noqa: E402
                        WORKSPACE_BUDGET_MB, WORKSPACE_OVERSHOOT_MB, WORKSPACE_CASES, disk_copy_up_race_case, disk_fill_case,
                        disk_inode_case, disk_links_case, disk_small_files_case, disk_sparse_case,
                        disk_workspace_case, store_free)
from hostile_lib import (CANARY_ENV, CANARY_FILE, IMAGE, NSBOX, NSBOX_RL, ONLY, RACE_SECONDS,  # noqa: E402
                         E, Front, host_mounts, is_zygote, outputs, probe_lines, sandboxed_processes,
                         sha256)
from race_cases import changes_walk_race_case, file_tools_race_case, mount_race_case  # noqa: E402


# -- the check after every case ------------------------------------------------

def settle(front, before_procs, before_mounts):
    """'' when the case left nothing behind, else what it left."""
    server_pid = front.server.p.pid if front.server else -1
    left = {}
    for _ in range(100):
        now = sandboxed_processes()
        # The MCP server keeps one spare sandbox (its init is the server's
        # child, with its zygote, docs/warm.md, as init's child); anything
        # else new is a leftover.
        spares = [k for k, v in now.items() if v[0] == server_pid]
        inits = {k[0] for k in spares}
        left = {k: v for k, v in now.items() if k not in before_procs and v[0] != server_pid
                and not (v[0] in inits and is_zygote(v[1]))}
        if not left and len(spares) <= 1:
            break
        time.sleep(0.05)
    problems = []
    if left:
        problems.append("processes left: " + "; ".join(f"{k[0]} {v[1]}" for k, v in list(left.items())[:5]))
    if front.server and len([1 for v in sandboxed_processes().values() if v[0] == server_pid]) > 1:
        problems.append("the server still holds more than its spare sandbox")
    m = host_mounts()
    if m != before_mounts:
        problems.append(f"host mounts {before_mounts} -> {m}")
    try:
        if not front.answers():
            problems.append("the front no longer answers")
    except Exception as e:  # noqa: BLE001
        problems.append(f"the front no longer answers: {e!r}")
    return "; ".join(problems)


def case(front, name, fn):
    """Runs one case on one front; fn(front) returns (ok, why)."""
    full = f"{front.name}/{name}"
    if not ONLY.search(full):
        return
    front.case = full
    procs, mounts = sandboxed_processes(), host_mounts()
    free0 = store_free(front)
    try:
        ok, why = fn(front)
    except Exception as e:  # noqa: BLE001
        ok, why = False, f"raised {e!r}"
    left = settle(front, procs, mounts)
    if left:
        ok, why = False, f"{why} | {left}"
    # The store's filesystem lost at most the writable layer's bound (the
    # default for the cases that do not ask for one).
    free1 = store_free(front)
    bound = (front.disk_mb() if name in DISK_CASES else DISK_DEFAULT_MB) + \
        (WORKSPACE_BUDGET_MB + WORKSPACE_OVERSHOOT_MB if name in WORKSPACE_CASES else 0)
    if free1 < free0 - bound * MiB - DISK_SLACK:
        ok, why = False, f"{why} | the store's filesystem lost {(free0 - free1) // MiB} MiB, bound {bound} MiB"
    if ok and name in FIGURES:
        # the attacker's and the victim's counts, for docs and the log
        print(f"# {full}: {json.dumps(why)[:300]}", flush=True)
    nt.result(full, ok, why)


# Cases whose counts (iterations, exchanges, scans) are worth printing.
FIGURES = {"cve_2019_5736_proc_self_exe", "cve_2018_15664_file_tools_symlink_exchange",
           "changes_walk_symlink_exchange", "cve_2021_30465_mount_race",
           "disk_fill_single_file", "disk_many_small_files", "disk_inode_exhaustion",
           "disk_sparse_file_high_offsets", "disk_hard_links", "disk_fill_racing_copy_up",
           "disk_persistent_workspace_fill"}


# -- kernel surface -------------------------------------------------------------
# Every call must be refused by the filter itself: EPERM (the kernel's own
# answer would be EFAULT/EINVAL/ENOENT... for these arguments, or ENOSYS on a
# kernel without the feature), clone3 ENOSYS (so libc falls back to clone,
# whose flags the filter can see), foreign ABIs killed with SIGSYS.

SURFACE = [
    ("nested_userns_unshare", {"unshare_user": "EPERM", "clone_newuser": "EPERM", "clone3": "ENOSYS"}),
    ("namespace_unshare_setns", {"unshare_mnt": "EPERM", "unshare_net": "EPERM", "setns": "EPERM"}),
    ("mount_umount_pivot_root", {"mount": "EPERM", "umount": "EPERM", "pivot_root": "EPERM", "open_tree": "EPERM",
                                 "fsopen": "EPERM", "move_mount": "EPERM", "mount_setattr": "EPERM"}),
    ("keyctl_add_key", {"keyctl": "EPERM", "add_key": "EPERM", "request_key": "EPERM"}),
    ("bpf", {"bpf": "EPERM"}),
    ("perf_event_open", {"perf_event_open": "EPERM"}),
    ("userfaultfd", {"userfaultfd": "EPERM"}),
    ("io_uring", {"io_uring_setup": "EPERM"}),
    ("kexec", {"kexec_load": "EPERM", "kexec_file_load": "EPERM"}),
    ("module_loading", {"init_module": "EPERM", "finit_module": "EPERM", "delete_module": "EPERM"}),
    ("shocker_open_by_handle_at", {"open_by_handle_at": "EPERM"}),
    ("af_alg_socket", {"socket_alg": "EPERM"}),
    ("af_vsock_socket", {"socket_vsock": "EPERM"}),
    ("tiocsti_injection", {"tiocsti": "EPERM", "tiocsti_highbits": "EPERM", "tioclinux": "EPERM"}),
    ("dmesg_syslog", {"syslog": "EPERM"}),
    ("host_admin_calls", {"acct": "EPERM", "swapon": "EPERM", "reboot": "EPERM", "iopl": "EPERM",
                          "ioperm": "EPERM", "sethostname": "EPERM", "chroot": "EPERM", "mknod_char": "EPERM"}),
]


def surface_case(expect):
    def fn(front):
        r = front.run("probe " + " ".join(expect))
        got = probe_lines(r.get("stdout", ""))
        bad = {c: (got.get(c, {}).get("errname"), got.get(c, {}).get("detail")) for c, e in expect.items()
               if got.get(c, {}).get("errname") != e}
        return not bad and r.get("exit_code") == 0, bad or r
    return fn


def abi_case(front):
    r = front.run("probe abi_i386 abi_x32")
    got = probe_lines(r.get("stdout", ""))
    sig = {c: got.get(c, {}).get("signame") for c in ("abi_i386", "abi_x32")}
    return sig == {"abi_i386": "SIGSYS", "abi_x32": "SIGSYS"}, sig


def personality_case(front):
    # PER_LINUX32 is allowed (as in Docker); disabling ASLR is not.
    got = probe_lines(front.run("probe personality").get("stdout", ""))["personality"]
    return got["addr_no_randomize"]["errname"] == "EPERM" and got["after"] == "0x0", got


def privileges_case(front):
    """Capabilities all zero and no_new_privs set: root in the sandbox
    executing a setuid-root binary gains no capability (NNP, locked
    SECBIT_NOROOT), and (CLI --user) uid 1000 executing it stays uid 1000."""
    r = front.run("probe caps capbnd capamb no_new_privs seccomp_mode; /usr/local/bin/probe-suid ids caps")
    lines = [json.loads(l) for l in r.get("stdout", "").splitlines() if l.startswith("{")]
    by = {}
    for d in lines:
        by.setdefault(d["check"], []).append(d)
    zero = lambda c: all(int(c[k], 16) == 0 for k in ("effective", "permitted", "inheritable"))
    ok = (zero(by["caps"][0]) and zero(by["caps"][1]) and int(by["capbnd"][0]["bounding"], 16) == 0
          and int(by["capamb"][0]["ambient"], 16) == 0 and by["no_new_privs"][0]["ret"] == 1
          and by["seccomp_mode"][0]["ret"] == 2 and by["ids"][0]["euid"] == 0)
    why = [by["caps"], by["capbnd"], by["capamb"], by["ids"]]
    if front.kind == "cli":
        rc, out, err = front.cli(["run", "--user", "1000", IMAGE, "--", "/usr/local/bin/probe-suid", "ids", "caps"])
        got = probe_lines(out)
        ok = ok and got["ids"]["euid"] == 1000 and got["ids"]["suid"] == 1000 and zero(got["caps"])
        why.append(got)
    return ok, why


def proc_writes_case(front):
    """Writes to /proc/sys (core_pattern), sysrq-trigger, cgroup files, /sys."""
    got = probe_lines(front.run("probe proc_sys_write sysrq_write cgroup_write sys_write").get("stdout", ""))
    v = {c: (got[c]["verdict"], got[c]["errname"]) for c in got}
    ok = (v["proc_sys_write"] in (("blocked", "EACCES"), ("blocked", "EROFS"))
          # absent on this host's kernel (no CONFIG_MAGIC_SYSRQ); read-only where present
          and v["sysrq_write"] in (("absent", "ENOENT"), ("blocked", "EROFS"), ("blocked", "EACCES"))
          # no cgroupfs is mounted in the sandbox, /sys is an empty read-only tmpfs
          and v["cgroup_write"] == ("absent", "ENOENT") and v["sys_write"] == ("absent", "ENOENT"))
    return ok, v


# -- runtime CVE classes -------------------------------------------------------

def leaked_fds_case(front):
    """CVE-2024-21626: no host fd (the runner's or an inheritable one the
    caller holds) and no host working directory reaches the command, in
    run and in exec; stdio are pipes or /dev/null, never host files."""
    def check(r):
        got = probe_lines(r.get("stdout", ""))
        fds = got["fds"]["fds"]
        cwd = got["cwd"]
        bad = [f for f in fds if f["fd"] > 2 or not (f["target"].startswith("pipe:") or f["target"] == "/dev/null")]
        if cwd["getcwd_path"] != "/workspace" or "unreachable" in cwd["getcwd_path"] or cwd["proc_cwd"] != "/workspace":
            bad.append(cwd)
        return bad
    r1 = front.run("probe fds cwd")
    sid, why = front.create()
    if sid is None:
        return False, why
    try:
        r2 = front.exec(sid, "probe fds cwd")
    finally:
        front.stop(sid)
    bad = check(r1) + check(r2)
    return not bad, bad


def proc_self_exe_case(front):
    """CVE-2019-5736: while the runtime keeps starting commands in a sandbox,
    a process in it scans /proc/*/exe for the runtime's binary and tries to
    reopen it for writing.  It must never reach a file outside the sandbox;
    the nsbox binary's hash is checked at the end of the suite."""
    sid, why = front.create()
    if sid is None:
        return False, why
    secs = max(2, int(RACE_SECONDS / 2))
    try:
        scan = {}
        t = threading.Thread(target=lambda: scan.update(front.exec(sid, f"probe exe_scan {secs}", timeout=secs + 30))
                             ) if front.kind == "cli" else None
        if t:
            t.start()
        else:
            front.exec(sid, f"probe exe_scan {secs} >/tmp/scan.jsonl 2>&1 &")
        end, execs = time.time() + secs, 0
        while time.time() < end:
            front.exec(sid, "true")
            execs += 1
        if t:
            t.join()
        else:
            time.sleep(1)
            scan = front.exec(sid, "cat /tmp/scan.jsonl")
        got = probe_lines(scan.get("stdout", "")).get("exe_scan", {})
        ok = got.get("escaped") == 0 and got.get("writable") == 0 and got.get("opened_inside", 0) > 0 and execs >= 10
        return ok, {"execs": execs, **got}
    finally:
        front.stop(sid)


def hostile_image_case(image_name, pattern):
    """CVE-2019-16884 class: images whose /proc or /dev is a symlink are refused
    with a clear error; nothing is mounted through them."""
    def fn(front):
        image = E[image_name]
        if front.kind == "cli":
            r = front.run("true", image=image)
        else:
            sid, why = front.create(image=image)
            if sid:
                front.stop(sid)
            r = {"nsbox_error": why} if sid is None else {"ran": sid}
        err = r.get("nsbox_error") or ""
        return re.search(pattern, err) is not None and r.get("rc", 125) == 125, r
    return fn


def fake_proc_case(front):
    """An image shipping a fake /proc tree (a core_pattern file, a fake
    self/): procfs is mounted over it, the fake files are not what is seen."""
    r = front.run("probe mountinfo proc_sys_write; cat /proc/sys/kernel/core_pattern", image=E["FAKEPROC_IMAGE"])
    got = probe_lines(r.get("stdout", ""))
    proc = [l for l in got["mountinfo"]["lines"] if " /proc " in l and " - proc " in l]
    return bool(proc) and "FAKE" not in r.get("stdout", "") and got["proc_sys_write"]["verdict"] == "blocked", \
        (proc, r.get("stdout", "")[-200:])


# -- resources -------------------------------------------------------------------

def fork_bomb_case(front):
    r = front.run("probe fork 100000", pids=64)
    got = probe_lines(r.get("stdout", "")).get("fork", {})
    return got.get("errname") == "EAGAIN" and 0 < got.get("ret", 0) < 64, (got, r.get("limits"))


def thread_bomb_case(front):
    r = front.run("probe threads 100000", pids=64)
    got = probe_lines(r.get("stdout", "")).get("threads", {})
    return got.get("errname") == "EAGAIN" and 0 < got.get("ret", 0) < 64, (got, r.get("limits"))


def memory_balloon_case(front):
    """2 GiB at --memory 64: past the limit even where a tmpfs disk raises
    it by its size (the CLI asks for a 16 MiB disk; MCP has the default
    1 GiB: 1088 MiB in all)."""
    r = front.run("probe mem 2048", memory=64, disk=16)
    if front.rootless:
        # best-effort: RLIMIT_AS; the allocation fails, nothing is killed
        got = probe_lines(r.get("stdout", "")).get("mem", {})
        return got.get("errname") == "ENOMEM" and not r.get("oom_killed") and \
            r["limits"].startswith("best-effort"), (got, r.get("limits"))
    return r.get("oom_killed") is True and r.get("status") == "oom" and r.get("signal") == 9, \
        {k: r.get(k) for k in ("status", "oom_killed", "signal", "memory_peak_bytes", "nsbox_error")}


def fill_case(path, mb, cap):
    """/dev/shm and /tmp are size-capped tmpfs: ENOSPC at the cap."""
    def fn(front):
        got = probe_lines(front.run(f"probe write {path} {mb}").get("stdout", "")).get("write", {})
        return got.get("errname") == "ENOSPC" and got.get("bytes", 0) <= cap, got
    return fn


def inode_case(front):
    """Inode exhaustion in /tmp: the tmpfs's inode cap, not the host's."""
    # `true`, not `:`: a failed redirection on a special builtin ends sh.
    r = front.run("probe tmp_size; i=0; while true > /tmp/f$i 2>/dev/null; do i=$((i+1)); done; echo files=$i",
                  timeout=120)
    got = probe_lines(r.get("stdout", "")).get("tmp_size", {})
    m = re.search(r"files=(\d+)", r.get("stdout", ""))
    # 256 MiB /tmp: 65536 inodes (one per 4 KiB), the root directory uses one
    return (m is not None and got.get("inodes") == 65536 and int(m.group(1)) == got["inodes_free"]), \
        (got, m and m.group(0))


def huge_output_case(front):
    r = front.run("probe output 4")
    return (r.get("stdout_truncated") is True and len(r["stdout"].encode()) == 1 << 20
            and r.get("exit_code") == 0), {k: r.get(k) for k in ("stdout_truncated", "exit_code")}


def cpu_spin_case(front):
    t0 = time.time()
    r = front.run("probe spin 60", timeout=1)
    took = time.time() - t0
    return r.get("timed_out") is True and r.get("status") == "timeout" and took < 20, \
        ({k: r.get(k) for k in ("timed_out", "status", "wall_ms")}, took)


def outlive_case(front):
    """setsid, nohup and a double fork ignoring SIGTERM/SIGHUP try to outlive
    the timeout, in a one-shot run and in a kept sandbox; settle() then
    proves nothing is left.  Each run shows that it started all three (their
    pids, the daemon's record) before the timeout: else nothing was tried.
    (The image's busybox has no nohup applet: nohup is what it does, SIGHUP
    ignored, then exec.)"""
    cmd = ("setsid sleep 3141 & echo started $!; (trap '' HUP; exec sleep 3142) >/dev/null 2>&1 & echo started $!; "
           "probe daemon 3143; sleep 3144")

    def started(r):
        out = r.get("stdout", "")
        daemon = probe_lines(out).get("daemon", {})
        return len(re.findall(r"^started [1-9]\d*$", out, re.M)) == 2 and daemon.get("daemon_pid", 0) > 0
    r = front.run(cmd, timeout=1)
    sid, why = front.create()
    if sid is None:
        return False, why
    try:
        r2 = front.exec(sid, cmd, timeout=1)
        left = front.exec(sid, "ps -o args | grep -c '[s]leep 314\\|[p]robe daemon'")
    finally:
        front.stop(sid)
    return r.get("timed_out") and r2.get("timed_out") and started(r) and started(r2) and left.get("stdout") == "0\n", \
        (r.get("status"), r2.get("status"), started(r), started(r2), left.get("stdout"))


def zombies_case(front):
    r = front.run("for i in $(seq 50); do (sleep 0.01 &) ; done; sleep 1; "
                  "grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l")
    return r.get("stdout") == "0\n", r.get("stdout")


def fd_exhaustion_case(front):
    got = probe_lines(front.run("probe fds 100000").get("stdout", "")).get("fds", {})
    return got.get("errname") == "EMFILE" and got.get("ret", 0) < 1024, got


def cpu_limit_case(front):
    r = front.run("probe spin 2", cpus=0.25)
    got = probe_lines(r.get("stdout", "")).get("spin", {})
    if front.rootless:
        # best-effort: no cpu limit, and the result says so
        return "no cpu limit" in r.get("limits", "") and got.get("cpu_ms", 0) > 0, r.get("limits")
    return 0 < got.get("cpu_permille", 1000) <= 400, got


# -- leaks ------------------------------------------------------------------------

def env_canary_case(front):
    r = front.run("probe environ")
    env = probe_lines(r.get("stdout", "")).get("environ", {}).get("env", {})
    return bool(env) and CANARY_ENV not in json.dumps(r) and "NSBOX_HOSTILE_CANARY" not in env, env


def hostname_case(front):
    got = probe_lines(front.run("probe hostname domainname").get("stdout", ""))
    h = got["hostname"]["hostname"]
    return h == "nsbox" and h != socket.gethostname() and got["domainname"]["domainname"] in ("", "(none)"), got


def abstract_socket_case(front):
    """A host process listens on @nsbox-probe-canary: the sandbox's net
    namespace has its own abstract socket namespace."""
    got = probe_lines(front.run("probe abstract_socket").get("stdout", "")).get("abstract_socket", {})
    return got.get("errname") == "ECONNREFUSED" and "received" not in got, got


def proc_side_channels_case(front):
    got = probe_lines(front.run("probe proc_masked kcore_read").get("stdout", ""))
    bad = []
    for f in got["proc_masked"]["files"]:
        if not f.get("exists"):
            continue
        if f["path"].startswith("/proc/") and f["type"] == "file" and f.get("bytes", 0) != 0:
            bad.append(f)
        if f["type"] == "dir" and f.get("entries", 0) != 0:
            bad.append(f)
    return not bad, bad or got["proc_masked"]["files"]


def mountinfo_case(front):
    lines = probe_lines(front.run("probe mountinfo").get("stdout", ""))["mountinfo"]["lines"]
    text = "\n".join(lines)
    bad = [p for p in (front.store, "/work", "/tmp/nsbox-", "/home/", "/var/lib/nsbox", os.path.dirname(NSBOX))
           if p in text]
    return not bad and len(lines) > 5, bad or lines


def network_case(front):
    """Sealed (no --net): only lo; the local default routes take every
    connect into the sandbox's own netns, where nothing listens
    (docs/network.md; the egress cases are tests/hostile/egress_cases.py)."""
    got = probe_lines(front.run("probe netdevs lo_up net_egress").get("stdout", ""))
    ok = got["netdevs"]["ret"] == 1 and got["lo_up"]["ret"] == 1 and got["net_egress"]["errname"] == "ECONNREFUSED"
    return ok, got


def caller_terminal_case(front):
    """`nsbox run` from a terminal: the sandbox gets pipes, not the terminal
    (no TIOCSTI, no reading the user's keystrokes through /proc/self/fd, no
    changing its modes), and has no controlling terminal."""
    import pty
    master, slave = pty.openpty()
    try:
        p = subprocess.run(front.prefix() + [front.nsbox, "--store", front.store, "run", IMAGE, "--",
                                             "probe", "fds", "ctty", "tiocsti"],
                           stdin=slave, stdout=slave, stderr=subprocess.DEVNULL, timeout=60)
        os.close(slave)
        slave = -1
        text = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            text += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    got = probe_lines(text.decode(errors="replace").replace("\r\n", "\n"))
    fds = got.get("fds", {}).get("fds", [])
    ok = (p.returncode == 0 and len(fds) == 3 and all(f["target"].startswith("pipe:") for f in fds)
          and got["ctty"]["errname"] == "ENXIO" and got["tiocsti"]["fd_kind"] != "stdin_tty")
    return ok, (p.returncode, fds, got.get("ctty"), got.get("tiocsti"))


def jsonrpc_lookalike_case(front):
    """Sandbox output that looks like JSON-RPC (a response to the client's
    next request id, a notification, a Content-Length frame, control
    characters) stays inside its string."""
    nxt = front.mcp().n + 2   # create is n+1, this run_command n+2
    fake = (f'{{"jsonrpc":"2.0","id":{nxt},"result":{{"hijacked":true}}}}\n'
            '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"x"}}\n'
            'Content-Length: 20\r\n\r\n{"jsonrpc":"2.0"}\x1b[2J\x07\n')
    r = front.run("printf '%s' \"$FAKE\"".replace("$FAKE", fake.replace("\\", "\\\\").replace('"', '\\"')))
    pong = front.mcp().req("ping", {})
    return r.get("stdout") == fake and "hijacked" not in json.dumps(
        {k: v for k, v in r.items() if k != "stdout"}) and pong.get("result") == {}, r.get("stdout")


# -- the table -----------------------------------------------------------------------

def cases_for(front):
    c = [(name, surface_case(expect)) for name, expect in SURFACE]
    c += [
        ("syscall_abi_i386_x32", abi_case),
        ("personality_aslr_off", personality_case),
        ("caps_zero_nnp_setuid_gains_nothing", privileges_case),
        ("write_proc_sys_sysrq_cgroup_sys", proc_writes_case),
        ("cve_2024_21626_leaked_fds_cwd", leaked_fds_case),
        ("cve_2019_5736_proc_self_exe", proc_self_exe_case),
        ("cve_2019_16884_proc_symlink_image", hostile_image_case("PROCSYM_IMAGE", r"proc is a symlink")),
        ("cve_2019_16884_dev_symlink_image", hostile_image_case("DEVSYM_IMAGE", r"dev is a symlink")),
        ("fake_proc_directory_image", fake_proc_case),
        ("fork_bomb", fork_bomb_case),
        ("thread_bomb", thread_bomb_case),
        ("memory_balloon", memory_balloon_case),
        ("dev_shm_fill", fill_case("/dev/shm/fill", 200, 64 << 20)),
        ("tmp_fill", fill_case("/tmp/fill", 400, 256 << 20)),
        ("inode_exhaustion_tmp", inode_case),
        ("disk_fill_single_file", disk_fill_case),
        ("disk_many_small_files", disk_small_files_case),
        ("disk_inode_exhaustion", disk_inode_case),
        ("disk_sparse_file_high_offsets", disk_sparse_case),
        ("disk_hard_links", disk_links_case),
        ("disk_fill_racing_copy_up", disk_copy_up_race_case),
        ("huge_output", huge_output_case),
        ("cpu_spin_timeout", cpu_spin_case),
        ("cpu_limit", cpu_limit_case),
        ("outlive_timeout_setsid_nohup_double_fork", outlive_case),
        ("zombies_reaped", zombies_case),
        ("fd_exhaustion", fd_exhaustion_case),
        ("host_env_canary", env_canary_case),
        ("hostname", hostname_case),
        ("abstract_unix_socket", abstract_socket_case),
        ("proc_sys_side_channels", proc_side_channels_case),
        ("mountinfo_host_paths", mountinfo_case),
        ("network_none", network_case),
    ] + ([("caller_terminal_not_passed_tiocsti", caller_terminal_case)] if front.kind == "cli" else []) + [
        ("cve_2021_30465_mount_race", mount_race_case),
    ]
    if front.kind == "mcp":
        c += [("jsonrpc_lookalike_output_stays_a_string", jsonrpc_lookalike_case),
              ("cve_2018_15664_file_tools_symlink_exchange", file_tools_race_case),
              ("changes_walk_symlink_exchange", changes_walk_race_case),
              ("disk_persistent_workspace_fill", disk_workspace_case)]
    return c


# The checks after every front: one line each (no_sandbox_process_left also
# when ONLY picks some cases; the others need every case's output).
CANARIES = ("host_env_never_seen", "host_secret_file_never_seen", "host_secret_file_unchanged",
            "nsbox_binaries_unchanged")
FINAL = ("no_sandbox_process_left",)


def main():
    # A host listener on the abstract socket the probe knocks on.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0nsbox-probe-canary")
    listener.listen(8)

    def serve():
        while True:
            try:
                c, _ = listener.accept()
                c.sendall(b"host abstract socket canary")
                c.close()
            except OSError:
                return
    threading.Thread(target=serve, daemon=True).start()

    hashes = {p: sha256(p) for p in (NSBOX, NSBOX_RL)}
    secret = open(CANARY_FILE).read()
    fronts = [Front(k, m) for k in ("cli", "mcp") for m in ("root", "rootless")]
    for front in fronts:
        t0 = time.time()
        for name, fn in cases_for(front):
            case(front, name, fn)
        front.close()
        print(f"# {front.name}: {time.time() - t0:.1f} s", flush=True)

    if not E.get("ONLY"):
        everything = "\n".join(outputs)
        canary = {
            "host_env_never_seen": (CANARY_ENV not in everything, "the environment canary showed up"),
            "host_secret_file_never_seen": (secret.strip() not in everything, "the host secret showed up"),
            "host_secret_file_unchanged": (open(CANARY_FILE).read() == secret, "changed"),
            "nsbox_binaries_unchanged": (all(sha256(p) == h for p, h in hashes.items()), "hash changed"),
        }
        for name in CANARIES:
            nt.result(f"canary/{name}", *canary[name])
    left = sandboxed_processes()
    nt.result("canary/no_sandbox_process_left", not left, left)
    nt.finish()


if __name__ == "__main__":
    main()
