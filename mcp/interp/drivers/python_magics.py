# nsbox's Python driver, notebook syntax: `!cmd`, `x = !cmd`, %line magics
# and %%cell magics (docs/interpreters.md, "Notebook syntax").  IPython is
# not needed: transform() rewrites each magic line into one call of the
# Shell object, which python.py puts in builtins as __nsbox__ (one line
# stays one line, so tracebacks keep the cell's line numbers).  Loaded by
# python.py from its own directory.  Standard library only.
import os
import re
import shlex
import subprocess
import sys
import threading
import time

MAGIC_LINE = re.compile(r"^([ \t]*)(?:([\w.\[\]\(\), \t'\"]+?)[ \t]*=[ \t]*)?(!|%)(.*)$")
HAS_MAGIC = re.compile(r"^[ \t]*(?:[\w.\[\]\(\), \t'\"]+?[ \t]*=[ \t]*)?[!%]", re.M)
ALIASES = {"ls": "ls -F", "ll": "ls -F -l", "cat": "cat", "cp": "cp", "mv": "mv", "rm": "rm",
           "mkdir": "mkdir", "rmdir": "rmdir"}


class UsageError(Exception):
    """A magic used wrongly (IPython's UsageError)."""


UsageError.__module__ = "builtins"  # its type reads `UsageError`


class SList(list):
    """`x = !cmd`: the output's lines, with IPython's .s .n .l views."""

    @property
    def s(self):
        return " ".join(self)

    @property
    def n(self):
        return "\n".join(self)

    @property
    def l(self):  # noqa: E743
        return list(self)


# ---- the rewrite -------------------------------------------------------

def line_starts(code):
    """For each line: True when a new statement can start there (not in a
    bracket, a string or after a backslash)."""
    starts, depth, quote, cont = [], 0, None, False
    for line in code.split("\n"):
        starts.append(depth == 0 and quote is None and not cont)
        cont = False
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if quote is not None:
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(quote, i):
                    i += len(quote)
                    quote = None
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "\"'":
                quote = c * 3 if line.startswith(c * 3, i) else c
                i += len(quote)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth = max(0, depth - 1)
            elif c == "\\" and i == n - 1:
                cont = True
            i += 1
        if quote is not None and len(quote) == 1:
            quote = None  # an unterminated one-line string: Python's error
    return starts


def transform(code):
    """code with each magic line made a call of __nsbox__; returns (code,
    cell magic or None) where a cell magic is (name, args, body, pad): pad
    is the line number of the magic (the body's lines are numbered from
    pad + 1 in tracebacks)."""
    first = code.lstrip("\n")
    if first.startswith("%%"):
        head, _, body = first.partition("\n")
        name, _, args = head[2:].partition(" ")
        pad = len(code) - len(first) + 1  # the lines above the body
        return code, (name.strip(), args.strip(), body, pad)
    if not HAS_MAGIC.search(code):
        return code, None
    lines = code.split("\n")
    for i, start in enumerate(line_starts(code)):
        if start:
            lines[i] = rewrite_line(lines[i])
    return "\n".join(lines), None


def rewrite_line(line):
    m = MAGIC_LINE.match(line)
    if m is None:
        return line
    indent, target, kind, rest = m.groups()
    if kind == "%" and rest.startswith("%"):
        call = "__nsbox__.line_magic(%r, %r)" % ("%" + rest[1:].split(" ")[0], "")
    elif kind == "!":
        call = "__nsbox__.%s(%r)" % ("getoutput" if target else "system", rest)
    else:
        name, _, args = rest.partition(" ")
        call = "__nsbox__.line_magic(%r, %r)" % (name, args.strip())
    if target and not valid_target(target):
        return line
    return indent + (target + " = " if target else "") + call


def valid_target(target):
    try:
        compile(target + " = None", "<target>", "exec")
        return True
    except SyntaxError:
        return False


# ---- the shell ---------------------------------------------------------

