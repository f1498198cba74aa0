#!/usr/bin/env python3
"""Terminals in a real browser (issue #28): headless Chromium (Debian's)
opens a page with xterm.js and its attach addon (tests/services/xterm/,
npm packages @xterm/xterm and @xterm/addon-attach) on a terminal_open URL
of a real `nsbox serve --http`, types `echo hi-$((6*7))` through the
terminal and sees hi-42 on its screen, then resizes the terminal
(term.onResize's message) and sees `stty size` answer 33 100.

usage: terminal_browser.py STORE IMAGE  (NSBOX: the binary; SUITE: the
prefix).  Prints PASS/FAIL/SKIP lines; exits 1 when a test failed."""
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402
from terminal import Server  # noqa: E402  (tests/services/terminal.py's)

nt.configure(default_suite="terminal_browser")
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xterm")
STORE, IMAGE = sys.argv[1], sys.argv[2]


class Page(http.server.SimpleHTTPRequestHandler):
    result = None
    got = threading.Event()

    def __init__(self, *a, **kw):
        super().__init__(*a, directory=HERE, **kw)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Page.result = json.loads(body)
        Page.got.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


def main():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium or not os.path.exists(os.path.join(HERE, "node_modules", "@xterm", "xterm")):
        nt.fail("setup", "needs Debian's chromium and tests/services/xterm/node_modules (npm ci)")
        return
    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    srv = Server()
    profile = tempfile.mkdtemp(prefix="nsbox-chromium-")
    browser = None
    try:
        sid = srv.session()
        box = srv.create(sid, IMAGE)
        url = srv.tool(sid, "terminal_open", {"sandbox_id": box})["structuredContent"]["url"]
        target = f"http://127.0.0.1:{page.server_address[1]}/page.html?ws={urllib.parse.quote(url)}"
        browser = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                                    f"--user-data-dir={profile}", "--remote-debugging-port=0", target],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not Page.got.wait(60):
            nt.fail("xterm_typed_command", "the page reported nothing within 60 s")
            return
        r = Page.result
        nt.result("xterm_typed_command", r.get("echo"), f"{r.get('error')}; screen {r.get('screen', '')[-300:]!r}")
        nt.result("xterm_resize_hook", r.get("resize"), f"{r.get('error')}; screen {r.get('screen', '')[-300:]!r}")
    finally:
        if browser:
            browser.terminate()
            try:
                browser.wait(10)
            except subprocess.TimeoutExpired:
                browser.kill()
        srv.close()
        page.shutdown()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    finally:
        nt.finish()
