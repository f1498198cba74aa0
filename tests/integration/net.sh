#!/usr/bin/env bash
# The egress allow-list from the CLI (issue #14, docs/network.md): `nsbox
# run --net` and `nsbox create --net` + `nsbox exec` reach a service the
# test starts on the host's loopback through nsbox's broker, and nothing
# else: not without --net, not another port, not a name the list lacks,
# not a request whose Host differs from the rule's name.  --json carries
# what was tried (network, with verdicts); a refused attempt is one line on
# stderr without --json; bad rules are usage errors (exit 2).  As root and
# as the unprivileged user nsboxtest (tests/setup-users.sh).
#
# Issue #30's plumbing, against the same servers and an HTTPS one with a
# CA the test makes (trusted by nsbox through SSL_CERT_FILE): a method and
# path rule on plain HTTP (GET passes, POST gets nsbox's 403, the audit
# has each request's method, path and verdict); a --secret bound to the
# server's name (the server gets the value, the sandbox's variable holds
# only a placeholder, the audit names the secret, box.json has no value,
# a later exec gets it back from the record); TLS terminated by nsbox-tls
# for such a host (the sandbox trusts /etc/nsbox/ca-bundle.pem through
# SSL_CERT_FILE); and without nsbox-tls next to nsbox, a clear refusal.
SUITE=net
. "$(dirname "$0")/../lib.sh"

