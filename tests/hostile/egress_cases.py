#!/usr/bin/env python3
"""The egress allow-list under attack (docs/network.md, issue #14): every
bypass of `nsbox run --net RULE` that the threat model names, as root and
rootless (the rootless user of tests/setup-users.sh), through the CLI.

Each case runs one sandbox of the test image (the python fixture plus a
layer with egress_probe.py, the static probe and a test CA in the system
trust store) with some rules, runs a list of probes inside (egress_probe.py,
one JSON line per probe), and asserts:
  - the exact failure of every forbidden attempt (ECONNREFUSED, a closed
    connection before any upstream byte, NXDOMAIN, EPERM...),
  - the allowed control attempts in the same sandbox worked (so a refusal
    is the broker's decision, not a broken setup),
  - the host side saw nothing it should not: every server below logs each
    connection (and each HTTP head, TLS server name, DNS question), and a
    case fails when one it does not allow was touched,
  - the result's `network` audit names the refused attempt.

Host side (egress_servers.py; all on 127.0.0.1 / ::1, ports chosen free at
start):
  web     HTTP/1.1 upstream of the name rule web.test=127.0.0.1:PORT
  tls     TLS upstream (cert for tls.test and other.test, made here by
          openssl with a test CA) of tls.test=127.0.0.1:PORT
  addr    a service reached by the operator's 127.0.0.1:PORT rule
  canary  TCP 127.0.0.1 and ::1, UDP 127.0.0.1, an abstract and a
          filesystem unix socket: nothing may ever reach them
  dns     (root runs) a DNS server on 127.0.0.77:53 that the broker's own
          resolver is pointed at (unshare -m, bind-mounted resolv.conf): it
          must never see a name the sandbox asked about but was refused.

Environment: NSBOX, NSBOX_RL, STORE, STORE_RL, WORK (a scratch directory
readable by the rootless user), ROOTLESS_USER (nsboxtest), PROBE (the
static probe, optional), ONLY (regex over egress/FRONT/CASE).  Run as
root.  Prints PASS/FAIL lines (suite hostile); exits 1 on any failure.
Invoked by tests/hostile/run.sh after hostile.py.

Here: the cases (each a plan for check()), their table CASES, setup and
main.  Beside it: egress_harness.py (the front, the outcome predicates,
check), egress_servers.py (the host side) and egress_probe.py (the
probes inside the sandbox)."""

import os
import sys

# First: an exception from here on (an import too; setup's are a FAIL of
# their own) is hostile/egress/harness, status 2.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nsbox_test as nt  # noqa: E402

nt.configure(suite="hostile/egress", width=900)

import json  # noqa: E402
import socket  # noqa: E402
import ssl  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from egress_probe import IMAGE_PATH, MARK  # noqa: E402
from egress_servers import (EVENTS, canary_tcp, event, free_port, http_upstream, listen,  # noqa: E402
                            make_ca, serve_forever, start_dns, start_udp_canary, tls_upstream)
from egress_harness import (E, IMAGE, ONLY, P, PATHS, TLS, WEB, Front, brokers_of, check,  # noqa: E402
                            closed, closed_or_refused, errno_is, get, http_ok, in_fake_range, raw,
                            refused, settled, tls, tls_ok)


# =============================================================================
# The cases.  Event counts: an HTTP GET reaching web is 2 events (connect,
# request); a TLS GET reaching tls is 3 (connect, sni, request).
# =============================================================================

def no_request_for(server, *hosts):
    def extra(got, new):
        return [f"{server} got a request for Host {h!r}" for h in hosts
                for s, d in new if s == server and d.startswith("request ") and d.split("host=", 1)[1] == h]
    return extra


def sni_only(*names):
    def extra(got, new):
        seen = [d for s, d in new if s == "tls" and d.startswith("sni=")]
        return [f"tls upstream saw {d}" for d in seen if d[4:] not in names]
    return extra


def ip_literal_v4(front):
    """An IP literal instead of a name, on a port the policy listens on: the
    broker finds no name for the address and closes.  127.0.0.1 on the web
    upstream's own port is the host's loopback service itself."""
    w = P["web"]
    return check(front, [WEB()], [
        (get("web.test"), http_ok, "control: web.test by name"),
        (get("web.test", "203.0.113.7", w), closed, "203.0.113.7 with Host web.test"),
        (get("web.test", "127.0.0.1", w), closed, "127.0.0.1 (the upstream's own address) with Host web.test"),
        (get("web.test", "10.0.0.1", w), closed, "10.0.0.1"),
        (get("web.test", "169.254.169.254", w), closed, "169.254.169.254 (metadata)"),
        (get("web.test", "198.18.200.200", w), closed, "an unissued fake address 198.18.200.200"),
        (raw("198.51.100.7", 9, "x"), refused, "198.51.100.7:9, a port no rule names"),
    ], allowed={"web": 2}, refused_hosts=["203.0.113.7"])


