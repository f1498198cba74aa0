"""Package caches and commits are private to their store and tenant
(issue #24, images/store.h "Names private to their store"), tested the way
it broke: a session installs packages (a real pip install against the
local registry tests/integration/packages.sh serves) and commits a sandbox;
those images carry the default image's sandbox.language label.

  shared   as root, through `nsbox serve` on root's store /var/lib/nsbox;
           then a new desktop user's first execute_code works and runs in
           the default image, and nothing of root's session shows to them.
  tenants  `nsbox serve --http` with two tenants (alice, bob): neither sees
           or can use the other's cache or commit, by name or by digest;
           the error for a hidden image is the one for a missing image.

Environment: NSBOX, SUITE, IMAGE, PYPI_URL, NPM_URL, APT_URL, APT_KEY as
tests/mcp/packages.py; shared: USER_NSBOX (a copy of the binary the user
can run), USER_HOME (a fresh home owned by nsboxtest); tenants:
NSBOX_STORE (a store holding IMAGE), TOKEN_FILE."""
import json
import os
import re
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import mcphttp  # noqa: E402
from nsbox_test import finish, result  # noqa: E402
from stdio_client import Server  # noqa: E402

E = os.environ
IMAGE = E["IMAGE"]
REG = ["--pip-index", E["PYPI_URL"], "--npm-registry", E["NPM_URL"], "--apt-mirror", E["APT_URL"],
       "--apt-key", E["APT_KEY"]]
MEM = 2048
PRIVATE = re.compile(r"localhost/nsbox-(cache|commit)/")
# One-shot python in whatever image serves python: 42, and whether the
# package root's (or another tenant's) session installed is absent.
PROBE = 'import importlib.util; print(6 * 7, importlib.util.find_spec("nsbox_hello") is None)'


def sc(r):
    return r.get("structuredContent", {}) if isinstance(r, dict) else {}


def text(r):
    return " ".join(c.get("text", "") for c in (r or {}).get("content", []))


def names_of(listing):
    return [n for im in sc(listing).get("images", []) for n in im.get("names", [])]


def python_image(langs):
    """The image list_languages names first for python."""
    for entry in sc(langs).get("languages", []):
        if entry.get("language") == "python":
            return entry.get("image")
    return None


def install_and_commit(call, name, commit_name):
    """In a new sandbox of IMAGE: pip installs nsbox-hello (cached as a
    package cache image), then commits the sandbox.  Returns (cache image,
    commit image, commit digest)."""
    sid = sc(call("sandbox_create", {"image": IMAGE, "memory_mb": MEM})).get("sandbox_id")
    st = sc(call("install_packages", {"sandbox_id": sid, "manager": "pip", "packages": ["nsbox-hello"]}))
    cache = st.get("cache_image", "")
    result(f"{name}_install_cached", st.get("status") == "ok" and st.get("cached") is True and
           cache.startswith("localhost/nsbox-cache/packages:"), st)
    c = call("sandbox_commit", {"sandbox_id": sid, "name": commit_name})
    result(f"{name}_committed", not c.get("isError") and sc(c).get("image", "").startswith(
        "localhost/nsbox-commit/"), c)
    call("sandbox_stop", {"sandbox_id": sid})
    return cache, sc(c).get("image", ""), sc(c).get("digest", "")


# ---- root's store and a new desktop user ---------------------------------------

def blob_mode(store, digest):
    return stat.S_IMODE(os.stat(os.path.join(store, "blobs", "sha256", digest.split(":", 1)[1])).st_mode)


def manifest_layers(store, digest):
    with open(os.path.join(store, "blobs", "sha256", digest.split(":", 1)[1])) as f:
        return [l["digest"] for l in json.load(f)["layers"]]


