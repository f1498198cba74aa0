#!/usr/bin/env python3
"""Issue #30 end to end (tests/integration/secrets.sh runs it as root and as
nsboxtest): `nsbox serve --secret ... --allow-net ...` over stdio, real
sandboxes of the default image, the local HTTPS services of
tests/secrets/servers.py (an API wanting a bearer token, an unauthenticated
echo service, git smart-HTTP wanting basic auth) behind mapped names
(api.test, other.test, git.test), their test CA trusted by the nsbox
server (SSL_CERT_FILE) and by nothing in the sandbox.  The sandbox calls
the API and pushes to git with tokens it never sees; every hostile case of
the issue is a named check (docs/secrets.md, "How the tests prove it").  Each check
prints exactly one line whatever happened before it.

Environment: NSBOX, NSBOX_STORE, E2E (the fixtures' directory: ports.json,
requests.jsonl, api.tok, git.tok, certs/, git/repo.git), E2E_USER (run the
server as this user), E2E_PREFIX (names' prefix), SUITE."""
import base64
import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402
from nsbox_test import ok  # noqa: E402
from mcp import Mcp, sc, text_of  # noqa: E402

R = nt.configure(prefix=os.environ.get("E2E_PREFIX", ""), default_suite="secrets")


def check(name):
    """Decorator: runs the check at once (R.run: PASS unless it raises; an
    ok() that fails is the reason)."""
    return lambda fn: R.run(name, fn) and fn


D = os.environ["E2E"]
STORE = os.environ["NSBOX_STORE"]
NSBOX = os.environ["NSBOX"]
USER = os.environ.get("E2E_USER", "")
PORTS = json.load(open(os.path.join(D, "ports.json")))
PA, PO, PG = PORTS["api.test"], PORTS["other.test"], PORTS["git.test"]
API_V = open(os.path.join(D, "api.tok")).read().strip()
GIT_V = open(os.path.join(D, "git.tok")).read().strip()
GIT_B64 = base64.b64encode(f"user:{GIT_V}".encode()).decode()
FORBIDDEN = [API_V, GIT_V, GIT_B64]  # never shown to the sandbox or the model
CERTS = os.path.join(D, "certs")
LOG = os.path.join(D, "requests.jsonl")
LOG_START = sum(1 for _ in open(LOG))
PROBE = open(os.path.join(HERE, "sandbox_probe.py")).read()
PH_RE = r"nsbox-secret-%s-[0-9A-Za-z]{24}"
RUN = f"{os.getpid()}{int(time.time())}"  # this run's paths are unique in the shared log
st = {}  # what the checks share: sandbox ids, placeholders, results


def served():
    """The services' request records of this run."""
    with open(LOG) as f:
        return [json.loads(x) for x in f.readlines()[LOG_START:]]


def reached(fragment):
    return [r for r in served() if fragment in r["path"]]


def hdr(rec, name):
    return [v for k, v in rec["headers"] if k.lower() == name.lower()]


def leaks(text):
    return [f"value #{i}" for i, v in enumerate(FORBIDDEN) if v in text]


# -- the server --------------------------------------------------------------
env = [f"SSL_CERT_FILE={CERTS}/bundle.pem"]
for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "NSBOX_SANITIZER_DIR"):
    if os.environ.get(k):
        env.append(f"{k}={os.environ[k]}")
if USER:
    prefix = ["runuser", "-u", USER, "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
              f"HOME=/home/{USER}", "NSBOX_LIMITS=best-effort", *env]
else:
    prefix = ["env", *env]
# other.test's method/path rule is the operator's (a bare "other.test" from
# the model gets it); api.test's are asked for by the model (model_l7_*).
CEILING = f"api.test=127.0.0.1:{PA},git.test=127.0.0.1:{PG}"
CEILING_L7 = f"other.test=127.0.0.1:{PO} GET /pub/**,/landing"
SECRETS = [f"api=@{D}/api.tok;hosts=api.test:{PA};env=API_TOKEN",
           f"git=@{D}/git.tok;hosts=git.test:{PG};basic=user;env=GIT_TOKEN"]
ARGV = prefix + [NSBOX, "--store", STORE, "serve", "--install", "none", "--allow-net", CEILING, "--allow-net",
                 CEILING_L7]
for s_ in SECRETS:
    ARGV += ["--secret", s_]
