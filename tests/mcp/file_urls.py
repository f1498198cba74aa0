#!/usr/bin/env python3
"""Files by signed URL over HTTP (issue #15): `GET /files/TOKEN` and
`PUT /files/TOKEN` against a real `nsbox serve --http` with real sandboxes.

A 64 MiB file made in a sandbox goes out by its download_url byte-exact
(sha256), a 64 MiB upload goes in by upload_url + PUT byte-exact and code in
the sandbox sees it.  Hostile: expired, tampered (MAC and payload), spliced
onto another sandbox or session, a ".." path (forged with a wrong key; and
asked of upload_url), a symlink planted at the path (to /etc/passwd, to
outside), a FIFO, a directory, a PUT over its cap (413, the old file intact,
no hidden file left), an upload cut off midway, URLs after the sandbox
stopped and after the session ended (404), a URL of another server (the key
dies with the server), Host checked though no bearer token is needed.
The server must stay up through all of it.

usage: file_urls.py STORE   (NSBOX: the binary; SUITE: the prefix)
Prints PASS/FAIL lines; exits 1 when a test failed."""
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="file_urls")

NSBOX = os.environ.get("NSBOX") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox")
STORE = sys.argv[1]
BIG = 64 << 20
TOKEN = "file-urls-test-token-0123456789abcdef"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "file_urls.py", "version": "1"}}


class Server:
    def __init__(self, *args, token=None):
        env = dict(os.environ)
        env.pop("NSBOX_TOKEN", None)
        if token:
            env["NSBOX_TOKEN"] = token
        self.token = token
        self.p = subprocess.Popen([NSBOX, "--store", STORE, "serve", "--http", "127.0.0.1:0", *args],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=env)
        self.port = None
        end = time.time() + 20
        while self.port is None and time.time() < end:
            line = self.p.stderr.readline().decode()
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
            if not line and self.p.poll() is not None:
                break
        if self.port is None:
            raise RuntimeError("the HTTP server did not start")
        threading.Thread(target=self.p.stderr.read, daemon=True).start()
        self.n = 0

    def conn(self, timeout=120):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def auth(self):
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def rpc(self, sid, method, params):
        self.n += 1
        r = mcphttp.post(self.port, {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params},
                         sid, headers=self.auth(), timeout=300)
        return r.response(self.n), r.headers.get("mcp-session-id")

    def session(self):
        r, sid = self.rpc(None, "initialize", INIT)
        if not sid:
            raise RuntimeError(f"initialize: {r}")
        mcphttp.post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid,
                     headers=self.auth())
        return sid

    def tool(self, sid, name, args, ok=True):
        r, _ = self.rpc(sid, "tools/call", {"name": name, "arguments": args})
        res = r["result"]
        if ok and res.get("isError"):
            raise RuntimeError(f"{name}: {res['content'][0]['text']}")
        return res

    def run(self, sid, box, command):
        return self.tool(sid, "run_command", {"sandbox_id": box, "command": command,
                                              "timeout_s": 120})["structuredContent"]

    def create(self, sid):
        return self.tool(sid, "sandbox_create", {})["structuredContent"]["sandbox_id"]

    def delete(self, sid):
        mcphttp.request(self.port, "DELETE", headers={**self.auth(), "Mcp-Session-Id": sid})

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()


def path_of(url):
    return "/" + url.split("/", 3)[3]


