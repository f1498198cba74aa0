#!/usr/bin/env python3
"""A long MCP session against one `nsbox serve` (stdio), for
tests/integration/valgrind_mcp.sh, which runs the server under valgrind.

CYCLES times: sandbox_create, run_command, write_file (utf-8, then base64
appended), read_file (whole, then a slice), list_directory, sandbox_stop;
every tenth cycle a one-shot execute_code and an unknown sandbox id.  Once:
a named workspace, the directory tools, copy_in/copy_out, a command that
times out, a cancelled run, and the protocol errors a client can cause (not
JSON, unknown method, unknown tool, bad arguments).  Every answer is
checked exactly; then stdin is closed and the server must exit on its own.
Prints PASS/FAIL lines like tests/lib.sh, and "# server exit N".
Environment: NSBOX (the command to run: a wrapper), NSBOX_STORE, SUITE,
CYCLES (60), HOST_DIR (for --allow-host-dir)."""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

CYCLES = int(os.environ.get("CYCLES", "60"))
HOST = os.environ["HOST_DIR"]
s = Server(["--allow-host-dir", HOST], os.environ["NSBOX_STORE"])


def sc(r):
    return r.get("result", {}).get("structuredContent", {})


def is_error(r):
    return r.get("result", {}).get("isError") is True


def raw(line):
    """Sends one raw line; returns the parsed answer."""
    s.p.stdin.write(line + "\n")
    s.p.stdin.flush()
    return json.loads(s.p.stdout.readline())


# -- the cycles ----------------------------------------------------------------
bad = []
for i in range(CYCLES):
    step = "create"
    try:
        sid = sc(s.call("sandbox_create", memory_mb=128))["sandbox_id"]
        step = "run_command"
        out = sc(s.call("run_command", sandbox_id=sid, command=f"echo cycle {i}; echo err >&2; exit 3"))
        assert (out["stdout"], out["stderr"], out["exit_code"]) == (f"cycle {i}\n", "err\n", 3), out
        step = "write_file"
        text = f"line {i} \u00e9\n" * (i + 1)
        s.call("create_directory", sandbox_id=sid, path="d")
        w = sc(s.call("write_file", sandbox_id=sid, path="d/f.txt", content=text))
        assert w["bytes_written"] == len(text.encode()), w
        blob = bytes(range(256)) * 3
        w = sc(s.call("write_file", sandbox_id=sid, path="d/f.txt", encoding="base64",
                      content=base64.b64encode(blob).decode(), append=True))
        assert w["appended"] is True and w["bytes_written"] == len(blob), w
        step = "read_file"
        r = sc(s.call("read_file", sandbox_id=sid, path="d/f.txt", encoding="base64"))
        assert base64.b64decode(r["content"]) == text.encode() + blob, r.get("size")
        # A slice: offset and length count bytes ("line " is 5 of them).
        r = sc(s.call("read_file", sandbox_id=sid, path="d/f.txt", offset=5, length=len(str(i))))
        assert r["content"] == str(i) and r["size"] == len(text.encode()) + len(blob), r
        step = "list_directory"
        ls = sc(s.call("list_directory", sandbox_id=sid, path="d"))
        assert [e["path"] for e in ls["entries"]] == ["f.txt"], ls
        step = "sandbox_stop"
        st = sc(s.call("sandbox_stop", sandbox_id=sid))
        assert st == {"sandbox_id": sid, "stopped": True}, st
        if i % 10 == 0:
            step = "execute_code"
            ex = sc(s.call("execute_code", code=f"import sys; print({i} * 2); sys.exit(0)"))
            assert ex["stdout"] == f"{i * 2}\n" and ex["status"] == "ok", ex
            step = "unknown id"
            assert is_error(s.call("run_command", sandbox_id=sid, command="true"))
    except Exception as e:  # noqa: BLE001 -- one FAIL line says where
        bad.append(f"cycle {i} {step}: {e!r}"[:300])
        if len(bad) > 3:
            break
result("cycles", not bad, bad)

# -- once: workspace, directory tools, host copies, timeout, cancel -------------
try:
    sid = sc(s.call("sandbox_create", workspace="vg"))["sandbox_id"]
    s.call("create_directory", sandbox_id=sid, path="pkg/sub")
    s.call("write_file", sandbox_id=sid, path="pkg/sub/m.py", content="print('m')\n")
    tree = sc(s.call("project_structure", sandbox_id=sid, depth=3))
    assert "m.py" in tree["tree"], tree
    assert sc(s.call("delete_path", sandbox_id=sid, path="pkg", recursive=True))["deleted"] is True
    with open(os.path.join(HOST, "in.txt"), "w") as f:
        f.write("from host\n")
    assert sc(s.call("copy_in", sandbox_id=sid, host_path=HOST + "/in.txt", path="in.txt"))["bytes"] == 10
    s.call("copy_out", sandbox_id=sid, path="in.txt", host_path=HOST + "/out.txt")
    assert open(os.path.join(HOST, "out.txt")).read() == "from host\n"
    t = sc(s.call("run_command", sandbox_id=sid, command="sleep 30", timeout_s=1))
    assert t["timed_out"] is True and t["status"] == "timeout", t
    # A cancelled run: no answer to it; the next request is answered.
    s.n += 1
    s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": s.n, "method": "tools/call", "params": {
        "name": "run_command", "arguments": {"sandbox_id": sid, "command": "sleep 30"}}}) + "\n")
    s.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": s.n}}) + "\n")
    s.p.stdin.flush()
    pong = s.req("ping", {})
    assert pong.get("id") == s.n and pong.get("result") == {}, pong
    assert sc(s.call("sandbox_stop", sandbox_id=sid))["stopped"] is True
    result("workspace_tools_copies_timeout_cancel", True)
except Exception as e:  # noqa: BLE001
    result("workspace_tools_copies_timeout_cancel", False, repr(e))

errors = {
    "not_json": raw("{nope").get("error", {}).get("code") == -32700,
    "unknown_method": s.req("no/such", {}).get("error", {}).get("code") == -32601,
    "unknown_tool": s.call("no_such_tool").get("error", {}).get("code") == -32602,
    "bad_arguments": is_error(s.call("run_command", command=["not", "a", "string"])),
    "unknown_argument": is_error(s.call("sandbox_create", colour="blue")),
    "sandbox_list": isinstance(sc(s.call("sandbox_list")).get("sandboxes"), list),
}
result("protocol_errors", all(errors.values()), errors)

s.p.stdin.close()
rc = s.p.wait(timeout=600)
print(f"# server exit {rc}", flush=True)
result("server_exits_cleanly", rc == 0, f"exit status {rc} (99: valgrind found errors)")
finish()
