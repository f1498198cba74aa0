"""MCP over HTTP for the Python test clients: one raw request, one SSE
parser, one JSON-RPC POST.  Only the standard library.

Import it from a test with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import mcphttp

Every request goes on a new connection to 127.0.0.1 and is sent exactly
as given: Host defaults to localhost:PORT (so DNS-rebinding checks pass),
Content-Length to the body's length, and a header given as None is not
sent at all (to test its absence)."""
import http.client
import json

BOTH = "application/json, text/event-stream"
ADDR = "127.0.0.1"


def parse_sse(lines, on_comment=None):
    """The events of an SSE stream, given as an iterable of byte lines
    (yielded as each one ends, so it can read a live stream): dicts with
    the fields the event had (id, event, retry; data with its lines joined
    by newlines).  An event with an empty data line (the priming event of
    2025-11-25: `id: N`, `retry: 1000`, `data:`) is an event like any
    other; comments (keep-alives) go to on_comment."""
    ev = {}
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line == "":
            if ev:
                yield ev
            ev = {}
        elif line.startswith(":"):
            if on_comment:
                on_comment(line[1:])
        else:
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            ev[k] = ev[k] + "\n" + v if k == "data" and k in ev else v
    if ev:
        yield ev


def messages_of(events):
    """The JSON-RPC messages among SSE events: the data of `message`
    events; events with empty data (priming) are never parsed."""
    return [json.loads(e["data"]) for e in events
            if e.get("event", "message") == "message" and e.get("data", "").strip()]


class Resp:
    """An HTTP answer: status, headers (lower-case names), body (bytes);
    sse, events (an SSE answer) and messages (the JSON-RPC messages of a
    JSON or SSE answer); json (a JSON answer's object, or None)."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        ctype = headers.get("content-type", "")
        self.sse = ctype.startswith("text/event-stream")
        self.events = list(parse_sse(body.splitlines(keepends=True))) if self.sse else []
        self.json = json.loads(body) if ctype.startswith("application/json") and body else None
        self.messages = messages_of(self.events) if self.sse else \
            [self.json] if self.json is not None else []

    def response(self, rid):
        """The response (result or error) to request id rid, or None."""
        for m in self.messages:
            if "id" in m and m["id"] == rid and ("result" in m or "error" in m):
                return m
        return None

    def error_code(self):
        return (self.json or {}).get("error", {}).get("code")

    def __repr__(self):
        return f"HTTP {self.status} {self.headers.get('content-type', '')} {self.body[:300]!r}"


def connect(port, timeout=60, source=None):
    return http.client.HTTPConnection(ADDR, port, timeout=timeout,
                                      source_address=(source, 0) if source else None)


def send(c, method, path="/mcp", headers=None, body=None, chunked=False):
    """Writes one request on connection c (headers as described above;
    chunked sends the body in 1 MiB chunks)."""
    c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    h = {"Host": f"localhost:{c.port}"}
    if body is not None:
        h["Transfer-Encoding" if chunked else "Content-Length"] = "chunked" if chunked else str(len(body))
    h.update(headers or {})
    for k, v in h.items():
        if v is not None:
            c.putheader(k, v)
    c.endheaders()
    if body is not None and chunked:
        for i in range(0, len(body), 1 << 20):
            part = body[i:i + (1 << 20)]
            c.send(b"%x\r\n%s\r\n" % (len(part), part))
        c.send(b"0\r\n\r\n")
    elif body is not None:
        c.send(body)


def request(port, method, path="/mcp", headers=None, body=None, timeout=60, source=None,
            chunked=False):
    """One request on a new connection; the whole answer as a Resp."""
    c = connect(port, timeout, source)
    try:
        send(c, method, path, headers, body, chunked)
        r = c.getresponse()
        data = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        c.close()


def post(port, msg, sid=None, version=None, headers=None, accept=BOTH, **kw):
    """POSTs one JSON-RPC message (a dict, or bytes as they are) with the
    session id and MCP-Protocol-Version when given; headers override.
    The answer's .messages are those of its JSON or SSE body."""
    h = {"Content-Type": "application/json", "Accept": accept}
    if sid:
        h["Mcp-Session-Id"] = sid
    if version:
        h["MCP-Protocol-Version"] = version
    h.update(headers or {})
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return request(port, "POST", headers=h, body=body, **kw)
