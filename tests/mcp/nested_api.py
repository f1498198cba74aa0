"""Nested sandboxes over MCP (issue #31, boxes/nested.h, docs/nested.md):
sandbox_create {nested} refused unless the server has --allow-nested,
then the Docker API inside (GET /_ping, DOCKER_HOST, podman --remote,
docker-compose), nested_images from the store runnable with no network,
the refusals of nested_images, a timeout that kills the API and nsbox
starting it again (stderr says so, api_restarts counts it), and the layout
directory gone with the sandbox.  Run by tests/integration/nested_api.sh once as root and once as
nsboxtest.

Environment: NSBOX, SUITE, MODE (the names' prefix), STORE (the server's
store: holds IMAGE and BB), IMAGE (an image with podman, curl and
docker-compose), BB (a busybox image's name in STORE), AS_USER (set: run
the server as nsboxtest)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import nsbox_test as nt  # noqa: E402
from stdio_client import Server  # noqa: E402

E = os.environ
STORE, IMAGE, BB = E["STORE"], E["IMAGE"], E["BB"]
PREFIX = ["runuser", "-u", "nsboxtest", "--", "env", "NSBOX_LIMITS=best-effort"] if E.get("AS_USER") else []
nt.configure(prefix=E.get("MODE", "root") + "/")
SOCK = "/run/podman/podman.sock"


def sc(r):
    return r.get("structuredContent", {}) if isinstance(r, dict) else {}


def text(r):
    return " ".join(c.get("text", "") for c in (r or {}).get("content", []))


def entries():
    """Everything in STORE/nested: the layouts and their owner files."""
    d = os.path.join(STORE, "nested")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def layouts():
    """The layouts in STORE/nested (not their RANDOM.owner files)."""
    return [e for e in entries() if not e.endswith(".owner")]


def server(*extra):
    return Server(extra=("--memory", "2048", "--max-memory", "4096", "--disk", "2048", *extra),
                  store=STORE, argv_prefix=PREFIX)


def run(s, sid, cmd, timeout=120):
    r = s.tool("run_command", sandbox_id=sid, command=cmd, timeout_s=timeout)
    return sc(r), r


# -- off by default: the error names the flag ---------------------------------
s = server()
try:
    r = s.tool("sandbox_create", image=IMAGE, nested=True)
    nt.result("refused_without_allow_nested", r.get("isError") and "--allow-nested" in text(r),
              f"{r}")
    # The refusal is checked before anything is made: no layout either.
    r = s.tool("sandbox_create", image=IMAGE, nested=True, nested_images=[BB])
    nt.result("refused_without_allow_nested_no_layout",
              r.get("isError") and "--allow-nested" in text(r) and layouts() == [],
              f"{text(r)} layouts={layouts()}")
finally:
    s.close()

s = server("--allow-nested")
try:
    r = s.tool("sandbox_create", image=IMAGE, nested_images=[BB])
    nt.result("nested_images_without_nested_refused",
              r.get("isError") and "nested_images goes with nested" in text(r), f"{r}")
    r = s.tool("sandbox_create", image=IMAGE, nested=True, nested_images=["localhost/nosuch-nested:1"])
    t = text(r)
    nt.result("missing_nested_image_refused",
              r.get("isError") and "localhost/nosuch-nested:1" in t and "store" in t and layouts() == [],
              f"{t} layouts={layouts()}")

    r = s.tool("sandbox_create", image=IMAGE, nested=True, nested_images=[BB])
    c = sc(r)
    sid = c.get("sandbox_id")
    nt.result("created_with_api",
              not r.get("isError") and c.get("nested") is True and c.get("docker_api") is True and
              c.get("docker_host") == "unix://" + SOCK and isinstance(c.get("api_ready_ms"), int) and
              c.get("api_ready_ms") > 0 and c.get("nested_images") == [BB] and
              c.get("nested_network") in ("bridge", "host"), f"{r}")
    nt.note(f"api_ready_ms={c.get('api_ready_ms')} nested_network={c.get('nested_network')} "
            f"note={c.get('nested_note')}")
    if c.get("nested_network") == "host":
        nt.result("host_network_says_the_fix", "chmod 0666 /dev/net/tun" in (c.get("nested_note") or ""), f"{c}")
    else:
        nt.result("host_network_says_the_fix", "nested_note" not in c, f"{c}")
    # Its owner file (beside it, not in what the sandbox sees) names the
    # sandbox's state directory, which exists while the sandbox runs.
    owner = open(os.path.join(STORE, "nested", layouts()[0] + ".owner")).read() if len(layouts()) == 1 else ""
    nt.result("layout_made", len(layouts()) == 1 and entries() == [layouts()[0], layouts()[0] + ".owner"] and
              os.path.isdir(owner) and owner.rstrip("/").endswith(sid or "?"), f"{entries()} owner={owner!r}")
    lst = sc(s.tool("sandbox_list")).get("sandboxes", [])
    nt.result("listed_as_nested", any(x.get("sandbox_id") == sid and x.get("nested") is True and
                                      x.get("docker_api") is True for x in lst), f"{lst}")

    o, r = run(s, sid, f"curl -s --unix-socket {SOCK} http://d/_ping")
    nt.result("ping_ok", o.get("exit_code") == 0 and o.get("stdout", "").strip() == "OK", f"{o}")
    o, r = run(s, sid, 'echo "$DOCKER_HOST"; readlink /run/docker.sock')
    nt.result("docker_host_and_socket_link",
              o.get("stdout", "").split() == ["unix://" + SOCK, SOCK], f"{o}")
    o, r = run(s, sid, "podman --url \"$DOCKER_HOST\" info --format '{{.Host.OS}}'")
    nt.result("podman_remote_info", o.get("exit_code") == 0 and o.get("stdout", "").strip() == "linux", f"{o}")
    o, r = run(s, sid, "docker-compose version")
    nt.result("docker_compose_version", o.get("exit_code") == 0 and "docker-compose" in o.get("stdout", "").lower(),
              f"{o}")
    # docker-compose (v1: a Docker API client) runs a service of the nested
    # image through DOCKER_HOST (host network: the runtime's part).
    compose = ('mkdir -p /tmp/c && cd /tmp/c && printf \'version: "3"\\nservices:\\n  hello:\\n    image: %s\\n'
               '    network_mode: host\\n    command: echo compose-ok\\n\' > docker-compose.yml && '
               'docker-compose up --no-color 2>&1 && docker-compose rm -f >/dev/null 2>&1' % BB)
    o, r = run(s, sid, compose, timeout=180)
    nt.result("compose_up_through_api", o.get("exit_code") == 0 and "compose-ok" in o.get("stdout", ""), f"{o}")
    # The Docker API (DOCKER_HOST, as Docker clients read it) lists the
    # image loaded from the store.
    o, r = run(s, sid, 'curl -s --unix-socket "${DOCKER_HOST#unix://}" http://d/v1.40/images/json')
    nt.result("api_lists_nested_image", o.get("exit_code") == 0 and BB in o.get("stdout", ""), f"{o}")
    # No network at all (the sandbox has no rules): the image runs from the
    # nested storage, never a registry.  --network host: the container
    # shares the sandbox's network namespace (sealed: lo only), the mode
    # that needs nothing more of the runtime (a container network of its
    # own is the workflow suites' to test).
    o, r = run(s, sid, f"podman run --rm --network host {BB} echo nested-ok", timeout=180)
    nt.result("nested_image_runs_offline",
              o.get("exit_code") == 0 and o.get("stdout", "").strip().endswith("nested-ok"), f"{o}")
    o, r = run(s, sid, "podman pull docker.io/library/alpine:3 >/dev/null 2>&1; echo $?")
    nt.result("no_network_for_pulls", o.get("stdout", "").strip() not in ("", "0"), f"{o}")

    # A timeout kills every process of the sandbox but init, the API too:
    # it is started again before the result, which says so, and the next
    # command finds it answering (the image loaded at creation still there).
    o, r = run(s, sid, "echo before; sleep 60", timeout=2)
    nt.result("timeout_restarts_api",
              o.get("timed_out") is True and "the API was started again" in o.get("stderr", ""), f"{o}")
    o, r = run(s, sid, f"curl -s --unix-socket {SOCK} http://d/_ping; echo; "
                       f"podman run --rm --network host {BB} echo after-restart")
    nt.result("api_answers_after_timeout",
              o.get("exit_code") == 0 and o.get("stdout", "").split() == ["OK", "after-restart"], f"{o}")
    lst = sc(s.tool("sandbox_list")).get("sandboxes", [])
    nt.result("api_restart_counted", any(x.get("sandbox_id") == sid and x.get("api_restarts") == 1 and
                                         x.get("docker_api") is True for x in lst), f"{lst}")

    r = s.tool("sandbox_stop", sandbox_id=sid)
    nt.result("layout_removed_with_sandbox", not r.get("isError") and entries() == [], f"{r} {entries()}")
finally:
    s.close()
nt.finish()
