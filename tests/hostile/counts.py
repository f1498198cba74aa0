#!/usr/bin/env python3
"""How many result lines each front of the hostile suite prints, computed
from the case tables, never from a run's output: hostile.py's cases_for()
and CANARIES, egress_cases.py's and services_cases.py's CASES, raw_protocol.py's TESTS and
vm-guest.sh's CASES.  file_tools.py and host_copy.py are scripts without a
table: their numbers are typed here (FILE_TOOLS, HOST_COPY), and this
file's check catches them drifting.

  counts.py             prints "FRONT N" for every front, and the total
  counts.py check OUT   compares the PASS/FAIL/SKIP lines in OUT (the
                        suite's output) with the table: one
                        `FAIL: hostile/FRONT/incomplete: N of M cases ran (K
                        missing)` or `FAIL: hostile/FRONT/count: N results,
                        the case table says M` per front that differs;
                        status 1 when any does.

tests/hostile/run.sh runs the check when it ran every front (no ONLY)."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mcp"))

# Typed: the results file_tools.py and host_copy.py print on a full run.
FILE_TOOLS = 37
HOST_COPY = 8

# Lines a front's harness prints only when it fails (they stand for lost
# results, which the count reports on its own): not counted.
HARNESS = {"setup", "raw_setup", "harness", "guest_ran_every_case", "suite_crashed", "incomplete", "count"}


def fronts():
    """[(front, regex over the name after "hostile/", expected lines)]."""
    # hostile.py and raw_protocol.py read their environment at import time;
    # nothing here runs a case.
    for k in ("NSBOX", "NSBOX_RL", "IMAGE", "CANARY_ENV", "CANARY_FILE", "CANARY_DIR"):
        os.environ.setdefault(k, "unused")
    os.environ.setdefault("MCP_LOG_DIR", "/nonexistent")
    import hostile
    import egress_cases
    import services_cases
    import raw_protocol
    sys.excepthook = sys.__excepthook__  # theirs is for their own runs

    class Stub:
        def __init__(self, kind, mode):
            self.kind, self.mode = kind, mode

    out = []
    for kind in ("cli", "mcp"):
        for mode in ("root", "rootless"):
            out.append((f"{kind}-{mode}", rf"{kind}-{mode}/[^/]+", len(hostile.cases_for(Stub(kind, mode)))))
    out.append(("canary", r"canary/[^/]+", len(hostile.CANARIES) + len(hostile.FINAL)))
    for mode in ("root", "rootless"):
        out.append((f"egress/{mode}", rf"egress/{mode}/[^/]+", len(egress_cases.CASES)))
    out.append(("egress/brokers", r"egress/no_broker_left", 1))
    for mode in ("root", "rootless"):
        out.append((f"services/{mode}", rf"services/{mode}/[^/]+", len(services_cases.CASES)))
    out.append(("mcp-rootless/files", r"mcp-rootless/files/[^/]+", FILE_TOOLS))
    out.append(("mcp-rootless/host", r"mcp-rootless/host/[^/]+", HOST_COPY))
    out.append(("mcp-rootless/protocol", r"mcp-rootless/protocol/[^/]+", len(raw_protocol.TESTS)))
    with open(os.path.join(HERE, "vm-guest.sh")) as f:
        table = re.search(r'^CASES="([^"]*)"', f.read(), re.M)
    out.append(("vm", r"vm/[^/]+", len(table.group(1).split())))
    return out


def check(path):
    names = []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"(?:PASS|FAIL|SKIP): hostile/([^:\s]+)", line)
            if m:
                names.append(m.group(1))
    table = fronts()
    bad = 0
    for front, rx, want in table:
        got = len([n for n in names if re.fullmatch(rx, n) and n.rsplit("/", 1)[-1] not in HARNESS
                   and n not in {f for f, _, _ in table}])
        if got < want:
            print(f"FAIL: hostile/{front}/incomplete: {got} of {want} cases ran ({want - got} missing)")
            bad += 1
        elif got > want:
            print(f"FAIL: hostile/{front}/count: {got} results, the case table says {want} (tests/hostile/counts.py)")
            bad += 1
    return 1 if bad else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        return check(sys.argv[2])
    if len(sys.argv) != 1:
        sys.exit("usage: counts.py [check OUTPUT]")
    table = fronts()
    for front, _, want in table:
        print(front, want)
    print("total", sum(w for _, _, w in table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
