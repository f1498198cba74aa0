#!/usr/bin/env bash
# The egress allow-list from the CLI (issue #14, docs/network.md): `nsbox
# run --net` and `nsbox create --net` + `nsbox exec` reach a service the
# test starts on the host's loopback through nsbox's broker, and nothing
# else: not without --net, not another port, not a name the list lacks,
# not a request whose Host differs from the rule's name.  --json carries
# what was tried (network, with verdicts); a refused attempt is one line on
# stderr without --json; bad rules are usage errors (exit 2).  As root and
# as the unprivileged user nsboxtest (tests/setup-users.sh).
SUITE=net
. "$(dirname "$0")/../lib.sh"

# A host HTTP server on a free loopback port: serves /marker.txt and logs
# the Host of every request it gets (a refused request never arrives).
cat >"$T/server.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[2], "a") as log:
            log.write(f"{self.headers.get('Host')} {self.path}\n")
        body = (sys.argv[3] + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1], "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
EOF
start_server() { # PORTFILE LOG MARKER (not in $(...): it would wait for the server)
	python3 "$T/server.py" "$1" "$2" "$3" >/dev/null 2>&1 &
	SERVER_PIDS="${SERVER_PIDS:-} $!"
	for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.05; done
}
cleanup() {
	# shellcheck disable=SC2086
	[ -n "${SERVER_PIDS:-}" ] && kill $SERVER_PIDS 2>/dev/null
	cleanup_test_dir
}
trap cleanup EXIT
start_server "$T/p1" "$T/log1" marker-one
start_server "$T/p2" "$T/log2" marker-two
P=$(cat "$T/p1" 2>/dev/null)
P2=$(cat "$T/p2" 2>/dev/null)
if [ -z "$P" ] || [ -z "$P2" ]; then
	fail setup "the host HTTP servers did not start"
	finish
fi

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

	expect "$p/bad_port_usage_error" 2 'nsbox run: --net: .*99999' "${nb[@]}" run --net bogus:99999 python -- true
	expect "$p/empty_rule_usage_error" 2 'nsbox run: --net: an empty network rule' "${nb[@]}" run --net 'pypi,' python -- true
	expect "$p/bad_name_usage_error" 2 'nsbox create: --net: ' "${nb[@]}" create --net 'a b' python
	expect "$p/ip_without_port_usage_error" 2 'nsbox run: --net: ' "${nb[@]}" run --net 127.0.0.1 python -- true
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
expect serve_bad_allow_net 2 'allow-net: .*not a port' "$NSBOX" --store "$S" serve --allow-net pypi.org:0 </dev/null
printf '[serve]\nallow-net = pypi.org:70000\n' >"$T/bad.conf"
expect serve_bad_allow_net_in_config 2 'bad.conf:2: .*allow-net' env NSBOX_CONFIG="$T/bad.conf" "$NSBOX" --store "$S" serve --print-config </dev/null

# -- rootless ---------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
as_user() { runuser -u nsboxtest -- env NSBOX_LIMITS=best-effort "$@"; }
if ! out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail rootless/setup "cannot pull the python fixture: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
else
	checks rootless as_user "$RL/nsbox" --store "$RL/store"
fi
finish