def ip_literal_v6(front):
    w = P["web"]
    return check(front, [WEB()], [
        (get("web.test"), http_ok, "control: web.test by name"),
        (get("web.test", "2001:db8::1", w), closed, "[2001:db8::1] with Host web.test"),
        (get("web.test", "::1", w), closed, "[::1] with Host web.test"),
        (get("web.test", "::ffff:127.0.0.1", w), closed, "[::ffff:127.0.0.1] (v4-mapped loopback)"),
        ({"do": "resolve", "name": "web.test"}, lambda r: r.get("addrs") == ["198.18.0.1"],
         "web.test is the first fake address"),
        (get("web.test", "::ffff:198.18.0.1", w), http_ok,
         "[::ffff:198.18.0.1]: v4-mapped form of web.test's own address, the same destination"),
        (get("web.test", "64:ff9b::7f00:1", w), closed, "[64:ff9b::7f00:1] (NAT64 of 127.0.0.1)"),
        (raw("2001:db8::1", 9, "x"), refused, "[2001:db8::1]:9"),
    ], allowed={"web": 4}, refused_hosts=["2001:db8::1"])


def ip_literal_tls(front):
    """TLS to a literal address carrying the allowed name as SNI."""
    t = P["tls"]
    return check(front, [TLS()], [
        (tls("tls.test", "tls.test"), tls_ok, "control: https tls.test"),
        (tls("203.0.113.7", "tls.test", t), closed, "203.0.113.7 with SNI tls.test"),
        (tls("2001:db8::1", "tls.test", t), closed, "[2001:db8::1] with SNI tls.test"),
        (tls("127.0.0.1", "tls.test", t), closed, "127.0.0.1 (the upstream's own address) with SNI tls.test"),
    ], allowed={"tls": 3}, refused_hosts=["203.0.113.7"])


def port_not_allowed(front):
    """An allowed name on a port its rule does not name: where nothing
    listens, refused; on another rule's port, closed by the broker."""
    return check(front, [WEB(), TLS()], [
        (get("web.test"), http_ok, "control: web.test on its port"),
        (get("web.test", port=P["tls"]), closed, "web.test on tls.test's port"),
        (tls("web.test", "web.test"), closed, "https web.test on tls.test's port (cert valid for web.test)"),
        (raw("web.test", P["canary"], "x"), refused, "web.test on the canary's port"),
        (raw("web.test", 80, "x"), refused, "web.test:80 (a mapped rule has one port)"),
        (raw("web.test", 443, "x"), refused, "web.test:443"),
    ], allowed={"web": 2}, refused_hosts=["web.test"], extra=no_request_for("web", "x"))


def sni_fronting(front):
    """Domain fronting: connect to tls.test's address, ask TLS for another
    name (the certificate covers it, so a relay would succeed)."""
    return check(front, [TLS(), WEB()], [
        (tls("tls.test", "tls.test"), tls_ok, "control: SNI tls.test"),
        ({"do": "urlopen", "url": f"https://tls.test:{P['tls']}/"},
         lambda r: r.get("status") == 200 and r.get("marker"), "control: urllib https://tls.test (the image trusts the CA)"),
        (tls("tls.test", "other.test"), closed, "SNI other.test on tls.test's address"),
        (tls("tls.test", "web.test"), closed, "SNI web.test (another allowed name) on tls.test's address"),
        (tls("tls.test", None, noverify=True), closed, "no SNI at all"),
        (tls("tls.test", "TLS.TEST.evil"), closed, "SNI with the name as a prefix"),
    ], allowed={"tls": 6}, refused_hosts=["tls.test"], extra=sni_only("tls.test"))


def host_differs(front):
    w = P["web"]
    hdr = lambda h: f"GET / HTTP/1.1\r\n{h}\r\n\r\n"  # noqa: E731
    req = lambda *rs: {"do": "http", "host": "web.test", "port": w, "requests": list(rs)}  # noqa: E731
    return check(front, [WEB(), TLS()], [
        (get("web.test"), http_ok, "control: Host web.test"),
        (req(hdr("Host: other.test")), closed, "Host other.test on web.test's address"),
        (req(hdr("Host: tls.test")), closed, "Host tls.test (another allowed name)"),
        (req(hdr("Host: web.test\r\nHost: other.test")), closed, "two Host headers"),
        (req("GET http://other.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n"), closed, "absolute-form other.test"),
        (req("GET / HTTP/1.0\r\n\r\n"), closed, "no Host"),
        (req(hdr("Host: web.test.\r\nX: y")), lambda r: http_ok(r) or closed(r), "trailing dot (either)"),
        (req(hdr("Host : other.test")), closed, "space before the colon"),
        (req(hdr(f"Host: web.test:{w}")), http_ok, "Host with the connection's own port (what clients send)"),
        (req(hdr("Host: web.test:1")), closed, "Host with another port"),
    ], allowed={"web": 6}, refused_hosts=["web.test"],
        extra=no_request_for("web", "other.test", "tls.test", "", "web.test:1"))


