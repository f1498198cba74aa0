# nsbox's Python driver: a persistent interpreter for execute_code in a kept
# sandbox.  Started as `python3 /.nsbox/drivers/python.py` with fd 0 = the
# driver channel (a stream socket), fd 1/2 = the code's output pipes.
# docs/interpreters.md is the contract.  Standard library only, Python >= 3.7.
# Its helpers sit beside it and are loaded by path, lazily (never through
# sys.path, which stays the user's): python_rich.py (display bundles),
# python_charts.py (matplotlib figures), python_magics.py (!cmd, %magics),
# python_fork.py (context_fork).
#
# The cell runs in this very process and can clobber anything it reaches
# (sys.stdout, signal handlers, globals of __main__), so everything the driver
# needs lives in main()'s locals and closures, never in the user namespace;
# only display() (in the namespace) and __nsbox__ (in builtins, what magic
# lines call) are put where the code sees them: replacing them loses only
# those.
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
RESULTS_BUDGET = 12 << 20  # all bundles of one `done` (a line is capped at 16 MiB)
DRIVER_DIR = os.path.dirname(os.path.abspath(__file__))
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
    data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
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
    """Prints exc's traceback to stderr; returns its text."""
    # Without the driver's own frames (its SIGINT handler is the last frame
    # of an interrupt) and the event loop's above the cell: the traceback
    # starts at the cell, as the interpreter would print it.
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if os.path.dirname(os.path.abspath(name)) != DRIVER_DIR and (kept or "asyncio" not in name):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:] + [None]):
        a.tb_next = b  # writable since Python 3.7
    try:
        text = "".join(traceback.format_exception(type(exc), exc, kept[0] if kept else None))
    except Exception:
        text = "%s: %s\n" % (error_type(exc), str_of(exc))
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass
    return text


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


def silence_show():
    # plt.show() on Agg only warns that it cannot show anything; the figures
    # are collected after the cell instead.
    import warnings

    warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
    warnings.filterwarnings("ignore", message=".*non-GUI backend.*")



