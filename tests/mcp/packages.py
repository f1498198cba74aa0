"""install_packages and sandbox_create {packages} against the local
registries tests/integration/packages.sh serves (tests/registries/): real
pip, npm and apt in the default image, each with only its registry
reachable and sealed after; the install cache (a second sandbox with the
same set starts from it with no network attempt at all, which the
registries' request logs confirm).

Environment: NSBOX, NSBOX_STORE, SUITE, IMAGE, PYPI_URL, NPM_URL, APT_URL,
APT_KEY (a file), REG_LOGS (a directory with pypi.log, npm.log, apt.log),
AS_USER (run the server as this user with runuser; "" for root), PREFIX
(test names' prefix)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nsbox_test import configure, finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

E = os.environ
PRE = E.get("PREFIX", "")
configure(prefix=PRE)  # every name: PREFIX + name
IMAGE = E["IMAGE"]
argv_prefix = ["runuser", "-u", E["AS_USER"], "--", "env", "NSBOX_LIMITS=best-effort"] if E.get("AS_USER") else []
REG = ["--pip-index", E["PYPI_URL"], "--npm-registry", E["NPM_URL"], "--apt-mirror", E["APT_URL"],
       "--apt-key", E["APT_KEY"]]


def log_lines(kind):
    try:
        with open(os.path.join(E["REG_LOGS"], kind + ".log")) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def sc(r):
    return r.get("structuredContent", {}) if isinstance(r, dict) else {}


# npm (node) needs more than 512 MiB of address space: rootless without a
# cgroup the memory limit is RLIMIT_AS (best-effort).
MEM = 2048


def run(s, sid, command):
    return sc(s.tool("run_command", sandbox_id=sid, command=command, timeout_s=60))


s = Server(extra=REG, store=E["NSBOX_STORE"], argv_prefix=argv_prefix)

# -- the tool is offered, open world --------------------------------------------
tools = {t["name"]: t for t in s.req("tools/list", {})["result"]["tools"]}
t = tools.get("install_packages", {})
result("listed_open_world", t.get("annotations", {}).get("openWorldHint") is True, t.get("annotations"))
result("create_open_world", tools["sandbox_create"].get("annotations", {}).get("openWorldHint") is True)

# -- options are refused ----------------------------------------------------------
sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
r = s.tool("install_packages", sandbox_id=sid, manager="pip", packages=["--index-url=http://203.0.113.1/"])
result("option_refused", r.get("isError") and "options are not taken" in json.dumps(r), r)
r = s.tool("install_packages", sandbox_id=sid, packages=["x"])
result("manager_required", r.get("isError") and "manager" in json.dumps(r), r)
s.tool("sandbox_stop", sandbox_id=sid)

MANAGERS = [
    # manager, packages, check command, its output, registry log
    ("pip", ["nsbox-hello"], "python3 -c 'import nsbox_hello; print(nsbox_hello.GREETING)'",
     "hello from nsbox\n", "pypi"),
    ("npm", ["nsbox-left"], "node -e \"console.log(require('nsbox-left')('x', 3) + '|')\"", "  x|\n", "npm"),
    ("apt", ["jq"], "echo '{\"a\": 42}' | jq .a", "42\n", "apt"),
]
# What a sealed sandbox gets when it tries the registry: the connection
# refused (ECONNREFUSED: nothing listens in its network namespace), exit 3.
# Any other failure (a timeout, a crash, a missing interpreter) is not that.
PY_PROBE = ("python3 -c 'import urllib.request as u, sys\n"
            "try: u.urlopen(\"%s\", timeout=5); print(\"reached\")\n"
            "except OSError as e: print(\"errno\", getattr(getattr(e, \"reason\", e), \"errno\", e)); sys.exit(3)'")
PROBE = {
    "pip": PY_PROBE % E["PYPI_URL"],
    "npm": "node -e \"require('http').get('%s', r => process.exit(0)).on('error', e => "
           "{console.log('errno', e.code); process.exit(3)})\"" % E["NPM_URL"],
    "apt": PY_PROBE % E["APT_URL"],
}
SEALED = {"pip": "errno 111\n", "npm": "errno ECONNREFUSED\n", "apt": "errno 111\n"}


def sealed(mgr, probe):
    return probe.get("exit_code") == 3 and probe.get("stdout") == SEALED[mgr]


for mgr, pkgs, cmd, want, log in MANAGERS:
    # -- first install into a fresh sandbox: done, sealed, cached --------------
    sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
    before = log_lines(log)
    t0 = time.time()
    r = s.tool("install_packages", sandbox_id=sid, manager=mgr, packages=pkgs)
    first_s = time.time() - t0
    st = sc(r)
    result(f"{mgr}_install_ok", st.get("status") == "ok" and st.get("exit_code") == 0,
           f"{st.get('status')} {st.get('exit_code')} {st.get('output', '')[-600:]} {r if not st else ''}")
    result(f"{mgr}_registry_reached", log_lines(log) > before, "the registry saw no request")
    net = st.get("network", [])
    result(f"{mgr}_network_recorded", any(e.get("verdict") == "allowed" for e in net), net)
    result(f"{mgr}_cached", st.get("cached") is True and st.get("cache_image", "").startswith(
        "localhost/nsbox-cache/packages:"), st)
    out = run(s, sid, cmd)
    result(f"{mgr}_present", out.get("stdout") == want, out)
    probe = run(s, sid, PROBE[mgr])
    result(f"{mgr}_sealed_after", sealed(mgr, probe), probe)
    print(f"# {PRE}{mgr}: first install {first_s * 1000:.0f} ms (manager {st.get('install_ms')} ms, "
          f"commit {st.get('commit_ms')} ms)", flush=True)
    s.tool("sandbox_stop", sandbox_id=sid)

    # -- the same set again: from the cache, no network at all -----------------
    before = log_lines(log)
    t0 = time.time()
    r = s.tool("sandbox_create", image=IMAGE, memory_mb=MEM, packages={"manager": mgr, "packages": pkgs})
    hit_s = time.time() - t0
    st = sc(r)
    pk = st.get("packages", {})
    result(f"{mgr}_cache_hit", pk.get("cached") is True and pk.get("network") == [], r)
    result(f"{mgr}_cache_hit_no_request", log_lines(log) == before, f"{log_lines(log) - before} requests")
    sid = st.get("sandbox_id")
    if sid:
        out = run(s, sid, cmd)
        result(f"{mgr}_cache_hit_present", out.get("stdout") == want, out)
        probe = run(s, sid, PROBE[mgr])
        result(f"{mgr}_cache_hit_sealed", sealed(mgr, probe), probe)
        s.tool("sandbox_stop", sandbox_id=sid)
    print(f"# {PRE}{mgr}: sandbox_create from the cache {hit_s * 1000:.0f} ms", flush=True)

# -- two sessions ask for a new set at once: one installs, the other waits
# for the lock of its key and starts from the cache ---------------------------------
import threading  # noqa: E402

s2 = Server(extra=REG, store=E["NSBOX_STORE"], argv_prefix=argv_prefix)
both = {}


def create(name, srv):
    both[name] = srv.tool("sandbox_create", image=IMAGE, memory_mb=MEM,
                          packages={"manager": "pip", "packages": ["nsbox-dep", "nsbox-hello"]})


before = log_lines("pypi")
ts = [threading.Thread(target=create, args=(n, v)) for n, v in (("a", s), ("b", s2))]
for th in ts:
    th.start()
for th in ts:
    th.join()
pks = [sc(both[n]).get("packages", {}) for n in ("a", "b")]
installed = [p for p in pks if p.get("network")]
hits = [p for p in pks if p.get("cached") and p.get("network") == []]
result("concurrent_one_install", len(installed) == 1 and len(hits) == 1, both)
result("concurrent_same_image", pks[0].get("cache_image") == pks[1].get("cache_image"), pks)
# The hello wheel's index and file, once: nsbox-dep's were fetched before.
fetched = log_lines("pypi") - before
result("concurrent_registry_once", 0 < fetched <= 4, f"{fetched} requests")
for n, srv in (("a", s), ("b", s2)):
    if sc(both[n]).get("sandbox_id"):
        srv.tool("sandbox_stop", sandbox_id=sc(both[n])["sandbox_id"])
s2.close()

# -- a sandbox something ran in: installed, not cached ---------------------------
sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
run(s, sid, "true")
st = sc(s.tool("install_packages", sandbox_id=sid, manager="pip", packages=["nsbox-dep"]))
result("used_not_cached", st.get("status") == "ok" and st.get("cached") is False
       and "used before" in st.get("not_cached", ""), st)
s.tool("sandbox_stop", sandbox_id=sid)

# -- sandbox_create {packages} on a miss: installs, caches -------------------------
r = s.tool("sandbox_create", image=IMAGE, memory_mb=MEM, packages={"manager": "pip", "packages": ["nsbox-dep"]})
pk = sc(r).get("packages", {})
result("create_miss_installs", pk.get("status") == "ok" and pk.get("cached") is True, r)
if sc(r).get("sandbox_id"):
    s.tool("sandbox_stop", sandbox_id=sc(r)["sandbox_id"])

# -- a failing install is the tool's result, and the sandbox sealed ------------------
sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
st = sc(s.tool("install_packages", sandbox_id=sid, manager="pip", packages=["nsbox-missing"]))
result("missing_package_error", st.get("status") == "error" and st.get("cached") is False, st)
s.tool("sandbox_stop", sandbox_id=sid)
s.close()

# -- apt checks the mirror's signature: without the operator's key (--apt-key)
# the image's Debian keys do not cover the test archive, and nothing installs.
s = Server(extra=REG[:6], store=E["NSBOX_STORE"], argv_prefix=argv_prefix)
sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
st = sc(s.tool("install_packages", sandbox_id=sid, manager="apt", packages=["hello"]))
result("apt_unsigned_refused", st.get("status") == "error" and "NO_PUBKEY" in st.get("output", "")
       and run(s, sid, "command -v hello").get("exit_code") != 0, st)
s.close()

# -- the operator turns managers off ---------------------------------------------------
s = Server(extra=REG + ["--install", "pip", "--max-package-caches", "0"], store=E["NSBOX_STORE"],
           argv_prefix=argv_prefix)
# A server started anew finds the cache the first one made (it is in the store).
before = log_lines("pypi")
pk = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM,
               packages={"manager": "pip", "packages": ["nsbox-hello"]})).get("packages", {})
result("cache_survives_restart", pk.get("cached") is True and pk.get("network") == []
       and log_lines("pypi") == before, pk)
sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
r = s.tool("install_packages", sandbox_id=sid, manager="npm", packages=["nsbox-left"])
result("install_npm_off", r.get("isError") and "turned off" in json.dumps(r), r)
sid = sc(s.tool("sandbox_create", image=IMAGE, memory_mb=MEM))["sandbox_id"]
st = sc(s.tool("install_packages", sandbox_id=sid, manager="pip", packages=["nsbox-dep==1.0"]))
result("cache_cap_not_cached", st.get("status") == "ok" and st.get("cached") is False
       and "full" in st.get("not_cached", ""), st)
s.close()
s = Server(extra=REG + ["--install", "none"], store=E["NSBOX_STORE"], argv_prefix=argv_prefix)
names = [t["name"] for t in s.req("tools/list", {})["result"]["tools"]]
result("install_none_unlisted", "install_packages" not in names, names)
s.close()
finish()
