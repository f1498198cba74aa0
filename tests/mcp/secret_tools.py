#!/usr/bin/env python3
"""The operator's and the model's side of secrets through `nsbox serve`
over stdio (issue #30): `serve --secret SPEC` and `[secret.NAME]` (bad
ones stop the start naming the secret and FILE, never the value;
--print-config shows SPECs, never values), list_secrets (names, variables,
hosts, bindings; an empty list on a server without secrets),
sandbox_create {secrets} (unknown names refused listing the server's; a
secret's host outside --allow-net refused naming it; an env naming the
secret's variable refused; the granted secret's variable holds a
per-sandbox placeholder and the value is nowhere in the sandbox's
environment, /proc, files, the result, or the store's records; its hosts
join the grant, a mapped one with the operator's mapping; over plain HTTP
to the mapped host the broker puts the value in the bound header only,
scrubs it from the echoed response, and the result's network names the
request and the secret), and a model's bare name narrowed to the
ceiling's method and path rules.  Run as root and
rootless.  Environment: NSBOX, NSBOX_STORE, SUITE (default secrets_mcp)."""
import http.server, json, os, re, subprocess, sys, tempfile, threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import finish, result  # noqa: E402
from stdio_client import NSBOX, Server  # noqa: E402

STORE = os.environ["NSBOX_STORE"]
os.environ.setdefault("SUITE", "secrets_mcp")
VALUE = "ghp_" + os.urandom(16).hex()  # what must never show
D = tempfile.mkdtemp(prefix="nsbox-secrets.")
os.chmod(D, 0o755)
TOK = os.path.join(D, "token")
with open(TOK, "w") as f:
    f.write(VALUE + "\n")
