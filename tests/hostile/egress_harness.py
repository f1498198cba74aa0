"""The harness of tests/hostile/egress_cases.py: its environment (E,
USER, ONLY) and shared state (P: the host servers' ports, PATHS: the
hosts, resolv.conf and canary socket files; both filled by
egress_cases.setup()), the test image's name, the front (`nsbox run --net`
as root or as the rootless user, the probes of egress_probe.py inside),
the outcome predicates and step builders the cases' plans are made of,
the wait for the run's broker to end and the host servers to go quiet
(settled), and check(): one case's plan run in one sandbox, every
forbidden attempt's exact failure, the host servers' events and the
result's network audit judged together.  Runs no case of its own."""
import json
import os
import re
import socket
import subprocess
import time

from egress_probe import IMAGE_PATH
from egress_servers import EVENTS, settle


# =============================================================================
# The harness.
# =============================================================================

E = os.environ
USER = E.get("ROOTLESS_USER", "nsboxtest")
ONLY = re.compile(E.get("ONLY", ""))
P = {}                 # ports: web, tls, addr, canary, udp
PATHS = {}             # files: hosts, resolv, sock
# The test image (the python fixture, the probe, the CA) in both stores;
# egress_cases.setup() makes it.
IMAGE = "hostile-egress"


class Front:
    """nsbox run as root or as the rootless user."""

    def __init__(self, mode):
        self.mode = mode
        self.rootless = mode == "rootless"
        self.nsbox = E["NSBOX_RL"] if self.rootless else E["NSBOX"]
        self.store = E["STORE_RL"] if self.rootless else E["STORE"]

    def prefix(self):
        if self.rootless:
            # Under ASan (tests/run.sh) the sanitizers' options and report
            # directory pass env -i: a report must land in a file.
            san = [f"{k}={E[k]}" for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "NSBOX_SANITIZER_DIR") if E.get(k)]
            return ["runuser", "-u", USER, "--", "env", "-i", "PATH=/usr/bin:/bin", f"HOME=/home/{USER}",
                    "NSBOX_LIMITS=best-effort"] + san
        return []

    def cli(self, args, timeout=60):
        p = subprocess.run(self.prefix() + [self.nsbox, "--store", self.store] + args,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def run(self, rules, steps, resolver=False, timeout=90):
        """Runs the probes steps in a fresh sandbox with --net rules.
        resolver: nsbox (and so its broker) runs in a mount namespace of its
        own whose /etc/hosts and /etc/resolv.conf are the test's (names for
        rebinding, the logging DNS server).  Returns (record, {id: result})."""
        argv = [self.nsbox, "--store", self.store, "run", "--json", "--timeout", str(timeout - 30)]
        for r in rules:
            argv += ["--net", r]
        argv += [IMAGE, "--", "python3", IMAGE_PATH, "inside", json.dumps(steps)]
        argv = self.prefix() + argv
        if resolver:
            argv = ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
                    'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && shift 2 && exec "$@"',
                    "sh", PATHS["hosts"], PATHS["resolv"]] + argv
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        try:
            rec = json.loads(out)
        except ValueError:
            rec = {"nsbox_error": (err or out).strip()[-600:], "rc": p.returncode}
        got = {}
        for line in rec.get("stdout", "").splitlines():
            try:
                d = json.loads(line)
                got[d["id"]] = d
            except (ValueError, KeyError, TypeError):
                pass
        return rec, got


# Outcome predicates: (name, fn(result) -> bool).
def refused(r):
    """connect() itself failed: nothing listens there inside the netns."""
    return r.get("connect") == "ECONNREFUSED"


def closed(r):
    """Connected (a listener of nsbox's took it), then closed by the broker
    before any upstream byte: EOF or reset, or at most the broker's own 4xx
    refusal (never an upstream's answer)."""
    if r.get("connect") == "ECONNRESET":
        return True   # accepted by nsbox's listener, reset by the broker at once
    if r.get("connect") != "ok" or r.get("marker"):
        return False
    if "responses" in r:
        rs = r["responses"]
        return r.get("end") in ("eof", "ECONNRESET", "EPIPE", "send:EPIPE", "send:ECONNRESET") and \
            not any(x["marker"] for x in rs) and all((x["status"] or 400) >= 400 for x in rs)
    if "handshake" in r:
        return r["handshake"] != "ok" and r["handshake"] != "timeout"
    return r.get("end") in ("eof", "ECONNRESET") and (r.get("recv", "") == "" or
                                                      re.match(r"HTTP/1\.[01] 4\d\d", r.get("recv", "")))


