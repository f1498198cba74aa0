#!/usr/bin/env python3
"""Runs nsbox's Python driver as nsbox does (fd 0 a stream socketpair, the
protocol; fd 1/2 pipes) and feeds it cells; used by interp_notebook_driver.py
inside a sandbox (copied in with `nsbox cp`), usable on any host too:

    notebook_runner.py DRIVER < cells.json > out.json

cells.json: [{"code": ..., "env": {...}?}, ...]; out.json: the `ready`
message, then for each cell {"done": ..., "stdout": ..., "stderr": ...,
"first_stdout_s": seconds from `run` to the cell's first stdout byte}.
A cell with "interrupt_after": S gets SIGINT (to the driver's process
group, as nsbox sends it) S seconds after it printed "started\n".
Standard library only."""
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time


def reject(name):
    raise ValueError("not JSON: " + name)


def main():
    driver, cells = sys.argv[1], json.load(sys.stdin)
    chan, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, driver], stdin=theirs, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    theirs.close()
    sel = selectors.DefaultSelector()
    bufs = {"chan": b"", "out": b"", "err": b""}
    for name, f in (("chan", chan), ("out", proc.stdout), ("err", proc.stderr)):
        os.set_blocking(f.fileno(), False)
        sel.register(f, selectors.EVENT_READ, name)
    first = [None]

    def line(timeout, start=None):
        """The next message but "got" (a run taken: the host's business)."""
        deadline = time.monotonic() + timeout
        while True:
            msg = raw_line(max(0, deadline - time.monotonic()), start)
            if not (isinstance(msg, dict) and msg.get("op") == "got"):
                return msg

    def raw_line(timeout, start=None):
        deadline = time.monotonic() + timeout
        while b"\n" not in bufs["chan"] and time.monotonic() < deadline:
            for key, _ in sel.select(max(0, deadline - time.monotonic())):
                data = os.read(key.fileobj.fileno(), 1 << 20)
                if not data:
                    sel.unregister(key.fileobj)
                    if key.data == "chan":
                        return None
                if key.data == "out" and data and first[0] is None and start is not None:
                    first[0] = time.monotonic() - start
                bufs[key.data] += data
        if b"\n" not in bufs["chan"]:
            return None
        text, bufs["chan"] = bufs["chan"].split(b"\n", 1)
        try:  # as strictly as the host: no NaN/Infinity, valid UTF-8
            return json.loads(text.decode("utf-8"), parse_constant=reject)
        except ValueError as exc:
            return {"invalid": "%s: %r" % (exc, text[:300])}

    def wait_for(text, timeout):
        """Until text is in the cell's stdout (SIGINT before the cell runs
        is rightly ignored; a loaded machine may be slow to start it)."""
        deadline = time.monotonic() + timeout
        while text not in bufs["out"] and time.monotonic() < deadline:
            for key, _ in sel.select(max(0, deadline - time.monotonic())):
                data = os.read(key.fileobj.fileno(), 1 << 20)
                if not data:
                    sel.unregister(key.fileobj)
                    if key.data == "chan":
                        return
                bufs[key.data] += data

    out = [line(60)]
    for i, cell in enumerate(cells, 1):
        msg = {"op": "run", "id": i, "code": cell["code"]}
        if "env" in cell:
            msg["env"] = cell["env"]
        bufs["out"] = bufs["err"] = b""
        first[0] = None
        start = time.monotonic()
        chan.sendall((json.dumps(msg) + "\n").encode())
        if "interrupt_after" in cell:  # SIGINT to the group, as the host does
            wait_for(b"started\n", 30)
            line(cell["interrupt_after"], start)
            os.killpg(proc.pid, signal.SIGINT)
        done = line(cell.get("timeout", 60), start)
        time.sleep(0.05)
        for key, _ in sel.select(0):
            if key.data != "chan":
                bufs[key.data] += os.read(key.fileobj.fileno(), 1 << 20)
        out.append({"done": done, "stdout": bufs["out"].decode("utf-8", "replace"),
                    "stderr": bufs["err"].decode("utf-8", "replace"), "first_stdout_s": first[0]})
    chan.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