# A host HTTP server on a free loopback port: serves /marker.txt and logs
# the Host of every request it gets (a refused request never arrives).
cat >"$T/server.py" <<'EOF'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        with open(sys.argv[2], "a") as log:
            log.write(f"{self.headers.get('Host')} {self.path} {self.command} {self.headers.get('Authorization')}\n")
        body = (sys.argv[3] + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_POST = do_GET
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if len(sys.argv) > 4: # CERT KEY: HTTPS
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
with open(sys.argv[1], "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
EOF
start_server() { # PORTFILE LOG MARKER [CERT KEY] (not in $(...): it would wait for the server)
	python3 "$T/server.py" "$@" >/dev/null 2>&1 &
	SERVER_PIDS="${SERVER_PIDS:-} $!"
	for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.05; done
}
cleanup() {
	# shellcheck disable=SC2086
	[ -n "${SERVER_PIDS:-}" ] && kill $SERVER_PIDS 2>/dev/null
	cleanup_test_dir
}
trap cleanup EXIT
# The HTTPS server: a CA of the test's, trusted by nsbox (and so by
# nsbox-tls, which verifies the upstream) through SSL_CERT_FILE.
mkdir -p "$T/tls"
(cd "$T/tls" &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
		-days 2 -subj "/CN=nsbox net test CA" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign" &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr \
		-subj "/CN=tls.test" &&
	printf 'subjectAltName=DNS:tls.test\n' >ext &&
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
		-extfile ext) >/dev/null 2>&1
export SSL_CERT_FILE=$T/tls/ca.pem
start_server "$T/p1" "$T/log1" marker-one
start_server "$T/p2" "$T/log2" marker-two
start_server "$T/p3" "$T/log3" marker-tls "$T/tls/srv.pem" "$T/tls/srv.key"
P=$(cat "$T/p1" 2>/dev/null)
P2=$(cat "$T/p2" 2>/dev/null)
P3=$(cat "$T/p3" 2>/dev/null)
if [ -z "$P" ] || [ -z "$P2" ] || [ -z "$P3" ]; then
	fail setup "the host HTTP servers did not start"
	finish
fi
# A secret's value: a file the sandbox never sees.
VALUE=s3cr3t-value-$RANDOM$RANDOM
printf '%s\n' "$VALUE" >"$T/token"
chmod 644 "$T/token"

# In the sandbox: GET URL, print the body (or ERR and the error, exit 3).
FETCH='import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())
except Exception as e:
    print("ERR", type(e).__name__, e); sys.exit(3)'
# GET /marker.txt from HOST:PORT with the Host header given.
HOSTED='import sys, http.client
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
try:
    c.request("GET", "/marker.txt", headers={"Host": sys.argv[3]})
    print(c.getresponse().read().decode().strip())
except Exception as e:
    print("ERR", type(e).__name__, e); sys.exit(3)'

# URL METHOD...: each request (with "Authorization: Bearer $TOK" when TOK
# is set), one line "METHOD STATUS BODY" each; then "TOK=$TOK".
REQ='import os, sys, urllib.request, urllib.error
for m in sys.argv[2:]:
    r = urllib.request.Request(sys.argv[1], method=m, data=b"abc" if m == "POST" else None)
    if os.environ.get("TOK"):
        r.add_header("Authorization", "Bearer " + os.environ["TOK"])
    try:
        with urllib.request.urlopen(r, timeout=10) as a:
            print(m, a.status, a.read().decode().strip())
    except urllib.error.HTTPError as e:
        print(m, e.code, e.read().decode().strip())
    except Exception as e:
        print(m, "ERR", type(e).__name__, e)
print("TOK=%s" % os.environ.get("TOK"))'

# The record's request entries as "req HOST METHOD PATH VERDICT SECRETS"
# lines (stdin: --json), then its stdout.
requests() {
	python3 -c 'import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
for e in r.get("network", []):
    if "method" in e:
        print("req %s %s %s %s %s" % (e["host"], e["method"], e["path"], e["verdict"], ",".join(e["secrets"]) or "-"))
print(r.get("stdout", ""))' 2>/dev/null
}

# The record's network entries as "HOST:PORT:VERDICT" lines (stdin: --json).
verdicts() {
	python3 -c 'import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
for e in r.get("network", []):
    print("%s:%s:%s" % (e.get("host"), e.get("port"), e.get("verdict")))
print("has_network:%s" % ("network" in r))' 2>/dev/null
}

# expect NAME WANT_RC PATTERN CMD...: CMD's exit status is WANT_RC and its
# output (stdout and stderr) matches PATTERN (grep -E).
expect() {
	local name=$1 want=$2 pattern=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && printf '%s' "$out" | grep -Eq -- "$pattern"; then
		pass "$name"
	else
		fail "$name" "exit $rc (want $want), want /$pattern/: $(printf '%s' "$out" | tail -4 | tr '\n' ' ')"
	fi
}

# checks PREFIX NSBOX...: every check, with NSBOX... the command that runs
# nsbox (root's, or nsboxtest's through runuser).
checks() {
	local p=$1 out id rc
	shift
	local nb=("$@")
	expect "$p/addr_rule_reaches_host_service" 0 '^marker-one$' \
		"${nb[@]}" run --net "127.0.0.1:$P" python -- python3 -c "$FETCH" "http://127.0.0.1:$P/marker.txt"
	expect "$p/sealed_without_net" 3 '^ERR URLError <urlopen error \[Errno 111\] Connection refused>$' \
		"${nb[@]}" run python -- python3 -c "$FETCH" "http://127.0.0.1:$P/marker.txt"
	# Another port of the same host: nothing listens for it in the
	# sandbox's netns (refused there), and the second server never sees it.
	expect "$p/other_host_port_unreachable" 3 '^ERR URLError <urlopen error \[Errno 111\] Connection refused>$' \
		"${nb[@]}" run --net "127.0.0.1:$P" python -- python3 -c "$FETCH" "http://127.0.0.1:$P2/marker.txt"
	[ -s "$T/log2" ] && fail "$p/other_host_port_never_served" "the second server got: $(tr '\n' ' ' <"$T/log2")" ||
		pass "$p/other_host_port_never_served"
	expect "$p/mapped_name_reaches" 0 '^marker-one$' \
		"${nb[@]}" run --net "test.example=127.0.0.1:$P" python -- python3 -c "$FETCH" "http://test.example:$P/marker.txt"
	# A name the list lacks: no answer (EAI_NONAME), and the refusal names it.
	: >"$T/log1"
	out=$("${nb[@]}" run --net "test.example=127.0.0.1:$P" python -- python3 -c "$FETCH" "http://other.example:$P/marker.txt" 2>&1)
	rc=$?
	if [ "$rc" = 3 ] && printf '%s\n' "$out" | grep -q '^ERR URLError <urlopen error \[Errno -2\] Name or service not known>$' &&
		printf '%s\n' "$out" | grep -q '^nsbox: network: refused other.example:53: the name is not in the allow-list$' &&
		[ ! -s "$T/log1" ]; then
		pass "$p/name_not_listed_unresolved"
	else
		fail "$p/name_not_listed_unresolved" "exit $rc: $(printf '%s' "$out" | tail -3 | tr '\n' ' ') log: $(tr '\n' ' ' <"$T/log1")"
	fi
	# Domain fronting over HTTP: the connection is to test.example's
	# address, the request names another host.  The server never sees it.
	: >"$T/log1"
	out=$("${nb[@]}" run --json --net "test.example=127.0.0.1:$P" python -- python3 -c "$HOSTED" test.example "$P" "evil.example" 2>/dev/null)
	if ! grep -q evil.example "$T/log1" && printf '%s' "$out" | verdicts | grep ":refused$" >/dev/null; then
		pass "$p/host_mismatch_refused_and_reported"
	else
		fail "$p/host_mismatch_refused_and_reported" "log: $(tr '\n' ' ' <"$T/log1") out: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi
	# The same without --json: one line on stderr says what was refused
	# (the program may have an answer from the broker saying so, too).
	out=$("${nb[@]}" run --net "test.example=127.0.0.1:$P" python -- python3 -c "$HOSTED" test.example "$P" "evil.example" 2>&1 >/dev/null)
	if printf '%s\n' "$out" | grep -q "^nsbox: network: refused test.example:$P: .*evil.example"; then
		pass "$p/refused_named_on_stderr"
	else
		fail "$p/refused_named_on_stderr" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
	out=$("${nb[@]}" run --json --net "127.0.0.1:$P,pypi" python -- python3 -c "$FETCH" "http://127.0.0.1:$P/marker.txt" 2>/dev/null)
	if printf '%s' "$out" | verdicts | grep "^127.0.0.1:$P:allowed$" >/dev/null; then
		pass "$p/json_network_allowed"
	else
		fail "$p/json_network_allowed" "$(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi
	out=$("${nb[@]}" run --json python -- true 2>/dev/null)
	if printf '%s' "$out" | verdicts | grep '^has_network:False$' >/dev/null; then
		pass "$p/json_no_network_field_when_sealed"
	else
		fail "$p/json_no_network_field_when_sealed" "$(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi

	# create --net, then exec: the rules come from the record (box.json).
	if ! id=$("${nb[@]}" create --net "127.0.0.1:$P" --net "test.example=127.0.0.1:$P" python 2>"$T/create.err"); then
		fail "$p/create_with_net" "$(tail -2 "$T/create.err" | tr '\n' ' ')"
	else
		pass "$p/create_with_net"
		expect "$p/exec_reaches" 0 '^marker-one$' \
			"${nb[@]}" exec "$id" -- python3 -c "$FETCH" "http://test.example:$P/marker.txt"
		out=$("${nb[@]}" exec --json "$id" -- python3 -c "$FETCH" "http://127.0.0.1:$P/marker.txt" 2>/dev/null)
		local v
		v=$(printf '%s' "$out" | verdicts)
		# Each exec reports its own attempts only: not test.example's above.
		if printf '%s' "$v" | grep -q "^127.0.0.1:$P:allowed$" && ! printf '%s' "$v" | grep -q test.example; then
			pass "$p/exec_json_network_per_command"
		else
			fail "$p/exec_json_network_per_command" "$(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		fi
		expect "$p/exec_other_port_unreachable" 3 '^ERR URLError <urlopen error \[Errno 111\] Connection refused>$' \
			"${nb[@]}" exec "$id" -- python3 -c "$FETCH" "http://127.0.0.1:$P2/marker.txt"
		expect "$p/exec_refuses_net" 2 'are the sandbox.s' "${nb[@]}" exec --net pypi "$id" -- true
		"${nb[@]}" rm "$id" >/dev/null 2>&1
	fi

	l7_checks "$p" "$@"
	expect "$p/bad_port_usage_error" 2 'nsbox run: --net: .*99999' "${nb[@]}" run --net bogus:99999 python -- true
	expect "$p/empty_rule_usage_error" 2 'nsbox run: --net: an empty network rule' "${nb[@]}" run --net 'pypi,' python -- true
	expect "$p/bad_name_usage_error" 2 'nsbox create: --net: ' "${nb[@]}" create --net 'a b' python
	expect "$p/ip_without_port_usage_error" 2 'nsbox run: --net: ' "${nb[@]}" run --net 127.0.0.1 python -- true
}

# like PREFIX NAME PATTERN TEXT: a check that TEXT has a line matching
# PATTERN (grep -E).
like() {
	if printf '%s\n' "$4" | grep -Eq -- "$3"; then
		pass "$1/$2"
	else
		fail "$1/$2" "want /$3/: $(printf '%s' "$4" | tail -6 | tr '\n' ' ')"
	fi
}

# l7_checks PREFIX NSBOX...: issue #30's plumbing (the header says what).
l7_checks() {
	local p=$1 out id dir
	shift
	local nb=("$@")
	local web="web.test=127.0.0.1:$P" sec="tok=@$T/token;hosts=web.test:$P"
	# A method and path rule on plain HTTP: GET goes, POST gets nsbox's 403.
	: >"$T/log1"
	out=$("${nb[@]}" run --json --net "$web GET /marker.txt" python -- python3 -c "$REQ" "http://web.test:$P/marker.txt" GET POST 2>&1 | requests)
	like "$p" l7_get_allowed '^GET 200 marker-one$' "$out"
	like "$p" l7_post_refused_403 '^POST 403 nsbox: POST /marker.txt refused: .*not allowed' "$out"
	if grep -q ' GET ' "$T/log1" && ! grep -q ' POST ' "$T/log1"; then
		pass "$p/l7_post_never_reaches_server"
	else
		fail "$p/l7_post_never_reaches_server" "server log: $(tr '\n' ' ' <"$T/log1")"
	fi
	like "$p" l7_audit_get '^req web.test GET /marker.txt allowed -$' "$out"
	like "$p" l7_audit_post '^req web.test POST /marker.txt refused -$' "$out"

	# A secret on plain HTTP: the server gets the value; the sandbox only
	# the placeholder; the audit names the secret.
	: >"$T/log1"
	out=$("${nb[@]}" run --json --net "$web" --secret "$sec" python -- python3 -c "$REQ" "http://web.test:$P/marker.txt" GET 2>&1 | requests)
	like "$p" secret_request_served '^GET 200 marker-one$' "$out"
	if grep -q "GET Bearer $VALUE\$" "$T/log1"; then
		pass "$p/secret_value_reaches_server"
	else
		fail "$p/secret_value_reaches_server" "server log: $(tr '\n' ' ' <"$T/log1")"
	fi
	if printf '%s\n' "$out" | grep -Eq '^TOK=nsbox-secret-tok-[0-9A-Za-z]{24}$' && ! printf '%s' "$out" | grep -q "$VALUE"; then
		pass "$p/secret_sandbox_sees_placeholder_only"
	else
		fail "$p/secret_sandbox_sees_placeholder_only" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
	like "$p" secret_audit_names_it '^req web.test GET /marker.txt allowed tok$' "$out"

	# create --secret: box.json has the placeholder, never the value; a
	# later exec gets the variable back from it and the broker still
	# substitutes.
	if ! id=$("${nb[@]}" create --net "$web" --secret "$sec" python 2>"$T/create.err"); then
		fail "$p/secret_create" "$(tail -2 "$T/create.err" | tr '\n' ' ')"
	else
		dir=$(find "$T" -maxdepth 4 -type d -path "*/sandboxes/$id" | head -1)
		if [ -f "$dir/box.json" ] && grep -q '"placeholder":"nsbox-secret-tok-' "$dir/box.json" && ! grep -q "$VALUE" "$dir/box.json"; then
			pass "$p/secret_record_has_no_value"
		else
			fail "$p/secret_record_has_no_value" "box.json at ${dir:-?}: $(head -c 300 "$dir/box.json" 2>&1)"
		fi
		: >"$T/log1"
		out=$("${nb[@]}" exec "$id" -- python3 -c "$REQ" "http://web.test:$P/marker.txt" GET 2>&1)
		if printf '%s\n' "$out" | grep -Eq '^TOK=nsbox-secret-tok-' && grep -q "GET Bearer $VALUE\$" "$T/log1"; then
			pass "$p/secret_exec_from_record"
		else
			fail "$p/secret_exec_from_record" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ') log: $(tr '\n' ' ' <"$T/log1")"
		fi
		"${nb[@]}" rm "$id" >/dev/null 2>&1
	fi

	# TLS terminated for a host with a rule and a secret: the sandbox trusts
	# the CA nsbox installed (SSL_CERT_FILE is set for it), nsbox-tls
	# verifies the server against the test's CA, and reads each request.
	: >"$T/log3"
	out=$("${nb[@]}" run --json --net "tls.test=127.0.0.1:$P3 GET /**" --secret "tok=@$T/token;hosts=tls.test:$P3" python -- \
		sh -c 'python3 -c "$1" "https://tls.test:$2/api/x" GET POST && echo "CERT=$SSL_CERT_FILE" && grep -c "BEGIN CERTIFICATE" /etc/nsbox/ca.pem' \
		sh "$REQ" "$P3" 2>&1 | requests)
	like "$p" tls_get_allowed '^GET 200 marker-tls$' "$out"
	like "$p" tls_post_refused_403 '^POST 403 nsbox: POST /api/x refused' "$out"
	if grep -q "^tls.test:$P3 /api/x GET Bearer $VALUE\$" "$T/log3" && ! grep -q POST "$T/log3"; then
		pass "$p/tls_secret_reaches_server"
	else
		fail "$p/tls_secret_reaches_server" "server log: $(tr '\n' ' ' <"$T/log3")"
	fi
	like "$p" tls_ca_installed_and_named '^CERT=/etc/nsbox/ca-bundle.pem$' "$out"
	like "$p" tls_audit '^req tls.test GET /api/x allowed tok$' "$out"
}

# -- as root ----------------------------------------------------------------------
S=$T/store
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail setup "cannot pull the python fixture: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
checks root "$NSBOX" --store "$S"

# serve's ceiling: shown by --print-config, a bad rule stops the start.
out=$("$NSBOX" --store "$S" serve --allow-net pypi --allow-net "127.0.0.1:$P,test.example=127.0.0.1:$P" --print-config 2>&1)
if printf '%s\n' "$out" | grep -qx 'allow-net = pypi' && printf '%s\n' "$out" | grep -qx "allow-net = 127.0.0.1:$P,test.example=127.0.0.1:$P"; then
	pass serve_print_config_allow_net
else
	fail serve_print_config_allow_net "$(printf '%s' "$out" | tr '\n' ' ')"
fi
# Without nsbox-tls beside it (nor in ../libexec/nsbox), a rule that
# needs it is refused, saying so; the sandbox is not left open.
mkdir -p "$T/lonely" && cp "$NSBOX" "$T/lonely/nsbox"
expect nsbox_tls_missing_refused 125 'nsbox-tls not found next to nsbox .*lonely/nsbox-tls.*make install' \
	"$T/lonely/nsbox" --store "$S" run --net "web.test=127.0.0.1:$P GET /**" python -- true
expect serve_bad_allow_net 2 'allow-net: .*not a port' "$NSBOX" --store "$S" serve --allow-net pypi.org:0 </dev/null
printf '[serve]\nallow-net = pypi.org:70000\n' >"$T/bad.conf"
expect serve_bad_allow_net_in_config 2 'bad.conf:2: .*allow-net' env NSBOX_CONFIG="$T/bad.conf" "$NSBOX" --store "$S" serve --print-config </dev/null

# -- rootless ---------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
[ -x "$(dirname "$NSBOX")/nsbox-tls" ] && install -m 755 "$(dirname "$NSBOX")/nsbox-tls" "$RL/nsbox-tls"
as_user() { runuser -u nsboxtest -- env NSBOX_LIMITS=best-effort "$@"; }
if ! out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail rootless/setup "cannot pull the python fixture: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
else
	checks rootless as_user "$RL/nsbox" --store "$RL/store"
fi
finish
