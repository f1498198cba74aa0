#!/usr/bin/env bash
# The runtime side of the egress allow-list (runtime/egress/egress.h),
# driven through its API by tests/egress/netctl.c (no CLI flag yet), as
# root and as an unprivileged user: a sealed sandbox reaches nothing (not
# even the host's loopback), an IP:PORT rule reaches that one service, a
# NAME=IP:PORT rule resolves to a fake address and checks every HTTP
# request's Host, sealing again closes live connections, and the audit
# says what was tried.  Host services are python http.servers on free
# ports of 127.0.0.1.
SUITE=egress_runtime
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

LIBS=$(pkg-config --libs jansson libarchive libcrypto libseccomp libcap libmnl zlib libzstd inih)
# The library beside the nsbox under test (build-asan/ in ASan mode, tests/run.sh).
SAN= NCC=cc
[ -n "${NSBOX_ASAN:-}" ] && SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" NCC=${ASAN_CC:-clang-19}
# shellcheck disable=SC2086
$NCC -std=gnu11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -pthread $SAN -o "$T/netctl" \
	"$ROOT/tests/egress/netctl.c" "$(dirname "$NSBOX")/libnsbox.a" $LIBS || {
	fail setup "cannot build tests/egress/netctl.c"
	finish
}
install -m 755 "$NSBOX" "$T/nsbox"
cp -r "$F/oci/python" "$T/py"
head -c 33554432 /dev/urandom >"$T/big"
BIG_SUM=$(sha256sum "$T/big" | cut -d' ' -f1)
chmod -R a+rX "$T"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P1=$(free_port)
P2=$(free_port)
P3=$(free_port)
P4=$(free_port)
# A TLS service (self-signed; the clients below do not verify): the broker
# checks the ClientHello's server name, it terminates nothing.
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=tls.example -days 1 \
	-keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1
(cd "$T" && exec python3 -c 'import http.server as h, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s = h.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), h.SimpleHTTPRequestHandler)
s.socket = ctx.wrap_socket(s.socket, server_side=True); s.serve_forever()' "$P4" "$T/cert.pem" "$T/key.pem" >/dev/null 2>&1) &
srv3=$!
python3 -m http.server --bind 127.0.0.1 "$P1" --directory "$T" >/dev/null 2>&1 &
srv1=$!
# HTTP/1.1, keep-alive: a second request on one connection reaches it.
(cd "$T" && exec python3 -c 'import http.server as h, sys
h.SimpleHTTPRequestHandler.protocol_version = "HTTP/1.1"
h.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()' "$P2" >/dev/null 2>&1) &
srv2=$!
stop_servers() {
	local s
	for s in "$T"/store/sandboxes/*/; do [ -d "$s" ] && "$T/nsbox" --store "$T/store" rm "$(basename "$s")" >/dev/null 2>&1; done
	for s in "$T"/ustore/sandboxes/*/; do [ -d "$s" ] && as_user "$T/nsbox" --store "$T/ustore" rm "$(basename "$s")" >/dev/null 2>&1; done
	kill "$srv1" "$srv2" "$srv3" 2>/dev/null
	wait "$srv1" "$srv2" "$srv3" 2>/dev/null
	rm -rf "$T"
}
trap stop_servers EXIT
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$P1/" && curl -s -o /dev/null "http://127.0.0.1:$P2/" && break
	sleep 0.1
done

# This host delegates no cgroup to users: best-effort limits rootless.
as_user() { runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest NSBOX_LIMITS=best-effort "$@"; }

# py CODE: python3 -c CODE in the sandbox; its stdout.
py() {
	local code=$1
	shift
	$RUN "$T/nsbox" --store "$STORE" exec "$ID" -- python3 -c "$code" "$@" 2>&1
}
netctl() { $RUN "$T/netctl" "$STORE/sandboxes" "$ID" "$@"; }

# expect NAME WANT GOT: GOT contains WANT.
expect() {
	case "$3" in
	*"$2"*) pass "$1" ;;
	*) fail "$1" "wanted '$2', got: $(printf '%s' "$3" | tail -3 | tr '\n' ' ')" ;;
	esac
}