SERR = os.path.join(D, f"serve-{os.getpid()}.stderr")
try:
    M = Mcp(ARGV, SERR)
except Exception as e:  # noqa: BLE001 -- every check below then fails by name
    M = None
    nt.note(f"the server did not start: {e}: {open(SERR).read()[-400:] if os.path.exists(SERR) else ''}")


def need(*keys):
    ok(M is not None, "the server did not start")
    for k in keys:
        ok(st.get(k), f"an earlier step failed: no {k}")


def run(sid, command, stdin=None, timeout_s=90, **kw):
    args = {"sandbox_id": sid, "command": command, "timeout_s": timeout_s, **kw}
    if stdin is not None:
        args["stdin"] = stdin
    r = M.tool("run_command", **args)
    ok(not r.get("isError"), lambda: f"run_command {command[:60]}: {text_of(r)[:300]}")
    return r


def probe(sid, mode, *args, timeout_s=90):
    """sandbox_probe.py MODE ARGS in sid: (its JSON, the whole result)."""
    r = run(sid, "python3 - " + " ".join(shlex.quote(a) for a in (mode, *args)), stdin=PROBE, timeout_s=timeout_s)
    out = sc(r).get("stdout", "")
    ok(sc(r).get("exit_code") == 0 and out.strip(), lambda: f"probe {mode}: {json.dumps(sc(r))[:400]}")
    return json.loads(out.strip().splitlines()[-1]), r


def req(name, host, port, path, method="GET", headers=(), body=None, **kw):
    return {"name": name, "host": host, "port": port, "method": method, "path": path,
            "headers": [list(h) for h in headers], "body": body, **kw}


BEARER = ("Authorization", "Bearer {ENV:API_TOKEN}")
HA, HO = f"api.test:{PA}", f"other.test:{PO}"


def raw(name, host, port, *texts, **kw):
    return {"name": name, "host": host, "port": port, "raw": list(texts), **kw}


def audit(r):
    return sc(r).get("network") or []


# -- the operator's secrets, the sandbox's view --------------------------------
@check("list_secrets_names_bindings_no_values")
def _():
    need()
    r = M.tool("list_secrets")
    got = {s["name"]: s for s in sc(r).get("secrets", [])}
    ok(set(got) == {"api", "git"}, lambda: f"list_secrets: {text_of(r)[:300]}")
    ok(got["api"].get("env") == "API_TOKEN" and got["git"].get("env") == "GIT_TOKEN", f"env names: {got}")
    ok(got["api"].get("binding") == "header Authorization: Bearer {}" and got["git"].get("binding", "").startswith("basic"),
       f"bindings: {got}")
    ok(any(h.startswith("api.test") for h in got["api"].get("hosts", [])), f"hosts: {got}")
    ok(not leaks(json.dumps(r)), "list_secrets shows a value")


@check("create_refuses_unknown_secret")
def _():
    need()
    r = M.tool("sandbox_create", secrets=["nope"])
    ok(r.get("isError") and "api" in text_of(r) and "git" in text_of(r),
       lambda: f"an unknown secret: {text_of(r)[:300]}")


@check("create_with_secrets")
def _():
    need()
    r = M.tool("sandbox_create", workspace="gitdebs", secrets=["api", "git"], network=["other.test"])
    st["a"] = sc(r).get("sandbox_id")
    ok(st["a"], lambda: f"sandbox_create: {text_of(r)[:400]}")
    r = M.tool("sandbox_create", secrets=["api"])
    st["b"] = sc(r).get("sandbox_id")
    ok(st["b"], lambda: f"the second sandbox: {text_of(r)[:400]}")


@check("env_has_placeholders_not_values")
def _():
    need("a")
    r = run(st["a"], "env")
    out = sc(r).get("stdout", "")
    m1 = re.search(r"^API_TOKEN=(%s)$" % (PH_RE % "api"), out, re.M)
    m2 = re.search(r"^GIT_TOKEN=(%s)$" % (PH_RE % "git"), out, re.M)
    ok(m1 and m2, f"placeholders in env: {out[:600]}")
    st["ph_api"], st["ph_git"] = m1.group(1), m2.group(1)
    ok(re.search(r"^SSL_CERT_FILE=/etc/nsbox/ca-bundle.pem$", out, re.M)
       and re.search(r"^GIT_SSL_CAINFO=/etc/nsbox/ca-bundle.pem$", out, re.M), f"CA variables: {out[:600]}")
    ok(not leaks(out), "a value in env")


@check("sandbox_ca_installed")
def _():
    need("a")
    r = run(st["a"], "openssl x509 -in /etc/nsbox/ca.pem -noout -subject -ext basicConstraints; "
            "grep -c 'BEGIN CERTIFICATE' /etc/nsbox/ca-bundle.pem; cat /etc/nsbox/ca.pem")
    out = sc(r).get("stdout", "")
    ok("nsbox sandbox CA" in out and "CA:TRUE" in out, f"the sandbox CA: {out[:400]}")
    st["ca_a"] = out[out.index("-----BEGIN CERTIFICATE"):] if "-----BEGIN CERTIFICATE" in out else None
    ok(st["ca_a"] and "PRIVATE" not in out, f"ca.pem: {out[:400]}")


# -- the API and git with tokens the sandbox never sees ------------------------
@check("api_call_with_token_succeeds")
def _():
    need("a", "ph_api")
    got, r = probe(st["a"], "http", json.dumps([req("api", "api.test", PA, f"/v1/items?run={RUN}", headers=[BEARER])]))
    st["api_result"] = r
    ok(got[0]["status"] == 200 and "api-answer-7Q3" in got[0]["body"], f"the API call: {got}")
    recs = reached(f"/v1/items?run={RUN}")
    ok(len(recs) == 1 and hdr(recs[0], "Authorization") == ["Bearer " + API_V],
       "the API did not get the value in the bound header")


@check("audit_names_secret_host_method_path")
def _():
    need("api_result")
    ents = audit(st["api_result"])
    ok(any(e.get("host") == "api.test" and e.get("port") == PA and e.get("method") == "GET"
           and e.get("path", "").startswith("/v1/items") and e.get("verdict") == "allowed"
           and e.get("secrets") == ["api"] for e in ents), f"network: {json.dumps(ents)[:500]}")


@check("git_push_lands")
def _():
    need("a", "ph_git")
    cmd = ("set -e; for d in /workspace/*.deb; do dpkg -x $d /; done; rm -rf /tmp/w; git init -q /tmp/w; cd /tmp/w; "
           f"git -c user.name=box -c user.email=box@x commit -q --allow-empty -m 'from the sandbox {RUN}'; "
           f'git push "https://user:$GIT_TOKEN@git.test:{PG}/repo.git" HEAD:refs/heads/run{RUN} 2>&1')
    r = run(st["a"], cmd, timeout_s=120)
    st["git_result"] = r
    ok(sc(r).get("exit_code") == 0, f"git push: {json.dumps(sc(r))[:600]}")
    log = subprocess.run(["git", "--git-dir", os.path.join(D, "git", "repo.git"), "log", "--format=%s",
                          f"run{RUN}"], capture_output=True, text=True)
    ok(log.stdout.strip() == f"from the sandbox {RUN}", f"the bare repository: {log.stdout} {log.stderr}")
    auth = [h for rec in served() if rec["server"] == "git.test" for h in hdr(rec, "Authorization")]
    ok(("Basic " + GIT_B64) in auth, f"git.test never got the value: {auth}")


@check("git_audit_names_secret")
def _():
    need("git_result")
    ents = audit(st["git_result"])
    ok(any(e.get("host") == "git.test" and e.get("method") == "POST" and "git-receive-pack" in e.get("path", "")
           and e.get("verdict") == "allowed" and e.get("secrets") == ["git"] for e in ents),
       f"network: {json.dumps(ents)[:600]}")


# -- the placeholder where the binding does not say ---------------------------
CASES = [
    req("scrub", "api.test", PA, f"/echo?scrub={RUN}", headers=[BEARER]),
    req("body", "api.test", PA, f"/echo?body={RUN}", "POST", [BEARER, ("Content-Type", "text/plain")],
        "token={ENV:API_TOKEN}"),
    req("url", "api.test", PA, f"/echo?url={RUN}&token={{ENV:API_TOKEN}}"),
    req("otherhdr", "api.test", PA, f"/echo?otherhdr={RUN}",
        headers=[("X-Api-Key", "{ENV:API_TOKEN}"), ("X-Auth", "Bearer {ENV:API_TOKEN}")]),
    req("unbound", "other.test", PO, f"/pub/unbound?{RUN}", headers=[BEARER]),
    req("redirect", "api.test", PA, f"/redirect?to=https://other.test:{PO}/landing%3F{RUN}", headers=[BEARER],
        follow=True),
    raw("keepalive", "api.test", PA, f"GET /echo?ka1={RUN} HTTP/1.1\r\nHost: {HA}\r\n\r\n",
        f"GET /echo?ka2={RUN} HTTP/1.1\r\nHost: {HO}\r\n\r\n"),
    raw("clte", "api.test", PA, f"POST /smuggle-clte{RUN} HTTP/1.1\r\nHost: {HA}\r\nContent-Length: 5\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    raw("dcl", "api.test", PA, f"POST /smuggle-dcl{RUN} HTTP/1.1\r\nHost: {HA}\r\nContent-Length: 3\r\n"
        "Content-Length: 5\r\n\r\nabcde"),
    raw("fold", "api.test", PA, f"GET /smuggle-fold{RUN} HTTP/1.1\r\nHost: {HA}\r\nX-A: a\r\n b\r\n\r\n"),
    raw("forgedhost", "api.test", PA, f"GET /echo?forgedhost={RUN} HTTP/1.1\r\nHost: {HO}\r\n\r\n"),
    req("forgedsni", "api.test", PA, f"/echo?forgedsni={RUN}", sni="other.test"),
    req("realca", "api.test", PA, f"/echo?realca={RUN}", cafile="/tmp/test-ca.pem"),
    req("noca", "api.test", PA, f"/echo?noca={RUN}", cafile=""),
    req("pinned", "api.test", PA, f"/echo?pinned={RUN}", pin="PIN"),
    req("l7get", "other.test", PO, f"/pub/a?{RUN}"),
    req("l7post", "other.test", PO, f"/pub/post{RUN}", "POST", body="x"),
    req("l7outside", "other.test", PO, f"/priv/outside{RUN}"),
    req("l7dotdot", "other.test", PO, f"/pub/../priv/dotdot{RUN}"),
    req("l7pct2f", "other.test", PO, f"/pub/..%2fpriv/pct2f{RUN}"),
    req("l7pct2e", "other.test", PO, f"/pub/%2e%2e/priv/pct2e{RUN}"),
]


@check("hostile_requests_ran")
def _():
    need("a")
    leaf = subprocess.run(["openssl", "x509", "-in", f"{CERTS}/api.test.pem", "-outform", "DER"],
                          capture_output=True).stdout
    cases = [dict(c, pin=hashlib.sha256(leaf).hexdigest()) if c.get("pin") else c for c in CASES]
    run(st["a"], "cat > /tmp/test-ca.pem", stdin=open(f"{CERTS}/ca.pem").read())
    got, r = probe(st["a"], "http", json.dumps(cases), timeout_s=240)
    st["cases"] = {c["name"]: c for c in got}
    st["cases_result"] = r
    ok(len(got) == len(CASES), f"{len(got)} of {len(CASES)} answers")


def case(name):
    need("cases")
    return st["cases"][name]


def refused_403(name, fragment):
    c = case(name)
    ok(c["status"] == 403, f"{name}: {json.dumps(c)[:400]}")
    ok("nsbox" in c["body"], f"{name}: the 403 does not say who refused: {c['body'][:200]}")
    ok(not reached(fragment), f"{name} reached a service: {reached(fragment)}")


@check("response_scrubbed")
def _():
    c = case("scrub")
    ok(c["status"] == 200 and ("Bearer " + "*" * len(API_V)) in c["body"], f"the echo: {c['body'][:400]}")
    ok(not leaks(c["body"]), "the value came back to the sandbox")
    recs = reached(f"/echo?scrub={RUN}")
    ok(recs and hdr(recs[0], "Authorization") == ["Bearer " + API_V], "the service did not get the value")


@check("placeholder_in_body_unreplaced")
def _():
    c, recs = case("body"), reached(f"/echo?body={RUN}")
    ok(c["status"] == 200 and len(recs) == 1, f"body: {json.dumps(c)[:300]}")
    ok(recs[0]["body"] == "token=" + st["ph_api"], f"the body that arrived: {recs[0]['body'][:200]}")
    ok(hdr(recs[0], "Authorization") == ["Bearer " + API_V], "the bound header of the same request")


@check("placeholder_in_url_unreplaced")
def _():
    c, recs = case("url"), reached(f"/echo?url={RUN}")
    ok(c["status"] == 200 and len(recs) == 1 and ("token=" + st["ph_api"]) in recs[0]["path"],
       f"url: {json.dumps(c)[:300]} {recs}")