def shared():
    store = "/var/lib/nsbox"
    # Root's default store, shared with other users (whatever NSBOX_STORE
    # the caller has).
    root = Server(extra=REG, argv_prefix=["env", "-u", "NSBOX_STORE"])
    call = lambda n, a: root.req("tools/call", {"name": n, "arguments": a})["result"]  # noqa: E731
    cache, commit, commit_digest = install_and_commit(call, "root", f"private-{os.getpid()}")
    try:
        # Root's own session: the cache never serves python; its commit is
        # its own to list (stdio is one tenant), the cache is nobody's.
        result("root_languages_default", python_image(root.tool("list_languages")) == IMAGE,
               root.tool("list_languages"))
        listed = names_of(root.tool("list_images"))
        result("root_lists_own_commit_not_cache", commit in listed and cache not in listed, listed)
        root.close()

        # The store's files: the private names apart, 0600; the cache's own
        # layer unreadable by others, the default image's layers readable.
        with open(os.path.join(store, "refs.json")) as f:
            public = json.load(f)["refs"]
        with open(os.path.join(store, "refs-private.json")) as f:
            private = json.load(f)["refs"]
        result("refs_json_public_only", not any(PRIVATE.match(n) for n in public) and IMAGE in public,
               sorted(public))
        result("refs_private_json_0600", cache in private and commit in private and
               stat.S_IMODE(os.stat(os.path.join(store, "refs-private.json")).st_mode) == 0o600,
               sorted(private))
        # The cache's digest from whichever file has it (an old store's
        # refs.json held every name).
        cache_digest = (private.get(cache) or public.get(cache) or {}).get("digest")
        if cache_digest is None:
            result("cache_layer_0600_base_0644", False, f"{cache} is in neither refs file")
        else:
            top = manifest_layers(store, cache_digest)[-1]
            base = manifest_layers(store, public[IMAGE]["digest"])
            result("cache_layer_0600_base_0644", top not in base and blob_mode(store, top) == 0o600 and
                   blob_mode(store, cache_digest) == 0o600 and all(blob_mode(store, d) == 0o644 for d in base),
                   f"top {oct(blob_mode(store, top))}, manifest {oct(blob_mode(store, cache_digest))}")

        # A desktop user's first run, from a fresh home.
        h = E["USER_HOME"]
        as_user = ["runuser", "-u", "nsboxtest", "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                   f"HOME={h}", f"XDG_DATA_HOME={h}/.local/share", f"XDG_CONFIG_HOME={h}/.config",
                   "NSBOX_LIMITS=best-effort"]
        user = Server(argv_prefix=as_user, nsbox=E["USER_NSBOX"])
        langs = user.tool("list_languages")
        entries = json.dumps(sc(langs))
        result("user_languages_default_only", python_image(langs) == IMAGE and not PRIVATE.search(entries),
               entries[:600])
        r = user.tool("execute_code", language="python", code=PROBE)
        result("user_first_execute_code_default_image", sc(r).get("stdout") == "42 True\n",
               f"{sc(r).get('stdout')!r} {text(r)[:400]}")
        listed = names_of(user.tool("list_images"))
        result("user_lists_no_private", not any(PRIVATE.match(n) for n in listed), listed)
        user.close()
        for ref in (cache, commit, cache_digest or "sha256:" + "0" * 64):
            p = subprocess.run(as_user + [E["USER_NSBOX"], "inspect", ref], capture_output=True, text=True)
            result(f"user_cannot_import_{'digest' if ref.startswith('sha256') else ref.split('/')[1]}",
                   p.returncode == 1 and "no image" in p.stderr, f"{p.returncode} {p.stderr[-300:]}")
        p = subprocess.run(as_user + [E["USER_NSBOX"], "images", "--names"], capture_output=True, text=True)
        result("user_images_shows_no_private", p.returncode == 0 and IMAGE in p.stdout.split() and
               not PRIVATE.search(p.stdout), p.stdout[-600:])
    finally:
        # Root's store goes back to what it held.
        p = subprocess.run(["env", "-u", "NSBOX_STORE", E["NSBOX"], "rmi", cache, commit], capture_output=True, text=True)
        with open(os.path.join(store, "refs-private.json")) as f:
            left = json.load(f)["refs"]
        result("root_store_restored", p.returncode == 0 and cache not in left and commit not in left,
               f"{p.returncode} {p.stderr[-300:]} {sorted(left)}")


# ---- two tenants over HTTP -------------------------------------------------------