def load_helper(name):
    """A helper module beside this file, by its absolute path: sys.path is
    the user's, and a module of theirs named like ours must win there."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_nsbox_" + name, os.path.join(DRIVER_DIR, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    mod.clean = clean  # one text cleaner for the driver and its helpers
    spec.loader.exec_module(mod)
    return mod


class ImportHook:
    """A meta path finder that only watches for the modules named in hooks
    (name -> function) being imported, to call hooks[name](module) once
    the real loader has run it: pyplot's show() displays the open figures
    (the Agg backend's show() does nothing), PIL's show() and save()
    display the image, IPython's display() is the driver's.  The driver
    itself never imports those modules."""

    def __init__(self, hooks):
        self.hooks = hooks

    def find_spec(self, name, path, target=None):
        if name not in self.hooks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                real, on_import = spec.loader, self.hooks[name]

                class Loader:  # the real loader, then the hook
                    def __getattr__(self, attr):
                        return getattr(real, attr)

                    def create_module(self, s):
                        return real.create_module(s)

                    def exec_module(self, module):
                        real.exec_module(module)
                        try:
                            on_import(module)
                        except Exception:
                            pass

                spec.loader = Loader()
                return spec
            if spec is not None:
                return spec
        return None


class IPythonStandIn:
    """A meta path finder, the last of sys.meta_path, that answers for
    IPython, IPython.display, IPython.core and IPython.core.display only
    when no other finder can (the image has no IPython): a stand-in made by
    python_ipython.py whose display() is the driver's.  A real IPython is
    never shadowed (or imported by the driver)."""

    NAMES = ("IPython", "IPython.display", "IPython.core", "IPython.core.display")

    def __init__(self, host):
        self.host, self.asking = host, False

    def find_spec(self, name, path, target=None):
        if name not in self.NAMES or self.asking:
            return None
        if name != "IPython" and not getattr(sys.modules.get("IPython"), "__nsbox_stand_in__", False):
            return None  # a real IPython's submodule: not ours to answer
        self.asking = True  # the other finders may ask this one again
        try:
            for finder in sys.meta_path:
                if finder is not self and hasattr(finder, "find_spec") and finder.find_spec(name, path, target):
                    return None
        finally:
            self.asking = False
        import importlib.util

        return importlib.util.spec_from_loader(name, self, is_package=name in ("IPython", "IPython.core"))

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self.host.helper("python_ipython").fill(module, self.host.display_fn)


class Host:
    """The driver's side of a cell, as python_magics.Shell and display()
    see it: the namespace, the cell's display bundles, the figures."""

    def __init__(self, ns, loop, home):
        self.ns, self.loop, self.home = ns, loop, home
        self.stdout, self.stderr = sys.stdout, sys.stderr
        self.helpers = {}
        self.cell, self.filename = 0, None
        self.results, self.figures, self.captures = [], [], []
        self.budget = RESULTS_BUDGET
        self.initial = dict(ns)
        self.hidden = set()

    def helper(self, name):
        mod = self.helpers.get(name)
        if mod is None:
            mod = self.helpers[name] = load_helper(name)
            if name == "python_magics":
                builtins.__nsbox__ = mod.Shell(self)
        return mod

    def install_display(self):
        host = self

        def display(*objs, raw=False, include=None, exclude=None, **kwargs):
            """Shows each object as a rich output of the cell (IPython's
            display): HTML, images, DataFrames, figures, ... raw=True: each
            object is a dict of MIME type -> data."""
            for obj in objs:
                host.display_object(obj, raw)

        self.display_fn = display
        self.ns["display"] = display
        self.hidden.add("display")

    def is_user_name(self, name):
        return not name.startswith("_") and name not in self.hidden and name not in self.initial

    def reset_namespace(self):
        self.ns.clear()
        self.ns.update(self.initial)
        self.install_display()

    def start_cell(self, cell):
        self.cell, self.filename = cell, "<cell-%d>" % cell
        self.results, self.figures, self.captures = [], [], []
        self.budget = RESULTS_BUDGET

    # ---- code ----
    def run_code(self, code, filename):
        """Runs code (notebook syntax too) in the namespace; returns the
        value of its last expression."""
        magic = None
        if "%" in code or "!" in code:
            code, magic = self.helper("python_magics").transform(code)
        if magic is not None:
            return builtins.__nsbox__.cell_magic(*magic)
        body, last = compile_cell(code, filename)
        evaluate(body, self.ns, self.loop)
        return evaluate(last, self.ns, self.loop) if last is not None else None

    # ---- display ----
    def bundle_of(self, obj):
        figure = self.figure_bundle if "matplotlib.figure" in sys.modules else None
        return self.helper("python_rich").bundle_of(obj, figure)

    def display_object(self, obj, raw=False):
        rich = self.helper("python_rich")
        self.display_bundle(rich.raw_bundle(obj) if raw else self.bundle_of(obj))

    def display_bundle(self, bundle):
        """bundle becomes one of the cell's results (or a capture's)."""
        if self.captures:
            self.captures[-1].append(bundle)
            return
        rich = self.helper("python_rich")
        if isinstance(bundle.get("text"), str):
            bundle = dict(bundle, text=rich.e2b_text(bundle["text"]))
        safe, size = rich.capped(bundle, self.budget)
        self.budget = max(0, self.budget - size)
        self.results.append(safe)

    def start_capture(self):
        self.captures.append([])

    def end_capture(self, _):
        return self.captures.pop()

    # ---- figures ----
    def figure_bundle(self, fig):
        """fig's bundle; fig is also saved as figure-CELL-N.png in the
        starting directory (listed in `figures`) and closed if pyplot
        holds it."""
        bundle, png = self.helper("python_charts").figure_bundle(fig)
        path = os.path.join(self.home, "figure-%d-%d.png" % (self.cell, len(self.figures) + 1))
        try:
            with open(path, "wb") as f:
                f.write(png)
            self.figures.append({"path": path})
        except OSError:
            pass
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            try:
                plt.close(fig)
            except Exception:
                pass
        return bundle

    def flush_figures(self):
        """Every open pyplot figure becomes a display bundle, then closed."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        try:
            nums = list(plt.get_fignums())
        except Exception:
            return
        for num in nums:
            try:
                fig = plt.figure(num)
                bundle = self.figure_bundle(fig)
            except Exception as exc:
                print_traceback(exc)
                continue
            finally:  # even when interrupted: shown once, never again
                try:
                    plt.close(num)
                except Exception:
                    pass
            self.display_bundle(bundle)

    def hook_pyplot(self, plt):
        host, real = self, getattr(plt, "show", None)

        def show(*args, **kwargs):
            """Displays every open figure now (nsbox: the backend is Agg)."""
            host.flush_figures()

        show.__wrapped__ = real
        plt.show = show

    def hook_pil(self, module):
        """PIL's Image.show() displays the image (no viewer is started);
        Image.save(path) saves it, then displays it (E2B does both): a
        save to a file object (as the driver's own png) does not."""
        cls, host = getattr(module, "Image", None), self
        if not isinstance(cls, type) or not callable(getattr(cls, "save", None)):
            return
        if getattr(cls.save, "__wrapped__", None) is not None:
            return  # hooked already
        real_save = cls.save

        def show(image, title=None, **options):
            """Displays the image as a png result (nsbox)."""
            host.display_object(image)

        def save(image, fp, format=None, **params):
            real_save(image, fp, format, **params)
            if isinstance(fp, (str, os.PathLike)):
                host.display_object(image)

        show.__wrapped__, save.__wrapped__ = getattr(cls, "show", None), real_save
        cls.show, cls.save = show, save

    def hook_ipython(self, module):
        """A real IPython's display() is the driver's (without a kernel it
        would only print)."""
        # Only a display of its own (IPython 8's IPython.core.display lends
        # display_functions' through a __getattr__ that warns).
        if callable(module.__dict__.get("display")):
            module.display = self.display_fn


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
    host = Host(ns, [None], os.getcwd())
    host.install_display()
    sys.meta_path.insert(0, ImportHook({
        "matplotlib.pyplot": host.hook_pyplot,
        "PIL.Image": host.hook_pil,
        "IPython.core.display_functions": host.hook_ipython,  # IPython >= 7.23
        "IPython.core.display": host.hook_ipython,
    }))
    sys.meta_path.append(IPythonStandIn(host))

    def on_sigint(signum, frame):
        # Only a cell is interrupted; a SIGINT that arrives between cells
        # (the host's timeout racing `done`) is dropped.
        if running[0]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    v = sys.version_info
    send_line(chan, {"op": "ready", "language": "python", "version": "%d.%d.%d" % (v[0], v[1], v[2])})

    while chan is not None:
        chan = serve(chan, host, running)
    flush_output()


def serve(chan, host, running):
    """Runs the cells that come on chan until its EOF (returns None), or, in
    a fork that a `fork` made (python_fork.py), returns the fork's own
    channel to serve."""
    owner = os.getpid()
    for line in read_lines(chan):
        try:
            msg = json.loads(line.decode("utf-8"))
        except ValueError:
            continue
        op = msg.get("op") if isinstance(msg, dict) else None
        if op == "fork":
            fork = host.helper("python_fork")
            fork.send_line, fork.flush_output = send_line, flush_output
            child = fork.fork_context(msg, chan)
            if child is not None:
                return child  # this is the fork: its channel from here on
            continue
        if op != "run":
            continue
        cell = host.cell + 1
        # Taken: from here the cell may run (the host retries a cell on a
        # new interpreter only when this one died before saying so).
        send_line(chan, {"op": "got", "id": msg.get("id")})
        done = run_cell(msg.get("code"), msg.get("env"), cell, host, running, owner)
        done["id"] = msg.get("id")
        send_done(chan, done)
    return None


def send_done(chan, done):
    """Sends done; should anything in it not be JSON the host takes (or the
    line be too long), it goes without its results."""
    try:
        data = json.dumps(done, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        if len(data) > 15 << 20:
            raise ValueError("done: %d bytes" % len(data))
    except (TypeError, ValueError) as exc:
        done["results"] = [{"extra": {"nsbox/dropped": clean("results: %s" % str_of(exc), 1024)}}]
        send_line(chan, done)
        return
    view = memoryview(data + b"\n")
    while view:
        view = view[os.write(chan, view) :]


def dedent(code):
    """A cell indented as a whole, dedented (a blank first line aside); a
    cell that starts at column 0 is left as it is (textwrap.dedent would
    empty whitespace-only lines, also inside strings)."""
    first = next((line for line in code.split("\n") if line.strip()), "")
    if first[:1] not in (" ", "\t"):
        return code
    import textwrap

    return textwrap.dedent(code)


def check_env(env):
    """env of a `run`: None or an object of NAME -> VALUE strings."""
    if env is None:
        return {}
    ok = isinstance(env, dict) and all(
        isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
        for k, v in env.items())
    if not ok:
        raise TypeError("run: env must be an object of NAME -> VALUE strings")
    return env


def set_env(env):
    """Sets env in os.environ; returns what to restore."""
    saved = {}
    for k, v in env.items():
        saved[k] = os.environ.get(k)
        os.environ[k] = v
    return saved


def restore_env(saved):
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def run_cell(code, env, cell, host, running, owner):
    """Runs one cell; returns the `done` message (without id).  SystemExit
    propagates: the interpreter ends.  A process the cell forked (os.fork)
    that comes to the end of the cell ends there (owner: the driver's
    pid).  env is set for the cell only and restored after."""
    done = {"op": "done", "status": "ok", "result": None, "error": None, "interrupted": False,
            "figures": [], "execution_count": cell, "results": []}
    host.start_cell(cell)
    filename = host.filename
    main = None
    saved = {}
    try:
        if not isinstance(code, str):
            raise TypeError("run: code must be a string")
        saved = set_env(check_env(env))
        code = dedent(code)
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None and getattr(plt.show, "__wrapped__", None) is None:
            host.hook_pyplot(plt)  # imported before the hook was there
        if "PIL.Image" in sys.modules:
            host.hook_pil(sys.modules["PIL.Image"])
        running[0] = True
        try:
            value = host.run_code(code, filename)
            # A slow repr (or figure) can be interrupted too.
            main = host.bundle_of(value) if value is not None else None
        finally:
            running[0] = False
        if main is not None:
            main["is_main_result"] = True
            done["result"] = clean(main.get("text") or "", RESULT_CAP)
    except SystemExit:
        flush_output()
        raise
    except BaseException as exc:  # KeyboardInterrupt too: the state is kept
        running[0] = False
        set_error(done, exc)
    finally:
        restore_env(saved)
    if os.getpid() != owner:
        # A child of os.fork in the cell, as a script's child would at the
        # end of the script: back in the driver's loop it would send a
        # second `done` and read (steal) the next cells from the channel
        # it shares with the driver.
        flush_output()
        os._exit(1 if done["status"] == "error" else 0)
    host.captures = []
    try:
        running[0] = True  # rendering a big figure can be interrupted
        try:
            host.flush_figures()
        finally:
            running[0] = False
    except KeyboardInterrupt as exc:
        if done["error"] is None:
            set_error(done, exc)
    if main is not None:
        host.display_bundle(main)
    done["figures"] = host.figures
    done["results"] = host.results
    flush_output()
    return done


def set_error(done, exc):
    """done made the answer to a cell that raised exc (its traceback goes to
    stderr, and its text into done)."""
    flush_output()
    text = print_traceback(exc)
    done["status"] = "error"
    done["interrupted"] = isinstance(exc, KeyboardInterrupt)
    etype, evalue = clean(error_type(exc), 1024), clean(str_of(exc), MESSAGE_CAP)
    done["error"] = {"type": etype, "message": evalue, "name": etype, "value": evalue,
                     "traceback": clean(text, MESSAGE_CAP)}


def str_of(exc):
    try:
        return str(exc)
    except Exception:
        return "<unprintable %s>" % type(exc).__name__


if __name__ == "__main__":
    main()
