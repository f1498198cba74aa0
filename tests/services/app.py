#!/usr/bin/env python3
"""A small web app the preview tests run inside a sandbox (copied in with
write_file): GET echoes what it saw as JSON (path, headers, the upstream
connection's id and request number), POST the body's length and sha256
(Content-Length or chunked), /ws a WebSocket echo (RFC 6455), /flood a
WebSocket that sends without end, /bad a malformed response, /headers an
endless header section.  usage: app.py PORT [HOST]"""
import base64
import hashlib
import http.server
import json
import socketserver
import sys
import itertools

CONN_IDS = itertools.count(1)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.conn_id = next(CONN_IDS)
        self.n = 0

    def log_message(self, *a):
        pass

    def reply(self, obj, status=200):
        b = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def seen(self, **kw):
        self.n += 1
        return {"path": self.path, "method": self.command, "conn": self.conn_id, "n": self.n,
                "headers": {k.lower(): v for k, v in self.headers.items()}, **kw}

    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        if self.path == "/bad":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: nonsense\r\n\r\n\x00\xff garbage")
            self.close_connection = True
            return
        if self.path == "/headers":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            try:
                while True:
                    self.wfile.write(b"X-Endless: " + b"a" * 1000 + b"\r\n")
            except OSError:
                return
        if self.path.startswith("/page"):
            b = b"<!doctype html><html><head><base href=\"./\"></head><body>hi</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)
            return
        self.reply(self.seen())

    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.reply(self.seen(length=len(body), sha256=hashlib.sha256(body).hexdigest()))

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"]
        acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc.decode())
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        if self.path == "/flood":
            frame = bytes([0x82, 126]) + (65535 - 4).to_bytes(2, "big") + b"\xaa" * (65535 - 4)
            try:
                while True:
                    self.wfile.write(frame)
            except OSError:
                return
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, ln = h[0] & 0x0F, h[1] & 0x7F
            if ln == 126:
                ln = int.from_bytes(self.rfile.read(2), "big")
            elif ln == 127:
                ln = int.from_bytes(self.rfile.read(8), "big")
            mask = self.rfile.read(4) if h[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(ln)))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                return
            hdr = bytes([0x80 | op]) + (bytes([len(data)]) if len(data) < 126 else bytes([126]) + len(data).to_bytes(2, "big"))
            self.wfile.write(hdr + data)
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    Server((sys.argv[2] if len(sys.argv) > 2 else "0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