def keepalive_host_switch(front):
    """Host switching on a keep-alive connection: the first request passes,
    the second (another Host) must never reach the upstream; pipelined in
    one segment too."""
    w = P["web"]
    a = "GET / HTTP/1.1\r\nHost: web.test\r\n\r\n"
    b = "GET /second HTTP/1.1\r\nHost: other.test\r\n\r\n"

    def switched(r):
        rs = r.get("responses", [])
        return len(rs) >= 1 and rs[0]["status"] == 200 and rs[0]["marker"] and \
            not any(x["marker"] for x in rs[1:]) and r.get("end") in ("eof", "ECONNRESET", "send:EPIPE",
                                                                       "send:ECONNRESET")

    def pipelined(r):
        return r.get("connect") == "ok" and r.get("recv", "").count(MARK) <= 2 and \
            "GET /second" not in r.get("recv", "")
    return check(front, [WEB()], [
        ({"do": "http", "host": "web.test", "port": w, "requests": [a, b, a]}, switched,
         "web.test, then other.test on the same connection"),
        (raw("web.test", w, a + b), pipelined, "both pipelined in one segment"),
    ], allowed={"web": 4}, refused_hosts=["web.test"], extra=no_request_for("web", "other.test"))


def split_client_hello(front):
    """The ClientHello byte by byte (one TCP segment each) and re-framed into
    16-byte TLS records: reassembled and checked, both ways."""
    return check(front, [TLS()], [
        (tls("tls.test", "tls.test", split="bytes"), tls_ok, "byte by byte, SNI tls.test"),
        (tls("tls.test", "other.test", split="bytes"), closed, "byte by byte, SNI other.test"),
        (tls("tls.test", "tls.test", split="records"), tls_ok, "16-byte records, SNI tls.test"),
        (tls("tls.test", "other.test", split="records"), closed, "16-byte records, SNI other.test"),
    ], allowed={"tls": 6}, refused_hosts=["tls.test"], extra=sni_only("tls.test"))


def connect_upgrade(front):
    w = P["web"]
    req = lambda r: {"do": "http", "host": "web.test", "port": w, "requests": [r]}  # noqa: E731
    return check(front, [WEB()], [
        (get("web.test"), http_ok, "control"),
        (req("CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n"), closed, "CONNECT other.test"),
        (req(f"CONNECT web.test:{w} HTTP/1.1\r\nHost: web.test\r\n\r\n"), closed, "CONNECT web.test itself"),
        (req("GET /chat HTTP/1.1\r\nHost: web.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"), closed,
         "Upgrade: websocket"),
        (req("GET / HTTP/1.1\r\nHost: web.test\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n"
             "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"), closed, "Upgrade: h2c"),
        (raw("web.test", w, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), closed, "HTTP/2 prior knowledge"),
    ], allowed={"web": 2}, refused_hosts=["web.test"], extra=lambda g, n: [
        f"web saw {d}" for s, d in n if s == "web" and d.startswith("request") and d != "request GET host=web.test"])


def bodies_and_protocols(front):
    """HTTP bodies and methods other than GET/HEAD/OPTIONS, and protocols
    that are not HTTP or TLS, on a name rule."""
    w = P["web"]
    req = lambda r: {"do": "http", "host": "web.test", "port": w, "requests": [r]}  # noqa: E731
    return check(front, [WEB()], [
        (get("web.test"), http_ok, "control"),
        (req("POST / HTTP/1.1\r\nHost: web.test\r\nContent-Length: 5\r\n\r\nhello"), closed, "POST with a body"),
        (req("PUT /x HTTP/1.1\r\nHost: web.test\r\nContent-Length: 0\r\n\r\n"), closed, "PUT"),
        (req("GET / HTTP/1.1\r\nHost: web.test\r\nContent-Length: 6\r\n\r\nsecret"), closed, "GET with a body"),
        (req("GET / HTTP/1.1\r\nHost: web.test\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsecret\r\n0\r\n\r\n"),
         closed, "GET chunked"),
        (raw("web.test", w, "SSH-2.0-OpenSSH_9.2\r\n"), closed, "an SSH banner"),
        (raw("web.test", w, "\x00\x01\x02\x03binary"), closed, "binary junk"),
        (raw("web.test", w, "\x16\x03\x01\x00\x05hello"), closed, "a broken TLS record"),
    ], allowed={"web": 2}, refused_hosts=["web.test"], extra=lambda g, n: [
        f"web saw {d}" for s, d in n if s == "web" and d.startswith("request") and d != "request GET host=web.test"])


def dns_other_names(front):
    """DNS: only allowed names get an answer (a fake address, TTL 1), others
    NXDOMAIN, other types NODATA, other servers nothing; and no question
    ever leaves: nsbox runs with the logging DNS server as its host's
    resolver, which must hear nothing (mapped rules need no lookup)."""
    fake = lambda r: r.get("rcode") == 0 and len(r.get("answers", [])) == 1 and \
        in_fake_range(r["answers"][0]) and r.get("ttls") == [1]  # noqa: E731
    nx = lambda r: r.get("rcode") == 3 and not r.get("answers")  # noqa: E731
    nodata = lambda r: r.get("rcode") == 0 and r.get("n_answers") == 0  # noqa: E731
    d = lambda name, **k: {"do": "dns", "name": name, **k}  # noqa: E731
    return check(front, [WEB()], [
        (d("web.test"), fake, "A web.test"),
        (d("web.test", tcp=True), fake, "A web.test over TCP"),
        (d("evil.test"), nx, "A evil.test"),
        (d("evil.test", tcp=True), nx, "A evil.test over TCP"),
        (d("c2VjcmV0LWRhdGE.exfil.test", qtype="TXT"), nx, "TXT exfil name"),
        (d("www.web.test"), nx, "A www.web.test (a name below an allowed one)"),
        (d("web.test", qtype="AAAA"), nodata, "AAAA web.test"),
        (d("web.test", qtype="HTTPS"), nodata, "HTTPS web.test (no ECH config)"),
        (d("evil.test", server="8.8.8.8"), lambda r: r.get("error") == "ECONNREFUSED", "A evil.test to 8.8.8.8"),
        (d("evil.test", server="::1"), lambda r: r.get("error") == "ECONNREFUSED", "A evil.test to [::1]:53"),
        ({"do": "resolve", "name": "evil.test"}, lambda r: r.get("error") == "EAI_NONAME", "getaddrinfo evil.test"),
        ({"do": "resolve", "name": "web.test"}, lambda r: r.get("addrs") and all(in_fake_range(a) for a in r["addrs"]),
         "getaddrinfo web.test"),
    ], allowed={}, refused_hosts=["evil.test"], resolver=True)


REBIND = {"rebind-lo.test": "127.0.0.1", "rebind-ten.test": "10.1.2.3", "rebind-meta.test": "169.254.169.254",
          "rebind-v6.test": "::1", "rebind-mapped.test": "::ffff:127.0.0.1"}
WILD = {"a.wild.test": "127.0.0.1", "b.c.wild.test": "10.1.2.3"}


def dns_rebinding(front):
    """Name rules (no mapping) whose names the host resolves to loopback,
    private and metadata addresses (/etc/hosts of nsbox's own mount
    namespace; rebind-dns.test through the logging DNS server): the broker
    resolves, vets and refuses; the host's 127.0.0.1:PORT and [::1]:PORT
    services hear nothing."""
    w = P["web"]
    names = list(REBIND) + ["rebind-dns.test"]
    plan = [({"do": "resolve", "name": "rebind-lo.test"},
             lambda r: r.get("addrs") and all(in_fake_range(a) for a in r["addrs"]),
             "the sandbox sees a fake address, never the host's answer")]
    plan += [(get(n, n, w), closed, f"{n} -> {REBIND.get(n, '127.0.0.1 by DNS')}") for n in names]

    def extra(got, new):
        return [f"the resolver was asked {d}" for s, d in new if s == "dns" and "rebind-dns.test" not in d]

    def vetted(rec):
        """Refused at the vetting step, before any connect (10.1.2.3 and
        169.254.169.254 have no listener on this host to prove it)."""
        return [f"{n}: no refusal for a non-public address in the audit"
                for n in names if not any(a.get("host") == n and a.get("verdict") == "refused" and
                                          "not a public address" in a.get("reason", "")
                                          for a in rec.get("network", []))]
    return check(front, [f"{n}:{w}" for n in names], plan, allowed={"dns": 8}, refused_hosts=names,
                 resolver=True, extra=extra, audit_check=vetted)