@check("placeholder_in_other_header_unreplaced")
def _():
    need("cases", "ph_api")
    recs = reached(f"/echo?otherhdr={RUN}")
    ok(len(recs) == 1 and hdr(recs[0], "X-Api-Key") == [st["ph_api"]]
       and hdr(recs[0], "X-Auth") == ["Bearer " + st["ph_api"]], f"{recs}")


@check("placeholder_to_unbound_host_unreplaced")
def _():
    c, recs = case("unbound"), reached(f"/pub/unbound?{RUN}")
    ok(c["status"] == 200 and len(recs) == 1 and recs[0]["server"] == "other.test", f"{json.dumps(c)[:300]}")
    ok(hdr(recs[0], "Authorization") == ["Bearer " + st["ph_api"]], f"other.test got: {recs[0]['headers']}")


@check("placeholder_after_redirect_unreplaced")
def _():
    c = case("redirect")
    ok(c["status"] == 302 and (c.get("followed") or {}).get("status") == 200, f"redirect: {json.dumps(c)[:400]}")
    land = reached(f"/landing?{RUN}")
    ok(len(land) == 1 and land[0]["server"] == "other.test"
       and hdr(land[0], "Authorization") == ["Bearer " + st["ph_api"]], f"the landing: {land}")


@check("keepalive_second_host_refused")
def _():
    c = case("keepalive")
    ok(c["statuses"][:1] == [200] and len(c["statuses"]) == 2 and c["statuses"][1] in (403, None),
       f"keep-alive: {json.dumps(c)[:400]}")
    ok(len(reached(f"ka1={RUN}")) == 1 and not reached(f"ka2={RUN}"), f"reached: {reached('ka')}")


@check("smuggle_cl_te_refused")
def _():
    refused_403("clte", f"/smuggle-clte{RUN}")


@check("smuggle_double_cl_refused")
def _():
    refused_403("dcl", f"/smuggle-dcl{RUN}")


@check("smuggle_obs_fold_refused")
def _():
    refused_403("fold", f"/smuggle-fold{RUN}")


@check("forged_host_refused")
def _():
    refused_403("forgedhost", f"forgedhost={RUN}")


@check("forged_sni_refused")
def _():
    c = case("forgedsni")
    ok(c["status"] is None and c["error"], f"SNI other.test to api.test's address: {json.dumps(c)[:300]}")
    ok(not reached(f"forgedsni={RUN}"), "it reached a service")


@check("client_ignoring_ca_fails_closed")
def _():
    for name in ("realca", "noca", "pinned"):
        c = case(name)
        ok(c["status"] is None and c["error"] and ("CERTIFICATE_VERIFY_FAILED" in c["error"] or "pinned" in c["error"]),
           f"{name}: {json.dumps(c)[:300]}")
        ok(not reached(f"{name}={RUN}"), f"{name} reached the service")


@check("l7_get_allowed")
def _():
    c = case("l7get")
    ok(c["status"] == 200 and len(reached(f"/pub/a?{RUN}")) == 1, f"{json.dumps(c)[:300]}")


for _n, _f in (("l7_post_refused", ("l7post", f"/pub/post{RUN}")),
               ("l7_path_outside_refused", ("l7outside", f"outside{RUN}")),
               ("l7_dotdot_refused", ("l7dotdot", f"dotdot{RUN}")),
               ("l7_pct2f_refused", ("l7pct2f", f"pct2f{RUN}")),
               ("l7_pct2e_refused", ("l7pct2e", f"pct2e{RUN}"))):
    R.run(_n, lambda f=_f: refused_403(*f))


@check("audit_records_refusals")
def _():
    need("cases_result")
    ents = audit(st["cases_result"])
    ok(any(e.get("host") == "other.test" and e.get("method") == "POST" and e.get("verdict") == "refused"
           and e.get("reason") for e in ents), f"the refused POST: {json.dumps(ents)[:600]}")
    ok(any(e.get("host") == "other.test" and "/priv/outside" in e.get("path", "") and e.get("verdict") == "refused"
           for e in ents), f"the refused path: {json.dumps(ents)[:600]}")
    ok(any(e.get("host") == "api.test" and e.get("method") == "GET" and e.get("verdict") == "allowed"
           and e.get("secrets") == ["api"] for e in ents), "the bound GETs")
    ok(not leaks(json.dumps(ents)), "a value in the audit")


