#!/usr/bin/env python3
"""context_fork (issue #29, docs/context-fork.md) against `nsbox serve` over
stdio with the default image, in real sandboxes: a fork carries the
source's variables, imports (sys.modules) and working directory; changes
in either after the fork do not reach the other; the fork is a process of
its own (own process group, parented by the sandbox's init, same cgroup)
that the host interrupts and kills like any context; random is reseeded
unless reseed is false; a fork of a fork and of the default context; only
the main thread survives; a fork waits for a cell running in the sandbox;
javascript/typescript refused with the reason; ids of another sandbox or
session are "not found"; the 16-context limit; a driver that forges the
fork's pid is refused and the server stays up; (root, LIMITS=1) the pids
limit refuses a fork with a clear error.  Environment: NSBOX, NSBOX_STORE,
SUITE, CF_LIMITS (1: run the pids-limit case; the rootless run has no
cgroup here)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

os.environ.setdefault("SUITE", "context_fork")
STORE = os.environ["NSBOX_STORE"]
s = Server(store=STORE)


def sc(r):
    return r.get("structuredContent") or {}


def err(r):
    return r["content"][0]["text"] if r.get("isError") else None


def run(sb, ctx, code, **kw):
    return sc(s.tool("execute_code", sandbox_id=sb, context=ctx, code=code, **kw))


def fork(sb, ctx, **kw):
    return s.tool("context_fork", sandbox_id=sb, context_id=ctx, **kw)


def sh(sb, command):
    return sc(s.tool("run_command", sandbox_id=sb, command=command)).get("stdout", "")


sb = sc(s.tool("sandbox_create", language="python")).get("sandbox_id")
sb2 = None
try:
    src = sc(s.tool("context_create", sandbox_id=sb))["context_id"]
    run(sb, src, "import os, sys, random, fractions\nx = 41\nhalf = fractions.Fraction(1, 2)\n"
                 "def f(v):\n    return v * 2\nos.chdir('/tmp')")
    f1 = fork(sb, src)
    fid = sc(f1).get("context_id")
    got = run(sb, fid, "(x, str(half), f(x), 'fractions' in sys.modules, os.getcwd())")
    result("carries_variables_imports_cwd",
           not f1.get("isError") and fid and fid != src
           and got.get("result") == "(41, '1/2', 82, True, '/tmp')"
           and sc(f1).get("cwd") == "/tmp" and sc(f1).get("forked_from") == src
           and sc(f1).get("language") == "python", (f1, got))

    run(sb, fid, "x = 1\ny = 'only in the fork'\nimport colorsys")
    back = run(sb, src, "(x, 'y' in globals(), 'colorsys' in sys.modules)")
    result("fork_changes_stay_in_fork", back.get("result") == "(41, False, False)", back)
    run(sb, src, "x = 99\nz = 3\nos.chdir('/')")
    there = run(sb, fid, "(x, 'z' in globals(), os.getcwd())")
    result("source_changes_stay_in_source", there.get("result") == "(1, False, '/tmp')", there)

    run(sb, fid, "open('/workspace/from-fork.txt', 'w').write('hi')")
    seen = run(sb, src, "open('/workspace/from-fork.txt').read()")
    result("files_are_the_sandboxs", seen.get("result") == "'hi'", seen)

    # A process of its own: not the source's pid, its own process group,
    # parented by the sandbox's init (pid 1), in the same cgroup.
    ps = run(sb, src, "os.getpid()").get("result")
    pf = run(sb, fid, "os.getpid()").get("result")
    info = sh(sb, f"for p in {ps} {pf}; do awk '{{print $4, $5}}' /proc/$p/stat; "
                  "md5sum < /proc/$p/cgroup | cut -c1-8; done")
    lines = info.split()
    result("own_process_group_parented_by_init_same_cgroup",
           ps and pf and ps != pf and len(lines) == 6 and lines[3] == "1"
           and lines[4] == pf and lines[2] == lines[5], (ps, pf, info))

    # random: reseeded by default; reseed=false keeps the source's state.
    run(sb, src, "random.seed(5)")
    fr = fork(sb, src)
    fk = fork(sb, src, reseed=False)
    a = run(sb, sc(fr).get("context_id"), "random.random()").get("result")
    b = run(sb, sc(fk).get("context_id"), "random.random()").get("result")
    c = run(sb, src, "random.random()").get("result")
    result("reseed_by_default_and_reseed_false_keeps_state",
           c == "0.6229016948897019" and b == c and a not in (None, c)
           and sc(fr).get("reseeded") == ["random"] and sc(fk).get("reseeded") == [],
           (a, b, c, sc(fr), sc(fk)))
    for x in (fr, fk):
        s.tool("context_remove", sandbox_id=sb, context_id=sc(x).get("context_id"))

    ff = fork(sb, fid)
    ffr = run(sb, sc(ff).get("context_id"), "(x, y, os.getcwd())")
    listed = sc(s.tool("context_list", sandbox_id=sb)).get("contexts", [])
    chain = {c["context_id"]: c.get("forked_from") for c in listed}
    result("fork_of_a_fork",
           ffr.get("result") == "(1, 'only in the fork', '/tmp')"
           and chain.get(sc(ff).get("context_id")) == fid and chain.get(fid) == src, (ffr, listed))

    # Threads do not survive a fork: only the main thread is copied.
    run(sb, src, "import threading, time\nstop = threading.Event()\n"
                 "t = threading.Thread(target=stop.wait, daemon=True); t.start()")
    ft = fork(sb, src)
    n = run(sb, sc(ft).get("context_id"), "threading.active_count()").get("result")
    ns = run(sb, src, "threading.active_count()").get("result")
    result("only_the_main_thread_survives", n == "1" and ns == "2", (n, ns))

    # numpy (its BLAS thread pool) works in a fork of a context that used it.
    mm = "import numpy\na = numpy.ones((400, 400))\nfloat((a @ a).sum())"
    nsrc = run(sb, src, mm).get("result")
    fnp = fork(sb, src)
    nf = run(sb, sc(fnp).get("context_id"), mm, timeout_s=60)
    result("numpy_works_in_the_fork", nsrc == "64000000.0" and nf.get("result") == nsrc,
           (nsrc, nf))
    s.tool("context_remove", sandbox_id=sb, context_id=sc(fnp).get("context_id"))

    # The host's interrupt (a timeout) reaches the fork, and only the fork.
    t = run(sb, sc(ft).get("context_id"), "while True: pass", timeout_s=1)
    after = run(sb, sc(ft).get("context_id"), "x")
    calm = run(sb, src, "x")
    result("timeout_interrupts_the_fork_and_keeps_its_state",
           t.get("timed_out") is True and t.get("state_lost") is False
           and after.get("result") == "99" and calm.get("result") == "99", (t, after, calm))

    # The source's end does not end the fork; the fork's removal kills it.
    fr2 = sc(fork(sb, src))
    pf2 = run(sb, fr2.get("context_id"), "os.getpid()").get("result")
    s.tool("context_restart", sandbox_id=sb, context_id=src)
    alive = run(sb, fr2.get("context_id"), "x")
    s.tool("context_remove", sandbox_id=sb, context_id=fr2.get("context_id"))
    time.sleep(0.2)
    gone = sh(sb, f"test -e /proc/{pf2} && grep -c . /proc/{pf2}/cmdline || echo gone")
    result("source_restart_keeps_fork_and_remove_kills_it",
           alive.get("result") == "99" and alive.get("state_lost") is False
           and gone.strip() == "gone", (alive, gone))

    # The default python context, started before or not.
    run(sb, "python", "dflt = 'default'")
    fd = fork(sb, "python")
    fdr = run(sb, sc(fd).get("context_id"), "dflt")
    sb2 = sc(s.tool("sandbox_create", language="python")).get("sandbox_id")
    fresh = fork(sb2, "python")
    fresh_r = run(sb2, sc(fresh).get("context_id"), "import os; os.getcwd()")
    result("default_python_context",
           fdr.get("result") == "'default'" and sc(fd).get("forked_from") == "python"
           and fresh_r.get("result") == "'/workspace'", (fd, fdr, fresh, fresh_r))

    js = {
        "javascript": err(fork(sb, "javascript")),
        "typescript": err(fork(sb, "typescript")),
        "made_js": err(fork(sb, sc(s.tool("context_create", sandbox_id=sb,
                                          language="javascript")).get("context_id", "?"))),
    }
    result("javascript_and_typescript_refused_with_reason",
           all(v and "only python" in v and "threads" in v for v in js.values()), js)

    other_ctx = sc(s.tool("context_create", sandbox_id=sb2))["context_id"]
    refusals = {
        "unknown": err(fork(sb, "ctx-0000000000000000")),
        "other_sandbox_context": err(fork(sb, other_ctx)),
        "unknown_sandbox": err(fork("0" * 32, src)),
        "no_context_id": err(s.tool("context_fork", sandbox_id=sb)),
        "bad_reseed": err(fork(sb, src, reseed="yes")),
    }
    s2 = Server(store=STORE)
    try:
        refusals["other_session"] = err(s2.tool("context_fork", sandbox_id=sb, context_id=src))
    finally:
        s2.close()
    want = {"unknown": "no code context", "other_sandbox_context": "no code context",
            "unknown_sandbox": "sandbox", "no_context_id": "context_id", "bad_reseed": "reseed",
            "other_session": "sandbox"}
    bad = {k: v for k, v in refusals.items() if v is None or want[k] not in v}
    result("not_found_and_bad_arguments", not bad, refusals)

    # A cell running in the sandbox: the fork waits for it and copies the
    # state it left.
    def send(i, name, args):
        s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                    "params": {"name": name, "arguments": args}}) + "\n")
        s.p.stdin.flush()

    t0 = time.monotonic()
    send(9001, "execute_code", {"sandbox_id": sb, "context": src,
                                "code": "import time\ntime.sleep(1.0)\nbusy = 'after the cell'"})
    time.sleep(0.2)
    send(9002, "context_fork", {"sandbox_id": sb, "context_id": src})
    answers = {}
    while len(answers) < 2:
        m = json.loads(s.p.stdout.readline())
        if m.get("id") in (9001, 9002):
            answers[m["id"]] = (m.get("result") or {}, time.monotonic() - t0)
    fb = answers[9002][0]
    fbr = run(sb, sc(fb).get("context_id"), "busy")
    result("fork_of_a_busy_context_waits_for_the_cell",
           not fb.get("isError") and fbr.get("result") == "'after the cell'"
           and answers[9002][1] >= 0.9, (answers, fbr))

    # A driver that forges the fork's pid (the code can rewrite the
    # driver): init's own pid, then the source's own pid.  Refused, nothing
    # listed, and the server and the source go on.
    evil = sc(s.tool("context_create", sandbox_id=sb))["context_id"]
    run(sb, evil, "import os\nme = os.getpid()\n"
                  "def forge(fds, *rest, pid=1):\n"
                  "    g['send_line'](fds[0], {'op': 'ready', 'pid': pid})\n"
                  "    os._exit(0)\n"
                  "host = [c.cell_contents for c in display.__closure__\n"
                  "        if type(c.cell_contents).__name__ == 'Host'][0]\n"
                  "g = display.__globals__\n"
                  "host.helper('python_fork').become_fork = forge")
    before = len(sc(s.tool("context_list", sandbox_id=sb)).get("contexts", []))
    e1 = err(fork(sb, evil))
    run(sb, evil, "forge.__kwdefaults__ = {'pid': me}")
    e2 = err(fork(sb, evil))
    after_n = len(sc(s.tool("context_list", sandbox_id=sb)).get("contexts", []))
    ok = run(sb, evil, "6 * 7")
    result("forged_pid_refused_server_stays_up",
           e1 is not None and "no valid pid" in e1 and e2 is not None
           and "another exec" in e2 and before == after_n and ok.get("result") == "42",
           (e1, e2, before, after_n, ok))
    s.tool("context_remove", sandbox_id=sb, context_id=evil)

    n = len([c for c in sc(s.tool("context_list", sandbox_id=sb)).get("contexts", [])
             if not c["default"]])
    made = [fork(sb, fid) for _ in range(16 - n)]
    over = fork(sb, fid)
    result("forks_count_against_16_contexts",
           all(not m.get("isError") for m in made) and "16 code contexts" in (err(over) or ""),
           (err(over), [err(m) for m in made if m.get("isError")]))

    if os.environ.get("CF_LIMITS") == "1":
        sb3 = sc(s.tool("sandbox_create", language="python", pids=8)).get("sandbox_id")
        try:
            run(sb3, "python", "import subprocess\n"
                               "ps = []\n"
                               "for _ in range(10):\n"
                               "    try: ps.append(subprocess.Popen(['sleep', '60']))\n"
                               "    except OSError: break")
            full = err(fork(sb3, "python"))
            run(sb3, "python", "[p.kill() for p in ps]; [p.wait() for p in ps]")
            then = fork(sb3, "python")
            result("pids_limit_refuses_a_fork_clearly",
                   full is not None and "process limit" in full and not then.get("isError"),
                   (full, then))
        finally:
            s.tool("sandbox_stop", sandbox_id=sb3)
finally:
    s.tool("sandbox_stop", sandbox_id=sb)
    if sb2:
        s.tool("sandbox_stop", sandbox_id=sb2)
    s.close()
finish()