def wildcard_rule(front):
    """*.wild.test: names below it (any depth) get a fake address, the
    suffix itself and look-alikes NXDOMAIN; what the names resolve to on the
    host (127.0.0.1, 10.1.2.3) is vetted and refused like any name."""
    w = P["web"]
    fake = lambda r: r.get("rcode") == 0 and len(r.get("answers", [])) == 1 and in_fake_range(r["answers"][0])  # noqa: E731
    nx = lambda r: r.get("rcode") == 3  # noqa: E731
    d = lambda name: {"do": "dns", "name": name}  # noqa: E731
    return check(front, [f"*.wild.test:{w}"], [
        (d("a.wild.test"), fake, "a.wild.test"),
        (d("b.c.wild.test"), fake, "b.c.wild.test (two levels below)"),
        (d("wild.test"), nx, "wild.test (the suffix itself)"),
        (d("evilwild.test"), nx, "evilwild.test (no dot boundary)"),
        (d("a.wild.test.evil"), nx, "a.wild.test.evil"),
        (get("a.wild.test", "a.wild.test", w), closed, "a.wild.test -> 127.0.0.1"),
        (get("b.c.wild.test", "b.c.wild.test", w), closed, "b.c.wild.test -> 10.1.2.3"),
        (get("web.test", "a.wild.test", w), closed, "Host web.test on a.wild.test's address"),
    ], allowed={}, refused_hosts=["a.wild.test", "wild.test"], resolver=True)


def idle_and_many_connections(front):
    """A client that never sends its first bytes is cut after the broker's
    deadline (10 s); 300 connections at once: the broker caps them (256
    per sandbox) and still serves once they are gone."""
    w = P["web"]
    return check(front, [WEB()], [
        ({"do": "idle", "host": "web.test", "port": w}, lambda r: r.get("end") in ("eof", "ECONNRESET") and
         r.get("recv") == "" and 8 <= r.get("after_s", 0) <= 15, "silent connection cut after about 10 s"),
        ({"do": "many", "host": "web.test", "port": w, "n": 300},
         lambda r: r.get("opened", 0) + r.get("failed", 0) == 300 and r.get("open", 999) <= 256,
         "300 silent connections: at most 256 held"),
        (get("web.test"), http_ok, "control afterwards"),
    ], allowed={"web": 2})


def udp_quic(front):
    u = P["udp"]
    return check(front, [WEB()], [
        ({"do": "udp", "host": "203.0.113.7", "port": 9999}, errno_is("ECONNREFUSED"), "UDP 203.0.113.7:9999"),
        ({"do": "udp", "host": "127.0.0.1", "port": u}, errno_is("ECONNREFUSED"), "UDP to the host canary's port"),
        ({"do": "udp", "host": "::1", "port": u}, errno_is("ECONNREFUSED"), "UDP [::1]"),
        ({"do": "udp", "host": "web.test", "port": 443, "quic": True}, errno_is("ECONNREFUSED"),
         "QUIC Initial to web.test:443"),
        ({"do": "udp", "host": "203.0.113.7", "port": 443, "quic": True}, errno_is("ECONNREFUSED"),
         "QUIC Initial to 203.0.113.7:443"),
        ({"do": "udp", "host": "web.test", "port": P["web"]}, errno_is("ECONNREFUSED"), "UDP to web.test's TCP port"),
    ], allowed={})


def raw_packet_sockets(front):
    s = lambda f, t, p=0: {"do": "socket", "family": f, "type": t, "proto": p}  # noqa: E731
    return check(front, [WEB()], [
        (s("AF_INET", "SOCK_RAW", 1), errno_is("EPERM"), "raw ICMP"),
        (s("AF_INET", "SOCK_RAW", 255), errno_is("EPERM"), "raw IPPROTO_RAW"),
        (s("AF_INET6", "SOCK_RAW", 58), errno_is("EPERM"), "raw ICMPv6"),
        (s("AF_PACKET", "SOCK_RAW", 0x0300), errno_is("EPERM"), "packet SOCK_RAW"),
        (s("AF_PACKET", "SOCK_DGRAM", 0x0300), errno_is("EPERM"), "packet SOCK_DGRAM"),
    ], allowed={})


def netlink_nft(front):
    """Route add, delete of the capture routes (v4, v6), link add: the kernel
    answers EPERM (no CAP_NET_ADMIN over the netns); nf_tables: EPERM (the
    socket, or its first ack).  Afterwards the capture still holds."""
    def route(r):
        return r.get("socket") == "ok" and r.get("acks") == ["EPERM"] * 4

    def nft(r):
        return r.get("socket") == "EPERM" or (r.get("socket") == "ok" and r.get("acks", [""])[0] == "EPERM")
    return check(front, [WEB()], [
        ({"do": "netlink_route"}, route, "RTM_NEWROUTE, RTM_DELROUTE local default v4/v6, RTM_NEWLINK"),
        ({"do": "nft"}, nft, "nf_tables NEWTABLE batch"),
        (raw("203.0.113.7", 9, "x"), refused, "the capture route still in force (not ENETUNREACH)"),
        (get("web.test"), http_ok, "control after"),
    ], allowed={"web": 2})