def http_req(srv, method, url, body=None, headers=None, read=True):
    """(status, headers, body bytes or the response) of one request."""
    c = srv.conn()
    c.request(method, path_of(url), body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read() if read else r
    st, hd = r.status, {k.lower(): v for k, v in r.getheaders()}
    if read:
        c.close()
    return st, hd, data


def get_sha(srv, url):
    """GET streamed: (status, headers, sha256 hex, byte count)."""
    c = srv.conn()
    c.request("GET", path_of(url))
    r = c.getresponse()
    h, n = hashlib.sha256(), 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, h.hexdigest(), n


def file_entry(rec, name):
    for f in rec.get("files", []):
        if f.get("path") == name:
            return f
    raise RuntimeError(f"{name} not in files: {[f.get('path') for f in rec.get('files', [])]}")


def sha_in(srv, sid, box, path):
    out = srv.run(sid, box, f"python3 -c \"import hashlib,sys; print(hashlib.sha256(open('{path}','rb').read()).hexdigest())\"")
    return out["stdout"].strip()


def refused(st, body, status, words):
    if st != status:
        return f"status {st} (expected {status}): {body[:200]!r}"
    if words.lower() not in body.decode(errors="replace").lower():
        return f"the refusal does not say {words!r}: {body[:200]!r}"
    return None


def b64d(t):
    return base64.urlsafe_b64decode(t + "=" * (-len(t) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def fields(raw):
    """The token's fields (see mcp/files/token.h) as a dict with offsets."""
    p = 18
    lo = raw[p]
    owner = raw[p + 1:p + 1 + lo]
    p += 1 + lo
    li = raw[p]
    sbx = raw[p + 1:p + 1 + li]
    p += 1 + li
    lp = raw[p] << 8 | raw[p + 1]
    path = raw[p + 2:p + 2 + lp]
    return {"owner": owner, "sandbox": sbx, "path": path}


def build(method, expires, max_bytes, owner, sbx, path, mac_key=None, mac=None):
    body = bytes([1, method]) + expires.to_bytes(8, "big") + max_bytes.to_bytes(8, "big")
    body += bytes([len(owner)]) + owner + bytes([len(sbx)]) + sbx + len(path).to_bytes(2, "big") + path
    if mac is None:
        mac = hmac.new(mac_key, body, hashlib.sha256).digest()
    return b64e(body + mac)


def main():
    srv = Server("--file-url-ttl", "3600", "--max-upload-mb", "100")
    sid = srv.session()
    box = srv.create(sid)
    state = {}

    @nt.test("tools_list_over_http_and_not_stdio")
    def _():
        r, _ = srv.rpc(sid, "tools/list", {})
        names = [t["name"] for t in r["result"]["tools"]]
        if "upload_url" not in names:
            return f"upload_url not offered over HTTP: {names}"
        p = subprocess.run([NSBOX, "--store", STORE, "serve"], input=(json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}) + "\n" + json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n" + json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n" + json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_file", "arguments": {
                "sandbox_id": "x", "path": "a", "url": True}}}) + "\n").encode(),
            capture_output=True, timeout=60)
        answers = {m.get("id"): m for m in map(json.loads, p.stdout.decode().splitlines())}
        if 2 not in answers or 3 not in answers:
            return f"no answers over stdio: {p.stdout[:300]!r}"
        if "upload_url" in [t["name"] for t in answers[2]["result"]["tools"]]:
            return "upload_url offered over stdio"
        res = answers[3]["result"]
        if not res.get("isError") or "HTTP" not in res["content"][0]["text"]:
            return f"read_file url over stdio: {res}"
        return None

    @nt.test("download_64mib_byte_exact")
    def _():
        rec = srv.run(sid, box, "python3 -c \"import os,hashlib; d=os.urandom(%d); "
                      "open('/workspace/big.bin','wb').write(d); print(hashlib.sha256(d).hexdigest())\"" % BIG)
        want = rec["stdout"].strip()
        f = file_entry(rec, "big.bin")
        if "download_url" not in f or "download_expires_at" not in f:
            return f"no download_url in the files entry: {f}"
        state["big_url"] = f["download_url"]
        st, hd, got, n = get_sha(srv, f["download_url"])
        if st != 200 or n != BIG or got != want:
            return f"status {st}, {n} bytes, sha {got} (want {want})"
        if hd.get("content-length") != str(BIG):
            return f"Content-Length {hd.get('content-length')}"
        if 'attachment; filename="big.bin"' not in hd.get("content-disposition", ""):
            return f"Content-Disposition {hd.get('content-disposition')}"
        if hd.get("x-content-type-options") != "nosniff" or hd.get("content-type") != "application/octet-stream":
            return f"headers {hd}"
        # read_file {url: true}: the same file by a URL of its own, no content
        rf = srv.tool(sid, "read_file", {"sandbox_id": box, "path": "big.bin", "url": True})["structuredContent"]
        if rf["content"] != "" or rf["size"] != BIG or rf["path"] != "/workspace/big.bin":
            return f"read_file url: {dict(rf, download_url='...')}"
        st, hd, got, n = get_sha(srv, rf["download_url"])
        return None if st == 200 and got == want else f"read_file's URL: {st}, sha {got}"

    @nt.test("upload_64mib_byte_exact")
    def _():
        u = srv.tool(sid, "upload_url", {"sandbox_id": box, "path": "up/big.in"})["structuredContent"]
        if u["method"] != "PUT" or u["path"] != "/workspace/up/big.in" or u["max_bytes"] != 100 << 20:
            return f"upload_url answered {u}"
        data = os.urandom(BIG)
        st, _, body = http_req(srv, "PUT", u["url"], data, {"Content-Type": "application/octet-stream"})
        if st != 201 or json.loads(body)["bytes"] != BIG:
            return f"PUT: {st} {body[:200]!r}"
        got = sha_in(srv, sid, box, "/workspace/up/big.in")
        if got != hashlib.sha256(data).hexdigest():
            return f"the sandbox sees sha {got}"
        left = srv.run(sid, box, "ls -a /workspace/up")["stdout"].split()
        return f"files left beside it: {left}" if sorted(left) != [".", "..", "big.in"] else None

    @nt.test("upload_chunked_without_length")
    def _():
        u = srv.tool(sid, "upload_url", {"sandbox_id": box, "path": "/workspace/chunked.txt"})["structuredContent"]
        parts = [b"x" * 3000000, b"y" * 3000000, b"end\n"]
        c = srv.conn()
        c.request("PUT", path_of(u["url"]), body=iter(parts), encode_chunked=True,
                  headers={"Transfer-Encoding": "chunked"})
        r = c.getresponse()
        body = r.read()
        c.close()
        if r.status != 201:
            return f"PUT: {r.status} {body[:200]!r}"
        got = sha_in(srv, sid, box, "/workspace/chunked.txt")
        return None if got == hashlib.sha256(b"".join(parts)).hexdigest() else "content differs"

    @nt.test("expired_and_public_url")
    def _():
        s2 = Server("--file-url-ttl", "1", "--public-url", "https://files.example:8443/nsbox/")
        try:
            sid2 = s2.session()
            b2 = s2.create(sid2)
            u = s2.tool(sid2, "upload_url", {"sandbox_id": b2, "path": "late.txt"})["structuredContent"]
            if not u["url"].startswith("https://files.example:8443/nsbox/files/"):
                return f"--public-url not used: {u['url'][:80]}"
            time.sleep(2.5)
            # (a proxy at the public URL would strip /nsbox)
            st, _, body = http_req(s2, "PUT", "http://x/files/" + u["url"].rsplit("/", 1)[1], b"late")
            why = refused(st, body, 403, "expired")
            if why:
                return why
            out = s2.run(sid2, b2, "ls /workspace/late.txt 2>&1; true")["stdout"]
            return f"written after expiry: {out}" if "No such file" not in out else None
        finally:
            s2.close()

    @nt.test("concurrent_downloads_while_a_command_runs")
    def _():
        results = []

        def one():
            results.append(get_sha(srv, state["big_url"]))
        ts = [threading.Thread(target=one) for _ in range(3)]
        for t in ts:
            t.start()
        out = srv.run(sid, box, "sleep 1; echo done")
        for t in ts:
            t.join(120)
        want = sha_in(srv, sid, box, "/workspace/big.bin")
        bad = [(st, n) for st, _, got, n in results if st != 200 or got != want]
        if len(results) != 3 or bad or out["stdout"] != "done\n":
            return f"{len(results)} downloads, bad: {bad}, command: {out['stdout']!r}"
        return None

    @nt.test("tampered_mac_and_payload")
    def _():
        url = state["big_url"]
        tok = url.rsplit("/", 1)[1]
        base = url[:-len(tok)]
        for i in (len(tok) - 3, 5, len(tok) // 2):
            c = "A" if tok[i] != "A" else "B"
            st, _, body = http_req(srv, "GET", base + tok[:i] + c + tok[i + 1:])
            if st not in (400, 403) or b"token" not in body:
                return f"byte {i} flipped: {st} {body[:200]!r}"
        st, _, body = http_req(srv, "GET", base + tok + "A")
        return refused(st, body, 400, "malformed") if st != 403 else None

    @nt.test("spliced_onto_another_sandbox_and_session")
    def _():
        sid_b = srv.session()
        box_b = srv.create(sid_b)
        srv.run(sid_b, box_b, "echo secret > /workspace/secret.txt")
        raw = b64d(state["big_url"].rsplit("/", 1)[1])
        f = fields(raw)
        mac = raw[-32:]
        exp = int.from_bytes(raw[2:10], "big")
        base = state["big_url"].rsplit("/", 1)[0] + "/"
        for owner, sbx in ((f["owner"], box_b.encode()), (sid_b.encode(), box_b.encode()),
                           (sid_b.encode(), f["sandbox"])):
            t = build(1, exp, 0, owner, sbx, b"/workspace/secret.txt", mac=mac)
            st, _, body = http_req(srv, "GET", base + t)
            why = refused(st, body, 403, "invalid file token")
            if why:
                return why
        # session A may not mint a URL for session B's sandbox
        res = srv.tool(sid, "upload_url", {"sandbox_id": box_b, "path": "x"}, ok=False)
        if not res.get("isError") or "no sandbox" not in res["content"][0]["text"]:
            return f"upload_url on another session's sandbox: {res}"
        state["sid_b"], state["box_b"] = sid_b, box_b
        return None

    @nt.test("path_traversal")
    def _():
        raw = b64d(state["big_url"].rsplit("/", 1)[1])
        f = fields(raw)
        base = state["big_url"].rsplit("/", 1)[0] + "/"
        for p in (b"/workspace/../../../etc/passwd", b"/../etc/passwd", b"etc/passwd"):
            t = build(1, int(time.time()) + 600, 0, f["owner"], f["sandbox"], p, mac_key=b"k" * 32)
            st, _, body = http_req(srv, "GET", base + t)
            if st != 403 or b"root:" in body:
                return f"{p}: {st} {body[:200]!r}"
        for p in ("../../etc/passwd", "/workspace/../etc/x", "a/../../b"):
            res = srv.tool(sid, "upload_url", {"sandbox_id": box, "path": p}, ok=False)
            if not res.get("isError") or '".."' not in res["content"][0]["text"]:
                return f"upload_url {p}: {res}"
        return None

    @nt.test("symlink_fifo_directory_refused")
    def _():
        host_passwd = hashlib.sha256(open("/etc/passwd", "rb").read()).hexdigest()
        rec = srv.run(sid, box, "for f in l1 l2 fifo dir; do echo data > /workspace/$f; done")
        urls = {n: file_entry(rec, n)["download_url"] for n in ("l1", "l2", "fifo", "dir")}
        ups = {n: srv.tool(sid, "upload_url", {"sandbox_id": box, "path": n})["structuredContent"]["url"]
               for n in ("l1", "l2", "fifo", "dir")}
        srv.run(sid, box, "cd /workspace && rm l1 l2 fifo dir && ln -s /etc/passwd l1 && "
                "ln -s ../../../../../../etc/shadow l2 && mkfifo fifo && mkdir dir")
        sandbox_passwd = sha_in(srv, sid, box, "/etc/passwd")
        res = srv.tool(sid, "read_file", {"sandbox_id": box, "path": "l1", "url": True}, ok=False)
        if not res.get("isError") or "symlink" not in res["content"][0]["text"]:
            return f"read_file url on a symlink: {res}"
        for n, word in (("l1", "symlink"), ("l2", "symlink"), ("fifo", "fifo"), ("dir", "directory")):
            t0 = time.time()
            st, _, body = http_req(srv, "GET", urls[n])
            why = refused(st, body, 403, word)
            if why or b"root:" in body or time.time() - t0 > 20:
                return f"GET {n}: {why or body[:100]}"
            st, _, body = http_req(srv, "PUT", ups[n], b"evil\n")
            why = refused(st, body, 403, word)
            if why:
                return f"PUT {n}: {why}"
        if sha_in(srv, sid, box, "/etc/passwd") != sandbox_passwd:
            return "the sandbox's /etc/passwd changed"
        if hashlib.sha256(open("/etc/passwd", "rb").read()).hexdigest() != host_passwd:
            return "the host's /etc/passwd changed"
        out = srv.run(sid, box, "ls -a /workspace; readlink /workspace/l1")["stdout"]
        return f"hidden upload left: {out}" if ".nsbox-upload" in out else None

    @nt.test("too_large_put_413_old_file_intact")
    def _():
        srv.tool(sid, "write_file", {"sandbox_id": box, "path": "keep.txt", "content": "original\n"})
        u = srv.tool(sid, "upload_url", {"sandbox_id": box, "path": "keep.txt", "size_mb": 1})["structuredContent"]
        if u["max_bytes"] != 1 << 20:
            return f"max_bytes {u['max_bytes']}"
        # declared too large: refused before the body
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        s.sendall(f"PUT {path_of(u['url'])} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                  f"Content-Length: {2 << 20}\r\n\r\n".encode())
        head = s.recv(4096).decode(errors="replace")
        s.close()
        if not head.startswith("HTTP/1.1 413"):
            return f"declared 2 MiB: {head[:200]!r}"
        # undeclared (chunked) and too large: read, refused, nothing kept
        c = srv.conn()
        c.request("PUT", path_of(u["url"]), body=iter([b"z" * (1 << 20), b"z" * (1 << 20)]),
                  encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
        r = c.getresponse()
        body = r.read()
        c.close()
        why = refused(r.status, body, 413, "too large")
        if why:
            return "chunked: " + why
        out = srv.run(sid, box, "cat /workspace/keep.txt; ls -a /workspace")["stdout"]
        if not out.startswith("original\n") or ".nsbox-upload" in out:
            return f"after the refusal: {out[:300]!r}"
        return None

    @nt.test("cut_off_upload_leaves_nothing")
    def _():
        u = srv.tool(sid, "upload_url", {"sandbox_id": box, "path": "keep.txt"})["structuredContent"]
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        s.sendall(f"PUT {path_of(u['url'])} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                  f"Content-Length: {16 << 20}\r\n\r\n".encode())
        s.sendall(b"q" * (9 << 20))
        s.close()
        for _ in range(50):
            out = srv.run(sid, box, "cat /workspace/keep.txt; ls -a /workspace")["stdout"]
            if ".nsbox-upload" not in out:
                break
            time.sleep(0.2)
        if not out.startswith("original\n") or ".nsbox-upload" in out:
            return f"after the cut: {out[:300]!r}"
        return None

    @nt.test("host_checked_no_bearer_needed")
    def _():
        s3 = Server(token=TOKEN)
        try:
            sid3 = s3.session()
            b3 = s3.create(sid3)
            u = s3.tool(sid3, "upload_url", {"sandbox_id": b3, "path": "t.txt"})["structuredContent"]
            st, _, body = http_req(s3, "PUT", u["url"], b"hello\n")
            if st != 201:
                return f"PUT without a bearer token: {st} {body[:200]!r}"
            st, _, body = http_req(s3, "GET", "http://x/mcp")
            if st != 401:
                return f"/mcp without a token: {st}"
            st, _, body = http_req(s3, "PUT", u["url"], b"x", {"Host": "evil.example.com"})
            if st != 403 or b"Host" not in body:
                return f"evil Host: {st} {body[:200]!r}"
            # a URL of this server on another server: the key is per server
            st, _, body = http_req(srv, "PUT", u["url"], b"x")
            return refused(st, body, 403, "invalid file token")
        finally:
            s3.close()

    @nt.test("after_stop_and_session_end_404")
    def _():
        sid_b, box_b = state["sid_b"], state["box_b"]
        u_b = srv.tool(sid_b, "upload_url", {"sandbox_id": box_b, "path": "late"})["structuredContent"]["url"]
        up = srv.tool(sid, "upload_url", {"sandbox_id": box, "path": "late"})["structuredContent"]["url"]
        srv.tool(sid, "sandbox_stop", {"sandbox_id": box})
        st, _, body = http_req(srv, "GET", state["big_url"])
        why = refused(st, body, 404, "no sandbox")
        if why:
            return "GET after stop: " + why
        st, _, body = http_req(srv, "PUT", up, b"x")
        why = refused(st, body, 404, "no sandbox")
        if why:
            return "PUT after stop: " + why
        srv.delete(sid_b)
        st, _, body = http_req(srv, "PUT", u_b, b"x")
        return refused(st, body, 404, "session")

    @nt.test("server_still_up")
    def _():
        r, _ = srv.rpc(sid, "ping", {})
        return None if r and "result" in r and srv.p.poll() is None else f"ping: {r}"

    srv.close()


main()
nt.finish()
