#!/usr/bin/env python3
"""The zygote (issue #29, docs/warm.md): one-shot execute_code served by an
interpreter pre-started in a spare sandbox, through `nsbox serve` over
stdio with the default image.  Each language answers warm; a warm result
is the one a fresh process gives (a server with --spares 0 runs the same
programs cold: exit status, signal, stdout, stderr compared); nothing
passes from one one-shot call to the next; timeouts, OOM, env, stdin and
network still hold; --warm-import loads modules before the call and a bad
name is refused at start; a killed zygote, or a killed spare, never fails
a call; the spares grow with the call rate within --spares and under
--max-total-sandboxes, and shrink when idle.  Run as root and rootless
(tests/integration/zygote.sh).  Environment: NSBOX, NSBOX_STORE, SUITE."""
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, note, result  # noqa: E402
from stdio_client import NSBOX, Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
os.environ.setdefault("SUITE", "zygote")
ROOTLESS = os.geteuid() != 0


def sc(r):
    return r.get("structuredContent") or {}


def ppid_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def dead(pid):
    """Whether pid is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def zygotes(server):
    """pid -> language of every zygote of server's spares (each a child of
    its sandbox's init, a child of the server)."""
    marks = {b"# nsbox's python zygote": "python", b"// nsbox's node zygote": "node"}
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2:
            for mark, lang in marks.items():
                if argv[2].startswith(mark) and ppid_of(ppid_of(int(pid))) == server.p.pid \
                        and not dead(pid):
                    found[int(pid)] = lang
    return found


def pids_of(prefix):
    """The pids whose command line starts with prefix (NUL-separated)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(prefix):
                    found.append(int(pid))
        except (OSError, ValueError):
            continue
    return found


def until(fn, seconds):
    """fn()'s first true value within seconds, else its last."""
    end = time.time() + seconds
    v = fn()
    while not v and time.time() < end:
        time.sleep(0.05)
        v = fn()
    return v


CANCEL = "import subprocess, time\nsubprocess.Popen(['sleep', '3138'])\ntime.sleep(3137)"


def warm_call(s, lang, code, want_warm=True, tries=60, **kw):
    """The first call's record that ran warm (or cold: want_warm False),
    asking again while a spare is being made; the last record otherwise."""
    rec = {}
    for _ in range(tries):
        rec = sc(s.tool("execute_code", language=lang, code=code, **kw))
        if rec.get("warm") is want_warm:
            return rec
        time.sleep(0.25)
    return rec


# -- every language answers warm --------------------------------------------------
s = Server(store=STORE)
CASES = {
    "python": ("print(6 * 7)", "42\n"),
    "javascript": ("console.log(6 * 7)", "42\n"),
    "typescript": ("const n: number = 6 * 7; console.log(n)", "42\n"),
}
for lang, (code, want) in CASES.items():
    rec = warm_call(s, lang, code)
    result(f"{lang}_warm_answers", rec.get("warm") is True and rec.get("stdout") == want
           and rec.get("status") == "ok" and rec.get("interpreter") == "process", rec)
# run_command never runs in a zygote, and says nothing of one.
rec = sc(s.tool("run_command", command="echo hi"))
result("run_command_not_warm", rec.get("stdout") == "hi\n" and rec.get("warm") is False, rec)

