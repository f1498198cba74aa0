#!/usr/bin/env python3
"""MCP resources (issue #15): the files a run makes come back as
resource_link content, resources/read returns them byte-exact (text or
base64 blob), resources/list and resources/templates/list, the
not-found codes, hostile URIs and files, and the inline output cap with
the whole output kept in the sandbox.

usage: resources.py stdio            (starts its own `nsbox serve` over stdio)
       resources.py http PORT        (a running `serve --http` without a token:
                                      two sessions, one must not read the other's)
Environment: NSBOX, NSBOX_STORE (python and busybox images), SUITE.
Prints PASS/FAIL lines; exits 1 when a test failed."""
import base64
import json
import os
import secrets
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(__file__))
import stdio_client  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="mcp", prefix="resources/")

MODE = sys.argv[1] if len(sys.argv) > 1 else "stdio"
PREFIX = "nsbox://sandboxes/"
NOT_FOUND_LEGACY = -32002
INLINE_DEFAULT = 32 << 10


def png_bytes():
    """A valid 2x2 RGB PNG."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\0" + bytes([255, 0, 0, 0, 255, 0]) for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


CSV = "name,value\nalpha,1\nbeta,2\n"
PNG = png_bytes()
BIN = bytes(range(256)) * 4 + b"\xff\xfe\x00"
ODD_NAME = "odd name é %?#.txt"


class Http:
    """One Streamable HTTP session (tests/lib/mcphttp.py)."""

    def __init__(self, port):
        self.port, self.sid, self.n = port, None, 0
        r = self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "resources.py", "version": "1"}})
        self.init = r
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg):
        r = mcphttp.post(self.port, msg, self.sid, timeout=120)
        self.sid = self.sid or r.headers.get("mcp-session-id")
        return r.messages

    def req(self, method, params):
        self.n += 1
        for m in self.post({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}):
            if m.get("id") == self.n:
                return m
        raise RuntimeError(f"{method}: no response")

    def tool(self, name, **args):
        return self.req("tools/call", {"name": name, "arguments": args})["result"]

    def close(self):
        mcphttp.request(self.port, "DELETE", headers={"Mcp-Session-Id": self.sid}, timeout=30)


def links(result):
    return [c for c in result["content"] if c["type"] == "resource_link"]


def read(client, uri, meta=None):
    params = {"uri": uri} | ({"_meta": meta} if meta else {})
    return client.req("resources/read", params)


def expect_not_found(r, uri, code=NOT_FOUND_LEGACY):
    if "error" not in r:
        return f"expected an error, got {str(r)[:200]}"
    e = r["error"]
    if e["code"] != code or (e.get("data") or {}).get("uri") != uri:
        return f"expected {code} with data.uri, got {e}"
    return None


def uri_of(sid, path):
    """The URI the server must name path by (uri.h's encoding)."""
    safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/"
    enc = "".join(chr(b) if chr(b) in safe else f"%{b:02X}" for b in path.lstrip("/").encode())
    return f"{PREFIX}{sid}/files/{enc}"


def make_files_code():
    return (
        "import base64\n"
        f"open('out.csv','w').write({CSV!r})\n"
        f"open('plot.png','wb').write(base64.b64decode({base64.b64encode(PNG).decode()!r}))\n"
        f"open('data.bin','wb').write(base64.b64decode({base64.b64encode(BIN).decode()!r}))\n"
        f"open({ODD_NAME!r},'w').write('odd')\n"
        "print('made')\n")


def stdio_tests():
    s = stdio_client.Server(store=os.environ.get("NSBOX_STORE", ""))
    state = {}

    @nt.test("capability_declared")
    def _():
        r = stdio_client.Server(store=os.environ.get("NSBOX_STORE", ""))
        try:
            # The Server helper discards initialize's answer: ask again.
            caps = r.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "1"}})["result"]["capabilities"]
        finally:
            r.close()
        return None if "resources" in caps else f"capabilities: {caps}"

    @nt.test("empty_session_lists_nothing")
    def _():
        r = s.req("resources/list", {})
        return None if r.get("result", {}).get("resources") == [] else f"{r}"

    @nt.test("templates_list")
    def _():
        t = s.req("resources/templates/list", {})["result"]["resourceTemplates"]
        if [x["uriTemplate"] for x in t] != ["nsbox://sandboxes/{sandbox_id}/files/{+path}"]:
            return f"{t}"
        return None if all(x.get("name") for x in t) else f"a template without a name: {t}"

    sid = s.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
    state["sid"] = sid

    @nt.test("run_files_become_resource_links")
    def _():
        r = s.tool("execute_code", sandbox_id=sid, code=make_files_code())
        state["run"] = r
        sc = r["structuredContent"]
        if sc["stdout"] != "made\n":
            return f"the run failed: {sc}"
        by_path = {f["path"]: f for f in sc["files"]}
        want = {"out.csv": ("text/csv", len(CSV)), "plot.png": ("image/png", len(PNG)),
                "data.bin": ("application/octet-stream", len(BIN)),
                ODD_NAME: ("text/plain", 3)}
        ls = {ln["uri"]: ln for ln in links(r)}
        for path, (mime, size) in want.items():
            f = by_path.get(path)
            uri = uri_of(sid, "/workspace/" + path)
            if f is None or f.get("uri") != uri:
                return f"files entry of {path}: {f} (want uri {uri})"
            ln = ls.get(uri)
            if ln is None:
                return f"no resource_link for {path} ({uri}) in {list(ls)}"
            if ln["mimeType"] != mime or ln["size"] != size or ln["name"] != path:
                return f"link of {path}: {ln}"
        if not any(c["type"] == "image" and base64.b64decode(c["data"]) == PNG for c in r["content"]):
            return "the PNG is no longer inline as an image"
        if "%C3%A9%20%25%3F%23.txt" not in uri_of(sid, "/workspace/" + ODD_NAME):
            return "test bug: the odd name's encoding"
        return None

    @nt.test("read_text_csv")
    def _():
        uri = uri_of(sid, "/workspace/out.csv")
        c = read(s, uri)["result"]["contents"]
        if len(c) != 1 or c[0] != {"uri": uri, "mimeType": "text/csv", "text": CSV}:
            return f"{c}"

    @nt.test("read_blob_png_exact")
    def _():
        c = read(s, uri_of(sid, "/workspace/plot.png"))["result"]["contents"][0]
        if c.get("mimeType") != "image/png" or "text" in c or base64.b64decode(c["blob"]) != PNG:
            return f"{str(c)[:200]}"

    @nt.test("read_blob_binary_exact")
    def _():
        c = read(s, uri_of(sid, "/workspace/data.bin"))["result"]["contents"][0]
        if c.get("mimeType") != "application/octet-stream" or base64.b64decode(c["blob"]) != BIN:
            return f"{str(c)[:200]}"

    @nt.test("read_percent_encoded_name")
    def _():
        c = read(s, uri_of(sid, "/workspace/" + ODD_NAME))["result"]["contents"][0]
        return None if c.get("text") == "odd" else f"{c}"

    @nt.test("read_any_file_of_own_sandbox")
    def _():
        # Not only what a run reported: the template names every file.
        c = read(s, uri_of(sid, "/etc/os-release"))
        return None if "text" in c.get("result", {}).get("contents", [{}])[0] else f"{str(c)[:200]}"

    @nt.test("list_newest_first")
    def _():
        s.tool("run_command", sandbox_id=sid, command="echo new > /workspace/newer.txt")
        res = s.req("resources/list", {})["result"]["resources"]
        uris = [x["uri"] for x in res]
        if not uris or uris[0] != uri_of(sid, "/workspace/newer.txt"):
            return f"newest first: {uris[:3]}"
        for p in ("out.csv", "plot.png", "data.bin"):
            if uri_of(sid, "/workspace/" + p) not in uris:
                return f"{p} not listed: {uris}"
        if any(not (x.get("name") and x.get("mimeType")) for x in res):
            return f"an entry without name or mimeType: {res}"

    @nt.test("list_cursor")
    def _():
        r = s.req("resources/list", {"cursor": "not-a-cursor"})
        return None if r.get("error", {}).get("code") == -32602 else f"{r}"

    @nt.test("not_found_legacy_code")
    def _():
        for uri in ["test://nonexistent-resource-for-conformance-testing",
                    uri_of(sid, "/workspace/missing.txt"),
                    uri_of(secrets.token_hex(16), "/etc/os-release")]:
            why = expect_not_found(read(s, uri), uri)
            if why:
                return f"{uri}: {why}"

    @nt.test("missing_uri_is_invalid_params")
    def _():
        r = s.req("resources/read", {})
        return None if r.get("error", {}).get("code") == -32602 else f"{r}"

    @nt.test("not_found_2026_07_28_code")
    def _():
        probe = s.req("server/discover", {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}})
        if probe.get("error", {}).get("code") == -32601:
            print("# 2026-07-28 is not served by this build (no server/discover): "
                  "its not-found code is checked once it is", flush=True)
            return None
        uri = uri_of(sid, "/workspace/missing.txt")
        return expect_not_found(read(s, uri, {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                              "io.modelcontextprotocol/clientCapabilities": {}}),
                                uri, -32602)

    @nt.test("no_links_before_2025_06_18")
    def _():
        # resource_link came with 2025-06-18: an older client's schema
        # would refuse the whole result.  Its URIs stay in files[].uri.
        o = stdio_client.Server(store=os.environ.get("NSBOX_STORE", ""))
        try:
            o.req("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                 "clientInfo": {"name": "old", "version": "1"}})
            osid = o.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
            r = o.tool("run_command", sandbox_id=osid, command="echo a > /workspace/f.txt")
            uri = uri_of(osid, "/workspace/f.txt")
            if links(r) or r["structuredContent"]["files"][0].get("uri") != uri:
                return f"{r['content'][1:]} / {r['structuredContent']['files']}"
            c = read(o, uri)["result"]["contents"][0]
            return None if c.get("text") == "a\n" else f"{c}"
        finally:
            o.close()

    hostile_tests(s, sid)
    output_tests(s, sid)

    @nt.test("stopped_sandbox_gone")
    def _():
        s.tool("sandbox_stop", sandbox_id=sid)
        uri = uri_of(sid, "/workspace/out.csv")
        why = expect_not_found(read(s, uri), uri)
        if why:
            return why
        res = s.req("resources/list", {})["result"]["resources"]
        return None if not any(sid in x["uri"] for x in res) else f"still listed: {res[:2]}"

    s.close()


def hostile_tests(s, sid):
    # A file only the host has: the sandbox's view of the same path must
    # not reach it.
    secret = f"host-secret-{secrets.token_hex(8)}"
    host_path = f"/tmp/nsbox-resources-{secrets.token_hex(6)}"
    with open(host_path, "w") as f:
        f.write(secret)
    s.tool("run_command", sandbox_id=sid, command=(
        f"cd /workspace && ln -s {host_path} link_abs && ln -s ../../../../../..{host_path} link_rel && "
        "ln -s /proc/1/root/etc/hostname link_proc && mkfifo fifo && mkdir adir && "
        "head -c 9437184 /dev/zero > huge && echo inside > plain"))
    try:
        @nt.test("hostile/traversal_uris_refused")
        def _():
            for uri in [f"{PREFIX}{sid}/files/../../etc/passwd",
                        f"{PREFIX}{sid}/files/workspace/../../etc/passwd",
                        f"{PREFIX}{sid}/files/%2E%2E/%2E%2E/etc/passwd",
                        f"{PREFIX}{sid}/files/workspace%2F..%2F..%2Fetc%2Fpasswd",
                        f"{PREFIX}{sid}/files/workspace/plain%00.txt",
                        f"{PREFIX}{sid}/files//etc/passwd",
                        f"{PREFIX}{sid}/files/workspace/%70lain",  # an encoded unreserved byte
                        f"{PREFIX}{sid.upper()}/files/workspace/plain",
                        f"{PREFIX}{sid}/files/" + "a/" * 3000 + "b",
                        "file:///etc/passwd"]:
                r = read(s, uri)
                why = expect_not_found(r, uri)
                if why:
                    return f"{uri[:120]}: {why}"
            # The canonical spelling of the same file does read.
            c = read(s, uri_of(sid, "/workspace/plain"))["result"]["contents"][0]
            return None if c.get("text") == "inside\n" else f"plain: {c}"

        @nt.test("hostile/symlink_out_stays_inside")
        def _():
            for name in ("link_abs", "link_rel"):
                uri = uri_of(sid, "/workspace/" + name)
                r = read(s, uri)
                if secret in json.dumps(r):
                    return f"{name} read the host's file: {r}"
                why = expect_not_found(r, uri)
                if why:
                    return f"{name}: {why}"

        @nt.test("hostile/magic_link_refused")
        def _():
            uri = uri_of(sid, "/workspace/link_proc")
            return expect_not_found(read(s, uri), uri)

        @nt.test("hostile/fifo_directory_refused")
        def _():
            for name in ("fifo", "adir"):
                uri = uri_of(sid, "/workspace/" + name)
                why = expect_not_found(read(s, uri), uri)
                if why:
                    return f"{name}: {why}"

        @nt.test("hostile/huge_file_capped")
        def _():
            uri = uri_of(sid, "/workspace/huge")
            r = read(s, uri)
            e = r.get("error")
            if e is None or e["code"] != -32602 or e.get("data", {}).get("size") != 9437184:
                return f"{str(r)[:300]}"
            if "read_file" not in e["message"]:
                return f"the message does not say how to read it: {e['message']}"
    finally:
        os.unlink(host_path)


def output_tests(s, sid):
    big_out = "".join(f"line {i:06d} of stdout\n" for i in range(12000))  # ~250 KB
    big_err = "E" * 60000
    code = ("import sys\n"
            "sys.stdout.write(''.join(f'line {i:06d} of stdout\\n' for i in range(12000)))\n"
            "sys.stderr.write('E' * 60000)\n"
            "open('/workspace/made.txt','w').write('x')\n")

    @nt.test("output/inline_capped_and_kept")
    def _():
        r = s.tool("execute_code", sandbox_id=sid, code=code)
        sc = r["structuredContent"]
        out, err = sc["stdout"], sc["stderr"]
        marker = "[nsbox: "
        if marker not in out or marker not in err:
            return f"no marker: stdout {len(out)} stderr {len(err)}"
        body = len(out) + len(err) - len(out[out.index("\n" + marker):].split("]\n", 1)[0]) - \
            len(err[err.index("\n" + marker):].split("]\n", 1)[0])
        if body > INLINE_DEFAULT + 16:
            return f"{body} bytes inline besides the markers"
        if not out.startswith("line 000000") or not out.endswith("line 011999 of stdout\n"):
            return "not head and tail"
        if sc.get("stdout_bytes") != len(big_out) or sc.get("stderr_bytes") != len(big_err):
            return f"sizes: {sc.get('stdout_bytes')} {sc.get('stderr_bytes')}"
        ls = {ln["uri"]: ln for ln in links(r)}
        for key, whole in (("stdout", big_out), ("stderr", big_err)):
            uri = sc.get(f"{key}_uri")
            if not uri or uri not in ls or ls[uri]["size"] != len(whole):
                return f"{key}_uri {uri} not linked: {list(ls)}"
            if sc[f"{key}_path"] not in out + err:
                return f"the marker does not name {sc[f'{key}_path']}"
            c = read(s, uri)["result"]["contents"][0]
            if c.get("text") != whole:
                return f"{key} read back differs ({len(c.get('text', ''))} bytes)"
        if uri_of(sid, "/workspace/made.txt") not in ls:
            return "the run's file lost its link"

    @nt.test("output/max_inline_kb")
    def _():
        r = s.tool("execute_code", sandbox_id=sid, code=code, max_inline_kb=1)
        sc = r["structuredContent"]
        if len(sc["stdout"]) + len(sc["stderr"]) > 1024 + 2 * 600:
            return f"{len(sc['stdout'])} + {len(sc['stderr'])}"
        r = s.tool("execute_code", sandbox_id=sid, code=code, max_inline_kb=1024)
        sc = r["structuredContent"]
        if sc["stdout"] != big_out or sc.get("stdout_uri") is not None:
            return "max_inline_kb=1024 still cut"

    @nt.test("output/max_inline_kb_over_ceiling")
    def _():
        r = s.tool("execute_code", sandbox_id=sid, code="print(1)", max_inline_kb=4096)
        t = r["content"][0]["text"]
        return None if r.get("isError") and "max-inline-kb" in t else f"{r}"

    @nt.test("output/one_shot_not_kept")
    def _():
        r = s.tool("execute_code", code=code)
        sc = r["structuredContent"]
        if "[nsbox: " not in sc["stdout"] or "not kept" not in sc["stdout"]:
            return "the marker does not say the output is not kept"
        if sc.get("stdout_uri") or links(r):
            return f"a one-shot run linked {links(r)} / {sc.get('stdout_uri')}: its sandbox is gone"
        return None if sc.get("stdout_cut") is True else f"{ {k: v for k, v in sc.items() if 'std' in k and k not in ('stdout', 'stderr')} }"

    @nt.test("output/small_output_untouched")
    def _():
        sc = s.tool("execute_code", sandbox_id=sid, code="print('hi')")["structuredContent"]
        return None if sc["stdout"] == "hi\n" and "stdout_cut" not in sc else f"{sc}"


def http_tests(port):
    a, b = Http(port), Http(port)

    @nt.test("http/capability_declared")
    def _():
        return None if "resources" in a.init["result"]["capabilities"] else f"{a.init}"

    sid = a.tool("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
    r = a.tool("execute_code", sandbox_id=sid, code=make_files_code())
    uri = uri_of(sid, "/workspace/out.csv")

    @nt.test("http/owner_reads")
    def _():
        if uri not in [ln["uri"] for ln in links(r)]:
            return f"no link: {links(r)}"
        c = read(a, uri)["result"]["contents"][0]
        return None if c.get("text") == CSV else f"{c}"

    @nt.test("http/other_session_cannot_read")
    def _():
        for u in (uri, uri_of(sid, "/etc/os-release")):
            got = read(b, u)
            if CSV in json.dumps(got):
                return f"session B read A's file: {got}"
            why = expect_not_found(got, u)
            if why:
                return why
        other = b.req("resources/list", {})["result"]["resources"]
        return None if other == [] else f"B lists A's files: {other}"

    @nt.test("http/other_session_read_file_refused")
    def _():
        # A's sandbox id in B's tools is as unknown as in B's resources.
        t = b.tool("read_file", sandbox_id=sid, path="/workspace/out.csv")
        return None if t.get("isError") else f"{t}"

    a.tool("sandbox_stop", sandbox_id=sid)
    a.close()
    b.close()


if __name__ == "__main__":
    if MODE == "http":
        http_tests(int(sys.argv[2]))
    else:
        stdio_tests()
    nt.finish()
