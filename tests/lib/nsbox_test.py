"""The Python tests' reporter, as tests/lib.sh's for the shell suites: each
test prints exactly one line,

    PASS: SUITE/name
    FAIL: SUITE/name: reason          (one line, cut at 600 characters)
    SKIP: SUITE/name: reason          (only where tests/skips.allow lists it)
    # a note

and tests/run.sh counts them against tests/suites.tsv.  SUITE comes from
the environment (the shell suite that runs the program sets it), else
from the program's own default; a program may add a prefix to its names
(sse_raw_, resources/...).  The suite's "# done SUITE" marker is the
shell suite's (tests/lib.sh: finish), never a client's: finish() here only
sets the exit status (1 when a FAIL was printed).

An uncaught exception (the harness's own code, an import, a setup step
outside any test) is `FAIL: SUITE/PREFIXharness: the exception (at
file:line in function)` and exit status 2, never a traceback that exits
1 and reads as "a test failed", nor a run that loses its remaining tests
in silence.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import nsbox_test as nt   # (nt: tests use t for their own values)

    nt.configure(default_suite="mcp_http", prefix="sse_raw_")   # optional
    nt.pass_("name"); nt.fail("name", why); nt.skip("name", why); nt.note(text)
    nt.result("name", ok, why)    # PASS when ok, else FAIL: why
    nt.report("name", why)        # PASS when why is None, else FAIL: why

    @nt.test("name")              # runs at once: returns None (PASS) or
    def _(): ...                  # a reason (FAIL); an exception is a FAIL

    nt.run("name", fn)            # PASS unless fn raises (nt.ok(cond, why)
                                  # raises nt.Check(why), the FAIL reason)
    nt.finish()

A program that reports under two prefixes makes a Reporter for each
(Reporter(prefix=...)); every reporter counts into the same failures()."""
import os
import sys
import threading
import traceback

WIDTH = 600
_failures = 0
_lock = threading.Lock()
_default = None


def one_line(text, width=WIDTH):
    """text on one line (runs of white space, newlines too, are one space),
    cut at width characters ("..." marks the cut)."""
    t = " ".join(str(text).split())
    return t if len(t) <= width else t[:width] + "..."


def _print(line, failed=False):
    global _failures
    with _lock:
        if failed:
            _failures += 1
        print(line, flush=True)


class Check(Exception):
    """A test's assertion that did not hold: its message is the FAIL reason."""


def ok(cond, why):
    """Raises Check(why) unless cond; why may be a callable (computed only
    when the check fails)."""
    if not cond:
        raise Check(why() if callable(why) else why)


class Reporter:
    """PASS/FAIL/SKIP lines named SUITE/PREFIXname.  suite: the suite's name
    (default: $SUITE, else default_suite); width: where a reason is cut."""

    def __init__(self, prefix="", suite=None, default_suite="test", width=WIDTH):
        self.suite = suite or os.environ.get("SUITE") or default_suite
        self.prefix = prefix
        self.width = width

    def name(self, name):
        return f"{self.suite}/{self.prefix}{name}"

    def pass_(self, name):
        _print(f"PASS: {self.name(name)}")

    def fail(self, name, why):
        _print(f"FAIL: {self.name(name)}: {one_line(why, self.width)}", failed=True)

    def skip(self, name, why):
        """A test that cannot run here: allowed only where tests/skips.allow
        lists SUITE/name (tests/run.sh fails it otherwise); never a PASS."""
        _print(f"SKIP: {self.name(name)}: {one_line(why, self.width)}")

    def note(self, text):
        """A `# ` line: text with its newlines folded (its spacing kept:
        notes align columns), never cut."""
        _print("# " + " ".join(str(text).splitlines()))

    def result(self, name, ok, why=""):
        """PASS when ok, else FAIL with why."""
        if ok:
            self.pass_(name)
        else:
            self.fail(name, why)

    def report(self, name, why=None):
        """PASS when why is None, else FAIL with why."""
        if why is None:
            self.pass_(name)
        else:
            self.fail(name, why)

    def run(self, name, fn):
        """Runs fn(): PASS when it returns, FAIL when it raises (a Check's
        message is the reason; another exception is named with its type)."""
        try:
            fn()
        except Check as e:
            self.fail(name, e)
            return False
        except Exception as e:  # noqa: BLE001 -- a harness bug or an unexpected answer
            self.fail(name, f"{type(e).__name__}: {e}")
            return False
        self.pass_(name)
        return True

    def test(self, name):
        """Decorator: runs the test at once; it returns None (PASS) or a
        reason (FAIL); an exception is a FAIL naming it."""

        def run(fn):
            try:
                self.report(name, fn())
            except Exception as e:  # noqa: BLE001 -- any exception is a failure
                self.fail(name, f"{type(e).__name__}: {e}")
            return fn

        return run


def configure(prefix="", suite=None, default_suite="test", width=WIDTH):
    """Sets the reporter of the module's functions (and of the harness's
    FAIL line); returns it."""
    global _default
    _default = Reporter(prefix=prefix, suite=suite, default_suite=default_suite, width=width)
    return _default


def reporter():
    """The module's reporter (configure()'s, else one named from $SUITE)."""
    global _default
    if _default is None:
        _default = Reporter()
    return _default


def pass_(name):
    reporter().pass_(name)


def fail(name, why):
    reporter().fail(name, why)


def skip(name, why):
    reporter().skip(name, why)


def note(text):
    reporter().note(text)


def result(name, ok, why=""):
    reporter().result(name, ok, why)


def report(name, why=None):
    reporter().report(name, why)


def run(name, fn):
    return reporter().run(name, fn)


def test(name):
    return reporter().test(name)


def failures():
    """The number of FAIL lines printed so far (every reporter's)."""
    return _failures


def status():
    """The exit status the run has earned so far: 1 after a FAIL, else 0."""
    return 1 if _failures else 0


def finish():
    """Exits: status 1 when a FAIL was printed, else 0."""
    sys.exit(status())


def _where(tb):
    """ " (at file:line in function)" of the innermost frame outside
    Python's own library (the harness's line, not subprocess.py's), else
    the innermost frame; "" without a traceback."""
    frames = traceback.extract_tb(tb) if tb else []
    if not frames:
        return ""
    lib = os.path.dirname(os.__file__)
    ours = [f for f in frames if not f.filename.startswith(lib)]
    f = (ours or frames)[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"


def _harness_failed(kind, value, tb):
    """sys.excepthook: an exception outside any test is a FAIL line and
    status 2 (Python's own status for it, 1, reads as "some test failed";
    without a FAIL line the tests it never ran would go unnoticed)."""
    last = traceback.format_exception_only(kind, value)[-1].strip()
    where = _where(tb)
    # An exception raised while another was handled (a finally's cleanup
    # that failed too) names the first: that one is the cause.
    ctx = value.__cause__ if value.__cause__ is not None else \
        (None if value.__suppress_context__ else value.__context__)
    if ctx is not None:
        first = traceback.format_exception_only(type(ctx), ctx)[-1].strip()
        last += f" [while handling: {one_line(first, 300)}{_where(ctx.__traceback__)}]"
    try:
        _print(f"FAIL: {reporter().name('harness')}: {one_line(last, 900)}{where}", failed=True)
    except Exception:  # noqa: BLE001 -- stdout itself is gone: the status still says it
        pass
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()
    # (os._exit: threads still running must not keep a dead harness alive.)
    os._exit(2)


sys.excepthook = _harness_failed
