#!/usr/bin/env python3
"""The local HTTPS services of issue #30's end-to-end tests and bench
(tests/integration/secrets.sh, tests/secrets/e2e.py,
tests/bench/secrets_bench.py): real TLS servers on 127.0.0.1 with
certificates of tests/secrets/mkcerts.sh's test CA, which the nsbox server
is told to trust (SSL_CERT_FILE) as a host trusts a real service.

usage: servers.py STATE CERTS [--api-token FILE] [--git-user USER --git-token FILE
                               --git-root DIR] NAME=KIND...
  KIND api    an API: /v1/... needs `Authorization: Bearer <the token>`
              (401 otherwise); /echo (any method) answers the request's
              method, path, headers and body as JSON (with the bound token
              in a header, the answer carries the value: the broker must
              scrub it); /redirect?to=URL a 302; /small 3 bytes;
              /bytes/N N bytes (the bench)
       other  no authentication: every path answers like /echo; /small and
              /bytes/N as above
       git    git smart-HTTP (`git http-backend` as CGI over the repositories
              of --git-root), every request needing basic auth
              USER:<the token> (401 with WWW-Authenticate otherwise)
  NAME.pem / NAME.key of CERTS are the server's certificate.
Writes STATE/ports.json ({"NAME": port, ...}) once every server listens,
and one JSON line per request to STATE/requests.jsonl: {"server", "method",
"path", "headers": [[name, value], ...], "body"} (the body latin-1, at most
64 KiB): what reached the service, the oracle of what the broker let
through and what it substituted.  HTTP/1.1 with keep-alive; request bodies
by Content-Length or chunked.  Runs until killed.  The bench imports it and
calls start() (its servers then run in its own threads)."""
import argparse
import base64
import http.server
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading
import urllib.parse

LOCK = threading.Lock()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60
    disable_nagle_algorithm = True  # a head and a body in two writes: no 40 ms delayed-ACK stall

    def log_message(self, *a):
        pass

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def log(self, body):
        rec = {"server": self.server.name, "method": self.command, "path": self.path,
               "headers": [[k, v] for k, v in self.headers.items()],
               "body": body[:65536].decode("latin-1")}
        with LOCK, open(self.server.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def send(self, code, body, ctype="application/json", extra=()):
        if isinstance(body, (dict, list)):
            body = (json.dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def echo(self, body):
        self.send(200, {"server": self.server.name, "method": self.command, "path": self.path,
                        "headers": [[k, v] for k, v in self.headers.items()],
                        "body": body.decode("latin-1")})

    def bytes_(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        chunk = bytes(1 << 20)
        while n > 0:
            k = min(n, len(chunk))
            self.wfile.write(chunk[:k] if k < len(chunk) else chunk)
            n -= k

    def handle_any(self):
        body = self.body()
        self.log(body)
        path = urllib.parse.urlsplit(self.path).path
        kind, a = self.server.kind, self.server.args
        if kind in ("api", "other") and path == "/small":
            return self.send(200, b"ok\n", "text/plain")
        if kind in ("api", "other") and path.startswith("/bytes/"):
            return self.bytes_(int(path[len("/bytes/"):]))
        if kind == "other":
            return self.echo(body)
        if kind == "api":
            if path == "/echo":
                return self.echo(body)
            if path == "/redirect":
                to = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("to", ["/"])[0]
                return self.send(302, b"", "text/plain", [("Location", to)])
            if self.headers.get("Authorization") != "Bearer " + a.api_token_value:
                return self.send(401, {"error": "unauthorized"})
            if path.startswith("/v1/"):
                return self.send(201 if self.command == "POST" else 200,
                                 {"ok": True, "items": ["alpha", "beta"], "marker": "api-answer-7Q3"})
            return self.send(404, {"error": "no such path"})
        # git: basic auth, then git http-backend as CGI
        want = "Basic " + base64.b64encode(f"{a.git_user}:{a.git_token_value}".encode()).decode()
        if self.headers.get("Authorization") != want:
            return self.send(401, b"auth needed\n", "text/plain", [("WWW-Authenticate", 'Basic realm="git"')])
        u = urllib.parse.urlsplit(self.path)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": a.git_root,
               "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": a.git_user, "REMOTE_ADDR": "127.0.0.1",
               "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": self.command,
               "PATH_INFO": urllib.parse.unquote(u.path), "QUERY_STRING": u.query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body))}
        for h in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(h):
                env["HTTP_" + h.upper().replace("-", "_")] = self.headers[h]
        p = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, out = p.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = p.stdout.partition(b"\n\n")
        code, extra, ctype = 200, [], "text/plain"
        for ln in head.decode("latin-1").splitlines():
            k, _, v = ln.partition(":")
            k, v = k.strip(), v.strip()
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k.lower() == "content-type":
                ctype = v
            elif k and k.lower() not in ("content-length", "transfer-encoding"):
                extra.append((k, v))
        self.send(code, out, ctype, extra)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


def start(state, certs, servers, api_token=None, git_user="git", git_token=None, git_root=None):
    """Starts the servers (NAME=KIND strings) in this process's threads;
    returns {NAME: port} (also written to STATE/ports.json)."""
    def read(p):
        return open(p).read().rstrip("\n") if p else None
    a = argparse.Namespace(api_token_value=read(api_token), git_token_value=read(git_token), git_user=git_user,
                           git_root=git_root)
    log = os.path.join(state, "requests.jsonl")
    open(log, "a").close()
    ports = {}
    for spec in servers:
        name, _, kind = spec.partition("=")
        if kind not in ("api", "other", "git"):
            raise ValueError(f"servers.py: {spec}: KIND is api, other or git")
        s = Server(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(certs, name + ".pem"), os.path.join(certs, name + ".key"))
        # (the handshake in the connection's own thread, on its first read: a
        # client that never sends a ClientHello holds up nobody else)
        s.socket = ctx.wrap_socket(s.socket, server_side=True, do_handshake_on_connect=False)
        s.name, s.kind, s.args, s.log = name, kind, a, log
        ports[name] = s.server_address[1]
        threading.Thread(target=s.serve_forever, daemon=True).start()
    tmp = os.path.join(state, "ports.json.tmp")
    with open(tmp, "w") as f:
        json.dump(ports, f)
    os.rename(tmp, os.path.join(state, "ports.json"))
    return ports


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("state")
    ap.add_argument("certs")
    ap.add_argument("--api-token")
    ap.add_argument("--git-user", default="git")
    ap.add_argument("--git-token")
    ap.add_argument("--git-root")
    ap.add_argument("servers", nargs="+")
    a = ap.parse_args()
    try:
        start(a.state, a.certs, a.servers, a.api_token, a.git_user, a.git_token, a.git_root)
    except ValueError as e:
        sys.exit(str(e))
    threading.Event().wait()


if __name__ == "__main__":
    main()
