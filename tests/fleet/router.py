#!/usr/bin/env python3
"""HAProxy's runtime API (the stats socket of deploy/haproxy/haproxy.cfg),
for tests/integration/fleet.sh and tests/fleet/ctl.sh.

usage: router.py SOCKET status               one line per server: NAME STATUS
       router.py SOCKET cmd COMMAND...        one runtime API command; prints its answer
       router.py SOCKET wait NAME STATE SECS  until server NAME's status starts
                                             with STATE (UP, DOWN, MAINT...);
                                             exits 1 at the time limit"""
import csv
import io
import socket
import sys
import time


def command(path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(cmd.encode() + b"\n")
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out.decode()


def status(path):
    text = command(path, "show stat").lstrip("# ")
    return {r["svname"]: r["status"] for r in csv.DictReader(io.StringIO(text))
            if r["pxname"] == "nsbox" and r["svname"] not in ("BACKEND", "FRONTEND")}


def main():
    path, verb = sys.argv[1], sys.argv[2]
    if verb == "cmd":
        sys.stdout.write(command(path, " ".join(sys.argv[3:])))
        return 0
    if verb == "status":
        for name, st in sorted(status(path).items()):
            print(name, st)
        return 0
    name, state, secs = sys.argv[3], sys.argv[4], float(sys.argv[5])
    end = time.monotonic() + secs
    last = None
    while time.monotonic() < end:
        try:
            last = status(path).get(name)
            if last and last.startswith(state):
                return 0
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    print(f"router.py: {name} is {last}, not {state}, after {secs} s", file=sys.stderr)
    return 1


sys.exit(main())
