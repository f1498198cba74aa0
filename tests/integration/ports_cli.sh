#!/usr/bin/env bash
# Exposed ports from the CLI (issue #28, docs/services.md): `nsbox run -p`
# and `nsbox create -p [ADDR:]HOST_PORT:PORT` relay the host's listener to
# a server in the sandbox, through a socket its init connects inside the
# sandbox's network namespace (runtime/init_ports.c).  Checked with curl
# from the host: a server on 0.0.0.0 and one on ::1 only are reached, a
# host listener on [::1] when asked; a 100 MiB download is intact (sha256
# inside = sha256 outside); 200 connections, 100 at once, all answered;
# nothing listening is a reset,
# not a hang, and the forward goes on; create -p's forwarder dies with
# `nsbox rm`; a host port in use is refused with nothing left behind; bad
# -p is a usage error and exec has none; exposing gives the sandbox no way
# out (from inside, the host's listeners stay unreachable), and the
# egress broker's port (--net) is never exposed; landlock
# isolation refuses -p.  As root and as the unprivileged user nsboxtest
# (tests/setup-users.sh).
SUITE=ports_cli
. "$(dirname "$0")/../lib.sh"

# A free host port (nothing listens on it now).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The server in the sandbox: files of the working directory, and GET /quit
# ends it.  argv: PORT [BIND] (BIND "" is 0.0.0.0, "::1" IPv6 loopback).
SERVER='import http.server, socket, sys, threading
# small stacks: rootless best-effort limits memory as RLIMIT_AS (512m),
# and 100 threads of 8 MiB stacks would not fit
threading.stack_size(256 * 1024)
bind = sys.argv[2] if len(sys.argv) > 2 else ""
class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    request_queue_size = 256
    daemon_threads = True
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/quit":
            self.send_response(200); self.end_headers(); self.wfile.write(b"bye\n")
            threading.Thread(target=self.server.shutdown).start()
            return
        super().do_GET()
    def log_message(self, *a):
        pass
S((bind, int(sys.argv[1])), H).serve_forever()'

# From inside: connect to 127.0.0.1:PORT; prints "refused" or "connected".
CONNECT='import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close(); print("connected")
except ConnectionRefusedError:
    print("refused")
except Exception as e:
    print("other", type(e).__name__, e)'

# N GETs of URL, C at once, from the host; prints how many got 200 + body.
MANY='import collections, concurrent.futures, sys, urllib.request
url, n, c, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
errs = collections.Counter()
def get(_):
    try:
        return urllib.request.urlopen(url, timeout=30).read().decode().strip() == want
    except Exception as e:
        errs[type(e).__name__ + ": " + str(e)[:80]] += 1
        return False
with concurrent.futures.ThreadPoolExecutor(c) as ex:
    print(sum(ex.map(get, range(n))))
for e, k in errs.items():
    print(k, e, file=sys.stderr)'

# get URL: the body, or nothing (curl's own error on stderr).
get() { curl -sS --max-time 10 "$1"; }
# cut_off PORT: a connection to the host's PORT is accepted and closed at
# once (curl 52 or 56; 7 when the reset beats curl's own check), while
# something still listens there (not a forwarder gone).
cut_off() {
	local rc
	curl -sS --max-time 10 -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null
	rc=$?
	case $rc in 7 | 52 | 56) ;; *) return 1 ;; esac
	ss -Hltn "sport = :$1" | grep -q LISTEN
}
listening() { curl -s --max-time 2 -o /dev/null "$1"; }

