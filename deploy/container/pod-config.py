#!/usr/bin/env python3
"""Turns the config.json `umoci unpack` wrote into one that mimics a
Kubernetes pod's container as containerd 2.x writes it, for crun or runc.

pod-config.py BASE.json [options] > config.json

  --idmap HOST_BASE      user namespace: ids 0..65535 -> HOST_BASE.. (hostUsers:
                         false gives each pod 65536 ids); 0 = no user namespace
  --proc masked|unmasked procMount Default (containerd's masked and read-only
                         /proc paths) or Unmasked (none)
  --cgroup ro|rw         cgroupfs read-only (the default for unprivileged
                         containers) or writable (containerd 2.1
                         cgroup_writable = true, CRI-O's
                         cgroup2-mount-hierarchy-rw annotation)
  --sys-admin            add CAP_SYS_ADMIN to containerd's default capabilities
  --seccomp PROFILE|none a docker-format profile, resolved for the capabilities
                         (deploy/seccomp/to-oci.py); --drop NAME passes on
  --bind HOST:CTR        a read-write bind mount (a volume)
  --bind-ro HOST:CTR     a read-only one
  --root PATH            the rootfs (default: rootfs, beside config.json)
  --cgroups-path PATH    linux.cgroupsPath
  --args ...             the process's argv (the rest of the command line)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# containerd's defaults (pkg/oci/spec.go, populateDefaultUnixSpec).
DEFAULT_CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
                "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
MASKED = ["/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
          "/sys/devices/virtual/powercap", "/proc/scsi"]
READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]


def mounts(cgroup_rw, binds):
    m = [
        {"destination": "/proc", "type": "proc", "source": "proc",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "rw" if cgroup_rw else "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "nodev", "mode=1777"]},
    ]
    for b, mode in binds:
        host, ctr = b.split(":", 1)
        m.append({"destination": ctr, "type": "bind", "source": host,
                  "options": ["rbind", mode]})
    return m


def main():
    a = sys.argv[1:]
    base = json.load(open(a.pop(0)))
    idmap, proc, cg, sys_admin, seccomp, drops, binds, cgpath, argv, root = (
        65536 * 2, "masked", "ro", False, None, [], [], None, None, "rootfs")
    while a:
        o = a.pop(0)
        if o == "--idmap": idmap = int(a.pop(0))
        elif o == "--proc": proc = a.pop(0)
        elif o == "--cgroup": cg = a.pop(0)
        elif o == "--sys-admin": sys_admin = True
        elif o == "--seccomp": seccomp = a.pop(0)
        elif o == "--drop": drops += ["--drop", a.pop(0)]
        elif o == "--bind": binds.append((a.pop(0), "rw"))
        elif o == "--bind-ro": binds.append((a.pop(0), "ro"))
        elif o == "--root": root = a.pop(0)
        elif o == "--cgroups-path": cgpath = a.pop(0)
        elif o == "--args": argv, a = a, []
        else: sys.exit("pod-config.py: unknown option " + o)
    caps = DEFAULT_CAPS + (["CAP_SYS_ADMIN"] if sys_admin else [])
    spec = base
    p = spec["process"]
    if argv:
        p["args"] = argv
    p["terminal"] = False
    p["user"] = {"uid": 0, "gid": 0}
    p["capabilities"] = {k: list(caps) for k in ("bounding", "effective", "permitted")}
    p["capabilities"]["inheritable"] = []
    p["capabilities"]["ambient"] = []
    p["noNewPrivileges"] = False
    p.pop("apparmorProfile", None)
    spec["root"] = {"path": root, "readonly": False}
    spec["hostname"] = "nsbox-0"
    spec["mounts"] = mounts(cg == "rw", binds)
    lx = spec.setdefault("linux", {})
    ns = ["pid", "ipc", "uts", "mount", "network", "cgroup"]
    if idmap:
        ns.append("user")
        lx["uidMappings"] = [{"containerID": 0, "hostID": idmap, "size": 65536}]
        lx["gidMappings"] = [{"containerID": 0, "hostID": idmap, "size": 65536}]
    else:
        lx.pop("uidMappings", None)
        lx.pop("gidMappings", None)
    lx["namespaces"] = [{"type": t} for t in ns]
    lx["maskedPaths"] = MASKED if proc == "masked" else []
    lx["readonlyPaths"] = READONLY if proc == "masked" else []
    lx.pop("resources", None)
    lx["resources"] = {"devices": [{"allow": False, "access": "rwm"}]}
    if cgpath:
        lx["cgroupsPath"] = cgpath
    if seccomp and seccomp != "none":
        out = subprocess.run([sys.executable, os.path.join(HERE, "..", "seccomp", "to-oci.py"),
                              seccomp, ",".join(caps)] + drops,
                             check=True, capture_output=True, text=True).stdout
        lx["seccomp"] = json.loads(out)
    else:
        lx.pop("seccomp", None)
    json.dump(spec, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