# -- a model's own method/path rule on a name the operator mapped -------------
@check("model_l7_rule_kept_in_grant")
def _():
    need()
    r = M.tool("sandbox_create", network=["api.test GET /v1/**"])
    st["c"] = sc(r).get("sandbox_id")
    ok(st["c"], lambda: f"sandbox_create: {text_of(r)[:400]}")
    rules = sc(r).get("network_rules") or []
    ok(any(x.startswith("api.test") and x.endswith(" GET /v1/**") for x in rules),
       f"the grant lost the asked methods/paths: {rules}")


@check("model_l7_grant_enforced")
def _():
    need("c")
    got, _r = probe(st["c"], "http", json.dumps([
        req("get", "api.test", PA, f"/v1/items?model_get={RUN}"),
        req("post", "api.test", PA, f"/v1/items?model_post={RUN}", "POST", body="x")]))
    ok(got[0]["status"] == 401 and len(reached(f"model_get={RUN}")) == 1, f"GET (no token: 401): {got[0]}")
    ok(got[1]["status"] == 403 and not reached(f"model_post={RUN}"), f"POST outside the asked rule: {got[1]}")


# -- the value never in the sandbox: env (above), /proc, memory, files ----------
MARK = f"e2e-marker-{RUN}"


def host_pid(marker):
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if marker.encode() in open(p, "rb").read():
                return int(p.split("/")[2])
        except OSError:
            pass
    return None


@check("value_not_in_proc_environ_cmdline")
def _():
    need("a", "ph_api")
    r = M.tool("process_start", sandbox_id=st["a"], command=f"exec python3 -c 'import time; time.sleep(900)' {MARK}")
    ok(not r.get("isError"), lambda: f"process_start: {text_of(r)[:300]}")
    end = time.monotonic() + 20
    while not host_pid(MARK) and time.monotonic() < end:
        time.sleep(0.1)
    st["pid"] = host_pid(MARK)
    ok(st["pid"], "the sandbox's background process never appeared")
    got, _r = probe(st["a"], "proc")
    st["proc"] = got
    ok(len(got["pids"]) >= 3 and any(MARK in c for c in got["cmdline"]), f"processes seen: {got['pids']}")
    ok(sum(st["ph_api"] in e for e in got["environ"]) >= 2, "the probe read no environ with the placeholder")
    ok(not leaks(json.dumps(got)), "a value in /proc/*/environ or cmdline")


@check("value_not_in_memory_ptrace")
def _():
    need("a", "ph_api")
    got, _r = probe(st["a"], "mem", API_V[:6], "api.test", str(PA))
    ok(got["ptrace"] == "attached", f"PTRACE_ATTACH of its own child: {got['ptrace']}")
    ok(got["child_bytes"] > (4 << 20) and got["bytes"] > got["child_bytes"], f"memory read: {got['bytes']} bytes")
    ok(got["placeholder_seen"] > 0 and got["answer_seen"] > 0,
       f"the scan missed the request and the answer: {got['placeholder_seen']} {got['answer_seen']}")
    bad = [h for h in got["found"] if bytes.fromhex(h).startswith(API_V.encode())]
    ok(not bad, f"the value in memory: {len(bad)} times")


@check("value_not_in_sandbox_files")
def _():
    need("a", "pid")
    run(st["a"], f'printf "%s" "$API_TOKEN" > /tmp/ctl-{RUN}.txt')
    pats = os.path.join(D, f"pats-{RUN}")
    with open(pats, "w") as f:
        f.write("\n".join(FORBIDDEN + [st["ph_api"]]) + "\n")
    root = f"/proc/{st['pid']}/root/"
    g = subprocess.run(["grep", "-rlsF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev", "-f", pats,
                        root], capture_output=True, text=True)
    files = [x[len(root) - 1:] for x in g.stdout.splitlines()]
    ok(f"/tmp/ctl-{RUN}.txt" in files, f"the scan did not find the planted placeholder: {files[:10]} {g.stderr[-200:]}")
    bad = [x for x in files if leaks(open(root + x[1:], "rb").read().decode("latin-1"))]
    ok(not bad, f"a value in the sandbox's files: {bad}")