# -- a warm result is a fresh process's --------------------------------------------
SAME = [
    ("python", "print('out'); import sys; print('err', file=sys.stderr)"),
    ("python", "1 / 0"),
    ("python", "x x"),
    ("python", "import sys; sys.exit(3)"),
    ("python", "import sys; sys.exit('bye')"),
    ("python", "import os; os._exit(5)"),
    ("python", "raise KeyboardInterrupt"),
    ("python", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
    ("python", "import sys; print(sys.argv, sys.path[0], __name__, sorted(k for k in globals() if not k.startswith('__')))"),
    ("python", "import os; print(os.readlink('/proc/self/fd/0'), os.getcwd())"),
    ("python", "import atexit, threading, time\natexit.register(lambda: print('atexit'))\n"
               "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\nprint('main')"),
    ("python", "f = open('/tmp/unclosed', 'w'); f.write('kept'); import subprocess; "
               "print(subprocess.run(['sh', '-c', 'echo child'], capture_output=True).stdout)"),
    ("javascript", "console.log(typeof require, typeof module, __filename, process.argv.length); "
                   "setTimeout(() => console.log('later'), 50)"),
    ("javascript", "process.exit(4)"),
    ("javascript", "console.error('e'); process.exitCode = 2"),
    ("javascript", "throw new Error('boom')"),
    ("typescript", "const x: = 1;"),
    ("typescript", "interface P { n: number }\nconst p: P = { n: 41 };\nconsole.log(p.n + 1, process.argv.length)"),
]
cold = Server(["--spares", "0"], STORE)


def shape(rec, lang):
    err = rec.get("stderr", "")
    if lang == "javascript" and "Error" in err:
        # node's own frames below the program's differ (the zygote's
        # are there too): the message, the source line and the program's
        # frame must match.
        err = "\n".join(err.split("\n")[:6])
    return (rec.get("status"), rec.get("exit_code"), rec.get("signal"), rec.get("stdout"), err,
            rec.get("timed_out"), rec.get("oom_killed"))


for i, (lang, code) in enumerate(SAME):
    w = warm_call(s, lang, code)
    c = sc(cold.tool("execute_code", language=lang, code=code))
    result(f"same_as_fresh_{i}_{lang}", w.get("warm") is True and c.get("warm") is False
           and shape(w, lang) == shape(c, lang), {"warm": shape(w, lang), "cold": shape(c, lang)})
cold.close()

# -- nothing passes from one call to the next -----------------------------------------
LEAK_PY = ("import builtins, os, sys, json\nbuiltins.leak = 1\nos.environ['LEAK'] = '1'\n"
           "json.leak = 1\nsys.path.append('/leak')\nopen('/tmp/leak', 'w').write('x')\nLEAK = 1\nprint('set')")
SEE_PY = ("import builtins, os, sys, json\nprint(hasattr(builtins, 'leak'), 'LEAK' in os.environ, "
          "hasattr(json, 'leak'), '/leak' in sys.path, os.path.exists('/tmp/leak'), 'LEAK' in globals())")
a = warm_call(s, "python", LEAK_PY)
b = warm_call(s, "python", SEE_PY)
result("no_state_between_python_calls", a.get("stdout") == "set\n" and b.get("warm") is True
       and b.get("stdout") == "False False False False False False\n", (a, b))
LEAK_JS = ("globalThis.leak = 1; process.env.LEAK = '1'; require('fs').writeFileSync('/tmp/leak', 'x');"
           " require('path').leak = 1; console.log('set')")
SEE_JS = ("const fs = require('fs'); console.log(typeof globalThis.leak, process.env.LEAK, "
          "fs.existsSync('/tmp/leak'), require('path').leak)")
a = warm_call(s, "javascript", LEAK_JS)
b = warm_call(s, "javascript", SEE_JS)
result("no_state_between_javascript_calls", a.get("stdout") == "set\n" and b.get("warm") is True
       and b.get("stdout") == "undefined undefined false undefined\n", (a, b))

# -- errors, limits, env, stdin ------------------------------------------------------
r = warm_call(s, "python", "while True: pass", timeout_s=1)
result("timeout_reported", r.get("warm") is True and r.get("timed_out") is True
       and r.get("status") != "ok", r)
r = warm_call(s, "javascript", "for (;;) {}", timeout_s=1)
result("timeout_reported_javascript", r.get("warm") is True and r.get("timed_out") is True, r)
# A daemon the program leaves behind dies with the call, as a fresh one's.
r = warm_call(s, "python", "import subprocess; subprocess.Popen(['sleep', '30']); print('left')")
result("daemon_does_not_hold_the_call", r.get("warm") is True and r.get("stdout") == "left\n"
       and r.get("wall_ms", 1e9) < 5000, r)
OOM = "b = bytearray(1 << 20)\nchunks = []\nwhile True:\n    chunks.append(b'x' * (64 << 20))"
r = warm_call(s, "python", OOM, timeout_s=60)
oom_ok = r.get("oom_killed") is True or "MemoryError" in r.get("stderr", "")
result("oom_reported", r.get("warm") is True and r.get("status") != "ok" and oom_ok, r)
# Cancel: the program (a zygote, parent of its marker) and what it started die.
warm_call(s, "python", "print(1)")
time.sleep(1)
s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": "cancel-1", "method": "tools/call", "params": {
    "name": "execute_code", "arguments": {"language": "python", "code": CANCEL}}}) + "\n")
s.p.stdin.flush()
marker = until(lambda: [p for p in pids_of(b"sleep\x003138")], 30)
parent_zygote = bool(marker) and ppid_of(marker[0]) in zygotes(s)
s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": "cancel-1", "reason": "test"}}) + "\n")
s.p.stdin.flush()
gone = until(lambda: not pids_of(b"sleep\x003138"), 15)
r = sc(s.tool("execute_code", language="python", code="print('after cancel')"))
result("cancel_kills_warm_program", bool(marker) and parent_zygote and gone
       and r.get("stdout") == "after cancel\n", (marker, parent_zygote, gone, r))
r = warm_call(s, "python", "import os; print(os.environ['GREETING'])", env={"GREETING": "hello"})
result("env_set_in_warm_call", r.get("warm") is True and r.get("stdout") == "hello\n", r)
# A variable the interpreter reads only as it starts: a fresh process.
r = s.tool("execute_code", language="python", code="import sys; print('/from-env' in sys.path)",
           env={"PYTHONPATH": "/from-env"})
