#!/usr/bin/env python3
"""Containers inside a sandbox (issue #31; tests/bench/run.sh nested_podman
and nested_ready, docs/bench.md, docs/nested.md).

usage: nested_bench.py podman NSBOX STORE CI_REF BUSYBOX_LAYOUT RUNS
       nested_bench.py ready  NSBOX STORE CI_REF BUSYBOX_LAYOUT RUNS

podman: one nested sandbox of the CI image (`nsbox create --nested
--nested-image` of the busybox fixture, loaded into its podman storage);
RUNS rounds after one untimed warm-up, N commands a side a round, the
sides' order rotated from round to round:
  nested   `nsbox exec ID -- podman run --rm --network none BUSYBOX true`
           (crun, rootless
           podman as the sandbox's root), timed from the host: nsbox exec's
           own cost included
  host     the same on the host as root, in a storage
           of its own (--root/--runroot under STORE's directory), with
           --runtime=runc and --ulimit nofile=1024:1024 --ulimit
           nproc=1024:1024: this host's cgroups are hybrid (crun refuses
           them) and podman's default rlimits exceed its hard limits.
           --network none on both sides: the host's default (a CNI bridge)
           would add an interface and firewall rules to the host
  exec     `nsbox exec ID -- true`: the exec's own cost, for context
The ratio is nested/host.

ready: `nsbox create --nested CI` (returns once the Docker API inside
answers GET /_ping) against `nsbox create CI` of a plain sandbox, and
`create --nested --nested-image BUSYBOX` (the image exported from the store
and loaded into the nested storage first) for context; each sandbox is
removed (untimed) before the next sample.

Prints a table and result lines in benchlib.py's format.  Reports, never
asserts; exits non-zero only when a step fails."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import line, rotated, spread, table_header, table_row  # noqa: E402

N = int(os.environ.get("BENCH_NESTED_N", "5"))
BBREF = "localhost/nsbox-bench-bb:latest"


def die(msg):
    sys.exit(f"nested_bench: {msg}")


def sh(*cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        die(f"{' '.join(cmd)[:160]}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r


def timed(cmd):
    t0 = time.perf_counter()
    sh(*cmd)
    return (time.perf_counter() - t0) * 1000


def bench_podman(nsbox, store, ci, bb_layout, runs):
    ns = [nsbox, "--store", store]
    sh(*ns, "pull", "--quiet", ci)
    sh(*ns, "pull", "--quiet", f"oci:{bb_layout}:latest")
    sh(*ns, "tag", f"oci:{bb_layout}:latest", BBREF)
    box = sh(*ns, "create", "--nested", "--nested-image", BBREF, ci).stdout.split()[-1]
    pdir = os.path.join(os.path.dirname(store.rstrip("/")), "host-podman")
    host = ["podman", "--root", f"{pdir}/root", "--runroot", f"{pdir}/run", "--runtime=runc"]
    try:
        hbb = sh(*host, "pull", "-q", f"oci:{bb_layout}:latest").stdout.split()[-1]
        sides = {
            "nested": [*ns, "exec", box, "--", "podman", "run", "--rm", "--network", "none", BBREF, "true"],
            "host": [*host, "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", hbb, "true"],
            "exec": [*ns, "exec", box, "--", "true"],
        }
        for cmd in sides.values():  # warm-up
            timed(cmd)
        samples = {k: [] for k in sides}
        for i in range(runs):
            for k in rotated(list(sides), i):
                samples[k].append(sum(timed(sides[k]) for _ in range(N)) / N)
    finally:
        sh(*ns, "rm", box, check=False)
        sh(*host, "rmi", "-a", "-f", check=False)
        sh("rm", "-rf", pdir, check=False)
    print(f"nested_podman: podman run --rm --network none busybox true, mean of {N} a sample "
          "(host: --runtime=runc, --ulimit nofile/nproc=1024:1024, this host's hybrid cgroups)")
    print(table_header())
    labels = {"nested": "in a nested sandbox (crun, via nsbox exec)",
              "host": "on the host as root (runc)", "exec": "nsbox exec -- true (context)"}
    for k in sides:
        print(table_row(labels[k], samples[k]))
    med = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
    ratio = med["nested"] / med["host"]
    print(line("nested_podman", [f"nested_ms={spread(samples['nested'], '{:.0f}')}",
                                 f"host_runc_ms={spread(samples['host'], '{:.0f}')}",
                                 f"exec_true_ms={spread(samples['exec'], '{:.1f}')}",
                                 f"ratio={ratio:.2f}"], n=runs))


def bench_ready(nsbox, store, ci, bb_layout, runs):
    ns = [nsbox, "--store", store]
    sh(*ns, "pull", "--quiet", ci)
    sh(*ns, "pull", "--quiet", f"oci:{bb_layout}:latest")
    sh(*ns, "tag", f"oci:{bb_layout}:latest", BBREF)
    sides = {"nested": [*ns, "create", "--nested", ci], "plain": [*ns, "create", ci],
             "image": [*ns, "create", "--nested", "--nested-image", BBREF, ci]}

    def sample(cmd):
        t0 = time.perf_counter()
        box = sh(*cmd).stdout.split()[-1]
        t = (time.perf_counter() - t0) * 1000
        sh(*ns, "rm", box)
        return t

    for cmd in sides.values():  # warm-up
        sample(cmd)
    samples = {k: [] for k in sides}
    for i in range(runs):
        for k in rotated(list(sides), i):
            samples[k].append(sample(sides[k]))
    print("nested_ready: nsbox create until ready (nested: the Docker API answers /_ping)")
    print(table_header())
    print(table_row("create --nested, to /_ping OK", samples["nested"]))
    print(table_row("create (plain)", samples["plain"]))
    print(table_row("create --nested --nested-image busybox (context)", samples["image"]))
    med = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
    print(line("nested_ready", [f"nested_ms={spread(samples['nested'], '{:.0f}')}",
                                f"plain_ms={spread(samples['plain'], '{:.0f}')}",
                                f"with_image_ms={spread(samples['image'], '{:.0f}')}",
                                f"ratio={med['nested'] / med['plain']:.2f}"], n=runs))


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "podman":
        bench_podman(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif len(sys.argv) == 7 and sys.argv[1] == "ready":
        bench_ready(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        die(__doc__.split("\n\n")[1])


if __name__ == "__main__":
    main()