CONNECT='
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET); s.settimeout(5)
try:
    s.connect((host, port)); print("connected")
except OSError as e:
    print("errno", e.errno)
'
connect() { $RUN "$T/nsbox" --store "$STORE" exec "$ID" -- python3 -c "$CONNECT" "$1" "$2" 2>&1; }
broker_gone() { ! pgrep -f "__nsbox-egress-broker $1" >/dev/null; }
GET='
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=5)
try:
    c.request("GET", "/", headers={"Host": sys.argv[3]} if len(sys.argv) > 3 else {})
    r = c.getresponse(); print("status", r.status, r.read()[:200])
except OSError as e:
    print("error", type(e).__name__, e.errno, e)
'
get() { $RUN "$T/nsbox" --store "$STORE" exec "$ID" -- python3 -c "$GET" "$@" 2>&1; }

run_mode() {
	local m=$1 out
	ID=$($RUN "$T/nsbox" --store "$STORE" create "oci:$T/py:latest" 2>"$T/create.err") || {
		fail "$m/create" "$(cat "$T/create.err")"
		return
	}
	# -- sealed: the default ------------------------------------------------
	expect "$m/sealed_host_loopback_refused" "errno 111" "$(connect 127.0.0.1 "$P1")"
	expect "$m/sealed_any_address_refused" "errno 111" "$(connect 93.184.215.14 443)"
	expect "$m/sealed_v6_refused" "errno 111" "$(connect 2001:db8::1 443)"
	out=$(py 'import socket
try: print(socket.getaddrinfo("test.example", 80))
except OSError as e: print("gaierror", e)')
	expect "$m/sealed_dns_no_answer" "gaierror" "$out"
	out=$(py 'print(open("/etc/resolv.conf").read())
try: open("/etc/resolv.conf", "a"); print("writable")
except OSError as e: print("errno", e.errno)
for l in open("/proc/self/mountinfo"):
    f = l.split()
    if f[4] in ("/etc/resolv.conf", "/etc/hosts"): print(f[4], f[5].split(",")[0])')
	expect "$m/resolv_conf_names_loopback" "nameserver 127.0.0.1" "$out"
	expect "$m/resolv_conf_not_writable" "errno" "$out"
	expect "$m/resolv_conf_mounted_ro" "/etc/resolv.conf ro" "$out"
	expect "$m/hosts_mounted_ro" "/etc/hosts ro" "$out"
	expect "$m/hosts_has_localhost" "localhost" "$(py 'print(open("/etc/hosts").read())')"
	expect "$m/audit_empty_before_rules" "[]" "$(netctl audit 2>&1)"

	# -- IP:PORT: that one service of the host ------------------------------
	out=$(netctl set "127.0.0.1:$P1" 2>&1) && pass "$m/set_addr_rule" || fail "$m/set_addr_rule" "$out"
	expect "$m/addr_rule_reaches_host_service" "status 200" "$(get 127.0.0.1 "$P1")"
	expect "$m/addr_rule_other_port_refused" "errno 111" "$(connect 127.0.0.1 "$P2")"
	# 32 MiB through the relay (spliced: no inspection for IP:PORT), intact.
	out=$(py "import hashlib, urllib.request
print('sum', hashlib.sha256(urllib.request.urlopen('http://127.0.0.1:$P1/big', timeout=30).read()).hexdigest())")
	expect "$m/addr_rule_bulk_intact" "sum $BIG_SUM" "$out"
	# [::]:P1 listens (the rule's port), so the handshake completes; the
	# broker finds no rule for ::1 and resets: not refused, not a timeout.
	out=$(get ::1 "$P1")
	case $out in
	"error ConnectionResetError 104 "* | "error RemoteDisconnected None "*) pass "$m/addr_rule_v6_loopback_reset" ;;
	*) fail "$m/addr_rule_v6_loopback_reset" "wanted a reset after the handshake, got: $out" ;;
	esac

	# -- NAME=IP:PORT: a name, its fake address, every Host checked ---------
	out=$(netctl set "test.example=127.0.0.1:$P2" 2>&1) && pass "$m/set_mapped_rule" || fail "$m/set_mapped_rule" "$out"
	out=$(py "import socket; print(socket.getaddrinfo('test.example', $P2, socket.AF_INET)[0][4][0])")
	expect "$m/name_resolves_to_fake_address" "198.18." "$out"
	expect "$m/name_get_allowed" "status 200" "$(get test.example "$P2")"
	expect "$m/name_other_host_refused" "status 403" "$(get test.example "$P2" other.example)"
	expect "$m/name_other_host_says_why" "other.example" "$(get test.example "$P2" other.example)"
	out=$(py 'import socket
try: print(socket.getaddrinfo("other.example", 80))
except OSError as e: print("gaierror", e)')
	expect "$m/other_name_nxdomain" "gaierror" "$out"
	expect "$m/old_addr_rule_dropped" "errno 111" "$(connect 127.0.0.1 "$P1")"
	out=$(py "import socket
s = socket.create_connection(('test.example', $P2), timeout=5)
s.sendall(b'POST / HTTP/1.1\r\nHost: test.example\r\nContent-Length: 1\r\n\r\nx')
print(s.recv(200))")
	expect "$m/name_post_refused" "403" "$out"
	out=$(py "import socket
s = socket.create_connection(('test.example', $P2), timeout=5)
s.sendall(b'GET / HTTP/1.1\r\nHost: test.example\r\n\r\n')
d = b''
while b'</html>' not in d: d += s.recv(65536)
s.sendall(b'GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n')
print(s.recv(300))")
	expect "$m/keepalive_second_request_checked" "403" "$out"

	# -- TLS: the ClientHello's server name must be the name ----------------
	out=$(netctl set "test.example=127.0.0.1:$P2" "tls.example=127.0.0.1:$P4" 2>&1) && pass "$m/set_two_rules" || fail "$m/set_two_rules" "$out"
	TLS="import socket, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    s = ctx.wrap_socket(socket.create_connection(('tls.example', $P4), timeout=5), server_hostname=sys.argv[1])
    s.sendall(b'GET / HTTP/1.0\r\nHost: tls.example\r\n\r\n'); print('tls', s.recv(12))
except OSError as e: print('tls error', type(e).__name__, e.errno, e)"
	expect "$m/tls_sni_allowed" "tls b'HTTP/1.0 200'" "$(py "$TLS" tls.example)"
	out=$(py "import hashlib, socket, ssl
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection(('tls.example', $P4), timeout=30), server_hostname='tls.example')
s.sendall(b'GET /big HTTP/1.0\r\nHost: tls.example\r\n\r\n')
d = b''
while True:
    x = s.recv(1 << 20)
    if not x: break
    d += x
print('sum', hashlib.sha256(d.split(b'\r\n\r\n', 1)[1]).hexdigest())")
	expect "$m/tls_bulk_intact" "sum $BIG_SUM" "$out"
	# The broker reads the ClientHello, sees another name and resets (or
	# closes) before any server byte: the handshake ends in a reset or an
	# EOF, never a refusal, a timeout or a certificate.
	out=$($RUN "$T/nsbox" --store "$STORE" exec "$ID" -- python3 -c "$TLS" evil.example 2>&1)
	case $out in
	"tls error ConnectionResetError 104 "* | "tls error SSLEOFError 8 "* | "tls error SSLZeroReturnError 6 "*) pass "$m/tls_other_sni_reset" ;;
	*) fail "$m/tls_other_sni_reset" "wanted a reset or EOF in the handshake, got: $out" ;;
	esac
	expect "$m/http_still_allowed_beside_tls" "status 200" "$(get test.example "$P2")"

	# -- ports below 1024: init makes them (CAP_NET_BIND_SERVICE), the
	# sandbox's code cannot ----------------------------------------------------
	out=$(netctl set example.com 2>&1) && pass "$m/set_name_rule_ports_80_443" || fail "$m/set_name_rule_ports_80_443" "$out"
	out=$(py "import socket; a = socket.getaddrinfo('example.com', 80, socket.AF_INET)[0][4][0]; print(a)
for p in (80, 443):
    s = socket.socket(); s.settimeout(5); s.connect((a, p)); print('port', p, 'listening')")
	expect "$m/low_port_80_listens" "port 80 listening" "$out"
	expect "$m/low_port_443_listens" "port 443 listening" "$out"
	out=$(py "import socket
s = socket.socket(socket.AF_INET6)
try: s.bind(('::', 81)); print('bound')
except OSError as e: print('errno', e.errno)")
	expect "$m/sandbox_cannot_bind_low_port" "errno 13" "$out"

	# -- a name rule resolved by the broker: private addresses refused ------
	# This host's own name resolves (its /etc/hosts) to loopback.
	local me
	me=$(hostname)
	out=$(netctl set "$me:$P2" 2>&1) && pass "$m/set_host_name_rule" || fail "$m/set_host_name_rule" "$out"
	out=$(py "import socket
a = socket.getaddrinfo('$me', $P2, socket.AF_INET)[0][4][0]; print('fake', a)
s = socket.create_connection((a, $P2), timeout=5)
s.sendall(b'GET / HTTP/1.1\r\nHost: $me\r\n\r\n')
try: print('got', s.recv(100))
except OSError as e: print('errno', e.errno)")
	expect "$m/name_rule_gets_fake_address" "fake 198.18." "$out"
	expect "$m/name_rule_private_address_reset" "errno 104" "$out"
	expect "$m/name_rule_private_address_audited" "not a public address" "$(netctl audit 2>&1)"

	# -- nothing sent: refused after 10 s -----------------------------------
	out=$(netctl set "test.example=127.0.0.1:$P2" 2>&1) && pass "$m/set_back_to_mapped" || fail "$m/set_back_to_mapped" "$out"
	out=$(py "import socket, time
s = socket.create_connection(('test.example', $P2), timeout=20); t = time.time()
try: r = ('got', s.recv(100))
except OSError as e: r = ('errno', e.errno)
print(*r, 'after 10 s' if 9 <= time.time() - t <= 13 else 'after %.1f s' % (time.time() - t))")
	expect "$m/silent_connection_reset_after_10s" "errno 104 after 10 s" "$out"

	# -- sealing again closes what is open ----------------------------------
	$RUN "$T/nsbox" --store "$STORE" exec "$ID" -- python3 -c "import os, socket, time
s = socket.create_connection(('test.example', $P2), timeout=10)
s.sendall(b'GET / HTTP/1.1\r\nHost: test.example\r\n\r\n')
d = b''
while b'</html>' not in d: d += s.recv(65536)
print('first ok', flush=True)
# The host seals, then says so with /tmp/sealed: wait for that, not a time.
t = time.time()
while not os.path.exists('/tmp/sealed') and time.time() - t < 60: time.sleep(0.05)
try:
    s.sendall(b'GET / HTTP/1.1\r\nHost: test.example\r\n\r\n'); print('second', s.recv(100))
except OSError as e: print('second errno', e.errno)" >"$T/live.$m" 2>&1 &
	local live=$!
	wait_until 30 grep -q 'first ok' "$T/live.$m"
	out=$(netctl set 2>&1) && pass "$m/seal" || fail "$m/seal" "$out"
	$RUN "$T/nsbox" --store "$STORE" exec "$ID" -- touch /tmp/sealed
	wait "$live"
	out=$(cat "$T/live.$m")
	expect "$m/live_connection_before_seal" "first ok" "$out"
	case "$out" in
	*"second errno"* | *"second b''"*) pass "$m/seal_closes_live_connection" ;;
	*) fail "$m/seal_closes_live_connection" "$(echo $out)" ;;
	esac
	out=$(py 'import socket
try: print(socket.getaddrinfo("test.example", 80))
except OSError as e: print("gaierror", e)')
	expect "$m/sealed_again_dns" "gaierror" "$out"
	expect "$m/sealed_again_fake_refused" "errno 111" "$(connect 198.18.0.1 "$P2")"

	# -- the audit ----------------------------------------------------------
	out=$(netctl audit 2>&1)
	if printf '%s' "$out" | python3 -c "
import json, sys
a = json.load(sys.stdin)
def rec(host, port, verdict):
    return [r for r in a if r['host'] == host and r.get('port') == port and r['verdict'] == verdict]
ok = rec('127.0.0.1', $P1, 'allowed') and rec('127.0.0.1', $P1, 'allowed')[0]['bytes_in'] > 0
ok = ok and rec('test.example', $P2, 'allowed') and rec('test.example', $P2, 'allowed')[0]['bytes_out'] > 0
ok = ok and rec('test.example', $P2, 'refused') and rec('other.example', 53, 'refused')
sys.exit(0 if ok else 1)" 2>/dev/null; then
		pass "$m/audit_lists_allowed_and_refused_with_bytes"
	else
		fail "$m/audit_lists_allowed_and_refused_with_bytes" "$(echo $out | head -c 600)"
	fi

	# -- a port the sandbox holds itself ------------------------------------
	$RUN "$T/nsbox" --store "$STORE" exec "$ID" -- sh -c "setsid python3 -c 'import socket, time
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"::\", $P3)); s.listen(); time.sleep(60)' >/dev/null 2>&1 & sleep 0.5"
	out=$(netctl set "127.0.0.1:$P3" 2>&1)
	expect "$m/port_in_use_inside_named" "port $P3 is already in use inside the sandbox" "$out"

	# -- a subreaper that destroys the sandbox reaps its broker too ----------
	local rid
	rid=$($RUN "$T/nsbox" --store "$STORE" create "oci:$T/py:latest" 2>/dev/null)
	out=$($RUN "$T/netctl" "$STORE/sandboxes" "$rid" reap "127.0.0.1:$P1" 2>&1)
	expect "$m/destroy_reaps_adopted_broker" "no broker left" "$out"

	# -- the broker ends with the sandbox -----------------------------------
	# The pattern is first shown to match the sandbox's broker.
	local dir="$STORE/sandboxes/$ID" seen
	seen=$(pgrep -fc "__nsbox-egress-broker $dir")
	$RUN "$T/nsbox" --store "$STORE" rm "$ID" >/dev/null 2>&1
	if [ "$seen" != 1 ]; then
		fail "$m/broker_exits_with_sandbox" "$seen processes match '__nsbox-egress-broker $dir' before rm (want its one broker): $(pgrep -af __nsbox-egress-broker | tr '\n' ';')"
	elif wait_until 5 broker_gone "$dir"; then
		pass "$m/broker_exits_with_sandbox"
	else
		fail "$m/broker_exits_with_sandbox" "still running 5 s after rm"
	fi
}

# -- as root ------------------------------------------------------------------
RUN=
STORE=$T/store
"$T/nsbox" --store "$STORE" pull --quiet "oci:$T/py:latest" >/dev/null
run_mode root

# -- as an unprivileged user ----------------------------------------------------
RUN=as_user
STORE=$T/ustore
mkdir -p "$STORE" && chown nsboxtest: "$STORE"
as_user "$T/nsbox" --store "$STORE" pull --quiet "oci:$T/py:latest" >/dev/null
run_mode rootless
finish