# checks PREFIX NSBOX...: every check, with NSBOX... the command that runs
# nsbox (root's, or nsboxtest's through runuser).
checks() {
	local p=$1 out id hp hp2 rc fpid before after
	shift
	local nb=("$@")

	# -- run -p: the CLI forwards while the command runs ------------------
	hp=$(free_port)
	"${nb[@]}" run -p "$hp:8000" python -- sh -c "cd /tmp && echo run-marker >index.html && exec python3 -c '$SERVER' 8000" >"$T/run.out" 2>&1 &
	local runpid=$!
	if wait_until 60 listening "http://127.0.0.1:$hp/index.html" &&
		[ "$(get "http://127.0.0.1:$hp/index.html")" = run-marker ]; then
		pass "$p/run_p_reaches_server"
	else
		fail "$p/run_p_reaches_server" "$(tail -3 "$T/run.out" | tr '\n' ' ')"
	fi
	get "http://127.0.0.1:$hp/quit" >/dev/null 2>&1
	if wait_until 30 sh -c "! kill -0 $runpid 2>/dev/null" && ! listening "http://127.0.0.1:$hp/"; then
		pass "$p/run_p_listener_gone_with_run"
	else
		fail "$p/run_p_listener_gone_with_run" "run still up or port still served"
		kill "$runpid" 2>/dev/null
	fi
	wait "$runpid" 2>/dev/null

	# -- create -p: a detached forwarder for the sandbox's life ------------
	hp=$(free_port)
	hp2=$(free_port)
	local hp3
	hp3=$(free_port)
	# --pids: the server's 100 threads at once (rootless, RLIMIT_NPROC
	# counts every process of nsboxtest's, other suites' too)
	if ! id=$("${nb[@]}" create --pids 4096 -p "$hp:8000" -p "127.0.0.1:$hp2:8001" -p "[::1]:$hp3:8000" python 2>"$T/create.err"); then
		fail "$p/create_p" "$(tail -2 "$T/create.err" | tr '\n' ' ')"
		return
	fi
	pass "$p/create_p"
	# Nothing listens yet: the client is reset at once, not left hanging,
	# and the forward goes on.
	if cut_off "$hp"; then
		pass "$p/nothing_listening_is_reset"
	else
		fail "$p/nothing_listening_is_reset" "not cut off at once, or no listener on $hp"
	fi
	"${nb[@]}" exec "$id" -- sh -c "cd /tmp && echo create-marker >index.html && head -c 100M /dev/urandom >big && sha256sum big >big.sum && (setsid python3 -c '$SERVER' 8000 >/dev/null 2>&1 &) && (setsid python3 -c '$SERVER' 8001 ::1 >/dev/null 2>&1 &)" >/dev/null 2>&1
	if wait_until 30 listening "http://127.0.0.1:$hp/index.html" &&
		[ "$(get "http://127.0.0.1:$hp/index.html")" = create-marker ]; then
		pass "$p/create_p_reaches_server"
	else
		fail "$p/create_p_reaches_server" "no answer on $hp"
	fi
	# A server on ::1 only: reached through [::1] inside.
	if wait_until 30 listening "http://127.0.0.1:$hp2/index.html" &&
		[ "$(get "http://127.0.0.1:$hp2/index.html")" = create-marker ]; then
		pass "$p/ipv6_only_server_reached"
	else
		fail "$p/ipv6_only_server_reached" "no answer on $hp2"
	fi
	# A host listener on [::1] (ADDR given in brackets), and not on 127.0.0.1.
	if [ "$(get "http://[::1]:$hp3/index.html")" = create-marker ] && ! listening "http://127.0.0.1:$hp3/"; then
		pass "$p/ipv6_host_address"
	else
		fail "$p/ipv6_host_address" "no answer on [::1]:$hp3, or one on 127.0.0.1:$hp3"
	fi
	# 100 MiB, byte for byte.
	local inside outside
	inside=$(get "http://127.0.0.1:$hp/big.sum" | cut -d' ' -f1)
	outside=$(curl -sS --max-time 120 "http://127.0.0.1:$hp/big" | sha256sum | cut -d' ' -f1)
	if [ -n "$inside" ] && [ "$inside" = "$outside" ]; then
		pass "$p/100MiB_intact"
	else
		fail "$p/100MiB_intact" "inside '$inside' outside '$outside'"
	fi
	out=$(python3 -c "$MANY" "http://127.0.0.1:$hp/index.html" 200 100 create-marker 2>"$T/many.err")
	if [ "$out" = 200 ]; then
		pass "$p/200_connections_100_at_once"
	else
		fail "$p/200_connections_100_at_once" "$out of 200 answered: $(tr '\n' ';' <"$T/many.err")"
	fi
	# No egress: from inside, the host's listeners (the forward's own
	# port, a host server) are not there.
	: >"$T/hostlog"
	out=$("${nb[@]}" exec "$id" -- python3 -c "$CONNECT" "$hp" 2>&1)
	local out2
	out2=$("${nb[@]}" exec "$id" -- python3 -c "$CONNECT" "$HOSTP" 2>&1)
	if [ "$out" = refused ] && [ "$out2" = refused ] && [ ! -s "$T/hostlog" ]; then
		pass "$p/no_way_out_from_inside"
	else
		fail "$p/no_way_out_from_inside" "forward port: $out; host server: $out2"
	fi
	# ps shows the ports.
	if "${nb[@]}" ps | grep "^$id " | grep -q "127.0.0.1:$hp->8000"; then
		pass "$p/ps_shows_ports"
	else
		fail "$p/ps_shows_ports" "$("${nb[@]}" ps 2>&1 | tr '\n' ' ')"
	fi
	fpid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$SDIR/sandboxes/$id/forward.json" 2>/dev/null)
	"${nb[@]}" rm "$id" >/dev/null 2>&1
	gone() { [ ! -e "/proc/$1" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
	if [ -n "$fpid" ] && wait_until 10 gone "$fpid" && ! listening "http://127.0.0.1:$hp/"; then
		pass "$p/forwarder_dies_with_rm"
	else
		fail "$p/forwarder_dies_with_rm" "forwarder '$fpid' still there or port $hp still served"
	fi

	# The egress broker's port (--net IP:PORT makes it listen on PORT
	# inside): never reached through -p, so the host service behind the
	# rule sees nothing.
	hp=$(free_port)
	: >"$T/hostlog"
	if id=$("${nb[@]}" create --net "127.0.0.1:$HOSTP" -p "$hp:$HOSTP" python 2>"$T/create.err"); then
		cut_off "$hp"
		rc=$?
		sleep 0.5
		local lines direct
		lines=$(wc -l <"$T/hostlog")
		# the broker is there for the sandbox itself (connect accepted)
		direct=$("${nb[@]}" exec "$id" -- python3 -c "$CONNECT" "$HOSTP" 2>&1)
		if [ "$rc" = 0 ] && [ "$lines" = 0 ] && [ "$direct" = connected ]; then
			pass "$p/broker_port_not_exposed"
		else
			fail "$p/broker_port_not_exposed" "cut off: $rc (0 yes); host log after it: $lines lines; inside: $direct"
		fi
		"${nb[@]}" rm "$id" >/dev/null 2>&1
	else
		fail "$p/broker_port_not_exposed" "create: $(tail -2 "$T/create.err" | tr '\n' ' ')"
	fi

	# -- a host port in use: refused, nothing left behind -----------------
	before=$("${nb[@]}" ps -q | wc -l)
	expect_fail "$p/create_port_in_use_refused" "host port 127.0.0.1:$HOSTP is already in use" \
		"${nb[@]}" create -p "$HOSTP:8000" python
	# run's own failure is 125, as docker's
	out=$("${nb[@]}" run -p "$(free_port):80" -p "$HOSTP:8000" python -- echo ran 2>&1)
	rc=$?
	[ "$rc" = 125 ] && printf '%s' "$out" | grep -q "host port 127.0.0.1:$HOSTP is already in use" &&
		! printf '%s' "$out" | grep -q '^ran$' && pass "$p/run_port_in_use_refused" ||
		fail "$p/run_port_in_use_refused" "exit $rc: $out"
	after=$("${nb[@]}" ps -q | wc -l)
	[ "$before" = "$after" ] && pass "$p/port_in_use_leaves_nothing" ||
		fail "$p/port_in_use_leaves_nothing" "sandboxes before $before, after $after"

	# -- usage ------------------------------------------------------------
	out=$("${nb[@]}" run -p 99999:80 python -- true 2>&1)
	rc=$?
	[ "$rc" = 2 ] && printf '%s' "$out" | grep -q 'HOST_PORT:PORT' && pass "$p/bad_p_usage_error" ||
		fail "$p/bad_p_usage_error" "exit $rc: $out"
	out=$("${nb[@]}" exec -p 8080:80 0123 -- true 2>&1)
	[ $? = 2 ] && pass "$p/exec_has_no_p" || fail "$p/exec_has_no_p" "$out"
	expect_fail "$p/landlock_refuses_p" "publishing ports .* landlock" \
		"${nb[@]}" create --isolation landlock -p "$(free_port):80" python
}

# A host server on loopback the sandbox must never reach (its log stays empty).
python3 -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("connection\n"); c.close()' "$T/hostport" "$T/hostlog" &
HOSTPID=$!
trap 'kill $HOSTPID 2>/dev/null; cleanup_test_dir' EXIT
wait_until 10 test -s "$T/hostport"
HOSTP=$(cat "$T/hostport")

# -- as root ----------------------------------------------------------------------
SDIR=$T/store
seed_default_store "$SDIR"
if ! out=$("$NSBOX" --store "$SDIR" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$SDIR" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail setup "cannot pull the python fixture: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
checks root "$NSBOX" --store "$SDIR"

# -- rootless ---------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
as_user() { runuser -u nsboxtest -- env NSBOX_LIMITS=best-effort "$@"; }
SDIR=$RL/store
if ! out=$(as_user "$RL/nsbox" --store "$SDIR" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$(as_user "$RL/nsbox" --store "$SDIR" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail rootless/setup "cannot pull the python fixture: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
else
	checks rootless as_user "$RL/nsbox" --store "$SDIR"
fi
finish
