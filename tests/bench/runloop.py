#!/usr/bin/env python3
"""One timed sample of tests/bench/run.sh's runtime benchmarks: CMD run N
times in a row, each time waited for to the end of everything it started.

usage: runloop.py N CMD...

The script is a child subreaper (benchlib.become_subreaper), so what CMD
leaves running when it exits (`nsbox run`'s detached remover, an egress
broker) becomes its child; after CMD exits it waits for all of them before
the next run.  So a command's teardown is inside its own sample and never
in the next command's, whatever ran before.  CMD's stdout goes to
/dev/null, its stderr is inherited; a run that exits non-zero ends the
loop with status 1.

Prints one line, totals over the N runs in microseconds:
    total_us=T returned_us=R user_us=U sys_us=S
total: from each start until everything it started had exited; returned:
until CMD itself exited (the rest, T - R, is the teardown after it
returned); user and sys: the CPU time of CMD and everything it started
(getrusage of the reaped children, this script's own CPU not included)."""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    n, cmd = int(sys.argv[1]), sys.argv[2:]
    benchlib.become_subreaper()
    null = os.open("/dev/null", os.O_WRONLY)
    actions = [(os.POSIX_SPAWN_DUP2, null, 1)]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = returned = 0
    for _ in range(n):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter_ns()
        benchlib.reap_all()
        t2 = time.perf_counter_ns()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"runloop: {' '.join(cmd[:4])}...: exit status {os.waitstatus_to_exitcode(status)}")
        total += t2 - t0
        returned += t1 - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"total_us={total // 1000} returned_us={returned // 1000} "
          f"user_us={round((r1.ru_utime - r0.ru_utime) * 1e6)} sys_us={round((r1.ru_stime - r0.ru_stime) * 1e6)}")


if __name__ == "__main__":
    main()
