# nsbox's python zygote (mcp/interp/zygote.c, docs/warm.md): a python3
# started in a spare sandbox as `python3 -c THIS [MODULE...]`, before any
# call, that imports the operator's --warm-import modules, says it is
# ready, and waits for ONE program on its stdin (a socket to the server).
# It then runs that program as `python3 -c PROGRAM` would (the same
# __main__, sys.argv == ['-c'], sys.path[0] == '', the traceback of an
# uncaught exception without this file's frames, SystemExit's status and
# message) and the process ends with the program (see the end of _z for
# how it leaves).  Never reused.
#
# Standard library modules already loaded by python's own start only (os,
# sys): what the program finds in sys.modules is what a fresh start has,
# plus the warm imports.  Everything lives in _z()'s locals; __main__ is
# emptied to a fresh -c namespace before the program runs.
#
# Channel (all bytes): zygote -> server "ready" [0x1f FAILURE]... "\n"
# once the warm imports are done (each FAILURE "name: Type: message");
# server -> zygote "LEN\n" then LEN bytes: CWD \0 N \0 (NAME=VALUE \0)*N
# CODE; zygote -> server "g CPU_US\n" (taken: the program runs now) or
# "n\n" (refused: the caller runs it as a fresh process instead); at the
# program's end "x STATUS CPU_US HWM_BYTES\n" (without it, a death by a
# signal, the exit status init reports is the result).
def _z():
    import os
    import sys
    import time  # loaded by python's start already

    me = sys._getframe().f_code
    warm = sys.argv[1:]
    del sys.argv[1:]
    failed = []
    for name in warm:
        try:
            __import__(name)
        except BaseException as e:  # noqa: B902 -- reported, never fatal
            text = "%s: %s: %s" % (name, type(e).__name__, e)
            failed.append(text.replace("\n", " ").replace("\x1f", " ")[:300])
    # The first compile() in a process costs 1-2 ms (the compiler's own
    # start): paid now, in a namespace thrown away.
    exec(compile("def f(a, *b, **c):\n    return [a, b, c]\nf(1)", "<string>", "exec"), {})
    os.write(0, ("\x1f".join(["ready"] + failed) + "\n").encode("utf-8", "replace"))

    buf = b""
    while b"\n" not in buf:
        chunk = os.read(0, 65536)
        if not chunk:
            os._exit(0)
        buf += chunk
    head, buf = buf.split(b"\n", 1)
    size = int(head)
    while len(buf) < size:
        chunk = os.read(0, max(65536, size - len(buf)))
        if not chunk:
            os._exit(0)
        buf += chunk
    fields = buf[:size].split(b"\0")
    cwd, n = fields[0], int(fields[1])
    env, code = fields[2 : 2 + n], b"\0".join(fields[2 + n :])
    try:
        os.chdir(cwd)
    except OSError:
        os.write(0, b"n\n")  # a fresh process gives the exact error
        os._exit(0)
    for item in env:
        name, _, value = item.partition(b"=")
        os.environb[name] = value
    cpu0 = time.process_time_ns() // 1000
    os.write(0, b"g %d\n" % cpu0)
    # The channel moves out of the way (close-on-exec, high) for the end;
    # the program's stdin is /dev/null, as a fresh one's.
    try:
        chan = os.dup2(0, 255, inheritable=False)
    except OSError:
        chan = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    owner = os.getpid()

    g = sys.modules["__main__"].__dict__
    for key in list(g):
        if key not in ("__name__", "__doc__", "__package__", "__loader__", "__spec__",
                       "__annotations__", "__builtins__"):
            del g[key]
    source = code.decode("utf-8", "surrogateescape")
    del buf, fields, code
    try:
        exec(compile(source, "<string>", "exec"), g)
        status = 0
    except SystemExit as e:  # as python's handle_system_exit
        status = e.code
        if status is None:
            status = 0
        elif not isinstance(status, int):
            try:
                sys.stderr.write(str(status) + "\n")
            except BaseException:  # noqa: B902
                pass
            status = 1
    except BaseException as e:  # noqa: B902
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code is me:
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        status = -2 if isinstance(e, KeyboardInterrupt) else 1
        e = tb = None

    # The end of python's own exit, up to what a program can see: its
    # threads joined, atexit's functions, __main__'s objects released
    # (files flushed, __del__ run), stdout and stderr flushed.  The
    # interpreter is then left without tearing it down (4 ms of a 6 ms
    # call in the default image): objects held only by other modules or
    # in reference cycles are not finalized, as python never promises.
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:  # noqa: B902
            pass
    import atexit

    atexit._run_exitfuncs()
    g.clear()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:  # noqa: B902
            if status == 0 and stream in (sys.stdout, sys.__stdout__):
                status = 120  # as python when stdout cannot be flushed
    if status == -2:  # as python after a KeyboardInterrupt: dies of SIGINT
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    if os.getpid() == owner:  # not a child the program forked
        # Said before the kernel tears the process down (1-3 ms in a
        # sandbox), with its output closed first: "x STATUS CPU_US
        # HWM_BYTES" (its CPU time since it took the program, its
        # children's included; its peak resident memory).
        t = os.times()
        cpu = time.process_time_ns() // 1000 - cpu0 + int((t[2] + t[3]) * 1e6)
        hwm = 0
        try:
            with open("/proc/self/status", "rb") as f:
                for line in f:
                    if line.startswith(b"VmHWM:"):
                        hwm = int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        for fd in (1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.write(chan, b"x %d %d %d\n" % (status & 0xFF, cpu, hwm))
        except OSError:
            pass
    os._exit(status & 0xFF)


_z()