class Http:
    def __init__(self, store, token_file):
        self.p = subprocess.Popen([E["NSBOX"], "--store", store, "serve", "--http", "127.0.0.1:0",
                                   "--token-file", token_file, *REG],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        deadline = time.time() + 30
        while self.port is None and time.time() < deadline:
            line = self.p.stderr.readline()
            if not line:
                break
            m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            raise RuntimeError("the HTTP server did not start")

    def call(self, token, name, args):
        """A 2026-07-28 stateless tools/call as the tenant of token."""
        params = {"name": name, "arguments": args,
                  "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {}}}
        h = {"Content-Type": "application/json", "Accept": mcphttp.BOTH, "MCP-Protocol-Version": "2026-07-28",
             "Mcp-Method": "tools/call", "Mcp-Name": name, "Authorization": f"Bearer {token}"}
        if "sandbox_id" in args:
            h["Mcp-Param-Sandbox-Id"] = args["sandbox_id"]
        r = mcphttp.request(self.port, "POST", headers=h, body=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode(), timeout=600)
        resp = r.response(1)
        if resp is None or "result" not in resp:
            raise RuntimeError(f"{name}: no result: {r}")
        return resp["result"]

    def close(self):
        self.p.terminate()
        self.p.wait(60)


def tenants():
    tokens = dict(line.split() for line in open(E["TOKEN_FILE"]) if line.strip())
    srv = Http(E["NSBOX_STORE"], E["TOKEN_FILE"])
    alice = lambda n, a: srv.call(tokens["alice"], n, a)  # noqa: E731
    bob = lambda n, a: srv.call(tokens["bob"], n, a)  # noqa: E731
    env = f"env{os.getpid()}"  # a store kept between runs has the last run's
    try:
        cache, a_commit, a_digest = install_and_commit(alice, "alice", env)
        result("alice_commit_in_own_scope", re.match(rf"^localhost/nsbox-commit/alice-t[0-9a-f]{{8}}/{env}:latest$",
                                                    a_commit) is not None, a_commit)
        listed = names_of(alice("list_images", {}))
        result("alice_lists_own_commit_not_cache", a_commit in listed and cache not in listed, listed)

        listed = names_of(bob("list_images", {}))
        result("bob_lists_no_cache_nor_alice", not any(n.startswith("localhost/nsbox-cache/") or "/alice-t" in n
                                                      for n in listed) and IMAGE in listed, listed)
        result("bob_languages_default", python_image(bob("list_languages", {})) == IMAGE)
        r = bob("execute_code", {"language": "python", "code": PROBE})
        result("bob_one_shot_default_image", sc(r).get("stdout") == "42 True\n", r)
        # Hidden exactly as a missing image is: the same words.
        missing = {"name": a_commit.replace(f"/{env}:", "/nope:"), "digest": "sha256:" + "0" * 64,
                   "cache": cache[:-8] + "00000000"}
        for what, ref in (("name", a_commit), ("digest", a_digest), ("cache", cache)):
            want = text(bob("sandbox_create", {"image": missing[what]})).replace(missing[what], "REF")
            r = bob("sandbox_create", {"image": ref})
            result(f"bob_cannot_use_alice_{what}", r.get("isError") is True and
                   text(r).replace(ref, "REF") == want and "no image REF" in want, f"{text(r)} / {want}")
        # bob's own commit of that name is bob's: no "exists already".
        sid = sc(bob("sandbox_create", {"image": IMAGE})).get("sandbox_id")
        c = bob("sandbox_commit", {"sandbox_id": sid, "name": env})
        b_commit = sc(c).get("image", "")
        result("bob_commits_same_name_apart", not c.get("isError") and b_commit != a_commit and
               re.match(rf"^localhost/nsbox-commit/bob-t[0-9a-f]{{8}}/{env}:latest$", b_commit), c)
        bob("sandbox_stop", {"sandbox_id": sid})
        result("alice_does_not_see_bob", b_commit not in names_of(alice("list_images", {})))
        # alice starts from her commit: the package is there.
        r = alice("sandbox_create", {"image": a_commit, "memory_mb": MEM})
        sid = sc(r).get("sandbox_id")
        out = sc(alice("run_command", {"sandbox_id": sid, "command": "python3 -c 'import nsbox_hello; "
                                                                     "print(nsbox_hello.GREETING)'"})) if sid else r
        result("alice_uses_own_commit", out.get("stdout") == "hello from nsbox\n", out)
        if sid:
            alice("sandbox_stop", {"sandbox_id": sid})
    finally:
        srv.close()


if __name__ == "__main__":
    {"shared": shared, "tenants": tenants}[sys.argv[1]]()
    finish()