def closed_or_refused(r):
    return closed(r) or refused(r)


def http_ok(r):
    rs = r.get("responses", [])
    return r.get("connect") == "ok" and rs and rs[0]["status"] == 200 and rs[0]["marker"]


def tls_ok(r):
    return r.get("handshake") == "ok" and r.get("status") == 200 and r.get("marker")


def errno_is(*names):
    return lambda r: r.get("result") in names


def get(name, host=None, port=None, **extra):
    """A GET of / with Host: name (on host:port, default name:web)."""
    return {"do": "http", "host": host or name, "port": port or P["web"],
            "requests": [f"GET / HTTP/1.1\r\nHost: {name}\r\n\r\n"], **extra}


def raw(host, port, *pieces, **extra):
    return {"do": "tcp", "host": host, "port": port, "send": list(pieces), **extra}


def tls(host, sni, port=None, **extra):
    return {"do": "tls", "host": host, "port": port or P["tls"], "sni": sni, **extra}


WEB = lambda: f"web.test={'127.0.0.1'}:{P['web']}"  # noqa: E731
TLS = lambda: f"tls.test={'127.0.0.1'}:{P['tls']}"  # noqa: E731


def in_fake_range(ip):
    a = socket.inet_aton(ip)
    return a[0] == 198 and a[1] in (18, 19)


def brokers_of(store):
    """This store's egress brokers still running (pid and command line)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "__nsbox-egress-broker" in cmd and store + "/" in cmd:
            found.append(f"{pid} {cmd[:120]}")
    return found


def settled(front):
    """'' once the run's broker has ended and every host server is quiet
    (every event of the case is in EVENTS), else what is still going on.
    Events are read only then: a late one is never missed (fail-open)."""
    end = time.monotonic() + 15
    while brokers_of(front.store) and time.monotonic() < end:
        time.sleep(0.05)
    left = brokers_of(front.store)
    if left:
        return f"brokers still running 15 s after the run: {left[:2]}"
    return "" if settle(10) else "the host servers never went quiet (connections still pending)"


def check(front, rules, plan, allowed=(), refused_hosts=(), resolver=False, extra=None, audit_check=None):
    """plan: [(step, predicate, what)].  allowed: {server: max events} the
    case may touch (every other server: none).  refused_hosts: hosts the
    audit must name as refused.  extra(got, new_events) -> list of problems."""
    steps = []
    for i, (st, _, _) in enumerate(plan):
        steps.append(dict(st, id=f"s{i}"))
    mark = len(EVENTS)
    rec, got = front.run(rules, steps, resolver=resolver)
    unsettled = settled(front)
    new = EVENTS[mark:]
    bad = [unsettled] if unsettled else []
    if "nsbox_error" in rec:
        return False, f"nsbox failed: {rec}"
    for i, (st, pred, what) in enumerate(plan):
        r = got.get(f"s{i}")
        if r is None:
            bad.append(f"{what}: no result (stderr: {rec.get('stderr', '')[-300:]})")
        elif not pred(r):
            bad.append(f"{what}: got {json.dumps({k: v for k, v in r.items() if k != 'id'})[:400]}")
    allowed = dict(allowed)
    counts = {}
    for server, detail in new:
        counts[server] = counts.get(server, 0) + 1
    for server, n in counts.items():
        if n > allowed.get(server, 0):
            bad.append(f"host server {server} was reached: {[d for s, d in new if s == server][:6]}")
    audit = rec.get("network")
    if not rules:
        if audit:
            bad.append(f"a sandbox without rules has a network audit: {audit}")
    elif not isinstance(audit, list):
        bad.append(f"the result has no network array: {sorted(rec)}")
    else:
        for h in refused_hosts:
            if not any(a.get("verdict") == "refused" and a.get("host") == h for a in audit):
                bad.append(f"the audit does not name the refused {h}: {json.dumps(audit)[:400]}")
    if extra:
        bad += extra(got, new)
    if audit_check:
        bad += audit_check(rec)
    return not bad, "; ".join(bad) or {"events": new[:8], "audit": (audit or [])[:6]}