def format_time(seconds):
    """IPython's: 1.23 s, 456 ms, 7.8 µs, 90 ns."""
    if seconds >= 60:
        m, s = divmod(seconds, 60)
        return "%dmin %.0f s" % (m, s) if seconds < 3600 else "%dh %dmin %.0f s" % (m // 60, m % 60, s)
    for unit, scale in (("s", 1.0), ("ms", 1e3), ("\u00b5s", 1e6), ("ns", 1e9)):
        if seconds >= 1.0 / scale or unit == "ns":
            return "%.3g %s" % (seconds * scale, unit)
    return "0 ns"


class Shell:
    """What the rewritten lines call.  host: the driver's side (python.py's
    Host): ns, the original stdout/stderr, run_code(code, filename) and
    display_bundle(bundle)."""

    def __init__(self, host):
        self.host = host
        self.old_dir = None

    # ---- shell commands ----
    def expand(self, cmd, depth=2):
        """IPython's expansion in a command: {expr} and $name from the
        caller's namespace ($$ is a $); what fails to expand stays."""
        frame = sys._getframe(depth)
        glo, loc = frame.f_globals, frame.f_locals

        def brace(m):
            if m.group(0) in ("{{", "}}"):
                return m.group(0)[0]
            try:
                return str(eval(m.group(1), glo, loc))
            except Exception:
                return m.group(0)

        def dollar(m):
            if m.group(0) == "$$":
                return "$"
            name = m.group(1)
            if name in loc:
                return str(loc[name])
            if name in glo:
                return str(glo[name])
            return m.group(0)

        cmd = re.sub(r"\{\{|\}\}|\{([^{}]+)\}", brace, cmd)
        return re.sub(r"\$\$|\$([A-Za-z_]\w*)", dollar, cmd)

    def system(self, cmd, depth=1, argv=None):
        """Runs cmd with /bin/sh (or argv), its output streamed into the
        cell's; sets _exit_code.  The child inherits fds 1 and 2 unless the
        cell redirected sys.stdout/sys.stderr (then it is copied there)."""
        if argv is None:
            argv = ["/bin/sh", "-c", self.expand(cmd, depth + 1)]
        out, err = sys.stdout, sys.stderr
        for s in (out, err):
            try:
                s.flush()
            except Exception:
                pass
        direct = out is self.host.stdout and err is self.host.stderr
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    stdout=None if direct else subprocess.PIPE,
                                    stderr=None if direct else subprocess.PIPE)
        except OSError as exc:
            raise UsageError("%s: %s" % (argv[0], exc.strerror))
        copiers = [] if direct else [copier(proc.stdout, out), copier(proc.stderr, err)]
        try:
            code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            for t in copiers:
                # A background child (`!cmd &`) may keep the pipe open: its
                # later output is still copied, without holding the cell.
                t.join(1.0)
        self.host.ns["_exit_code"] = code
        return None

    def getoutput(self, cmd):
        """`x = !cmd`: stdout and stderr together, as a list of lines."""
        cmd = self.expand(cmd, 2)
        proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            data, _ = proc.communicate()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        self.host.ns["_exit_code"] = proc.returncode
        return SList(data.decode("utf-8", "replace").splitlines())

    # ---- line magics ----
    def line_magic(self, name, args):
        if name in ALIASES:
            return self.system(ALIASES[name] + (" " + args if args else ""), 2)
        fn = getattr(self, "m_" + name, None) if re.match(r"^\w+$", name) else None
        if fn is None:
            raise UsageError("Line magic function `%%%s` not found." % name)
        return fn(args)

    def m_pip(self, args):
        self.system(None, argv=[sys.executable, "-m", "pip"] + shlex.split(args))
        import importlib

        importlib.invalidate_caches()
        print("Note: you may need to restart the kernel to use updated packages.")

    def m_cd(self, args):
        arg = args.strip().strip("'\"")
        target = os.path.expanduser(arg or "~")
        if arg == "-":
            if self.old_dir is None:
                raise UsageError("cd -: no previous directory")
            target = self.old_dir
        before = os.getcwd()
        try:
            os.chdir(target)
        except OSError as exc:
            raise UsageError("cd: %s: %s" % (target, exc.strerror))
        self.old_dir = before
        print(os.getcwd())

    def m_pwd(self, args):
        return os.getcwd()

    def m_env(self, args):
        args = args.strip()
        if not args:
            return dict(os.environ)
        if "=" in args or " " in args:
            sep = "=" if "=" in args and ("=" in args.split(" ")[0]) else " "
            name, _, value = args.partition(sep)
            name, value = name.strip(), value.strip()
            if not name:
                raise UsageError("%env: a name is needed")
            os.environ[name] = value
            print("env: %s=%s" % (name, value))
            return None
        if args not in os.environ:
            raise UsageError("Environment does not have key: %s" % args)
        return os.environ[args]

    def m_matplotlib(self, args):
        return None  # figures are always collected after the cell

    def m_who(self, args):
        wanted = args.split()
        names = sorted(k for k, v in self.host.ns.items() if self.host.is_user_name(k)
                       and (not wanted or type(v).__name__ in wanted))
        print("\t".join(names) if names else "Interactive namespace is empty.")

    def m_reset(self, args):
        if "-f" not in args.split():
            raise UsageError("%reset asks for confirmation, which cannot be given here: use %reset -f")
        self.host.reset_namespace()

    def m_time(self, args):
        before, wall = os.times(), time.perf_counter()
        try:
            return self.host.run_code(args, "<timed>")
        finally:
            self.print_times(before, wall)

    def print_times(self, before, wall):
        after = os.times()
        user, sys_ = after[0] - before[0], after[1] - before[1]
        print("CPU times: user %s, sys: %s, total: %s" % (format_time(user), format_time(sys_),
                                                         format_time(user + sys_)))
        print("Wall time: %s" % format_time(time.perf_counter() - wall))

    def m_timeit(self, args):
        import timeit

        opts, stmt = timeit_options(args)
        timer = timeit.Timer(stmt, globals=self.host.ns)
        number, t = opts.get("n"), 0.0
        if number is None:  # as timeit's autorange, at most ~0.2 s per run
            number = 1
            while True:
                t = timer.timeit(number)
                if t >= 0.2 or number >= 10 ** 9:
                    break
                number *= 10
        # Short: a slow statement is not run 7 more times.
        repeat = opts.get("r", 7 if t < 0.5 else 3 if t < 2 else 1)
        runs = [t / number for t in timer.repeat(repeat, number)]
        mean = sum(runs) / len(runs)
        dev = (sum((x - mean) ** 2 for x in runs) / len(runs)) ** 0.5
        print("%s \u00b1 %s per loop (mean \u00b1 std. dev. of %d run%s, %d loop%s each)" % (
            format_time(mean), format_time(dev), repeat, "" if repeat == 1 else "s", number,
            "" if number == 1 else "s"))

    # ---- cell magics ----
    def cell_magic(self, name, args, body, pad=0):
        """Runs a %%name cell; returns the value of its last expression
        (%%time) or None."""
        fn = getattr(self, "c_" + name, None) if re.match(r"^\w+$", name) else None
        if fn is None:
            raise UsageError("Cell magic `%%%%%s` not found." % name)
        self.pad = pad
        return fn(args, body)

    def python_body(self, body):
        """body as Python with its lines numbered as in the cell."""
        return "\n" * getattr(self, "pad", 0) + body

    def c_bash(self, args, body):
        self.system(None, argv=["bash", "-c", body] + shlex.split(args))

    def c_sh(self, args, body):
        self.system(None, argv=["/bin/sh", "-c", body] + shlex.split(args))

    def c_writefile(self, args, body):
        words = shlex.split(args)
        append = bool(words) and words[0] in ("-a", "--append")
        if append:
            words = words[1:]
        if len(words) != 1:
            raise UsageError("%%writefile [-a] PATH")
        path = os.path.expanduser(words[0])
        exists = os.path.exists(path)
        with open(path, "a" if append else "w") as f:
            f.write(body)
        print("%s %s" % ("Appending to" if append else ("Overwriting" if exists else "Writing"), words[0]))

    def c_time(self, args, body):
        before, wall = os.times(), time.perf_counter()
        try:
            return self.host.run_code(self.python_body(body), self.host.filename)
        finally:
            self.print_times(before, wall)

    def c_capture(self, args, body):
        import io

        words = args.split()
        name = next((w for w in words if not w.startswith("-")), None)
        out, err = io.StringIO(), io.StringIO()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        shown = self.host.start_capture()
        try:
            self.host.run_code(self.python_body(body), self.host.filename)
        finally:
            sys.stdout, sys.stderr = saved
            outputs = self.host.end_capture(shown)
        if name:
            self.host.ns[name] = Captured(out.getvalue(), err.getvalue(), outputs)

    def _display_cell(key):
        def show(self, args, body):
            self.host.display_bundle({key: body})
        return show

    c_html = _display_cell("html")
    c_markdown = _display_cell("markdown")
    c_javascript = _display_cell("javascript")
    c_js = c_javascript
    c_latex = _display_cell("latex")
    c_svg = _display_cell("svg")


class Captured:
    """%%capture NAME: the cell's stdout, stderr and display bundles."""

    def __init__(self, stdout, stderr, outputs):
        self.stdout, self.stderr, self.outputs = stdout, stderr, outputs

    def __repr__(self):
        return "<Captured: %d bytes of stdout, %d of stderr, %d outputs>" % (
            len(self.stdout), len(self.stderr), len(self.outputs))

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)


def timeit_options(args):
    opts, words = {}, args.split(" ")
    while words and words[0] in ("-n", "-r") and len(words) > 1:
        try:
            opts[words[0][1]] = max(1, int(words[1]))
        except ValueError:
            raise UsageError("%%timeit: %s needs a number" % words[0])
        words = words[2:]
    stmt = " ".join(words).strip()
    if not stmt:
        raise UsageError("%timeit STATEMENT")
    return opts, stmt


def copier(src, dst):
    def run():
        fd = src.fileno()
        while True:
            data = os.read(fd, 65536)
            if not data:
                break
            try:
                dst.write(data.decode("utf-8", "replace"))
                dst.flush()
            except Exception:
                pass
        src.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