def namespaces_io_uring(front):
    return check(front, [WEB()], [
        ({"do": "unshare", "flags": 0x10000000 | 0x40000000}, errno_is("EPERM"), "unshare(NEWUSER|NEWNET)"),
        ({"do": "unshare", "flags": 0x40000000}, errno_is("EPERM"), "unshare(NEWNET)"),
        ({"do": "unshare", "flags": 0x10000000}, errno_is("EPERM"), "unshare(NEWUSER)"),
        ({"do": "io_uring"}, errno_is("EPERM"), "io_uring_setup (IORING_OP_SOCKET/CONNECT bypass)"),
    ], allowed={})


def host_unix_sockets(front):
    """The host's abstract socket (per netns: not there) and filesystem
    sockets (the canary's, the store's broker control sockets): unreachable,
    and no socket of nsbox's is visible inside."""
    def none_visible(r):
        return r.get("sockets") == [] and not any("nsbox" in a for a in r.get("abstract", ["?"]))
    return check(front, [WEB()], [
        ({"do": "unix", "path": "@nsbox-egress-canary"}, errno_is("ECONNREFUSED"), "abstract host canary"),
        ({"do": "unix", "path": PATHS["sock"]}, errno_is("ENOENT"), "filesystem host canary"),
        ({"do": "unix", "path": os.path.join(front.store, "sandboxes")}, errno_is("ENOENT"), "the store"),
        ({"do": "find_sockets"}, none_visible, "unix sockets visible inside"),
    ], allowed={})


def host_loopback_addr_rule(front):
    """An operator's 127.0.0.1:PORT rule reaches that one service; the host's
    other loopback services stay unreachable, by any address."""
    a = P["addr"]
    return check(front, [f"127.0.0.1:{a}"], [
        (raw("127.0.0.1", a, "ping\n", shut=True), lambda r: r.get("marker"), "control: 127.0.0.1:PORT"),
        (raw("127.0.0.1", P["canary"], "x"), refused, "127.0.0.1 canary port"),
        (raw("::1", P["canary"], "x"), refused, "[::1] canary port"),
        (raw("127.0.0.1", P["web"], "x"), refused, "127.0.0.1 web upstream's port"),
        (raw("::1", a, "ping\n", shut=True), closed_or_refused, "[::1] on the rule's port"),
        (raw("127.0.0.2", a, "ping\n", shut=True), closed_or_refused, "127.0.0.2 on the rule's port"),
        (raw("10.0.0.1", a, "ping\n", shut=True), closed_or_refused, "10.0.0.1 on the rule's port"),
        (raw("127.0.0.1", 22, "x"), refused, "127.0.0.1:22"),
        (raw("127.0.0.1", 2024, "x"), refused, "127.0.0.1:2024"),
    ], allowed={"addr": 1})


def sealed_default(front):
    """No rule: nothing listens, no DNS answer, nothing reachable."""
    return check(front, [], [
        (raw("127.0.0.1", P["web"], "x"), refused, "127.0.0.1 web upstream's port"),
        (raw("203.0.113.7", 443, "x"), refused, "203.0.113.7:443"),
        (raw("::1", P["canary"], "x"), refused, "[::1] canary"),
        ({"do": "dns", "name": "web.test"}, lambda r: r.get("error") == "ECONNREFUSED", "DNS web.test"),
        ({"do": "udp", "host": "127.0.0.1", "port": P["udp"]}, errno_is("ECONNREFUSED"), "UDP canary"),
    ], allowed={})


