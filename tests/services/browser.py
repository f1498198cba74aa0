#!/usr/bin/env python3
"""The user-level proof of issue #28 (docs/services.md): the three tasks a
user gives a model, done through the MCP tools and checked in a real
browser (Debian's headless Chromium, driven by tests/services/cdp.py).

  flask_*   a Flask app written into a sandbox, started in the background
            (process_start), exposed (port_expose), opened in Chromium: its
            page's JavaScript fetches the relative path api/todos through
            the preview URL and draws the answer; the DOM shows it, the
            screenshot has the colour the page turns once it has, and the
            app's own request log (process_logs) shows the browser's calls.
  hmr_*     a vite-style dev server (tests/services/apps/hmr_server.js):
            the page opens a WebSocket at the relative URL "ws" through the
            preview URL; a file changed with write_file makes the server
            push "reload" and the page redraws with the new text.
  testrun_* a long test run started in the background whose output is read
            with the cursor while it runs: every byte exactly once, nothing
            dropped, stdout and stderr apart, the exit status by
            process_wait.
  stdio_*   over stdio (a desktop assistant): port_expose returns a
            127.0.0.1 URL and Chromium opens a Node app there.

Environment: MCP_PORT (a running `nsbox serve --http` on 127.0.0.1: the
flask, hmr and testrun tests), STDIO_CMD (a JSON argv of `nsbox ... serve`:
the stdio tests), SHOTS (a directory for the screenshots), SUITE.
Prints PASS/FAIL lines (tests/lib/nsbox_test.py); never asserts timings."""
import json
import os
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import cdp  # noqa: E402
import nsbox_test as nt  # noqa: E402
import userflow as uf  # noqa: E402
from nsbox_test import ok  # noqa: E402

nt.configure(default_suite="services")
SHOTS = os.environ.get("SHOTS")
BLUE = (30, 136, 229)  # the Flask page's background once it drew the answer
GREEN = (67, 160, 71)  # the Node page's


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode("utf-8", "replace")


