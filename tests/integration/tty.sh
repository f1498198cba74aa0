#!/usr/bin/env bash
# -i and -t (issue #13) under a real pseudo-terminal: python3's pty module
# plays the user at a terminal, with a host shell on it that starts nsbox
# (so a keystroke that reached the host's side of the terminal would run
# there), as root and as the real user nsboxtest (rootless, best-effort
# limits: this host delegates no cgroup v2 subtree).  Real sandboxes from
# the busybox and python fixture images.
SUITE=tty
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

BB=oci:$F/oci/busybox:latest
PY=oci:$F/oci/python:latest
# The checkout may sit where other users cannot reach (/root): run a copy.
install -m 755 "$NSBOX" "$T/nsbox"
mkdir -m 777 "$T/out"
mkdir "$T/rl" && chown nsboxtest: "$T/rl"
as() { runuser -u nsboxtest -- env -i PATH=/usr/bin:/bin HOME=/home/nsboxtest NSBOX_LIMITS=best-effort "$@"; }
"$T/nsbox" --store "$T/store" pull --quiet "$BB" >/dev/null &&
	"$T/nsbox" --store "$T/store" pull --quiet "$PY" >/dev/null &&
	as "$T/nsbox" --store "$T/rl/store" pull --quiet "$BB" >/dev/null || {
	fail setup "cannot pull the fixtures"
	finish
}
# A profile that allows everything: TIOCSTI then reaches the kernel.
echo '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}' >"$T/allow.json"
chmod 644 "$T/allow.json"

# The driver: `python3 ptydrive.py USER NAME SCENARIO ARGS...` runs one scenario
# on a fresh terminal (33 rows x 101 columns) and prints PASS/FAIL lines.
cat >"$T/ptydrive.py" <<'EOF'
import fcntl, os, pty, pwd, re, select, signal, struct, sys, termios, time

SUITE = "tty"
user, prefix, scenario, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
failures = 0


def report(name, ok, why=""):
    global failures
    if ok:
        print(f"PASS: {SUITE}/{prefix}_{name}", flush=True)
    else:
        failures += 1
        print(f"FAIL: {SUITE}/{prefix}_{name}: {why}", flush=True)


