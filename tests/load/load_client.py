"""The client side of tests/load/load_http.py: an MCP session over HTTP
(Client, Session: one connection per request; every answer checked, a
broken one raises Unexpected), the two exceptions every phase tells apart
(Unexpected: anything but a correct result or a cap's refusal; WrongOutput:
a result that is not the expected output), latency figures (percentile,
fmt_lat) and raw loopback connections from a chosen source address
(open_from, is_closed, split_closed).  Used by the driver and by its child
processes (load_workers.py).  Only the Python 3.11 standard library."""
import http.client
import json
import math
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402

BOTH = mcphttp.BOTH
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "load_http.py", "version": "1"}}
HEX32 = re.compile(r"[0-9a-f]{32}")


class Unexpected(Exception):
    """Anything but a correct result or a cap's refusal."""


class WrongOutput(Exception):
    pass


# ------------------------------------------------------------------ HTTP


class Client:
    """One client address; a new connection per request (as a browser-less
    client under load would churn them), so every request costs the server
    an accept and a thread."""

    def __init__(self, port, source="127.0.0.1", timeout=120):
        self.port, self.source, self.timeout = port, source, timeout

    def request(self, method, body=None, headers=None):
        return mcphttp.request(self.port, method, "/mcp", headers, body, self.timeout, self.source)


class Session:
    def __init__(self, client, sse=True):
        self.c, self.sse, self.sid, self.next_id = client, sse, None, 0
        self.lat = {}       # label -> [ms]
        self.calls = 0
        self.logs = 0       # notifications/message seen on POST streams
        self.cap_checks = 0  # refusals by the session's cap, at exactly the cap

    def send(self, method, body=None, accept=BOTH):
        """One HTTP request in this session; a broken connection raises
        Unexpected."""
        h = {"Accept": accept}
        if body is not None:
            h["Content-Type"] = "application/json"
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        try:
            r = self.c.request(method, json.dumps(body).encode() if body is not None else None, h)
        except (OSError, http.client.HTTPException) as e:
            raise Unexpected(f"{method} {body and body.get('method')}: "
                             f"{type(e).__name__}: {e}") from None
        self.calls += 1
        return r

    def rpc(self, method, params=None, accept=None):
        """The result of a request, or raises Unexpected."""
        self.next_id += 1
        rid = self.next_id
        r = self.send("POST", {"jsonrpc": "2.0", "id": rid, "method": method,
                               "params": params or {}},
                      accept or (BOTH if self.sse else "application/json"))
        if r.status != 200:
            raise Unexpected(f"{method}: {r}")
        # Exactly one response, ours, and last; anything before it is a
        # notification (a log line).
        if not r.messages or r.messages[-1].get("id") != rid:
            raise Unexpected(f"{method}: no response with id {rid}: {r}")
        for m in r.messages[:-1]:
            if "id" in m or m.get("method") != "notifications/message":
                raise Unexpected(f"{method}: a stray message on the stream: {m}")
            self.logs += 1
        resp = r.messages[-1]
        if "error" in resp or "result" not in resp:
            raise Unexpected(f"{method}: JSON-RPC error: {resp}")
        if method == "initialize":
            self.sid = r.headers.get("mcp-session-id")
        return resp["result"]

    def initialize(self, log_level=None):
        t0 = time.monotonic()
        self.rpc("initialize", INIT)
        if not self.sid or not HEX32.fullmatch(self.sid):
            raise Unexpected(f"initialize: bad Mcp-Session-Id {self.sid!r}")
        self.lat.setdefault("initialize", []).append((time.monotonic() - t0) * 1000)
        r = self.send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"})
        if r.status != 202:
            raise Unexpected(f"notifications/initialized: {r}")
        if log_level:
            self.rpc("logging/setLevel", {"level": log_level})

    def tool(self, name, args, label=None, caps=(), accept=None):
        """structuredContent of a tool's result; a cap's refusal (one of
        the exact messages in caps) comes back as the string; anything else
        raises Unexpected."""
        t0 = time.monotonic()
        res = self.rpc("tools/call", {"name": name, "arguments": args}, accept)
        ms = (time.monotonic() - t0) * 1000
        if res.get("isError"):
            text = "".join(c.get("text", "") for c in res.get("content", []))
            if text in caps:
                return text
            raise Unexpected(f"{name}: isError: {text!r}")
        self.lat.setdefault(label or name, []).append(ms)
        if "structuredContent" not in res:
            raise Unexpected(f"{name}: no structuredContent: {res}")
        return res["structuredContent"]

    def ping(self):
        t0 = time.monotonic()
        res = self.rpc("ping")
        if res != {}:
            raise Unexpected(f"ping: {res}")
        self.lat.setdefault("ping", []).append((time.monotonic() - t0) * 1000)

    def delete(self):
        """DELETE, then the session must be gone (404)."""
        t0 = time.monotonic()
        r = self.send("DELETE")
        if r.status != 200:
            raise Unexpected(f"DELETE: {r}")
        self.lat.setdefault("DELETE", []).append((time.monotonic() - t0) * 1000)
        r = self.send("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        if r.status != 404:
            raise Unexpected(f"a request after DELETE: {r}")

    def ping_without_session(self):
        """400 with a JSON-RPC error: the server read and answered."""
        r = self.send("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        if r.status != 400:
            raise Unexpected(f"ping without a session: {r}")


def percentile(values, q):
    """Nearest rank."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else float("nan")


def fmt_lat(values):
    return (f"p50 {percentile(values, .5):.0f} ms, p95 {percentile(values, .95):.0f} ms, "
            f"p99 {percentile(values, .99):.0f} ms, max {max(values):.0f} ms")


# ------------------------------------------------------ raw connections


def open_from(port, source, n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def is_closed(s, wait=0):
    """Whether the server closed s (EOF or reset), waiting at most wait
    seconds for it."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except (socket.timeout, BlockingIOError):
        return False
    except OSError:
        return True


def split_closed(socks, n_open):
    """(kept, closed): waits up to 3 s for the server to close those past
    n_open, then looks once more (well inside --idle-timeout)."""
    end = time.monotonic() + 3
    closed = []
    while time.monotonic() < end:
        closed = [s for s in socks if s in closed or is_closed(s)]
        if len(closed) >= len(socks) - n_open:
            break
        time.sleep(0.1)
    time.sleep(0.2)
    closed = [s for s in socks if s in closed or is_closed(s)]
    return [s for s in socks if s not in closed], closed
