#!/usr/bin/env python3
"""Resolves a docker-format seccomp profile into an OCI runtime-spec
linux.seccomp object for runc or crun, the way containerd and Docker do:
a rule applies when the container has every capability in includes.caps,
none in excludes.caps, and the architecture matches.

to-oci.py PROFILE.json CAP_NAME,CAP_NAME,... [--drop NAME] > seccomp.json

--drop NAME (repeatable) leaves out nsbox's own rule for NAME (a rule whose
comment starts with "nsbox:"), keeping the default's: the tests use it to
show that each addition is needed.
Architecture: x86_64 (with x86 and x32 as Docker's archMap has them).
"""
import json
import sys

ARCH = "amd64"
ARCHES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]


def applies(rule, caps):
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if inc.get("arches") and ARCH not in inc["arches"]:
        return False
    if exc.get("arches") and ARCH in exc["arches"]:
        return False
    if any(c not in caps for c in inc.get("caps") or []):
        return False
    if any(c in caps for c in exc.get("caps") or []):
        return False
    return True


def main():
    args = sys.argv[1:]
    drop = set()
    while "--drop" in args:
        i = args.index("--drop")
        drop.add(args[i + 1])
        del args[i:i + 2]
    prof = json.load(open(args[0]))
    caps = set(c for c in args[1].split(",") if c)
    out = {"defaultAction": prof["defaultAction"], "architectures": ARCHES, "syscalls": []}
    if "defaultErrnoRet" in prof:
        out["defaultErrnoRet"] = prof["defaultErrnoRet"]
    for rule in prof["syscalls"]:
        if not applies(rule, caps):
            continue
        ours = (rule.get("comment") or "").startswith("nsbox:")
        names = [n for n in rule["names"] if not (ours and n in drop)]
        if not names:
            continue
        r = {"names": names, "action": rule["action"]}
        if rule.get("args"):
            r["args"] = [{k: a[k] for k in ("index", "value", "valueTwo", "op") if k in a}
                         for a in rule["args"]]
        if "errnoRet" in rule:
            r["errnoRet"] = rule["errnoRet"]
        out["syscalls"].append(r)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
