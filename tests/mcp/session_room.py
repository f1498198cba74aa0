"""A full session table makes room by ending a session its tenant
abandoned (mcp/http/sessions.c, EVICT_UNUSED_S): clients such as the
Inspector's CLI never DELETE theirs.  Against `nsbox serve --http
--max-sessions 3` with two tenants (TOKENS: a file "alice T1\\nbob T2"):
only an unused session with no sandbox, unused for 10 s, of the same
tenant, is ended; a session with a sandbox, or another tenant's, never.

Usage: session_room.py PORT TOKENS.  Prints PASS/FAIL lines under $SUITE."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mcphttp  # noqa: E402
import nsbox_test as nt  # noqa: E402

nt.configure(default_suite="drain")

PORT = int(sys.argv[1])
TOKENS = dict(line.split() for line in open(sys.argv[2]) if line.strip())
V = "2025-11-25"


def auth(who):
    return {"Authorization": f"Bearer {TOKENS[who]}"}


def initialize(who):
    """(HTTP status, session id or None)."""
    r = mcphttp.post(PORT, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": V, "capabilities": {},
                                       "clientInfo": {"name": "session_room", "version": "1"}}},
                     headers=auth(who))
    sid = r.headers.get("mcp-session-id")
    if r.status == 200:
        mcphttp.post(PORT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, V, headers=auth(who))
    return r.status, sid


def call(who, sid, name, args):
    """(HTTP status, tools/call result or None)."""
    r = mcphttp.post(PORT, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": name, "arguments": args}}, sid, V, headers=auth(who), timeout=120)
    resp = r.response(2) if r.status == 200 else None
    return r.status, (resp or {}).get("result")


_, a1 = initialize("alice")  # abandoned: no sandbox
_, a2 = initialize("alice")
st, res = call("alice", a2, "sandbox_create", {"language": "sh"})
box = ((res or {}).get("structuredContent") or {}).get("sandbox_id")
_, b1 = initialize("bob")  # abandoned too, but bob's
nt.result("room_table_full", a1 and a2 and b1 and box, f"sessions {a1} {a2} {b1}, sandbox {res}")
status, _ = initialize("alice")
nt.result("room_not_before_10s", status == 503, f"initialize with every session just used: {status}")
time.sleep(10.5)
status, a3 = initialize("alice")
nt.result("room_made_from_own_abandoned", status == 200 and a3, status)
st, _ = call("alice", a1, "sandbox_list", {})
nt.result("room_abandoned_session_ended", st == 404, f"the abandoned session answered {st}")
st, res = call("alice", a2, "run_command", {"sandbox_id": box, "command": "echo kept"})
nt.result("room_session_with_sandbox_kept", st == 200 and ((res or {}).get("structuredContent") or {}).get(
    "stdout") == "kept\n", f"{st} {json.dumps(res)[:300]}")
status, _ = initialize("alice")
nt.result("room_never_from_another_tenant", status == 503,
          f"alice's fourth session got {status}: bob's idle session was taken")
st, _ = call("bob", b1, "sandbox_list", {})
nt.result("room_other_tenant_session_kept", st == 200, f"bob's session answered {st}")
nt.finish()
