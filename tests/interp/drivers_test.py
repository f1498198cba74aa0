#!/usr/bin/env python3
"""The interpreter drivers (mcp/interp/drivers/) run directly on this host's
interpreters, wired as nsbox wires them: fd 0 a stream socketpair (the
driver protocol), fd 1/2 pipes, the driver in its own process group (the
host sends SIGINT to the group).  One line per test in tests/lib.sh's
format (PASS: suite/name, FAIL: suite/name: reason); '# ' lines carry the
measurements.  docs/interpreters.md is the contract checked here.

DRIVER_PYTHON / DRIVER_NODE pick the interpreters (default: the system's
python3, which has python3-matplotlib and python3-pandas, and node)."""
import json
import os
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="interp_drivers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVERS = os.path.join(ROOT, "mcp", "interp", "drivers")
PYTHON = os.environ.get("DRIVER_PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3")
NODE = os.environ.get("DRIVER_NODE") or shutil.which("node") or "node"
py_prefix = "py"


def driver_env(**changes):
    """This host's environment without what would hide a driver's bugs
    (PYTHONUNBUFFERED makes every print reach the pipe at once)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "MPLCONFIGDIR", "MPLBACKEND")}
    env.update(changes)
    return env


def py_result(name, ok, reason=""):
    """nt.result, with python_tests's py/NAME named after its interpreter
    (py_prefix: py, py_extra1...)."""
    if name.startswith("py/"):
        name = py_prefix + name[2:]
    nt.result(name, ok, reason)


class Driver:
    """One driver process; a single select loop drains the channel and both
    output pipes, so a driver that prints a lot never blocks on a full pipe
    while the test waits for `done`."""

    def __init__(self, argv, cwd, timeout=30, env=None):
        self.chan, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        start = time.monotonic()
        self.proc = subprocess.Popen(
            argv, stdin=theirs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, start_new_session=True,
            env=env or driver_env(),
        )
        theirs.close()
        self.out, self.err, self.pending, self.lines = bytearray(), bytearray(), b"", []
        self.sel = selectors.DefaultSelector()
        for f in (self.chan, self.proc.stdout, self.proc.stderr):
            os.set_blocking(f.fileno(), False)
            self.sel.register(f, selectors.EVENT_READ)
        self.chan_eof = False
        self.ready = self.next_line(timeout)
        self.start_seconds = time.monotonic() - start
        self.cells = 0

    def pump(self, deadline):
        for key, _ in self.sel.select(max(0.0, deadline - time.monotonic())):
            self.read_from(key.fileobj)

    def read_from(self, f):
        try:
            data = self.chan.recv(1 << 20) if f is self.chan else os.read(f.fileno(), 1 << 20)
        except (BlockingIOError, InterruptedError):
            return False
        if not data:
            self.sel.unregister(f)
            if f is self.chan:
                self.chan_eof = True
            return False
        if f is self.chan:
            self.pending += data
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                self.lines.append(line)
        else:
            (self.out if f is self.proc.stdout else self.err).extend(data)
        return True

    def drain_outputs(self):
        """Reads what is in the pipes right now, without waiting."""
        for f in (self.proc.stdout, self.proc.stderr):
            while self.is_registered(f) and self.read_from(f):
                pass

    def is_registered(self, f):
        try:
            self.sel.get_key(f)
            return True
        except KeyError:
            return False

    def next_line(self, timeout):
        """The next message but "got" (a run taken: the host's business)."""
        deadline = time.monotonic() + timeout
        while True:
            while not self.lines and not self.chan_eof and time.monotonic() < deadline:
                self.pump(deadline)
            msg = json.loads(self.lines.pop(0)) if self.lines else None
            if not (isinstance(msg, dict) and msg.get("op") == "got"):
                return msg

    def send(self, msg):
        self.chan.sendall((json.dumps(msg) + "\n").encode())

    def run(self, code, timeout=30, interrupt_after=None):
        """(done or None, stdout, stderr) of one cell; the output is what was
        in the pipes when `done` came (the driver flushes before it)."""
        self.cells += 1
        o, e = len(self.out), len(self.err)
        self.send({"op": "run", "id": self.cells, "code": code})
        if interrupt_after is not None:
            # The cell prints "started" first: a SIGINT before the cell runs
            # is (rightly) ignored, and a loaded machine may be slow to start it.
            deadline = time.monotonic() + 10
            while b"started\n" not in self.out[o:] and time.monotonic() < deadline:
                self.pump(deadline)
            self.wait(interrupt_after)
            os.killpg(self.proc.pid, signal.SIGINT)
        done = self.next_line(timeout)
        self.drain_outputs()
        return done, self.out[o:].decode("utf-8", "replace"), self.err[e:].decode("utf-8", "replace")

    def wait(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.pump(deadline)

    def wait_exit(self, timeout=15):
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.pump(min(deadline, time.monotonic() + 0.05))
        self.drain_outputs()
        return self.proc.poll()

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def close(self):
        self.chan.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def expect(name, ran, ok_fn):
    """Checks one cell's (done, stdout, stderr) with ok_fn(done) -> reason
    or None."""
    done, out, err = ran
    if done is None:
        py_result(name, False, "no done; stderr: %s" % err[-300:])
        return False
    try:
        reason = ok_fn(done)
    except Exception as exc:  # a malformed done is a failure, not a crash
        reason = "%s: %s" % (type(exc).__name__, exc)
    py_result(name, reason is None, "%s; done=%s; stdout=%r; stderr=%r" % (reason, json.dumps(done)[:300], out[-200:], err[-300:]))
    return reason is None


def result_is(want):
    return lambda d: None if d["status"] == "ok" and d["result"] == want else "want result %r" % (want,)


def error_is(etype, interrupted=False):
    def check(d):
        if d["status"] != "error" or d["error"]["type"] != etype or d["interrupted"] is not interrupted:
            return "want status error, type %s, interrupted %s" % (etype, interrupted)
        return None

    return check


def exit_test(prefix, argv, cwd, code, want_rc, want_out):
    d = Driver(argv, cwd)
    d.send({"op": "run", "id": 1, "code": code})
    rc = d.wait_exit()
    line = d.next_line(0.2)
    ok = rc == want_rc and line is None and want_out in d.out.decode()
    py_result(prefix + "exit_ends_process", ok, "rc=%s (want %s), line=%s, stdout=%r" % (rc, want_rc, line, bytes(d.out[-200:])))
    d.close()


def python_tests(work, python=PYTHON, prefix="py", libs=True):
    """libs: the interpreter has pandas and matplotlib (the extra
    interpreters of DRIVER_EXTRA_PYTHONS, an old python3 say, need not)."""
    argv = [python, os.path.join(DRIVERS, "python.py")]
    cwd = os.path.join(work, prefix)
    os.mkdir(cwd)
    global py_prefix
    py_prefix = prefix
    # A home where matplotlib cannot write its config: the driver must pick
    # a writable directory itself, or matplotlib warns on stderr.  DISPLAY
    # set: figure.show() on Agg warns then (it is silent on a headless host).
    d = Driver(argv, cwd, env=driver_env(HOME="/proc", DISPLAY=":0"))
    r = d.ready
    py_result("py/ready", bool(r) and r.get("op") == "ready" and r.get("language") == "python" and r.get("version"), "ready=%s" % r)

    d.run("a = 1")
    d.run("b = a + 1\ndef f():\n    return a + b")
    expect("py/state_persists", d.run("f()"), result_is("3"))
    expect("py/result_int", d.run("6 * 7"), result_is("42"))
    expect("py/result_none_is_null", d.run("None"), result_is(None))
    expect("py/statement_is_null", d.run("z = 5"), result_is(None))
    expect("py/result_repr", d.run("'hi'"), result_is("'hi'"))
    if libs:
        expect(
            "py/result_dataframe_text",
            d.run("import pandas as pd\npd.DataFrame({'col': [10, 20]})"),
            lambda x: None if x["result"] and "col" in x["result"] and "\n0" in x["result"] and "20" in x["result"] else "no table",
        )
    expect(
        "py/result_capped_64k",
        d.run("'x' * 200000"),
        lambda x: None if len(x["result"].encode()) <= 65536 and "truncated" in x["result"] else "len %d" % len(x["result"]),
    )
    expect("py/main_namespace", d.run("__name__"), result_is("'__main__'"))
    expect("py/pickle_cell_class", d.run("import pickle\nclass C: pass\ntype(pickle.loads(pickle.dumps(C()))).__name__"), result_is("'C'"))

    done, out, err = d.run("def g():\n    raise ValueError('boom')\ng()")
    n = d.cells
    expect(
        "py/error_traceback",
        (done, out, err),
        lambda x: error_is("ValueError")(x)
        or (None if x["error"]["message"] == "boom" else "message")
        or (None if 'File "<cell-%d>", line 2, in g' % n in err and "ValueError: boom" in err else "traceback")
        or (None if "python.py" not in err else "driver frames in the traceback"),
    )
    if tuple(int(v) for v in r["version"].split(".")[:2]) >= (3, 8):
        d.run("import asyncio\nasync def later(v):\n    await asyncio.sleep(0.01)\n    return v")
        expect("py/top_level_await", d.run("w = await later(7)\nawait later(w + 1)"), result_is("8"))
        done, out, err = d.run("await later(1)\nraise KeyError('k')")
        expect("py/await_error_traceback", (done, out, err), lambda x: error_is("KeyError")(x) or (None if "asyncio" not in err and "<cell-%d>" % d.cells in err else "traceback"))
        done, out, err = d.run("print('started')\nn2 = 0\nwhile True:\n    n2 += 1\n    await asyncio.sleep(0)", interrupt_after=0.3)
        expect("py/sigint_await_loop", (done, out, err), error_is("KeyboardInterrupt", True))
        done, out, err = d.run("print('started')\nflag = []\nawait asyncio.sleep(2)\nflag.append(1)\ndone_ = 1", interrupt_after=0.3, timeout=10)
        expect("py/sigint_await_sleep", (done, out, err), error_is("KeyboardInterrupt", True))
        # The loop runs again: the interrupted cell must not wake up in it.
        expect("py/interrupted_task_cancelled", d.run("await asyncio.sleep(2)\n(n2 > 0, flag)"), result_is("(True, [])"))
    done, out, err = d.run("x = (")
    expect("py/syntax_error", (done, out, err), lambda x: error_is("SyntaxError")(x) or (None if "<cell-%d>" % d.cells in err else "no cell"))

    done, out, err = d.run("print('started')\nn = 0\nwhile True:\n    n += 1", interrupt_after=0.3)
    expect("py/sigint_busy_loop", (done, out, err), lambda x: error_is("KeyboardInterrupt", True)(x) or (None if "python.py" not in err and "<cell-%d>" % d.cells in err else "traceback"))
    expect("py/state_after_interrupt", d.run("(n > 0, a, f())"), result_is("(True, 1, 3)"))
    t0 = time.monotonic()
    done, out, err = d.run("import time\nprint('started')\ntime.sleep(100)", interrupt_after=0.3, timeout=10)
    expect("py/sigint_sleep", (done, out, err), lambda x: error_is("KeyboardInterrupt", True)(x) or (None if time.monotonic() - t0 < 5 else "slow"))
    os.killpg(d.proc.pid, signal.SIGINT)  # between cells: ignored
    d.wait(0.3)
    expect("py/sigint_between_cells_ignored", d.run("a"), result_is("1"))

    if libs:
        figure_tests(d, cwd)
    done, out, err = d.run("import os\nprint('a')\nos.system('echo hi-from-sh')\nos.system('echo err-from-sh >&2')\nprint('c', end='')")
    expect("py/subprocess_output_before_done", (done, out, err), lambda x: None if out == "a\nhi-from-sh\nc" and "err-from-sh" in err else "stdout %r" % out)
    expect("py/input_sees_eof", d.run("input()"), error_is("EOFError"))
    expect("py/stdin_read_empty", d.run("import sys\nsys.stdin.read()"), result_is("''"))
    done, out, err = d.run("import os\nos.write(0, b'{\"op\":\"done\",\"id\":1}\\n garbage\\n')\nprint('garbage', file=open('/dev/stdin', 'w'))\n5")
    expect("py/write_to_fd0_harmless", (done, out, err), lambda x: result_is("5")(x) or (None if not d.lines else "extra lines %s" % d.lines))
    expect("py/alive_after_fd0_write", d.run("a + 1"), result_is("2"))

    done, out, err = d.run("print('x' * 20000000)\nfor i in range(200000): print(i)", timeout=60)
    want = 20000001 + sum(len(str(i)) + 1 for i in range(200000))
    expect("py/huge_output_no_deadlock", (done, out, err), lambda x: None if x["status"] == "ok" and len(out) == want else "got %d bytes, want %d" % (len(out), want))

    d.run("import os\nos.chdir('/')")
    expect("py/cwd_persists", d.run("os.getcwd()"), result_is("'/'"))
    channel_framing(d, "py")
    d.close()

    exit_test("py/", argv, cwd, "print('bye')\nexit(3)", 3, "bye")
    exit_test("py/sys_", argv, cwd, "import sys\nsys.exit(0)", 0, "")


def channel_framing(d, prefix):
    """Two messages in one write, then one split over two writes, then a
    line that is not JSON (ignored)."""
    d.chan.sendall(b'{"op":"run","id":"p1","code":"1"}\n{"op":"run","id":"p2","code":"2"}\n{"op":"run","id":"p3",')
    d.wait(0.2)
    d.chan.sendall(b'"code":"3"}\nnot json\n{"op":"run","id":"p4","code":"4"}\n')
    got = [d.next_line(10) for _ in range(4)]
    ids = [g and (g.get("id"), g.get("result")) for g in got]
    py_result(prefix + "/channel_framing", ids == [("p1", "1"), ("p2", "2"), ("p3", "3"), ("p4", "4")], "got %s" % ids)


def figure_tests(d, cwd):
    """A figure left open is saved, sent and closed; Agg stays quiet."""
    done, out, err = d.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.gcf().show()\nplt.show()", timeout=60)

    def figure_ok(x):
        if x["status"] != "ok" or len(x["figures"]) != 1:
            return "want one figure"
        fig = x["figures"][0]
        if fig["path"] != os.path.join(cwd, "figure-%d-1.png" % d.cells):
            return "path %s" % fig["path"]
        with open(fig["path"], "rb") as f:
            return None if f.read(8) == b"\x89PNG\r\n\x1a\n" else "not a PNG"

    expect("py/figure_saved", (done, out, err), figure_ok)
    py_result("py/show_and_config_quiet", "Warning" not in err and "MPLCONFIGDIR" not in err, err[-300:])
    expect("py/figure_closed", d.run("len(plt.get_fignums())"), lambda x: None if x["result"] == "0" and x["figures"] == [] else "figures left")
    # After a chdir the figure still lands where the interpreter started
    # (the host returns new images from the working directory).
    done, out, err = d.run("import os\nos.chdir('/tmp')\nplt.plot([3, 1])")
    d.run("os.chdir(%r)" % cwd)
    expect("py/figure_in_start_dir_after_chdir", (done, out, err),
           lambda x: None if [f["path"] for f in x["figures"]] == [os.path.join(cwd, "figure-%d-1.png" % (d.cells - 1))]
           else "figures %s" % x["figures"])


def node_tests(work):
    argv = [NODE, os.path.join(DRIVERS, "node.js")]
    cwd = os.path.join(work, "js")
    os.mkdir(cwd)
    d = Driver(argv, cwd)
    r = d.ready
    py_result("js/ready", bool(r) and r.get("language") == "javascript" and r.get("version"), "ready=%s" % r)
    d.run("let a = 1")
    d.run("const b = a + 1; function f() { return a + b }")
    expect("js/state_persists", d.run("class K { v() { return f() } }\nnew K().v()"), result_is("3"))
    expect("js/result_number", d.run("6 * 7"), result_is("42"))
    expect("js/result_object", d.run("({x: 1, s: 'y'})"), result_is("{ x: 1, s: 'y' }"))
    expect("js/undefined_is_null", d.run("undefined"), result_is(None))
    expect("js/null_is_text", d.run("null"), result_is("null"))
    expect("js/promise_awaited", d.run("(async () => { await new Promise(r => setTimeout(r, 20)); return 'late' })()"), result_is("'late'"))
    expect("js/require_from_cwd", d.run("[require('os').platform(), __dirname]"), result_is("[ 'linux', %r ]" % cwd))
    done, out, err = d.run("function g() {\n  throw new TypeError('boom')\n}\ng()")
    n = d.cells
    expect(
        "js/error_stack",
        (done, out, err),
        lambda x: error_is("TypeError")(x)
        or (None if x["error"]["message"] == "boom" and "cell-%d:2" % n in err and "TypeError: boom" in err else "stack")
        or (None if "node.js" not in err else "driver frames in the stack"),
    )
    done, out, err = d.run("require('fs').readFileSync('/nonexistent')")
    expect(
        "js/error_stack_node_frames",
        (done, out, err),
        lambda x: None if "ENOENT" in err and "cell-%d:1" % d.cells in err and "node:fs" in err and "node:vm" not in err else "stack",
    )
    done, out, err = d.run("console.log('started'); let n = 0; for (;;) { n++ }", interrupt_after=0.3)
    expect("js/sigint_busy_loop", (done, out, err), lambda x: None if x["status"] == "error" and x["interrupted"] else "not interrupted")
    expect("js/state_after_interrupt", d.run("[n > 0, a, f()]"), result_is("[ true, 1, 3 ]"))
    done, out, err = d.run("console.log('started'); new Promise(() => {})", interrupt_after=0.3, timeout=10)
    expect("js/sigint_await", (done, out, err), lambda x: None if x["status"] == "error" and x["interrupted"] else "not interrupted")
    os.killpg(d.proc.pid, signal.SIGINT)
    d.wait(0.3)
    expect("js/sigint_between_cells_ignored", d.run("a"), result_is("1"))
    done, out, err = d.run("Promise.reject(new Error('bg')); setTimeout(() => { throw new Error('late') }, 0); 1")
    d.wait(0.3)
    expect("js/background_errors_not_fatal", d.run("a + 1"), result_is("2"))
    done, out, err = d.run("console.log('a'); require('child_process').execSync('echo hi-from-sh', {stdio: 'inherit'}); process.stdout.write('c')")
    expect("js/subprocess_output_before_done", (done, out, err), lambda x: None if out == "a\nhi-from-sh\nc" else "stdout %r" % out)
    expect("js/stdin_is_devnull", d.run("require('fs').readFileSync(0, 'utf8')"), result_is("''"))
    done, out, err = d.run("require('fs').writeSync(0, '{\"op\":\"done\",\"id\":1}\\ngarbage\\n'); 5")
    expect("js/write_to_fd0_harmless", (done, out, err), lambda x: result_is("5")(x) or (None if not d.lines else "extra lines %s" % d.lines))
    channel_framing(d, "js")
    done, out, err = d.run("process.stdout.write('x'.repeat(20e6)); 1", timeout=60)
    expect("js/huge_output_no_deadlock", (done, out, err), lambda x: None if x["status"] == "ok" and len(out) == 20000000 else "got %d bytes" % len(out))
    d.close()
    exit_test("js/", argv, cwd, "console.log('bye'); process.exit(4)", 4, "bye")


def ts_tests(work):
    argv = [NODE, os.path.join(DRIVERS, "node.js"), "--typescript"]
    cwd = os.path.join(work, "ts")
    os.mkdir(cwd)
    d = Driver(argv, cwd)
    r = d.ready
    ok = bool(r) and r.get("language") == "typescript" and not r.get("error") and r.get("typescript")
    py_result("ts/ready", ok, "ready=%s" % r)
    if not ok:
        d.close()
        return
    d.run("const x: number = 1")
    expect("ts/annotation_state", d.run("x + 1"), result_is("2"))
    d.run("interface P { a: number }\nfunction area(p: P): number { return p.a * 2 }")
    expect("ts/interface_function", d.run("const p: P = {a: 3}\narea(p)"), result_is("6"))
    expect("ts/redeclare_on_rerun", d.run("const x: number = 5\nx"), result_is("5"))
    d.run("import * as os from 'os'")
    expect("ts/import_persists", d.run("import * as os from 'os'\nos.platform()"), result_is("'linux'"))
    expect("ts/default_import", d.run("import path from 'path'\npath.basename('/a/b.ts')"), result_is("'b.ts'"))
    done, out, err = d.run("const = ;")
    expect("ts/syntax_error", (done, out, err), lambda x: None if x["status"] == "error" and "cell-%d" % d.cells in x["error"]["message"] else "not an error")
    done, out, err = d.run("throw new RangeError('r')")
    expect("ts/runtime_error", (done, out, err), error_is("RangeError"))
    done, out, err = d.run("console.log('started'); let spins: number = 0; for (;;) { spins++ }", interrupt_after=0.3)
    expect("ts/sigint_busy_loop", (done, out, err), lambda x: None if x["interrupted"] else "not interrupted")
    expect("ts/state_after_interrupt", d.run("x * 10"), result_is("50"))
    d.close()
    exit_test("ts/", argv, cwd, "const code: number = 2; process.exit(code)", 2, "")


def ts_missing_test(work):
    """No typescript module anywhere the driver looks: `ready` says so and
    every cell is an error (needs root, to hide /usr/share/nodejs)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        py_result("ts/missing_module_reported", False, "needs root and unshare(1)")
        return
    hide = "for d in /usr/share/nodejs /usr/lib/nodejs /usr/local/lib/node_modules /usr/lib/node_modules; do [ -d $d ] && mount -t tmpfs none $d; done; exec \"$0\" \"$@\""
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", hide, NODE, os.path.join(DRIVERS, "node.js"), "--typescript"]
    d = Driver(argv, work, env=driver_env(NODE_PATH=""))
    r = d.ready or {}
    done = d.run("const x: number = 1")[0] or {}
    ok = (r.get("error") or {}).get("type") == "TypeScriptUnavailable" and (done.get("error") or {}).get("type") == "TypeScriptUnavailable"
    py_result("ts/missing_module_reported", ok, "ready=%s done=%s" % (r, done))
    d.close()


def measure(work):
    """Start time to `ready`, a trivial cell's round trip, idle RSS."""
    kinds = [
        ("python", [PYTHON, os.path.join(DRIVERS, "python.py")]),
        ("javascript", [NODE, os.path.join(DRIVERS, "node.js")]),
        ("typescript", [NODE, os.path.join(DRIVERS, "node.js"), "--typescript"]),
    ]
    for name, argv in kinds:
        if not shutil.which(argv[0]):
            print("# %s: not measured, no %s" % (name, argv[0]), flush=True)
            continue
        starts, trips, rss = [], [], 0
        for i in range(5):
            d = Driver(argv, work)
            starts.append(d.start_seconds)
            if i == 0:
                for _ in range(300):
                    t0 = time.perf_counter()
                    d.run("1")
                    trips.append(time.perf_counter() - t0)
                d.wait(0.5)
                rss = d.rss_kib()
            d.close()
        trips.sort()
        print(
            "# %s: start to ready %.0f ms (median of 5); trivial cell round trip %.0f us median, %.0f us p90 (300 cells); idle RSS %.1f MiB"
            % (name, statistics.median(starts) * 1e3, statistics.median(trips) * 1e6, trips[int(len(trips) * 0.9)] * 1e6, rss / 1024),
            flush=True,
        )


def main():
    work = tempfile.mkdtemp(prefix="nsbox-drivers.")
    try:
        groups = [("python", python_tests, ()), ("node", node_tests, ()), ("typescript", ts_tests, ()), ("ts_missing", ts_missing_test, ())]
        # Other interpreters (an old python3, say): the tests that need no
        # library.  The driver must run on any python3 >= 3.7.
        for n, python in enumerate(os.environ.get("DRIVER_EXTRA_PYTHONS", "").split()):
            groups.append(("python_extra", python_tests, (python, "py_extra%d" % (n + 1), False)))
        for name, group, args in groups:
            try:
                group(work, *args)
            except Exception as exc:
                py_result(name, False, "crashed: %s: %s" % (type(exc).__name__, exc))
            global py_prefix
            py_prefix = "py"
        if os.environ.get("DRIVERS_MEASURE", "1") != "0":
            measure(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    nt.finish()


if __name__ == "__main__":
    main()
