"""What every Python benchmark of tests/bench/ shares: the result line's
format (tests/bench/run.sh's header and docs/bench.md, "Output"), the load
average, the order of sides per round, and waiting for every process a
measured command left behind.

A result line:
    bench NAME FIGURE... [RATIO] TARGET VERDICT n=N load=START/END
FIGURE is KEY=MIN/MEDIAN/MAX for a figure sampled N times, KEY=VALUE for
one measured once; a ratio is of medians; TARGET is target<=T, target<T or
target=none; VERDICT is OK, MISSED or INFO; load is the 1-minute load
average when the benchmark started (BENCH_LOAD_START, which run.sh sets
for each benchmark; else when this module was imported) and now."""
import ctypes
import os
import signal
import statistics


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


LOAD_START = os.environ.get("BENCH_LOAD_START") or loadavg()


def spread(values, fmt="{:.2f}"):
    """MIN/MEDIAN/MAX of values, each formatted with fmt."""
    v = list(values)
    return "/".join(fmt.format(x) for x in (min(v), statistics.median(v), max(v)))


def _ms(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def table_header():
    """The column heads of run.sh's tables (its `header`)."""
    return f"  {'':50} {'min ms':>8} {'median':>8} {'max':>8} {'user ms':>8} {'sys ms':>8}   samples (ms, in order)"


def table_row(label, values, fmt=_ms):
    """One row of a table as run.sh's `row` prints it: min, median and max
    of values (ms), no CPU figures, every sample in order."""
    v = list(values)
    cells = [fmt(x) for x in (min(v), statistics.median(v), max(v))]
    return (f"  {label:50} {cells[0]:>8} {cells[1]:>8} {cells[2]:>8} {'-':>8} {'-':>8}   "
            + " ".join(fmt(x) for x in v))


def line(name, figures, target="target=none", verdict="INFO", n=None):
    """The result line; figures: a list of "KEY=VALUE" strings (spread()
    for sampled ones)."""
    parts = ["bench", name, *figures, target, verdict]
    if n is not None:
        parts.append(f"n={n}")
    parts.append(f"load={LOAD_START}/{loadavg()}")
    return " ".join(parts)


def rotated(sides, i):
    """The sides in round i's order: each round starts one side later, so
    no side always runs right after the same other one."""
    k = i % len(sides)
    return sides[k:] + sides[:k]


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Processes our children leave behind (nsbox run's detached remover,
    an egress broker) become our children when their parent exits, so
    reap_all() can wait for them."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


class _Deadline(Exception):
    pass


def _alarm(signum, frame):
    raise _Deadline()


def _children():
    pids = []
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/children") as f:
            pids += f.read().split()
    return " ".join(pids)


def reap_all(deadline_s=120):
    """Waits for every child left (after become_subreaper(): every process
    a measured command left behind); raises after deadline_s."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(deadline_s)
    try:
        while True:
            try:
                os.wait()
            except ChildProcessError:
                return
    except _Deadline:
        raise RuntimeError(f"processes left behind still running after {deadline_s} s: {_children()}") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