def sealed_after_open(front):
    """A sandbox created with rules, a connection open through the broker;
    then sealed (nsbox_sandbox_net_set with no rules, tests/hostile/
    egress_seal.c): the open connection is cut, and nothing answers
    afterwards, not DNS, not the fake address, not the address rule."""
    seal = E.get("SEAL")
    if not seal:
        return False, "SEAL (the egress_seal helper) is not set"
    w, a = P["web"], P["addr"]
    rc, sid, err = front.cli(["create", "--net", WEB(), "--net", f"127.0.0.1:{a}", IMAGE])
    if rc != 0:
        return False, f"create: {err}"
    sid = sid.strip()
    mark = len(EVENTS)
    bad = []
    try:
        hold = [{"do": "http", "host": "web.test", "port": w, "pause": 4, "id": "hold",
                 "requests": ["GET / HTTP/1.1\r\nHost: web.test\r\n\r\n"] * 2}]
        rc, out, err = front.cli(["exec", sid, "--", "sh", "-c",
                                  f"python3 {IMAGE_PATH} inside '{json.dumps(hold)}' >/tmp/hold.jsonl 2>&1 &"])
        # Seal once web has the first request (the client then pauses 4 s
        # before the second), not after a guessed 1.5 s.
        end = time.monotonic() + 30
        while not any(s_ == "web" and d.startswith("request") for s_, d in EVENTS[mark:]) and time.monotonic() < end:
            time.sleep(0.05)
        p = subprocess.run(front.prefix() + [seal, front.store, sid], capture_output=True, text=True, timeout=30)
        if p.returncode:
            return False, f"egress_seal: {p.stderr.strip()}"
        after = [{"do": "tcp", "host": "198.18.0.1", "port": w, "send": ["x"], "id": "fake"},
                 {"do": "tcp", "host": "127.0.0.1", "port": a, "send": ["x"], "id": "addr"},
                 {"do": "dns", "name": "web.test", "id": "dns"},
                 {"do": "resolve", "name": "web.test", "id": "resolve"},
                 {"do": "sleep", "s": 4, "id": "wait"}]
        rc, out, err = front.cli(["exec", sid, "--", "python3", IMAGE_PATH, "inside", json.dumps(after)])
        got = {d["id"]: d for d in map(json.loads, filter(None, out.splitlines()))}
        for k in ("fake", "addr"):
            if got.get(k, {}).get("connect") != "ECONNREFUSED":
                bad.append(f"{k} after sealing: {got.get(k)}")
        if got.get("dns", {}).get("error") != "ECONNREFUSED":
            bad.append(f"DNS after sealing: {got.get('dns')}")
        if "error" not in got.get("resolve", {"error": 1}):
            bad.append(f"getaddrinfo after sealing: {got.get('resolve')}")
        for _ in range(20):
            rc, out, err = front.cli(["exec", sid, "--", "cat", "/tmp/hold.jsonl"])
            if out.strip():
                break
            time.sleep(0.5)
        h = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        rs = h.get("responses", [])
        if not (rs and rs[0]["marker"] and not any(x["marker"] for x in rs[1:])):
            bad.append(f"the connection opened before sealing: {h}")
    finally:
        front.cli(["rm", sid])
    unsettled = settled(front)
    if unsettled:
        bad.append(unsettled)
    new = EVENTS[mark:]
    if len([1 for s, _ in new if s == "web"]) > 2 or any(s != "web" for s, _ in new):
        bad.append(f"host servers reached: {new}")
    return not bad, "; ".join(bad) or {"events": new}


CASES = [
    ("ip_literal_v4", ip_literal_v4),
    ("ip_literal_v6", ip_literal_v6),
    ("ip_literal_with_allowed_sni", ip_literal_tls),
    ("allowed_name_port_not_allowed", port_not_allowed),
    ("sni_differs_domain_fronting", sni_fronting),
    ("host_differs", host_differs),
    ("keepalive_host_switch", keepalive_host_switch),
    ("split_client_hello", split_client_hello),
    ("connect_and_upgrade", connect_upgrade),
    ("http_bodies_and_other_protocols", bodies_and_protocols),
    ("dns_other_names_never_forwarded", dns_other_names),
    ("dns_rebinding_private_loopback_metadata", dns_rebinding),
    ("wildcard_rule", wildcard_rule),
    ("idle_and_many_connections", idle_and_many_connections),
    ("udp_and_quic", udp_quic),
    ("raw_and_packet_sockets", raw_packet_sockets),
    ("netlink_route_and_nft", netlink_nft),
    ("nested_namespaces_and_io_uring", namespaces_io_uring),
    ("host_unix_sockets", host_unix_sockets),
    ("host_loopback_beside_addr_rule", host_loopback_addr_rule),
    ("sealed_nothing_reachable", sealed_default),
    ("sealed_after_open_cuts_and_closes", sealed_after_open),
]


# =============================================================================
# Setup and main.
# =============================================================================