os.chmod(TOK, 0o600)
SEEN = []  # (path, Authorization, X-Token) of every request the host service got


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        SEEN.append((self.path, self.headers.get("Authorization"), self.headers.get("X-Token")))
        # The header as it arrived, echoed: the sandbox must get it scrubbed.
        body = ("A=%s\n" % self.headers.get("Authorization")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
P = httpd.server_address[1]


def NAMED(name, text):
    """Whether text names the secret ("secret 'gh'" or "secret \"gh\"")."""
    return re.search(r"secret ['\"]%s['\"]" % re.escape(name), text) is not None


def text_of(r):
    return r.get("content", [{}])[0].get("text", "")


def sc(r):
    return r.get("structuredContent") or {}


def serve(*args, conf=None):
    """`nsbox serve ARGS` with stdin closed: (exit code, stdout, stderr)."""
    env = dict(os.environ)
    if conf is not None:
        env["NSBOX_CONFIG"] = conf
    p = subprocess.run([NSBOX, "--store", STORE, "serve", *args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stdout, p.stderr


def conf(text):
    path = os.path.join(D, "c%d.conf" % len(os.listdir(D)))
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


# -- the operator's side: bad secrets stop the start, values never printed --------
rc, out, err = serve("--secret", "gh=@/nonexistent/gh.token;hosts=api.test")
result("missing_file_stops_start", rc == 2 and NAMED("gh", err) and "/nonexistent/gh.token" in err, (rc, err))
rc, out, err = serve("--secret", f"gh={VALUE};hosts=api.test")
result("inline_value_refused_unquoted", rc == 2 and NAMED("gh", err) and VALUE not in err, (rc, err))
two = os.path.join(D, "two-lines")
with open(two, "w") as f:
    f.write(VALUE + "\nsecond line\n")
rc, out, err = serve("--secret", f"gh=@{two};hosts=api.test")
result("bad_value_names_file_not_value", rc == 2 and two in err and VALUE not in err, (rc, err))
rc, out, err = serve("--secret", f"gh=@{TOK}")
result("no_hosts_refused", rc == 2 and NAMED("gh", err) and "hosts" in err and VALUE not in err, (rc, err))
c = conf(f"[secret.gh]\nfile = {TOK}\n")
rc, out, err = serve("--print-config", conf=c)
result("section_without_hosts_names_line", rc == 2 and f"{c}:" in err and "hosts" in err, (rc, err))
c = conf(f"[secret.gh]\nfile = token\nhosts = api.test\nenv = GITHUB_TOKEN\n"
         f"[secret.reg]\nfile = {TOK}\nhosts = registry.test:5000\nbasic = ci\n")
rc, out, err = serve("--print-config", "--secret", f"extra=@{TOK};hosts=x.test", conf=c)
result("print_config_specs_without_values",
       rc == 0 and f"secret = gh=@{TOK};hosts=api.test;env=GITHUB_TOKEN" in out
       and f"secret = reg=@{TOK};hosts=registry.test:5000;basic=ci" in out
       and "secret = extra=@" in out and VALUE not in out + err, (rc, out, err))

# -- a server without secrets --------------------------------------------------------
s = Server(["--install", "none"], STORE)
r = s.tool("list_secrets")
result("no_secrets_empty_list", sc(r) == {"secrets": []} and not r.get("isError"), r)
r = s.tool("sandbox_create", secrets=["gh"])
result("no_secrets_says_how_to_define", r.get("isError") and "--secret" in text_of(r), r)
s.close()

# -- a server with some -------------------------------------------------------------
MAPPED = f"test.example=127.0.0.1:{P}"
s = Server(["--install", "none", "--allow-net", f"api.test:443,{MAPPED}",
            "--allow-net", "l7.test GET,POST /repos/org/**",
            "--secret", f"gh=@{TOK};hosts=api.test",
            "--secret", f"mirror=@{TOK};hosts=test.example:{P};env=MIRROR_TOKEN",
            "--secret", f"far=@{TOK};hosts=far.test",
            "--secret", f"reg=@{TOK};hosts=api.test;basic=ci;env=REG_PASS",
            "--secret", f"narrow=@{TOK};hosts=l7.test"], STORE)
r = s.tool("list_secrets")
by = {e.get("name"): e for e in sc(r).get("secrets", [])}
result("list_secrets_names_bindings",
       set(by) == {"gh", "mirror", "far", "reg", "narrow"}
       and by["gh"] == {"name": "gh", "env": "GH", "hosts": ["api.test:443"],
                        "binding": "header Authorization: Bearer {}"}
       and by["mirror"]["hosts"] == [f"test.example:{P}"] and by["mirror"]["env"] == "MIRROR_TOKEN"
       and by["reg"]["binding"] == "basic user ci", r)
result("list_secrets_no_value", VALUE not in json.dumps(r), "value in list_secrets")
r = s.tool("sandbox_create", secrets=["gh", "nope"])
result("unknown_secret_lists_names", r.get("isError") and '"nope"' in text_of(r)
       and all(n in text_of(r) for n in ("gh", "mirror", "far", "reg")), r)
r = s.tool("sandbox_create", secrets=["far"])
result("secret_host_outside_ceiling_refused", r.get("isError") and "far.test" in text_of(r)
       and NAMED("far", text_of(r)), r)
r = s.tool("sandbox_create", secrets=["gh"], env={"GH": "mine"})
result("env_naming_secret_variable_refused", r.get("isError") and "GH" in text_of(r), r)
r = s.tool("sandbox_create", secrets="gh")
result("secrets_must_be_array", r.get("isError") and "array" in text_of(r), r)

r = s.tool("sandbox_create", secrets=["gh", "mirror"])
created = r
sid = sc(r).get("sandbox_id")
rules = sc(r).get("network_rules", [])
result("create_lists_granted_secrets",
       sc(r).get("secrets") == [{"name": "gh", "env": "GH"}, {"name": "mirror", "env": "MIRROR_TOKEN"}], r)
result("secret_hosts_join_grant", "api.test:443" in rules and MAPPED in rules, rules)
result("create_result_no_value", VALUE not in json.dumps(r), "value in sandbox_create's result")
PH = re.compile(r"^nsbox-secret-(gh|mirror)-[0-9A-Za-z]{24}$")
ph = []
if sid:
    # The value comes in on stdin (a shell variable, never exported), so
    # the search itself puts it in no environment.
    r = s.tool("run_command", sandbox_id=sid, stdin=VALUE + "\n", command=(
        'read V; printf "%s\\n" "$GH" "$MIRROR_TOKEN"; '
        'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -cF "$V"; '
        'grep -rlsF "$V" /etc /workspace /tmp /root /home 2>/dev/null | head -3; '
        'echo end'))
    lines = sc(r).get("stdout", "").split("\n")
    ph = lines[:2]
    result("variables_hold_placeholders", len(ph) == 2 and all(PH.match(p) for p in ph)
           and ph[0].startswith("nsbox-secret-gh-") and ph[1].startswith("nsbox-secret-mirror-"), r)
    result("value_not_in_environ_or_files", lines[2:4] == ["0", "end"], r)
    result("run_result_no_value", VALUE not in json.dumps(r), "value in run_command's result")
else:
    for n in ("variables_hold_placeholders", "value_not_in_environ_or_files", "run_result_no_value"):
        result(n, False, created)
# Plain HTTP to the mirror's bound host: the broker's helper puts the value
# in the bound header only (not in another header, not in the URL), the
# echoed value comes back scrubbed, and the result's network names the
# request and the secret used.
SUB = """import os, urllib.request
p = os.environ["MIRROR_TOKEN"]
q = urllib.request.Request("http://test.example:%d/sub?t=" + p,
                           headers={"Authorization": "Bearer " + p, "X-Token": p})
try:
    print(urllib.request.urlopen(q, timeout=10).read().decode().strip())
except Exception as e:
    print("ERR", type(e).__name__, e)""" % P
if sid:
    SEEN.clear()
    r = s.tool("run_command", sandbox_id=sid, command="python3 -", stdin=SUB)
    got = [x for x in SEEN if x[0].startswith("/sub?t=")]
    mph = ph[1] if len(ph) > 1 else "?"
    result("plain_http_value_in_bound_header_only",
           got == [(f"/sub?t={mph}", f"Bearer {VALUE}", mph)], (SEEN, ph, r))
    result("plain_http_echo_scrubbed", sc(r).get("stdout") == "A=Bearer " + "*" * len(VALUE) + "\n"
           and VALUE not in json.dumps(r), r)
    reqs = [e for e in sc(r).get("network", []) if e.get("method")]
    result("audit_names_request_and_secret",
           any(e.get("host") == "test.example" and e.get("port") == P and e.get("method") == "GET"
               and e.get("path") == "/sub" and e.get("verdict") == "allowed"
               and e.get("secrets") == ["mirror"] for e in reqs), sc(r).get("network"))
else:
    for n in ("plain_http_value_in_bound_header_only", "plain_http_echo_scrubbed",
              "audit_names_request_and_secret"):
        result(n, False, created)
r2 = s.tool("sandbox_create", secrets=["gh"])
sid2 = sc(r2).get("sandbox_id")
other = sc(s.tool("run_command", sandbox_id=sid2, command='printf %s "$GH"')).get("stdout") if sid2 else None
result("placeholder_per_sandbox", other is not None and PH.match(other) and ph and other != ph[0], (other, ph))
# The store (the running sandboxes' state directories among it) never
# holds the value.
found = subprocess.run(["grep", "-rlsF", VALUE, STORE], capture_output=True, text=True).stdout
states = os.listdir(os.path.join(STORE, "sandboxes")) if os.path.isdir(os.path.join(STORE, "sandboxes")) else []
result("value_not_in_store", found == "" and len(states) >= 2, (found, states))

# A model's bare name under a ceiling of method and path rules gets those.
r = s.tool("sandbox_create", network=["l7.test"])
rules = sc(r).get("network_rules", [])
result("bare_name_narrowed_to_ceiling_l7", len(rules) == 1 and rules[0].startswith("l7.test:")
       and rules[0].endswith(" GET,POST /repos/org/**"), r)
r = s.tool("sandbox_create", network=["l7.test GET /repos/org/x/**"])
rules = sc(r).get("network_rules", [])
result("l7_request_within_ceiling", len(rules) == 1 and rules[0].endswith(" GET /repos/org/x/**"), r)
r = s.tool("sandbox_create", network=["l7.test DELETE /repos/org/x"])
result("l7_method_outside_ceiling_refused", r.get("isError") and "l7.test" in text_of(r), r)
r = s.tool("sandbox_create", network=["l7.test GET /users/**"])
result("l7_path_outside_ceiling_refused", r.get("isError") and "l7.test" in text_of(r), r)
# A model's own method and path rule for a secret's host stays as narrow.
r = s.tool("sandbox_create", secrets=["gh"], network=["api.test:443 GET /v1/**"])
result("own_l7_rule_kept_with_secret", sc(r).get("network_rules") == ["api.test:443 GET /v1/**"], r)
r = s.tool("sandbox_create", secrets=["narrow"])
rules = sc(r).get("network_rules", [])
result("secret_host_narrowed_too", len(rules) == 1 and rules[0] == "l7.test:443 GET,POST /repos/org/**", r)
for x in (sid, sid2):
    if x:
        s.tool("sandbox_stop", sandbox_id=x)
s.close()
httpd.shutdown()
finish()
