#!/usr/bin/env python3
"""The MCP file tools and `files` in results, against `nsbox serve` over
stdio, with the threat model's host-side file attacks: ../ traversal,
absolute paths, planted symlinks (absolute, relative, dangling, into /proc),
FIFOs and sockets, a sparse file, huge listings, odd file names, base64
bombs.  Each test names its attack.  Host canaries must stay untouched.

Prints `PASS: SUITE/name` / `FAIL: SUITE/name: why` lines; exits 1 on any
failure.  Environment: NSBOX, NSBOX_STORE (python and busybox images),
SUITE (default mcp_files), MCP_LOG_DIR.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="mcp_files")

HERE = os.path.dirname(os.path.abspath(__file__))
NSBOX = os.environ.get("NSBOX") or os.path.join(HERE, "..", "..", "build", "nsbox")
STORE = os.environ.get("NSBOX_STORE", "")
LOGDIR = os.environ.get("MCP_LOG_DIR") or tempfile.mkdtemp(prefix="nsbox-mcp-files.")


class Server:
    def __init__(self):
        args = [NSBOX] + (["--store", STORE] if STORE else []) + ["serve"]
        self.log = open(os.path.join(LOGDIR, "serve-files.log"), "w")
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log)
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "file-tests", "version": "1"}})
        self.notify("notifications/initialized")

    def notify(self, method):
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method, params):
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                       "params": params}).encode() + b"\n")
        self.p.stdin.flush()
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.n:
                return msg

    def call(self, tool, **args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        if "error" in r:
            raise RuntimeError(r["error"])
        return r["result"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def ok_result(r):
    return not r.get("isError") and "structuredContent" in r


def refused_with(r, text):
    """A tool error whose message is exactly text: the reason, not just
    any error (a crash or a wrong path is an error too)."""
    return r.get("isError") is True and [c.get("text") for c in r.get("content", [])] == [text]


def main():
    canary_path = f"/tmp/nsbox-host-canary-files-{os.getpid()}"  # runs side by side must not share it
    with open(canary_path, "w") as f:
        f.write("host secret\n")
    host_passwd = open("/etc/passwd").read()
    s = Server()
    sid = s.call("sandbox_create", language="python")["structuredContent"]["sandbox_id"]
    sh = lambda cmd: s.call("run_command", sandbox_id=sid, command=cmd)["structuredContent"]

    # Round trips: text and binary.
    w = s.call("write_file", sandbox_id=sid, path="hello.py", content="print('hi')\n")
    r = s.call("read_file", sandbox_id=sid, path="hello.py")["structuredContent"]
    nt.result("write_read_text", ok_result(w) and r["content"] == "print('hi')\n" and r["encoding"] == "utf-8", r)
    blob = bytes(range(256)) * 4
    s.call("write_file", sandbox_id=sid, path="b.bin", content=base64.b64encode(blob).decode(), encoding="base64")
    r = s.call("read_file", sandbox_id=sid, path="b.bin")["structuredContent"]
    nt.result("write_read_binary_base64", r["encoding"] == "base64" and base64.b64decode(r["content"]) == blob, r.get("encoding"))
    # Bytes a lenient UTF-8 check passes but jansson refuses (a surrogate,
    # an overlong '/', a code point past U+10FFFF): base64, not an error.
    for name, raw in (("surrogate", b"a\xed\xa0\x80b"), ("overlong", b"a\xc0\xafb"), ("past_max", b"\xf4\x90\x80\x80")):
        s.call("write_file", sandbox_id=sid, path=f"u-{name}", content=base64.b64encode(raw).decode(), encoding="base64")
        r = s.call("read_file", sandbox_id=sid, path=f"u-{name}")
        sc = r.get("structuredContent") or {}
        nt.result(f"read_not_utf8_{name}_as_base64", not r.get("isError") and sc.get("encoding") == "base64"
                  and base64.b64decode(sc.get("content", "")) == raw, r)
    r = s.call("read_file", sandbox_id=sid, path="b.bin", offset=1000, length=10)["structuredContent"]
    nt.result("read_offset_length", base64.b64decode(r["content"]) == blob[1000:1010] and r["size"] == len(blob), r)
    st = sh("python3 hello.py")
    nt.result("written_file_runs", st["stdout"] == "hi\n", st)

    # ../ traversal and absolute paths resolve inside the sandbox only.
    w = s.call("write_file", sandbox_id=sid, path="../../../../../tmp/nsbox-traversal-canary", content="x")
    inside = sh("cat /tmp/nsbox-traversal-canary")["stdout"]
    nt.result("dotdot_traversal_confined", ok_result(w) and inside == "x" and not os.path.exists("/tmp/nsbox-traversal-canary"), w)
    w = s.call("write_file", sandbox_id=sid, path="/etc/nsbox-absolute-canary", content="y")
    nt.result("absolute_path_confined", ok_result(w) and not os.path.exists("/etc/nsbox-absolute-canary"), w)
    r = s.call("read_file", sandbox_id=sid, path=canary_path)
    nt.result("host_file_unreachable", r.get("isError") and "host secret" not in json.dumps(r), r)

    # Planted symlinks (CVE-2018-15664 class for host-side copies).
    sh("echo only-inside > /etc/nsbox-rel-target; "
       "ln -s /etc/passwd abs_link; ln -s ../../../../../../etc/nsbox-rel-target rel_link; "
       "ln -s /nonexistent dangling; ln -s /proc/1/root proc_link; ln -s / root_link")
    r = s.call("read_file", sandbox_id=sid, path="abs_link")
    txt = r.get("structuredContent", {}).get("content", "")
    nt.result("symlink_absolute_reads_sandbox_file", ok_result(r) and txt.startswith("root:") and txt != host_passwd, r.get("isError"))
    w = s.call("write_file", sandbox_id=sid, path="abs_link", content="pwned\n")
    after = sh("head -c 5 /etc/passwd")["stdout"]
    nt.result("symlink_never_written_through", w.get("isError") and after == "root:", (w, after))
    r = s.call("read_file", sandbox_id=sid, path="rel_link")
    nt.result("symlink_relative_confined", ok_result(r) and
              r["structuredContent"]["content"] == "only-inside\n" and
              not os.path.exists("/etc/nsbox-rel-target"), r)
    r = s.call("read_file", sandbox_id=sid, path="dangling")
    nt.result("symlink_dangling_clear_error", r.get("isError") and "No such file" in r["content"][0]["text"], r)
    # write_file makes missing parents (issue #11), as the sandbox's user,
    # never over a planted symlink: a dangling one as a parent fails, and
    # nothing appears where it points, in the sandbox or on the host.
    w = s.call("write_file", sandbox_id=sid, path="src/app/main.py", content="print(1)\n")
    r = s.call("read_file", sandbox_id=sid, path="src/app/main.py")
    owner = sh("stat -c %U:%a src src/app; id -un")["stdout"].split()
    nt.result("write_makes_parents", ok_result(w) and ok_result(r) and r["structuredContent"]["content"] == "print(1)\n"
              and owner == [owner[-1] + ":755"] * 2 + [owner[-1]], (w, r.get("isError"), owner))
    w = s.call("write_file", sandbox_id=sid, path="dangling/sub/x.txt", content="x")
    gone = sh("test -e /nonexistent && echo made || echo none")["stdout"].strip()
    nt.result("write_parents_not_through_dangling_symlink", w.get("isError") and gone == "none"
              and not os.path.exists("/nonexistent"), (w, gone))
    sh("mkdir -p /tmp/victim2 && ln -s /tmp/victim2 vlink2")
    w = s.call("write_file", sandbox_id=sid, path="vlink2/new/f.txt", content="x")
    nt.result("write_parents_through_symlink_stay_inside", ok_result(w) and not os.path.exists("/tmp/victim2")
              and sh("cat /tmp/victim2/new/f.txt")["stdout"] == "x", w)
    # proc_link -> /proc/1/root resolves inside the sandbox's root, where
    # /proc/1/root/etc/hostname does not exist (never the host's /proc).
    r = s.call("read_file", sandbox_id=sid, path="proc_link/etc/hostname")
    nt.result("symlink_into_proc_refused",
              refused_with(r, "cannot read proc_link/etc/hostname: No such file or directory"), r)
    # A magic link is refused as such (RESOLVE_NO_MAGICLINKS: ELOOP).
    r = s.call("read_file", sandbox_id=sid, path="/proc/self/root/etc/hostname")
    nt.result("proc_magic_link_refused",
              refused_with(r, "cannot read /proc/self/root/etc/hostname: Too many levels of symbolic links"), r)
    sh("mkdir -p /tmp/victim && echo keep > /tmp/victim/f && ln -s /tmp/victim vlink")
    r = s.call("delete_path", sandbox_id=sid, path="vlink", recursive=True)
    kept = sh("cat /tmp/victim/f; test -e vlink || echo gone")["stdout"]
    nt.result("delete_symlink_removes_link_only", ok_result(r) and kept == "keep\ngone\n", (r, kept))
    for p in ("/", "../..", "/."):
        r = s.call("delete_path", sandbox_id=sid, path=p, recursive=True)
        if not r.get("isError"):
            break
    nt.result("delete_root_refused", r.get("isError") and sh("echo alive")["stdout"] == "alive\n", r)

    # FIFOs, sockets, devices: refused without blocking.
    sh("mkfifo fifo; python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.bind('sock')\"")
    t0 = time.time()
    r = s.call("read_file", sandbox_id=sid, path="fifo")
    nt.result("fifo_refused_without_hanging", refused_with(r, "fifo is a fifo, not a regular file")
              and time.time() - t0 < 10, r)
    r = s.call("read_file", sandbox_id=sid, path="sock")
    nt.result("socket_refused", refused_with(r, "cannot read sock: No such device or address"), r)
    r = s.call("read_file", sandbox_id=sid, path="/dev/zero")
    nt.result("device_refused", refused_with(r, "/dev/zero is a device, not a regular file"), r)

    # A sparse file: reads are capped, never the whole thing.
    sh("python3 -c \"f=open('sparse','wb'); f.truncate(900<<20)\"")
    t0 = time.time()
    r = s.call("read_file", sandbox_id=sid, path="sparse", encoding="base64")
    sc = r.get("structuredContent", {})
    nt.result("sparse_file_read_capped", ok_result(r) and sc["truncated"] and sc["size"] == 900 << 20
              and len(base64.b64decode(sc["content"])) == 1 << 20 and time.time() - t0 < 20, sc.get("size"))

    # Huge listings and odd names.
    sh("mkdir many && cd many && python3 -c \"[open(str(i),'w').close() for i in range(12000)]\"")
    r = s.call("list_directory", sandbox_id=sid, path="many")["structuredContent"]
    nt.result("huge_listing_capped", r["truncated"] and len(r["entries"]) == 10000, (r["truncated"], len(r["entries"])))
    sh("mkdir odd && cd odd && python3 -c \"import os; [open(n,'w').close() for n in ['new\\nline', 'quo\\\"te', 'ütf-8 ☃', 'sp ace']]; "
       "open(os.fsencode('bad-\\udcff-bytes'), 'w').close()\"")
    r = s.call("list_directory", sandbox_id=sid, path="odd")
    names = sorted(e["path"] for e in r.get("structuredContent", {}).get("entries", []))
    nt.result("odd_names_listed_as_valid_json", ok_result(r) and "new\nline" in names and "ütf-8 ☃" in names
              and any(n.startswith("bad-") for n in names) and len(names) == 5, names)

    # base64 bombs: a body over the 16 MiB message cap is refused before
    # parsing (JSON-RPC -32600, id null: the id was never read), and the
    # server carries on.
    t0 = time.time()
    s.n += 1
    big = json.dumps({"jsonrpc": "2.0", "id": s.n, "method": "tools/call", "params": {
        "name": "write_file", "arguments": {"sandbox_id": sid, "path": "bomb",
                                            "content": "A" * (24 << 20), "encoding": "base64"}}})
    s.p.stdin.write(big.encode() + b"\n")
    s.p.stdin.flush()
    reply = json.loads(s.p.stdout.readline())
    pong = s.request("ping", {})
    nt.result("base64_bomb_refused", reply.get("error", {}).get("code") == -32600
              and "result" in pong and time.time() - t0 < 30
              and s.call("read_file", sandbox_id=sid, path="bomb").get("isError"), reply)
    r = s.call("write_file", sandbox_id=sid, path="bad", content="!!not base64!!", encoding="base64")
    nt.result("invalid_base64_refused", refused_with(r, "content is not valid base64")
              and s.call("read_file", sandbox_id=sid, path="bad").get("isError"), r)

    # files in results, and images as image content.
    r = s.call("execute_code", sandbox_id=sid, code=(
        "import zlib, struct\n"
        "def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n"
        "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0)) "
        "+ chunk(b'IDAT', zlib.compress(b'\\x00\\xff\\x00\\x00')) + chunk(b'IEND', b'')\n"
        "open('plot.png', 'wb').write(png)\nopen('hello.py', 'a').write('# more\\n')\n"))
    files = {f.get("path"): f for f in r["structuredContent"]["files"]}
    kinds = [c["type"] for c in r["content"]]
    nt.result("files_created_and_modified", files.get("plot.png", {}).get("change") == "created"
              and files.get("hello.py", {}).get("change") == "modified", files)
    nt.result("images_come_back_as_image_content", "image" in kinds and any(
        c.get("mimeType") == "image/png" for c in r["content"] if c["type"] == "image"), kinds)
    r = s.call("execute_code", sandbox_id=sid, code="import os\nos.symlink('/etc/passwd', 'evil.png')\n")
    nt.result("symlinked_image_not_read", "image" not in [c["type"] for c in r["content"]]
              and not any(f.get("path") == "evil.png" for f in r["structuredContent"]["files"]), r["structuredContent"]["files"])

    # Other tools and errors.
    r = s.call("project_structure", sandbox_id=sid, depth=1)["structuredContent"]
    nt.result("project_structure_tree", "hello.py" in r["tree"] and "many/" in r["tree"], r["tree"][:200])
    r = s.call("create_directory", sandbox_id=sid, path="a/b/c")
    d = s.call("delete_path", sandbox_id=sid, path="a")
    d2 = s.call("delete_path", sandbox_id=sid, path="a", recursive=True)
    nt.result("mkdir_and_delete", ok_result(r) and d.get("isError") and ok_result(d2), (r, d, d2))
    r = s.call("read_file", sandbox_id="0" * 32, path="x")
    nt.result("unknown_sandbox_is_tool_error", refused_with(
        r, 'no sandbox "00000000000000000000000000000000" in this session (see sandbox_list)'), r)

    s.close()
    with open(canary_path) as f:
        nt.result("host_canary_untouched", f.read() == "host secret\n")
    os.unlink(canary_path)
    nt.result("host_passwd_untouched", open("/etc/passwd").read() == host_passwd)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a crash is a failure, not silence
        nt.result("suite_crashed", False, repr(e))
    nt.finish()
