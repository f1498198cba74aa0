#!/usr/bin/env python3
"""The egress allow-list through `nsbox serve` over stdio (issue #14): the
operator's ceiling (--allow-net), a model's `network` on sandbox_create and
on one-shot execute_code / run_command checked against it (clear errors
naming the ceiling; address rules only as the operator wrote them, a bare
name the operator mapped gets the mapping), a host service on 127.0.0.1
reached through nsbox's broker and nothing else, every result of a
sandbox with network carrying `network` (allowed and refused attempts),
a one-shot sandbox given network never reused, and openWorldHint on the
tools that can grant network only when there is a ceiling.  Run as root
and rootless.  Environment: NSBOX, NSBOX_STORE, SUITE (default mcp_net)."""
import http.server, os, sys, threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
os.environ.setdefault("SUITE", "mcp_net")
SEEN = []  # the Host of every request the host service got


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        SEEN.append(self.headers.get("Host"))
        body = b"marker-mcp\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
P = httpd.server_address[1]

FETCH = """import urllib.request
try:
    print(urllib.request.urlopen(%r, timeout=10).read().decode().strip())
except Exception as e:
    print("ERR", type(e).__name__, e)"""
HOSTED = """import http.client
c = http.client.HTTPConnection(%r, %d, timeout=10)
try:
    c.request("GET", "/marker.txt", headers={"Host": %r})
    print(c.getresponse().read().decode().strip())
except Exception as e:
    print("ERR", type(e).__name__, e)"""


def text_of(r):
    return r.get("content", [{}])[0].get("text", "")


def sc(r):
    return r.get("structuredContent") or {}


def verdicts(r):
    return {(e.get("host"), e.get("port"), e.get("verdict")) for e in sc(r).get("network", [])}


def hints(srv):
    tools = srv.req("tools/list", {})["result"]["tools"]
    return {t["name"]: t["annotations"].get("openWorldHint") for t in tools}, \
        {t["name"]: "network" in t["inputSchema"]["properties"] for t in tools}


# sandbox_fork and sandbox_restore grant their new sandboxes a network of their own (docs/fork.md)
NET_TOOLS = {"sandbox_create", "execute_code", "run_command", "sandbox_fork", "sandbox_restore"}

# -- a server without a ceiling: no network at all ---------------------------------
# (--install none: package installs reach a registry, open world of their own,
# tests/mcp/packages.py)
s = Server(["--install", "none"], STORE)
ow, has_arg = hints(s)
result("no_ceiling_no_open_world", not any(ow.values()), ow)
result("network_argument_declared", {k for k, v in has_arg.items() if v} == NET_TOOLS, has_arg)
r = s.tool("sandbox_create", network=["pypi"])
result("no_ceiling_refused", r.get("isError") and "networking is off" in text_of(r) and "--allow-net" in text_of(r), r)
r = s.tool("execute_code", code="print(1)", network=[f"127.0.0.1:{P}"])
result("no_ceiling_one_shot_refused", r.get("isError") and "networking is off" in text_of(r), r)
s.p.stdin.close()
s.p.wait(timeout=60)

# -- a server with one -------------------------------------------------------------
s = Server(["--allow-net", "pypi", "--allow-net", f"127.0.0.1:{P},test.example=127.0.0.1:{P}",
            "--install", "none"], STORE)
ow, _ = hints(s)
# request_network (listed only with a ceiling) asks the user for more of it
result("open_world_where_network_can_be_granted",
       {k for k, v in ow.items() if v} == NET_TOOLS | {"request_network"}, ow)

r = s.tool("sandbox_create", network=["npm"])
result("beyond_ceiling_refused_naming_it",
       r.get("isError") and "registry.npmjs.org" in text_of(r) and "--allow-net" in text_of(r)
       and "pypi.org" in text_of(r), r)