def setup(work):
    """The CA and certs, the test image in both stores, the servers."""
    d = os.path.join(work, "egress")
    os.makedirs(d, exist_ok=True)
    ca, crt, key = make_ca(d)
    fixtures = E.get("NSBOX_FIXTURES", "/var/cache/nsbox/fixtures").rstrip("/")
    here = os.path.dirname(os.path.abspath(__file__))
    layout = os.path.join(d, "img")
    specs = [f"{os.path.join(here, 'egress_probe.py')}:{IMAGE_PATH}:0644", f"{ca}:/usr/lib/ssl/cert.pem:0644",
             f"{ca}:/etc/ssl/certs/ca-certificates.crt:0644"]
    if E.get("PROBE"):
        specs.append(f"{E['PROBE']}:/usr/local/bin/probe")
    subprocess.run([sys.executable, os.path.join(here, "..", "fixtures", "add-layer.py"),
                    f"{fixtures}/oci/python", layout] + specs, check=True)
    subprocess.run(["chmod", "-R", "a+rX", d], check=True)
    for front in (Front("root"), Front("rootless")):
        for args in (["pull", "--quiet", f"oci:{layout}:latest"], ["tag", f"oci:{layout}:latest", IMAGE]):
            p = subprocess.run(front.prefix() + [front.nsbox, "--store", front.store] + args,
                               capture_output=True, text=True)
            if p.returncode:
                raise RuntimeError(f"{front.mode}: nsbox {' '.join(args)}: {p.stderr.strip()}")

    for k in ("web", "tls", "addr", "canary", "udp"):
        P[k] = free_port()
    serve_forever(listen("127.0.0.1", P["web"]), http_upstream("web"))
    serve_forever(listen("::1", P["web"]), canary_tcp("web6"))
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(crt, key)
    sctx.sni_callback = lambda obj, name, c: event("tls", f"sni={name}")
    serve_forever(listen("127.0.0.1", P["tls"]), tls_upstream(sctx, "tls"))
    serve_forever(listen("::1", P["tls"]), canary_tcp("tls6"))

    def addr(c, peer):
        event("addr", "connect")
        c.sendall(f"{MARK} addr\n".encode())
        c.close()
    serve_forever(listen("127.0.0.1", P["addr"]), addr)
    serve_forever(listen("::1", P["addr"]), canary_tcp("addr6"))
    serve_forever(listen("127.0.0.1", P["canary"]), canary_tcp("canary"))
    serve_forever(listen("::1", P["canary"]), canary_tcp("canary6"))
    start_udp_canary("udp", "127.0.0.1", P["udp"])
    start_udp_canary("udp6", "::1", P["udp"])
    start_dns("127.0.0.77", {"rebind-dns.test": "127.0.0.1"})
    ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ab.bind("\0nsbox-egress-canary")
    ab.listen(8)
    serve_forever(ab, canary_tcp("abstract"))
    PATHS["sock"] = os.path.join(d, "canary.sock")
    fs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(PATHS["sock"]):
        os.unlink(PATHS["sock"])
    fs.bind(PATHS["sock"])
    os.chmod(PATHS["sock"], 0o777)
    fs.listen(8)
    serve_forever(fs, canary_tcp("unixfs"))
    PATHS["hosts"] = os.path.join(d, "hosts")
    with open(PATHS["hosts"], "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost ip6-localhost\n" +
                "".join(f"{ip} {n}\n" for n, ip in list(REBIND.items()) + list(WILD.items())))
    PATHS["resolv"] = os.path.join(d, "resolv.conf")
    with open(PATHS["resolv"], "w") as f:
        f.write("nameserver 127.0.0.77\noptions timeout:1 attempts:1\n")
    subprocess.run(["chmod", "a+r", PATHS["hosts"], PATHS["resolv"]], check=True)


def main():
    if os.geteuid() != 0:
        sys.exit("egress_cases.py: run as root (it runs nsbox as root and as the rootless user)")
    try:
        setup(E["WORK"])
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        nt.fail("setup", repr(e))
        sys.exit(1)
    print(f"# egress: ports {json.dumps(P)}", flush=True)
    # The positive control of no_broker_left: its pattern is seen to match
    # this suite's brokers while the cases run.
    import threading
    seen = set()

    def sample():
        while True:
            for store in (E["STORE"], E["STORE_RL"]):
                if brokers_of(store):
                    seen.add(store)
            time.sleep(0.2)
    threading.Thread(target=sample, daemon=True).start()
    for mode in ("root", "rootless"):
        front = Front(mode)
        t0 = time.time()
        for name, fn in CASES:
            full = f"{mode}/{name}"
            if not ONLY.search(f"egress/{full}"):
                continue
            try:
                ok, why = fn(front)
            except Exception as e:  # noqa: BLE001
                ok, why = False, f"raised {e!r}"
            nt.result(full, ok, why)
        print(f"# egress/{mode}: {time.time() - t0:.1f} s", flush=True)
    gone, left = brokers_gone()
    if ONLY.pattern:
        nt.result("no_broker_left", gone, left)
    else:
        nt.result("no_broker_left", gone and len(seen) == 2,
                  left or f"a broker was seen running for {len(seen)} of the 2 stores: the check matches nothing")
    nt.finish()


def brokers_gone():
    """Every broker of this suite's sandboxes ended with its sandbox."""
    stores = (E["STORE"], E["STORE_RL"])
    left = []
    for _ in range(50):
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "__nsbox-egress-broker" in cmd and any(s + "/" in cmd for s in stores):
                left.append(f"{pid} {cmd[:120]}")
        if not left:
            break
        time.sleep(0.1)
    return not left, left


if __name__ == "__main__":
    main()