def pubkey_of(pem, cert=False):
    p = subprocess.run(["openssl", "x509", "-pubkey", "-noout"] if cert else ["openssl", "pkey", "-pubout"],
                       input=pem.encode(), capture_output=True)
    return p.stdout.decode()


@check("ca_key_not_in_sandbox_files")
def _():
    need("a", "ca_a")
    r = run(st["a"], f"openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out /tmp/planted-{RUN}.key "
            f"&& openssl pkey -in /tmp/planted-{RUN}.key -pubout")
    planted = sc(r).get("stdout", "")
    got, _r = probe(st["a"], "keys")
    ok(planted and planted in got["pubkeys"], f"the scan missed the planted key ({got['files']} files)")
    ca_pub = pubkey_of(st["ca_a"], cert=True)
    ok(ca_pub.startswith("-----BEGIN PUBLIC KEY"), "the CA's public key")
    ok(ca_pub not in got["pubkeys"], "the sandbox CA's private key is in the sandbox's files")


def tls_helpers():
    """(pid, STATE_DIR) of every nsbox-tls process (its STATE_DIR argument
    may be /proc/self/cwd: its working directory is the real one)."""
    out = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        pid = int(p.split("/")[2])
        try:
            argv = open(p, "rb").read().split(b"\0")
            if argv and os.path.basename(argv[0]) == b"nsbox-tls" and len(argv) > 1:
                d = argv[1].decode()
                out.append((pid, os.readlink(f"/proc/{pid}/cwd") if d.startswith("/proc/self") else d))
        except OSError:
            continue
    return out


@check("ca_helper_invisible_from_sandbox")
def _():
    need("pid", "proc")
    ok(not any(c.strip() == "nsbox-tls" for c in st["proc"]["comms"]), "the sandbox sees nsbox-tls")
    mine = [(p, d) for p, d in tls_helpers() if d.startswith(STORE) or st["a"] in d]
    ok(mine, f"no nsbox-tls for this store: {tls_helpers()}")
    st["tls"] = mine
    sb_ns = os.readlink(f"/proc/{st['pid']}/ns/pid")
    ok(all(os.readlink(f"/proc/{p}/ns/pid") != sb_ns for p, _d in mine), "nsbox-tls in the sandbox's pid namespace")