class Term:
    """A host shell running `script` on a new pty, as user."""

    def __init__(self, script, rows=33, cols=101):
        pw = pwd.getpwnam(user)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": pw.pw_dir, "TERM": "xterm"}
        if user != "root":
            env["NSBOX_LIMITS"] = "best-effort"
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            if user != "root":
                os.setgroups([])
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
            os.execve("/bin/bash", ["bash", "-c", script], env)
        self.buf = b""
        self.status = None

    def expect(self, pattern, timeout=20):
        """The first match of pattern in what came since the last one, or
        None after timeout s."""
        rx = re.compile(pattern, re.S)
        end = time.time() + timeout
        while True:
            m = rx.search(self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    m = rx.search(self.buf)
                    return m
                self.buf += data

    def send(self, data):
        os.write(self.fd, data)

    def resize(self, rows, cols):
        # The kernel sends SIGWINCH to the terminal's foreground group: the
        # host shell and nsbox.
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def nsbox_pid(self):
        """The nsbox the host shell started (its child)."""
        for _ in range(100):
            try:
                kids = open(f"/proc/{self.pid}/task/{self.pid}/children").read().split()
            except OSError:
                kids = []
            for k in kids:
                try:
                    if open(f"/proc/{k}/comm").read().strip() == "nsbox":
                        return int(k)
                except OSError:
                    pass
            time.sleep(0.05)
        return None

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


PROMPT = rb"[#$] "


def wait_for(cond, seconds):
    """Polls cond until it holds (True) or seconds pass (False)."""
    end = time.time() + seconds
    while not cond():
        if time.time() > end:
            return False
        time.sleep(0.05)
    return True


def marker_pids(cmdline):
    """Pids whose whole command line is cmdline (a sandbox's process, seen
    from the host)."""
    found = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") == cmdline:
                    found.append(int(p))
        except OSError:
            pass
    return found


def shell_checks(t, what):
    """The checks every interactive shell gets: arithmetic, a tty of the
    sandbox's own, the caller's size, a resize, ^C."""
    report(f"{what}_prompt", t.expect(PROMPT) is not None, repr(t.buf[-200:]))
    t.send(b"echo $((6*7))\r")
    report(f"{what}_echo_42", t.expect(rb"\r\n42\r\n") is not None, repr(t.buf[-200:]))
    # fd 0 is a pty of the sandbox's devpts instance (the same st_dev as its
    # /dev/pts), not one of the host's.
    t.send(b'tty; [ -t 0 ] && echo IS$((1+1))TTY; [ "$(stat -L -c %d /proc/self/fd/0)" = "$(stat -c %d /dev/pts/ptmx)" ] && echo OWN$((1+1))PTS\r')
    m = t.expect(rb"\r\n(/dev/pts/\d+)\r\nIS2TTY\r\nOWN2PTS\r\n")
    report(f"{what}_own_pty", m is not None, repr(t.buf[-300:]))
    t.send(b"stty size\r")
    report(f"{what}_initial_size", t.expect(rb"\r\n33 101\r\n") is not None, repr(t.buf[-200:]))
    t.resize(40, 120)
    # nsbox relays the size on SIGWINCH: ask until the sandbox's pty has it
    # (a deadline, not a guess at how long the relay takes).
    end, resized = time.time() + 20, False
    while not resized and time.time() < end:
        t.expect(PROMPT, 5)
        t.send(b"stty size\r")
        m = t.expect(rb"\r\n(\d+ \d+)\r\n", 5)
        resized = m is not None and m.group(1) == b"40 120"
    report(f"{what}_resize", resized, repr(t.buf[-200:]))
    t.expect(PROMPT, 5)
    # ^C once the sleep runs (seen from the host; tests/markers.md: 4330-4339).
    t.send(b"sleep 4331\r")
    started = wait_for(lambda: marker_pids("sleep 4331"), 20)
    t0 = time.time()
    t.send(b"\x03")
    ok = started and t.expect(PROMPT, 5) is not None and time.time() - t0 < 2.5
    ok = ok and wait_for(lambda: not marker_pids("sleep 4331"), 10)
    t.send(b"echo still$((1+1))here\r")
    ok = ok and t.expect(rb"\r\nstill2here\r\n", 5) is not None
    report(f"{what}_ctrl_c_reaches_sandbox", ok, f"{time.time() - t0:.1f}s {t.buf[-200:]!r}")


def run_it(nsbox, store, image, out):
    t = Term(f"stty -g >{out}.before; {nsbox} --store {store} run -it {image} sh; echo rc=$?; stty -g >{out}.after; echo DONE")
    try:
        shell_checks(t, "run")
        t.send(b"exit 3\r")
        report("run_exit_code", t.expect(rb"rc=3\r?\n") is not None, repr(t.buf[-200:]))
        ok = t.expect(rb"DONE") is not None
        before = open(out + ".before").read() if ok else "?"
        after = open(out + ".after").read() if ok else "!"
        report("run_terminal_restored", ok and before == after, f"{before!r} != {after!r}")
    finally:
        t.close()


def exec_it(nsbox, store, sid):
    # nsbox started with SIGINT and SIGQUIT ignored, as a background job of
    # a script is: the sandbox's commands still get the default dispositions.
    t = Term(f"trap '' INT QUIT; {nsbox} --store {store} exec -it {sid} sh; echo rc=$?")
    try:
        shell_checks(t, "exec")
        t.send(b"exit 4\r")
        report("exec_exit_code", t.expect(rb"rc=4\r?\n") is not None, repr(t.buf[-200:]))
    finally:
        t.close()


def stop_signal(nsbox, store, image, out, sig):
    name = signal.Signals(sig).name
    t = Term(f"stty -g >{out}.before; {nsbox} --store {store} run -it {image} sh; echo rc=$?; stty -g >{out}.after; echo DONE")
    try:
        t.expect(PROMPT)
        pid = t.nsbox_pid()
        if pid is not None:
            os.kill(pid, sig)
        ok = t.expect(rb"rc=%d\r?\n" % (128 + sig)) is not None and t.expect(rb"DONE") is not None
        before = open(out + ".before").read() if ok else "?"
        after = open(out + ".after").read() if ok else "!"
        report(f"{name.lower()}_restores_terminal", ok and before == after,
               f"pid={pid} {t.buf[-200:]!r} {before!r} {after!r}")
    finally:
        t.close()


def nsbox_error(nsbox, store, sid, out):
    """The sandbox dies under an exec -it: nsbox fails (125), the terminal
    comes back."""
    t = Term(f"stty -g >{out}.before; {nsbox} --store {store} exec -it {sid} sh; echo rc=$?; stty -g >{out}.after; echo DONE")
    try:
        t.expect(PROMPT)
        os.system(f"{nsbox} --store {store} rm {sid} >/dev/null 2>&1")
        ok = t.expect(rb"rc=125\r?\n") is not None and t.expect(rb"DONE") is not None
        before = open(out + ".before").read() if ok else "?"
        after = open(out + ".after").read() if ok else "!"
        report("error_restores_terminal", ok and before == after, f"{t.buf[-300:]!r}")
    finally:
        t.close()


def tiocsti(nsbox, store, image, profile, marker):
    """TIOCSTI from the sandbox: denied by the default profile; allowed by
    the kernel, it lands in the sandbox's own pty (its shell runs the
    injected line).  Either way the host shell on the caller's terminal
    reads nothing, and the host file never appears."""
    opt = f"--seccomp-profile {profile}" if profile else ""
    t = Term(f"{nsbox} --store {store} run -it {opt} {image} sh; echo rc=$?; read -t 2 line; echo \"got=[$line]\"; [ -e {marker} ] && echo HOSTRAN; echo END")
    py = ('import fcntl,termios; r=[fcntl.ioctl(0,termios.TIOCSTI,bytes([c])) '
          'for c in b"echo INJ$((2+3)); touch %s\\n"]; print("STI"+"OK")' % marker)
    try:
        t.expect(PROMPT)
        t.send(b"python3 -c '" + py.encode() + b"'\r")
        if profile:
            ok = t.expect(rb"STIOK\r\n") is not None and t.expect(rb"INJ5\r\n") is not None
            what = "allowed_lands_in_sandbox_pty"
        else:
            ok = t.expect(rb"PermissionError: \[Errno 1\]") is not None
            what = "denied_by_default_profile"
        t.expect(PROMPT, 5)
        t.send(b"exit\r")
        m = t.expect(rb"got=\[(.*?)\]")
        end = t.expect(rb"(HOSTRAN)?\s*END")
        ok = ok and m is not None and m.group(1) == b"" and end is not None and end.group(1) is None
        report(f"tiocsti_{what}", ok and not os.path.exists(marker), repr(t.buf[-300:]))
    finally:
        t.close()


def tiocsti_t(nsbox, store, image, profile, marker):
    """-t alone: nsbox reads nothing from the caller's terminal, so a line
    injected there would wait for the host shell's next read.  It goes to
    the sandbox's pty instead, where no one reads it."""
    py = ('import fcntl,termios; r=[fcntl.ioctl(0,termios.TIOCSTI,bytes([c])) '
          'for c in b"touch %s\\n"]; print("STI"+"OK")' % marker)
    t = Term(f"{nsbox} --store {store} run -t --seccomp-profile {profile} {image} python3 -c '{py}'; "
             f"echo rc=$?; read -t 2 line; echo \"got=[$line]\"; [ -e {marker} ] && echo HOSTRAN; echo END")
    try:
        # No raw mode without -i: the outer ONLCR adds a CR to the pty's CRLF.
        ok = t.expect(rb"STIOK\r*\n") is not None and t.expect(rb"rc=0\r?\n") is not None
        m = t.expect(rb"got=\[(.*?)\]")
        end = t.expect(rb"(HOSTRAN)?\s*END")
        ok = ok and m is not None and m.group(1) == b"" and end is not None and end.group(1) is None
        report("tiocsti_t_alone_never_reaches_caller", ok and not os.path.exists(marker), repr(t.buf[-300:]))
    finally:
        t.close()


fn = {"run_it": run_it, "exec_it": exec_it, "nsbox_error": nsbox_error, "tiocsti": tiocsti, "tiocsti_t": tiocsti_t,
      "sigterm": lambda *a: stop_signal(*a, signal.SIGTERM),
      "sighup": lambda *a: stop_signal(*a, signal.SIGHUP)}[scenario]
fn(*args)
sys.exit(1 if failures else 0)
EOF

# drive USER PREFIX SCENARIO ARGS...: one scenario; a driver that dies
# without a FAIL line (its later checks lost) is a FAIL of its own.
drive() {
	local out rc
	out=$(python3 "$T/ptydrive.py" "$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -E '^(PASS|FAIL): '
	_failures=$((_failures + $(printf '%s\n' "$out" | grep -c '^FAIL: ')))
	if [ "$rc" != 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL: '; then
		fail "${2}_${3}_driver" "exited $rc without a FAIL line: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
}

# -- as root --------------------------------------------------------------------------
S=$T/store
drive root root run_it "$T/nsbox" "$S" "$BB" "$T/out/root-run"
id=$("$T/nsbox" --store "$S" create "$BB" 2>/dev/null)
drive root root exec_it "$T/nsbox" "$S" "$id"
drive root root nsbox_error "$T/nsbox" "$S" "$id" "$T/out/root-err"
"$T/nsbox" --store "$S" rm "$id" >/dev/null 2>&1 # gone already unless the scenario failed early
drive root root sigterm "$T/nsbox" "$S" "$BB" "$T/out/root-term"
drive root root sighup "$T/nsbox" "$S" "$BB" "$T/out/root-hup"
rm -f /tmp/nsbox-tty-marker
drive root root tiocsti "$T/nsbox" "$S" "$PY" "" /tmp/nsbox-tty-marker
drive root root tiocsti "$T/nsbox" "$S" "$PY" "$T/allow.json" /tmp/nsbox-tty-marker
drive root root tiocsti_t "$T/nsbox" "$S" "$PY" "$T/allow.json" /tmp/nsbox-tty-marker
rm -f /tmp/nsbox-tty-marker

# -- as nsboxtest (rootless) ----------------------------------------------------------
RS=$T/rl/store
drive nsboxtest rootless run_it "$T/nsbox" "$RS" "$BB" "$T/out/rl-run"
id=$(as "$T/nsbox" --store "$RS" create "$BB" 2>/dev/null)
drive nsboxtest rootless exec_it "$T/nsbox" "$RS" "$id"
as "$T/nsbox" --store "$RS" rm "$id" >/dev/null 2>&1

# -- without a terminal ----------------------------------------------------------------
nsbox() { "$T/nsbox" --store "$S" "$@"; }
out=$(printf 'a\nb\n' | nsbox run -i "$BB" -- cat)
rc=$?
[ $rc = 0 ] && [ "$out" = "$(printf 'a\nb')" ] && pass i_relays_stdin_to_eof || fail i_relays_stdin_to_eof "rc=$rc [$out]"
# Without -i stdin is relayed all the same (nsbox always did; docker would
# give /dev/null): documented in docs/runtime.md, "Terminals".
out=$(printf 'c\n' | nsbox run "$BB" -- cat)
[ "$out" = c ] && pass stdin_relayed_without_i || fail stdin_relayed_without_i "[$out]"
# -t alone: output through the sandbox's pty (stderr merged), stdin not read.
out=$(printf 'x\n' | nsbox run -t "$BB" -- sh -c 'read -t 1 v; echo "v=[$v]"; [ -t 0 ] && [ -t 1 ] && echo ONPTY; echo toerr >&2' 2>/dev/null)
rc=$?
[ $rc = 0 ] && [ "$out" = "$(printf 'v=[]\r\nONPTY\r\ntoerr\r')" ] && pass t_alone_pty_output_no_stdin || fail t_alone_pty_output_no_stdin "rc=$rc $(printf '%s' "$out" | od -c | head -3)"
nsbox run -t "$BB" -- sh -c 'kill -9 $$' >/dev/null 2>&1
rc=$?
[ $rc = 137 ] && pass t_signal_exit_code || fail t_signal_exit_code "rc=$rc"
nsbox run -t "$BB" -- sh -c 'exit 7' >/dev/null 2>&1
rc=$?
[ $rc = 7 ] && pass t_exit_code || fail t_exit_code "rc=$rc"
out=$(echo | nsbox run -it "$BB" sh 2>&1)
rc=$?
[ $rc = 2 ] && printf '%s' "$out" | grep -q 'the input device is not a TTY' && pass it_refuses_non_tty_stdin || fail it_refuses_non_tty_stdin "rc=$rc $out"
out=$(nsbox run -t --json "$BB" -- true 2>&1)
rc=$?
[ $rc = 2 ] && pass t_json_refused || fail t_json_refused "rc=$rc $out"
out=$(nsbox run -t --timeout 1 "$BB" -- sleep 30 2>&1)
rc=$?
[ $rc = 137 ] && printf '%s' "$out" | grep -q 'timed out' && pass t_timeout || fail t_timeout "rc=$rc $out"

finish