def near(a, b, tol=6):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def check_png(png, colour, name):
    """The screenshot is a real render: a PNG of the window's size, its
    corner in the colour the page's JavaScript sets only after the API
    answered, and text drawn on it (more than a handful of colours)."""
    ok(len(png) > 2000, lambda: f"a {len(png)}-byte PNG")
    w, h, rows = cdp.png_pixels(png)
    ok(w >= 800 and h >= 400, lambda: f"a {w}x{h} screenshot")
    corner = rows[h - 3][3]
    ok(near(corner, colour), lambda: f"corner pixel {corner}, the page's colour after the API answered is {colour}")
    colours = {p for r in rows[:h // 2:4] for p in r[::4]}
    ok(len(colours) > 8, lambda: f"{len(colours)} colours in the top half: no text was drawn")
    if SHOTS:
        with open(os.path.join(SHOTS, f"{name}.png"), "wb") as f:
            f.write(png)
    return len(colours)


def flask_app(c, b):
    box = uf.call(c, "sandbox_create", {})["sandbox_id"]
    state = {}

    @nt.test("flask_installed")
    def _():
        r = uf.call(c, "run_command", {"sandbox_id": box, "command": "python3 -c 'import flask; print(flask.__version__)'"})
        ok(r["exit_code"] == 0, lambda: f"no Flask in the default image: {r['stderr'][-300:]}")

    @nt.test("flask_started_and_exposed")
    def _():
        uf.call(c, "write_file", {"sandbox_id": box, "path": "app.py", "content": uf.app("flask_app.py")})
        state["handle"] = uf.start(c, box, "python3 app.py", name="flask")
        url = uf.expose(c, box, 5000, wait_s=60)
        ok(url.startswith("http") and url.endswith("/"), lambda: f"port_expose gave {url!r}")
        st, body = get(url)
        ok(st == 200 and "todos" in body, lambda: f"GET {url}: {st} {body[:200]!r}")
        st, body = get(url + "api/todos")
        ok(st == 200 and json.loads(body)["items"], lambda: f"GET {url}api/todos: {st} {body[:200]!r}")
        state["url"] = url
        nt.note(f"flask: {url}")

    @nt.test("flask_browser_dom")
    def _():
        ok("url" in state, "no URL")
        b.open(state["url"])
        title = b.wait_text("#title", lambda t: "todos from Flask" in t, 30)
        items = b.eval("[...document.querySelectorAll('#list li')].map(x => x.textContent)")
        ok(title.startswith("3 todos") and items == ["write the app", "expose port 5000", "open it in a browser"],
           lambda: f"title {title!r}, items {items!r}")

    @nt.test("flask_browser_screenshot")
    def _():
        ok("url" in state, "no URL")
        n = check_png(b.screenshot(), BLUE, "flask")
        nt.note(f"flask screenshot: {n} colours in the top half")

    @nt.test("flask_logs_show_the_browser")
    def _():
        ok("handle" in state, "no process")
        r = uf.logs(c, state["handle"], stream="stderr")
        text = uf.log_text(r, "stderr")
        ok('"GET /api/todos HTTP/1.1" 200' in text, lambda: f"werkzeug's log: {text[-600:]!r}")

    uf.call(c, "sandbox_stop", {"sandbox_id": box})


def hmr(c, b):
    box = uf.call(c, "sandbox_create", {})["sandbox_id"]
    state = {}

    @nt.test("hmr_websocket_connected")
    def _():
        uf.call(c, "write_file", {"sandbox_id": box, "path": "/workspace/web/server.js", "content": uf.app("hmr_server.js")})
        uf.call(c, "write_file", {"sandbox_id": box, "path": "/workspace/web/src/message.txt", "content": "first version"})
        state["handle"] = uf.start(c, box, "node server.js", name="dev", workdir="/workspace/web")
        url = uf.expose(c, box, 5173, wait_s=60)
        b.open(url)
        b.wait_text("#app", lambda t: t == "first version", 30)
        # "connected" is written on the server's "pong": both directions work.
        b.wait_text("#state", lambda t: t == "connected", 30)
        state["url"] = url
        nt.note(f"hmr: {url}")

    @nt.test("hmr_reload_pushed")
    def _():
        ok("url" in state, "not connected")
        uf.call(c, "write_file", {"sandbox_id": box, "path": "/workspace/web/src/message.txt", "content": "second version"})
        b.wait_text("#app", lambda t: t == "second version", 30)
        ok(b.text("#reloads") != "0" and b.text("#state") == "connected",
           lambda: f"reloads {b.text('#reloads')}, socket {b.text('#state')}")
        r = uf.logs(c, state["handle"])
        text = uf.log_text(r)
        ok("reloading 1 client(s)" in text, lambda: f"the dev server's log: {text[-400:]!r}")

    uf.call(c, "sandbox_stop", {"sandbox_id": box})


TESTRUN = r"""import sys, time
N = 2000
for i in range(1, N + 1):
    print(f"tests/test_{i:04d}.py::test_case PASSED", flush=True)
    if i % 200 == 0:
        print(f"warning: slow test {i}", file=sys.stderr, flush=True)
        time.sleep(0.2)
print(f"{N} passed", flush=True)
sys.exit(3)
"""
WANT_OUT = "".join(f"tests/test_{i:04d}.py::test_case PASSED\n" for i in range(1, 2001)) + "2000 passed\n"
WANT_ERR = "".join(f"warning: slow test {i}\n" for i in range(200, 2001, 200))


def testrun(c):
    box = uf.call(c, "sandbox_create", {})["sandbox_id"]
    st = {}

    @nt.test("testrun_cursor_each_byte_once")
    def _():
        uf.call(c, "write_file", {"sandbox_id": box, "path": "run_tests.py", "content": TESTRUN})
        h = st["handle"] = uf.start(c, box, "python3 run_tests.py", name="tests")
        got, cur, reads, while_running, dropped = "", None, 0, 0, 0
        end = time.monotonic() + 120
        while time.monotonic() < end:
            r = uf.logs(c, h, cursor=cur, max_bytes=4096)
            text, cur, running = uf.log_text(r), uf.log_cursor(r), uf.log_running(r)
            dropped += uf.log_dropped(r)
            got += text
            reads += 1
            if text and running:
                while_running += 1
            if not text:
                if running is False or (running is None and got.endswith("2000 passed\n")):
                    break
                time.sleep(0.05)
        st.update(reads=reads, while_running=while_running)
        nt.note(f"testrun: {len(got)} bytes in {reads} reads, {while_running} of them while it ran")
        ok(dropped == 0, lambda: f"{dropped} bytes dropped")
        ok(got == WANT_OUT, lambda: f"read {len(got)} bytes, want {len(WANT_OUT)}; first difference at "
           f"{next((i for i, (a, b) in enumerate(zip(got, WANT_OUT)) if a != b), min(len(got), len(WANT_OUT)))}")
        again = uf.logs(c, h, cursor=cur)
        ok(uf.log_text(again) == "", lambda: f"a read at the last cursor gave {uf.log_text(again)[:200]!r}")

    @nt.test("testrun_read_while_running")
    def _():
        ok("reads" in st, "no run")
        ok(st["reads"] > 10 and st["while_running"] > 0,
           lambda: f"{st['reads']} reads, {st['while_running']} with bytes while it ran")

    @nt.test("testrun_stderr_apart_and_status")
    def _():
        ok("handle" in st, "no run")
        r = uf.logs(c, st["handle"], stream="stderr")
        ok(uf.log_text(r, "stderr") == WANT_ERR, lambda: f"stderr {uf.log_text(r, 'stderr')[:300]!r}")
        w = uf.wait(c, st["handle"], 30)
        ok(w.get("exit_code") == 3 and w.get("running") is False, lambda: f"process_wait: {json.dumps(w)[:300]}")

    uf.call(c, "sandbox_stop", {"sandbox_id": box})


def stdio_node(b):
    c = uf.Stdio(json.loads(os.environ["STDIO_CMD"]), name="browser.py-stdio")
    try:
        box = uf.call(c, "sandbox_create", {})["sandbox_id"]

        @nt.test("stdio_loopback_url_in_browser")
        def _():
            uf.call(c, "write_file", {"sandbox_id": box, "path": "server.js", "content": uf.app("node_app.js")})
            uf.start(c, box, "node server.js", name="web")
            url = uf.expose(c, box, 3000, wait_s=60)
            ok(url.startswith("http://127.0.0.1:"), lambda: f"over stdio port_expose gave {url!r}")
            b.open(url)
            t = b.wait_text("#title", lambda t: "says hello from the sandbox" in t, 30)
            ok(t.startswith("node v"), lambda: f"title {t!r}")
            check_png(b.screenshot(), GREEN, "stdio-node")
            nt.note(f"stdio: {url}")

        uf.call(c, "sandbox_stop", {"sandbox_id": box})
    finally:
        c.close()


def main():
    with cdp.Browser() as b:
        if os.environ.get("MCP_PORT"):
            c = uf.Http(int(os.environ["MCP_PORT"]), name="browser.py")
            try:
                flask_app(c, b)
                hmr(c, b)
                testrun(c)
            finally:
                c.close()
        if os.environ.get("STDIO_CMD"):
            stdio_node(b)
    nt.finish()


if __name__ == "__main__":
    main()
