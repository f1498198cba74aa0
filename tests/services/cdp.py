"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol
on a pipe (--remote-debugging-pipe: JSON messages ended by a NUL byte, the
commands on the browser's fd 3, its answers and events on fd 4), so that a
test can open a page, wait for what its JavaScript renders, change
something and wait again, and take a screenshot.  Only the standard
library; no WebSocket client is needed.  Also a PNG decoder (8-bit RGB or
RGBA, not interlaced: what Chromium writes) to look at a screenshot's pixels.

Used by tests/services/browser.py and tests/bench/services_bench.py.

    with Browser() as b:
        b.open("http://127.0.0.1:8000/")
        text = b.wait_text("#status", lambda t: "ready" in t, 20)
        png = b.screenshot()
        px = png_pixels(png)      # (width, height, rows of (r, g, b) tuples)

Rules: every wait has a deadline and raises TimeoutError naming what it
waited for and what it last saw; the browser is killed (its process group)
and its profile directory removed on close, whatever happened."""
import base64
import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import zlib

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "chromium"


class Browser:
    def __init__(self, width=1000, height=700, extra=()):
        self.dir = tempfile.mkdtemp(prefix="nsbox-chromium.")
        os.chmod(self.dir, 0o755)
        to_b, self._w = os.pipe()   # browser reads fd 3
        self._r, from_b = os.pipe()  # browser writes fd 4
        self.log = open(os.path.join(self.dir, "chromium.log"), "wb")
        self.p = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update",
             "--remote-debugging-pipe", f"--user-data-dir={self.dir}/profile",
             f"--window-size={width},{height}", *extra, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            close_fds=False, preexec_fn=self._fds(to_b, from_b), start_new_session=True)
        os.close(to_b)
        os.close(from_b)
        self.n = 0
        self.answers = {}
        self.events = []
        self.cv = threading.Condition()
        self.dead = None
        threading.Thread(target=self._reader, daemon=True).start()
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Network.enable")
        self.call("Runtime.enable")

    @staticmethod
    def _fds(to_b, from_b):
        def child():
            # The browser's fd 3 is what we write, its fd 4 what we read;
            # every other descriptor of ours is close-on-exec (PEP 446).
            a, b = fcntl.fcntl(to_b, fcntl.F_DUPFD, 10), fcntl.fcntl(from_b, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
        return child

    def _reader(self):
        buf = b""
        try:
            while True:
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    m = json.loads(raw)
                    with self.cv:
                        if "id" in m:
                            self.answers[m["id"]] = m
                        else:
                            self.events.append(m)
                        self.cv.notify_all()
        finally:
            with self.cv:
                self.dead = "the browser closed its pipe"
                self.cv.notify_all()

    def call(self, method, params=None, timeout=30, session=True):
        """Sends one command (to the attached page unless session=False) and
        returns its result; raises RuntimeError on a protocol error."""
        with self.cv:
            self.n += 1
            rid = self.n
        msg = {"id": rid, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        with self.cv:
            while rid not in self.answers:
                left = end - time.monotonic()
                if self.dead or left <= 0:
                    raise TimeoutError(f"{method}: no answer in {timeout} s ({self.dead or 'still waiting'})")
                self.cv.wait(left)
            m = self.answers.pop(rid)
        if "error" in m:
            raise RuntimeError(f"{method}: {m['error']}")
        return m.get("result", {})

    def open(self, url, timeout=30):
        """Navigates to url and waits for its load event; returns the HTTP
        status of the main document (None when Chromium does not say)."""
        with self.cv:
            self.events.clear()
        r = self.call("Page.navigate", {"url": url}, timeout)
        if r.get("errorText"):
            raise RuntimeError(f"navigate {url}: {r['errorText']}")
        end = time.monotonic() + timeout
        status = None
        with self.cv:
            while True:
                for e in self.events:
                    if e.get("method") == "Network.responseReceived":
                        status = e["params"]["response"]["status"]
                    if e.get("method") == "Page.loadEventFired":
                        return status
                left = end - time.monotonic()
                if self.dead or left <= 0:
                    raise TimeoutError(f"{url}: no load event in {timeout} s")
                self.cv.wait(left)

    def eval(self, expr, timeout=30):
        """The value of a JavaScript expression in the page (awaited when it
        is a promise)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                      timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def wait_for(self, expr, pred, timeout):
        """Polls expr every 50 ms until pred(value) holds; returns the value."""
        end = time.monotonic() + timeout
        last = None
        while True:
            last = self.eval(expr)
            if pred(last):
                return last
            if time.monotonic() > end:
                raise TimeoutError(f"waited {timeout} s for {expr!r}; last value {str(last)[:300]!r}")
            time.sleep(0.05)

    def text(self, selector):
        return self.eval(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || null")

    def wait_text(self, selector, pred, timeout):
        q = json.dumps(selector)
        return self.wait_for(f"(document.querySelector({q}) || {{}}).textContent || null",
                             lambda t: t is not None and pred(t), timeout)

    def dom(self):
        return self.eval("document.documentElement.outerHTML")

    def screenshot(self):
        """The visible page as PNG bytes."""
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def png_pixels(data):
    """(width, height, rows): rows[y][x] is an (r, g, b) tuple.  8-bit
    truecolour (RGB or RGBA), not interlaced; raises ValueError otherwise."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {ctype}, interlace {interlace}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows
