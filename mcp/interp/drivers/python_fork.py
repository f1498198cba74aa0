# nsbox's Python driver, context_fork (docs/context-fork.md): the
# interpreter forks itself on the host's `fork` request.  Loaded by
# python.py on the first fork only; python.py gives it send_line,
# flush_output and Channel (its channel class) before each use, and clean
# as to every helper.  The fork's channel and output pipes come with the
# request (SCM_RIGHTS); everything the fork says goes to the host, which
# checks it (mcp/interp/fork.c).
import os
import sys


def fork_context(msg, ch):
    """context_fork (docs/context-fork.md): a copy-on-write fork of this
    interpreter, serving the channel and output pipes that came with the
    request.  A double fork, so that the sandbox's init parents the fork
    (and the host can take it on as a process of its own: its exit,
    signals and kill).  In the parent, answers `forked` (or its error) and
    returns None; in the fork, returns its new Channel."""
    fds, rid = ch.take_fds(), msg.get("id")

    def refuse(why):
        for fd in fds:
            os.close(fd)
        send_line(ch.fd, {"op": "forked", "id": rid, "error": why})

    if len(fds) != 3 or not isinstance(rid, int):
        return refuse("fork: the request brings no channel")
    flush_output()  # else the fork would write the parent's buffered output again
    # random reseeds itself in every fork (os.register_at_fork): kept to be
    # put back when the fork is to draw the same numbers (reseed false).
    rnd = sys.modules.get("random")
    try:
        saved = rnd.getstate() if rnd is not None else None
    except Exception:
        saved = None
    try:
        pid = os.fork()
    except OSError as exc:
        return refuse("cannot fork: %s" % exc.strerror)
    if pid == 0:  # the intermediate: ends at once, leaving the fork to init
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError as exc:
            os._exit(exc.errno & 0x7F or 1)
        except BaseException:
            os._exit(1)
        return become_fork(fds, ch, msg.get("reseed") is True, saved)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
    if code != 0:
        return refuse("cannot fork: %s" % os.strerror(code))
    send_line(ch.fd, {"op": "forked", "id": rid})
    return None


def become_fork(fds, ch, reseed, saved):
    """In the fork: a session and process group of its own (the host's
    signals and kills take this one, not the parent), the new output pipes
    on fd 1 and 2, the new channel instead of the parent's (closed here:
    the host sees the parent's EOF when the parent dies), random and
    numpy.random reseeded if asked, else random's state put back to the
    parent's (saved); says ready with its pid and working directory."""
    chan, out, err = fds
    try:
        os.setsid()
    except OSError as exc:
        send_line(chan, {"op": "ready", "error": "the fork cannot have a process group of its own: %s" % exc})
        os._exit(1)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(out)
    os.close(err)
    ch.close()
    reseeded = []
    if reseed:
        for name in ("random", "numpy.random"):
            mod = sys.modules.get(name)
            try:
                mod.seed()  # from os.urandom: fresh in each process
                reseeded.append(name)
            except Exception:
                pass
    elif saved is not None:
        try:
            sys.modules["random"].setstate(saved)
        except Exception:
            pass
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    v = sys.version_info
    send_line(chan, {"op": "ready", "language": "python", "version": "%d.%d.%d" % (v[0], v[1], v[2]),
                     "pid": os.getpid(), "cwd": cwd, "reseeded": reseeded})
    return Channel(chan)
