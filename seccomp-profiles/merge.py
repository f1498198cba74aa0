#!/usr/bin/env python3
"""Writes a seccomp profile: a default profile's rules, every one in order,
then each rule of an additions file (docker format, which Docker,
containerd, CRI-O and nsbox's own loader read).

    merge.py DEFAULT.json ADDITIONS.json [SOURCE] > PROFILE.json

ADDITIONS.json is {"prefix": P, "title": T, "rules": [...]}.  Every rule's
"comment" starts with P and says why nsbox needs it (and the error its
absence gives); a rule without one is refused.  The output's "comment" is
T with {n} (the number of rules added), {names} (the syscalls they name),
{new} (those the default never allows, or "none") and {source} (SOURCE:
where DEFAULT.json came from) filled in.  The output is deterministic.

Two profiles are made with it:
- seccomp-profiles/nested.json (default.json + nested-additions.json):
  nested mode's profile, linked into nsbox (cli/profile.S); `make` fails
  when the committed file is not what this makes (Makefile).
- deploy/seccomp/nsbox-pod.json (the runtimes' default +
  deploy/seccomp/nsbox-additions.json): for nsbox inside a pod,
  deploy/seccomp/generate.sh.
"""
import json
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: merge.py DEFAULT.json ADDITIONS.json [SOURCE] > PROFILE.json")
    default = json.load(open(sys.argv[1]))
    additions = json.load(open(sys.argv[2]))
    prefix, title = additions["prefix"], additions["title"]
    out = dict(default)
    out["syscalls"] = list(default["syscalls"])
    for rule in additions["rules"]:
        if not (rule.get("comment") or "").startswith(prefix):
            sys.exit("merge.py: %s: every rule needs a comment \"%swhy\"" % (sys.argv[2], prefix))
        out["syscalls"].append(rule)
    known = {n for r in default["syscalls"] for n in r["names"]}
    names = sorted({n for r in additions["rules"] for n in r["names"]})
    out["comment"] = title.format(n=len(additions["rules"]), names=", ".join(names),
                                  new=", ".join(sorted(set(names) - known)) or "none",
                                  source=sys.argv[3] if len(sys.argv) > 3 else "")
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


main()
