# nsbox's Python driver, context_fork (docs/context-fork.md): the
# interpreter forks itself on the host's `fork` request.  Loaded by
# python.py on the first fork only; python.py gives it send_line and
# flush_output before each use, and clean as to every helper.  The fork's
# channel and output pipes come after the request: the driver answers
# `fork_fds`, the host sends one byte with the three fds (SCM_RIGHTS),
# taken here with recvmsg (the socket module is imported on the first fork
# only: python.py reads its channel with os.read, and every interpreter's
# start would pay for it).  Everything the fork says goes to the host,
# which checks it (mcp/interp/fork.c).
import os
import sys


def take_fds(chan):
    """The three fds the host sends after `fork_fds` (one byte with them),
    close-on-exec; [] when anything else came (all of it closed)."""
    import array
    import socket

    sock = socket.socket(fileno=chan)
    try:
        data, anc, _, _ = sock.recvmsg(1, socket.CMSG_SPACE(4 * 3), getattr(socket, "MSG_CMSG_CLOEXEC", 0))
    finally:
        sock.detach()  # the fd stays the driver's channel
    fds = array.array("i")
    for level, kind, cdata in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(cdata[: len(cdata) - len(cdata) % fds.itemsize])
    if len(data) == 1 and len(fds) == 3:
        return list(fds)
    for fd in fds:
        os.close(fd)
    return []


def fork_context(msg, chan):
    """context_fork (docs/context-fork.md): a copy-on-write fork of this
    interpreter, serving the channel and output pipes that came with the
    request.  A double fork, so that the sandbox's init parents the fork
    (and the host can take it on as a process of its own: its exit,
    signals and kill).  In the parent, answers `forked` (or its error) and
    returns None; in the fork, returns its new channel's fd."""
    rid = msg.get("id")
    if not isinstance(rid, int):
        return None
    send_line(chan, {"op": "fork_fds", "id": rid})
    fds = take_fds(chan)

    def refuse(why):
        for fd in fds:
            os.close(fd)
        send_line(chan, {"op": "forked", "id": rid, "error": why})

    if len(fds) != 3:
        return refuse("fork: the host sent no channel")
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
        return become_fork(fds, chan, msg.get("reseed") is True, saved)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
    if code != 0:
        return refuse("cannot fork: %s" % os.strerror(code))
    send_line(chan, {"op": "forked", "id": rid})
    return None


def become_fork(fds, parent_chan, reseed, saved):
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
    os.close(parent_chan)
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
    return chan