r = s.tool("sandbox_create", network=["127.0.0.1:9"])
result("address_not_in_ceiling_refused", r.get("isError") and "127.0.0.1:9" in text_of(r), r)
r = s.tool("sandbox_create", network=[f"evil.example=127.0.0.1:{P}"])
result("mapping_not_in_ceiling_refused", r.get("isError") and "evil.example" in text_of(r), r)
r = s.tool("sandbox_create", network=["pypi.org:22"])
result("port_beyond_ceiling_refused", r.get("isError") and "22" in text_of(r), r)
r = s.tool("sandbox_create", network=["bogus:99999"])
result("bad_rule_refused", r.get("isError") and "99999" in text_of(r), r)
r = s.tool("sandbox_create", network="pypi")
result("network_must_be_array", r.get("isError") and "array" in text_of(r), r)

r = s.tool("sandbox_create", network=[f"127.0.0.1:{P}", "test.example", "pypi.org:443"])
sid = sc(r).get("sandbox_id")
rules = sc(r).get("network_rules", [])
result("create_within_ceiling", sid is not None and f"127.0.0.1:{P}" in rules
       and f"test.example=127.0.0.1:{P}" in rules and "pypi.org:443" in rules, r)
if sid:
    r = s.tool("run_command", sandbox_id=sid, command="python3 -", stdin=FETCH % f"http://127.0.0.1:{P}/marker.txt")
    result("kept_reaches_operator_address", sc(r).get("stdout") == "marker-mcp\n", r)
    result("kept_result_network_allowed", ("127.0.0.1", P, "allowed") in verdicts(r), sc(r).get("network"))
    result("text_carries_network", '"network"' in text_of(r), text_of(r)[:200])
    # The persistent interpreter runs in the same sandbox, same network.
    r = s.tool("execute_code", sandbox_id=sid, code=FETCH % f"http://test.example:{P}/marker.txt")
    result("kept_mapped_name_reaches", sc(r).get("stdout") == "marker-mcp\n", r)
    result("kept_network_names_mapped_host",
           any(h == "test.example" and v == "allowed" for h, _, v in verdicts(r)), sc(r).get("network"))
    SEEN.clear()
    r = s.tool("execute_code", sandbox_id=sid, code=HOSTED % ("test.example", P, "evil.example"))
    result("host_mismatch_refused", "evil.example" not in SEEN and "marker-mcp" not in sc(r).get("stdout", ""), (SEEN, r))
    result("host_mismatch_in_network", any(v == "refused" for _, _, v in verdicts(r)), sc(r).get("network"))
    r = s.tool("run_command", sandbox_id=sid, command="true")
    result("quiet_command_network_empty", sc(r).get("network") == [], sc(r).get("network"))
    r = s.tool("run_command", sandbox_id=sid, command="echo hi", network=["pypi"])
    result("network_with_sandbox_id_refused", r.get("isError") and "sandbox_create" in text_of(r), r)

r = s.tool("sandbox_create")
plain = sc(r).get("sandbox_id")
if plain:
    r = s.tool("execute_code", sandbox_id=plain, code=FETCH % f"http://127.0.0.1:{P}/marker.txt")
    result("sandbox_without_network_sealed", sc(r).get("stdout", "").startswith("ERR"), r)
    result("sealed_result_has_no_network", "network" not in sc(r), sc(r).get("network"))

# One-shot: the spare (or a new sandbox) opened for this call alone.
r = s.tool("execute_code", code=FETCH % f"http://127.0.0.1:{P}/marker.txt", network=[f"127.0.0.1:{P}"])
result("one_shot_execute_code_with_network", sc(r).get("stdout") == "marker-mcp\n"
       and ("127.0.0.1", P, "allowed") in verdicts(r), r)
# One-shot commands run in the sh image when the store has one (busybox:
# wget), else in python's.
r = s.tool("run_command", command="if command -v python3 >/dev/null; then python3 -; "
           f"else wget -qO- http://test.example:{P}/marker.txt; fi",
           stdin=FETCH % f"http://test.example:{P}/marker.txt", network=["test.example"])
result("one_shot_run_command_with_network", sc(r).get("stdout") == "marker-mcp\n", r)
# The next one-shots get sandboxes of their own: nothing of that network.
for i in range(2):
    r = s.tool("execute_code", code=FETCH % f"http://127.0.0.1:{P}/marker.txt")
    result(f"one_shot_after_network_sealed_{i}", sc(r).get("stdout", "").startswith("ERR")
           and "network" not in sc(r), r)
s.p.stdin.close()
s.p.wait(timeout=60)
httpd.shutdown()
finish()
