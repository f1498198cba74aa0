# nsbox's Python driver: a persistent interpreter for execute_code in a kept
# sandbox.  Started as `python3 /.nsbox/drivers/python.py` with fd 0 = the
# driver channel (a stream socket), fd 1/2 = the code's output pipes.
# docs/interpreters.md is the contract.  Standard library only, Python >= 3.7.
#
# The cell runs in this very process and can clobber anything it reaches
# (sys.stdout, signal handlers, globals of __main__), so everything the driver
# needs lives in main()'s locals and closures, never in the user namespace.
import os

# Before anything can import matplotlib: a headless backend, inherited by
# the code's subprocesses too.
os.environ["MPLBACKEND"] = "Agg"

import ast  # noqa: E402
import builtins  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

RESULT_CAP = 64 * 1024
MESSAGE_CAP = 64 * 1024
DRIVER_FILES = (__file__, os.path.abspath(__file__))
# `await` at the top of a cell, as in IPython (Python >= 3.8).
TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
CO_COROUTINE = 0x80


def clean(text, cap):
    """text as valid UTF-8 without NUL (the host's JSON parser is strict),
    at most cap bytes, with a marker when cut."""
    data = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace")
    if len(data) <= cap:
        return data.decode("utf-8")
    marker = "\n... [truncated: %d bytes in all]" % len(data)
    return data[: cap - len(marker)].decode("utf-8", "ignore") + marker


def writable_dir(path):
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        return os.access(path, os.W_OK | os.X_OK)
    except OSError:
        return False


def setup_mplconfigdir():
    # matplotlib writes its font cache there; a read-only home would make it
    # warn on every import and rebuild the cache each time.
    wanted = os.environ.get("MPLCONFIGDIR")
    if wanted is None:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        if writable_dir(os.path.join(xdg, "matplotlib")):
            return
    elif writable_dir(wanted):
        return
    import tempfile

    stable = os.path.join(tempfile.gettempdir(), "nsbox-mpl-%d" % os.getuid())
    if writable_dir(stable) and os.stat(stable).st_uid == os.getuid():
        os.environ["MPLCONFIGDIR"] = stable
    else:
        os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="nsbox-mpl-")


def take_channel():
    """Moves the channel off fd 0 to a private close-on-exec fd and puts
    /dev/null on fd 0, so input() and the code's subprocesses see EOF."""
    chan = os.dup(0)  # non-inheritable (PEP 446)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    return chan


def send_line(chan, msg):
    data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    view = memoryview(data)
    while view:
        view = view[os.write(chan, view) :]


def read_lines(chan):
    """Yields each complete line from the channel; returns at EOF."""
    pending = b""
    while True:
        try:
            chunk = os.read(chan, 1 << 16)
        except KeyboardInterrupt:  # only if the code replaced our handler
            continue
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line


def flush_output():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def error_type(exc):
    cls = type(exc)
    mod = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if mod in (None, "builtins", "__main__") else "%s.%s" % (mod, name)


def print_traceback(exc):
    # Without the driver's own frames (its SIGINT handler is the last frame
    # of an interrupt) and the event loop's above the cell: the traceback
    # starts at the cell, as the interpreter would print it.
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name not in DRIVER_FILES and (kept or "asyncio" not in name):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:] + [None]):
        a.tb_next = b  # writable since Python 3.7
    try:
        traceback.print_exception(type(exc), exc, kept[0] if kept else None)
    except Exception:
        pass


def compile_cell(code, filename):
    """(statements, last expression or None) compiled from one cell."""
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(ast.Module(body=tree.body, type_ignores=[]), filename, "exec", TOP_LEVEL_AWAIT, True)
    return body, (compile(last, filename, "eval", TOP_LEVEL_AWAIT, True) if last is not None else None)


def evaluate(code, ns, loop):
    """Runs a compiled cell part; one with a top-level await runs on the
    driver's event loop (loop: a one-item list, created on first use, kept
    so that objects bound to it survive between cells)."""
    if not code.co_flags & CO_COROUTINE:
        return eval(code, ns)
    import asyncio

    if loop[0] is None:
        loop[0] = asyncio.new_event_loop()
        asyncio.set_event_loop(loop[0])
    task = loop[0].create_task(eval(code, ns))
    try:
        return loop[0].run_until_complete(task)
    except BaseException:
        # Interrupted while the loop waited: the cell must not go on
        # running in the next cell that awaits.
        task.cancel()
        raise