@check("ca_key_not_in_state_or_store")
def _():
    need("tls", "ca_a")
    dirs = sorted({d for _p, d in st["tls"]})
    cas = [os.path.join(d, "egress-ca.pem") for d in dirs if os.path.exists(os.path.join(d, "egress-ca.pem"))]
    ok(cas, f"no egress-ca.pem in {dirs}")
    ok(all("PRIVATE" not in open(c).read() for c in cas), "egress-ca.pem holds a private key")
    ca_pub = pubkey_of(st["ca_a"], cert=True)
    scan = dirs + [STORE]
    g = subprocess.run(["grep", "-rlsZ", "--exclude-dir=images", "--exclude-dir=blobs", "PRIVATE KEY-----", *scan],
                       capture_output=True)
    for path in filter(None, g.stdout.split(b"\0")):
        text = open(path, "rb").read().decode("latin-1")
        for m in re.finditer(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----", text, re.S):
            ok(pubkey_of(m.group(0)) != ca_pub, f"the CA key is in {path.decode()}")


@check("value_not_in_store_or_state_files")
def _():
    need("tls")
    pats = os.path.join(D, f"pats-{RUN}")
    g = subprocess.run(["grep", "-rlsF", "--exclude-dir=images", "--exclude-dir=blobs", "-f", pats, STORE,
                        *sorted({d for _p, d in st["tls"]})], capture_output=True, text=True)
    bad = [x for x in g.stdout.splitlines() if leaks(open(x, "rb").read().decode("latin-1"))]
    ok(not bad, f"a value in a state file: {bad}")


@check("one_sandbox_ca_cannot_intercept_another")
def _():
    need("a", "b", "ca_a")
    r = run(st["b"], "cat /etc/nsbox/ca.pem")
    ca_b = sc(r).get("stdout", "")
    ok("BEGIN CERTIFICATE" in ca_b and ca_b.strip() != st["ca_a"].strip(), "the two sandboxes' CAs")
    run(st["a"], "cat > /tmp/b-ca.pem", stdin=ca_b)
    got, _r = probe(st["a"], "http", json.dumps([
        req("withb", "api.test", PA, f"/small?withb={RUN}", cafile="/tmp/b-ca.pem"),
        req("witha", "api.test", PA, f"/small?witha={RUN}", cafile="/etc/nsbox/ca.pem")]))
    ok(got[1]["status"] == 200, f"A's own CA (control): {json.dumps(got[1])[:300]}")
    ok(got[0]["status"] is None and "CERTIFICATE_VERIFY_FAILED" in (got[0]["error"] or ""),
       f"B's CA verified A's leaf: {json.dumps(got[0])[:300]}")
    ok(not reached(f"withb={RUN}"), "the request under B's CA reached the service")


# -- results, progress, tasks, logs -------------------------------------------
@check("value_not_in_progress")
def _():
    need("a", "ph_api")
    tok = f"sec-{RUN}"
    rid = M.send("tools/call", {"name": "run_command", "_meta": {"progressToken": tok}, "arguments": {
        "sandbox_id": st["a"], "timeout_s": 60,
        "command": "for i in 1 2 3; do echo tick $i $API_TOKEN; sleep 1; done; python3 - http " + shlex.quote(
            json.dumps([req("prog", "api.test", PA, f"/echo?prog={RUN}", headers=[BEARER])])),
        "stdin": PROBE}})
    r = M.wait(rid)
    ok("result" in r and not r["result"].get("isError"), f"the call: {json.dumps(r)[:300]}")
    notes = [n for n in M.notes if n.get("method") == "notifications/progress"
             and (n.get("params") or {}).get("progressToken") == tok]
    ok(notes, "no progress notification")
    ok(any(st["ph_api"] in json.dumps(n) for n in notes), "no progress carried the output (the placeholder)")
    ok(not leaks(json.dumps(notes)), "a value in progress")


@check("value_not_in_task")
def _():
    need("a", "ph_api")
    r = M.request("tools/call", {"name": "run_command", "task": {"ttl": 60000}, "arguments": {
        "sandbox_id": st["a"], "timeout_s": 60, "command": "sleep 1; python3 - http " + shlex.quote(
            json.dumps([req("task", "api.test", PA, f"/v1/items?task={RUN}", headers=[BEARER])])),
        "stdin": PROBE}})
    tid = ((r.get("result") or {}).get("task") or {}).get("taskId")
    ok(tid, f"no task: {json.dumps(r)[:300]}")
    seen = [r]
    end = time.monotonic() + 60
    while time.monotonic() < end:
        g = M.request("tasks/get", {"taskId": tid})
        seen.append(g)
        if (g.get("result") or {}).get("status") != "working":
            break
        time.sleep(0.5)
    res = M.request("tasks/result", {"taskId": tid}, timeout=90)
    seen.append(res)
    out = sc(res.get("result") or {}).get("stdout", "")
    ok("api-answer-7Q3" in out, f"the task's result: {json.dumps(res)[:300]}")
    ok(not leaks(json.dumps(seen)), "a value in a task's answers")


@check("value_not_in_results")
def _():
    need("ph_api")
    t = M.transcript()
    ok(st["ph_api"] in t and "api-answer-7Q3" in t, "the transcript misses what the sandbox printed")
    ok(not leaks(t), "a value in what the server sent")


@check("services_saw_value_only_where_bound")
def _():
    need()
    bound = 0
    for rec in served():
        flat = json.dumps(rec)
        if not leaks(flat):
            continue
        auth = hdr(rec, "Authorization")
        if rec["server"] == "api.test" and auth == ["Bearer " + API_V]:
            rest = dict(rec, headers=[h for h in rec["headers"] if h[0].lower() != "authorization"])
        elif rec["server"] == "git.test" and auth == ["Basic " + GIT_B64]:
            rest = dict(rec, headers=[h for h in rec["headers"] if h[0].lower() != "authorization"])
        else:
            ok(False, f"a value reached {rec['server']} outside its binding: {rec['method']} {rec['path']}")
        ok(not leaks(json.dumps(rest)), f"a value outside the bound header: {rec['path']}")
        bound += 1
    ok(bound >= 3, f"only {bound} bound requests")


for sid in (st.get("a"), st.get("b"), st.get("c")):
    if M and sid:
        M.tool("sandbox_stop", sandbox_id=sid)
if M:
    M.close()


@check("value_not_in_server_log")
def _():
    ok(M is not None, "the server did not start")
    text = open(SERR, "rb").read().decode("latin-1")
    ok(not leaks(text), "a value on the server's stderr")


nt.finish()
