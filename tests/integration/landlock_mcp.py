#!/usr/bin/env python3
"""nsbox serve --isolation=landlock over stdio (tests/integration/landlock.sh).

Raw JSON-RPC, one line per case (tests/lib/nsbox_test.py: PASS:
SUITE/mcp_name or FAIL: SUITE/mcp_name: why; SUITE from landlock.sh).  What
landlock mode can do works (one-shot and kept runs, files); what it cannot
(packages, commit, network) is a tool error naming landlock isolation."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="landlock", prefix="mcp_")

p = subprocess.Popen([sys.argv[1], "serve", "--isolation=landlock"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)


def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        msg = json.loads(p.stdout.readline())
        if msg.get("id") == i:
            return msg


def call(i, tool, **args):
    return rpc(i, "tools/call", {"name": tool, "arguments": args}).get("result", {})


def landlock_record(r):
    i = r.get("structuredContent", {}).get("isolation", {})
    return i.get("mode") == "landlock" and any(m.startswith("pid namespace") for m in i.get("missing", []))


rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "landlock-test", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()

r = call(2, "execute_code", language="python", code="import socket\ntry:\n socket.socket()\nexcept OSError as e:\n print(e.errno)")
out = r.get("structuredContent", {})
nt.result("execute_code_one_shot", out.get("status") == "ok" and out.get("stdout") == "13\n" and landlock_record(r), r)
r = call(3, "sandbox_create")
sid = r.get("structuredContent", {}).get("sandbox_id")
nt.result("sandbox_create_says_landlock", sid is not None and landlock_record(r) and
          r["structuredContent"].get("image") == "host", r)
r = call(4, "execute_code", sandbox_id=sid, language="python", code="print(6*7)")
out = r.get("structuredContent", {})
nt.result("kept_execute_code_in_process", out.get("stdout") == "42\n" and out.get("interpreter") == "process", r)
r = call(5, "write_file", sandbox_id=sid, path="a.txt", content="hello")
r = call(6, "run_command", sandbox_id=sid, command="cat a.txt; cat /etc/shadow 2>&1 | head -c 200")
out = r.get("structuredContent", {}).get("stdout", "")
nt.result("files_and_run_command", out.startswith("hello") and "Permission denied" in out and landlock_record(r), r)
for i, (tool, args) in enumerate([("install_packages", {"manager": "pip", "packages": ["six"]}),
                                  ("sandbox_commit", {"name": "landlock-x"}),
                                  ("context_fork", {"context_id": "python"})], start=7):
    r = call(i, tool, sandbox_id=sid, **args)
    text = json.dumps(r)
    nt.result(f"{tool}_refused_naming_landlock", r.get("isError") is True and "landlock isolation" in text, text[:300])
r = call(10, "run_command", command="sleep 5", timeout_s=1)
nt.result("timeout", r.get("structuredContent", {}).get("status") == "timeout", r)
p.stdin.close()
p.wait(timeout=30)
nt.finish()