result("start_time_env_runs_fresh", sc(r).get("warm") is False and sc(r).get("stdout") == "True\n", r)
r = s.tool("execute_code", language="python", code="import sys; print(sys.stdin.read().upper())",
           stdin="piped")
result("stdin_runs_fresh", sc(r).get("warm") is False and sc(r).get("stdout") == "PIPED\n", r)
s.close()

# -- a killed zygote, a killed spare -------------------------------------------------
s = Server(["--spares", "1"], STORE)
warm_call(s, "python", "print(1)")
time.sleep(1)  # the next spare ready
before = zygotes(s)
killed = [pid for pid, lang in before.items() if lang == "python"]
for pid in killed:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as e:
        note(f"cannot kill zygote {pid}: {e}")
r = sc(s.tool("execute_code", language="python", code="print('after kill')"))
result("killed_zygote_falls_back", len(killed) >= 1 and r.get("stdout") == "after kill\n"
       and r.get("warm") is False and r.get("status") == "ok", (killed, r))
time.sleep(1)
parents = [ppid_of(pid) for pid in zygotes(s)]
for ppid in parents:  # the spare's init: its sandbox is gone
    try:
        os.kill(ppid, signal.SIGKILL)
    except OSError as e:
        note(f"cannot kill init {ppid}: {e}")



until(lambda: all(dead(p) for p in parents), 10)
r = sc(s.tool("execute_code", language="python", code="print('after init kill')"))
result("killed_spare_falls_back", len(parents) >= 1 and r.get("stdout") == "after init kill\n"
       and r.get("status") == "ok", (parents, r))
s.close()

# -- network ---------------------------------------------------------------------------


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"marker-zygote\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
P = httpd.server_address[1]
s = Server(["--allow-net", f"127.0.0.1:{P}"], STORE)
FETCH = ("import urllib.request\ntry:\n    print(urllib.request.urlopen('http://127.0.0.1:%d/', timeout=10)"
         ".read().decode().strip())\nexcept Exception as e:\n    print('ERR', type(e).__name__, e)") % P
r = warm_call(s, "python", FETCH, network=[f"127.0.0.1:{P}"])
result("network_grant_in_warm_call", r.get("warm") is True and r.get("stdout") == "marker-zygote\n"
       and any(n.get("verdict") == "allowed" for n in r.get("network") or []), r)
r = warm_call(s, "python", FETCH)
result("no_grant_stays_sealed", r.get("warm") is True and r.get("stdout", "").startswith("ERR"), r)
s.close()

# -- --warm-import ----------------------------------------------------------------------
s = Server(["--warm-import", "json,email.mime.text,nsbox_no_such_module"], STORE)
r = warm_call(s, "python", "import sys; print('email.mime.text' in sys.modules, 'json' in sys.modules)")
result("warm_import_loaded", r.get("warm") is True and r.get("stdout") == "True True\n", r)
r = warm_call(s, "python", "import sys; print('nsbox_no_such_module' in sys.modules)")
result("warm_import_failure_not_fatal", r.get("warm") is True and r.get("stdout") == "False\n", r)
s.close()
for bad in ("os;rm -rf /", "numpy,", "-c", "a..b", "1abc", "x y"):
    p = subprocess.run([NSBOX, "--store", STORE, "serve", "--warm-import", bad], input="", text=True,
                       capture_output=True, timeout=60)
    result(f"warm_import_bad_name_refused_{bad.replace(' ', '_').replace('/', '')}",
           p.returncode != 0 and "--warm-import takes python module names" in p.stderr, (p.returncode, p.stderr))

# -- adaptive spares, bounded ----------------------------------------------------------
s = Server(["--spares", "3"], STORE)
s.tool("execute_code", language="python", code="print(1)")
most = 0
for burst in range(3):  # calls sent at once: the gap between takes is ~0
    for i in range(8):
        s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": f"b{burst}-{i}", "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"language": "python", "code": "print(1)"}}}) + "\n")
    s.p.stdin.flush()
    answered = 0
    while answered < 8:
        if json.loads(s.p.stdout.readline()).get("id", "").startswith(f"b{burst}-"):
            answered += 1
    end = time.time() + 3
    while time.time() < end:
        most = max(most, len(zygotes(s)))
        time.sleep(0.05)
grown = len(zygotes(s))
result("spares_grow_with_rate", 2 <= most <= 3, f"most {most}, then {grown}")
time.sleep(13)
idle = len(zygotes(s))
result("spares_shrink_when_idle", idle == 1, f"{idle} zygotes after 13 s idle (most {most})")
s.close()
s = Server(["--spares", "4", "--max-total-sandboxes", "3"], STORE)
for i in range(12):
    s.tool("execute_code", language="python", code="print(1)")
time.sleep(2)
n = len(zygotes(s))
ids = [sc(s.tool("sandbox_create", language="python")).get("sandbox_id") for _ in range(3)]
result("spares_under_max_total", n <= 2 and all(ids), f"{n} zygotes; kept {ids}")
s.close()
finish()