def save_figures(cell, home):
    """Saves, then closes, every open matplotlib figure under home (the
    working directory the interpreter started in, whatever the cells
    chdir'd to: the host returns new images from there); returns FIG list,
    paths only (the host reads the files)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    figures = []
    try:
        nums = list(plt.get_fignums())
    except Exception:
        return []
    for n, num in enumerate(nums, 1):
        try:
            fig = plt.figure(num)
            path = os.path.join(home, "figure-%d-%d.png" % (cell, n))
            fig.savefig(path, format="png")
            plt.close(fig)
        except Exception as exc:
            print_traceback(exc)
            continue
        figures.append({"path": path})
    return figures


def silence_show():
    # plt.show() on Agg only warns that it cannot show anything; the figures
    # are collected after the cell instead.
    import warnings

    warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
    warnings.filterwarnings("ignore", message=".*non-GUI backend.*")


def main():
    setup_mplconfigdir()
    silence_show()
    chan = take_channel()
    # Like the REPL: imports resolve from the working directory, not from
    # the driver's directory.
    sys.path[0] = ""
    sys.argv[:] = [""]
    try:
        sys.stdout.reconfigure(line_buffering=True)  # progress while a cell runs
    except Exception:
        pass
    main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main_module  # pickle finds classes of the cells
    ns = main_module.__dict__
    running = [False]
    loop = [None]

    def on_sigint(signum, frame):
        # Only a cell is interrupted; a SIGINT that arrives between cells
        # (the host's timeout racing `done`) is dropped.
        if running[0]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    v = sys.version_info
    send_line(chan, {"op": "ready", "language": "python", "version": "%d.%d.%d" % (v[0], v[1], v[2])})

    home = os.getcwd()
    owner = os.getpid()
    cell = 0
    for line in read_lines(chan):
        try:
            msg = json.loads(line.decode("utf-8"))
        except ValueError:
            continue
        if not isinstance(msg, dict) or msg.get("op") != "run":
            continue
        cell += 1
        done = run_cell(msg.get("code"), cell, ns, running, loop, home, owner)
        done["id"] = msg.get("id")
        send_line(chan, done)
    flush_output()


def run_cell(code, cell, ns, running, loop, home, owner):
    """Runs one cell in ns; returns the `done` message (without id).
    SystemExit propagates: the interpreter ends.  A process the cell forked
    (os.fork) that comes to the end of the cell ends there (owner: the
    driver's pid)."""
    done = {"op": "done", "status": "ok", "result": None, "error": None, "interrupted": False, "figures": []}
    filename = "<cell-%d>" % cell
    try:
        if not isinstance(code, str):
            raise TypeError("run: code must be a string")
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        body, last = compile_cell(code, filename)
        running[0] = True
        try:
            evaluate(body, ns, loop)
            value = evaluate(last, ns, loop) if last is not None else None
        finally:
            running[0] = False
        if value is not None:
            done["result"] = clean(repr(value), RESULT_CAP)
    except SystemExit:
        flush_output()
        raise
    except BaseException as exc:  # KeyboardInterrupt too: the state is kept
        running[0] = False
        flush_output()
        print_traceback(exc)
        done["status"] = "error"
        done["interrupted"] = isinstance(exc, KeyboardInterrupt)
        done["error"] = {"type": clean(error_type(exc), 1024), "message": clean(str_of(exc), MESSAGE_CAP)}
    if os.getpid() != owner:
        # A child of os.fork in the cell, as a script's child would at the
        # end of the script: back in the driver's loop it would send a
        # second `done` and read (steal) the next cells from the channel
        # it shares with the driver.
        flush_output()
        os._exit(1 if done["status"] == "error" else 0)
    done["figures"] = save_figures(cell, home)
    flush_output()
    return done


def str_of(exc):
    try:
        return str(exc)
    except Exception:
        return "<unprintable %s>" % type(exc).__name__


if __name__ == "__main__":
    main()
