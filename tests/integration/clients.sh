#!/usr/bin/env bash
# Third-party MCP client libraries against `nsbox serve` (issue #24): the
# protocol as users meet it, besides the official SDK, the conformance
# suites and raw JSON-RPC (mcp_stdio, mcp_http, conformance).  Each library,
# pinned in tests/clients/package-lock.json and run under Node 22.19+
# (tests/clients/setup.sh; the private Node of tests/conformance when the
# system's is older), over every transport it offers, and for the libraries
# that speak 2026-07-28 with their default and with the older revision
# pinned: tests/clients/matrix.mjs prints, per client and config,
#   tools_list schemas one_shot figure stateful era
# (what each asserts: the head of matrix.mjs).  No LLM is involved: the
# tools are called as a model's tool calls are, through what each library
# builds.  This suite knows the whole matrix: every case must print exactly
# one PASS or FAIL line, and a driver that dies, hangs or prints fewer is a
# FAIL naming what is missing.
#
# The image: the default image (matplotlib for the figure) in root's store,
# where `make default-image` puts it: images/default-image.sh runs only
# when the store lacks the layout's image (images/default/build.sh, cached),
# and the servers use /var/lib/nsbox as it is.  Pulling the 1 GB image into
# a store of the suite's own would cost 12 s on a tmpfs, more on disk, for
# the same digest.  Sandboxes live in that store only while a case runs.
#
# One `serve --http` (its /mcp and /sse) serves every HTTP and SSE client
# (each has its own session, or for 2026-07-28 the loopback tenant, and
# stops its own sandbox); over stdio each client starts its own server.  The
# drivers run side by side, one process per line of MATRIX.  The server
# must be alive at the end and exit 0 on SIGTERM, and no stdio server may
# outlive its client.  Prints the suite's time.
SUITE=clients
. "$(dirname "$0")/../lib.sh"

CL=$ROOT/tests/clients
LOGS=$T/logs
WORK=$T/work
REF=$T/ref
mkdir -p "$LOGS" "$WORK" "$REF"
SERVERS=()
DRIVERS=()
STORE=/var/lib/nsbox
IMG=localhost/nsbox-default:latest
started=$SECONDS

# One driver process per line: CLIENT CONFIG...  (adapters/CLIENT.mjs has
# the configs: transport, the era expected, the library's options).
MATRIX=(
	"langchain stdio http sse"
	"aisdk stdio stdio-2025 http http-2025 sse"
	"agents stdio http sse"
	"mastra stdio stdio-legacy http http-legacy"
	"mcp-remote http sse"
	"inspector stdio sse"
	"inspector http http-auto"
)
CASES="tools_list schemas one_shot figure stateful era"
# Cases a config cannot run, with the driver's "not applicable" note
# expected instead (the reason is in adapters/inspector.mjs).
NOT_APPLICABLE="inspector-stdio/stateful inspector-http/stateful inspector-sse/stateful"

cleanup() {
	local p
	for p in "${DRIVERS[@]}" "${SERVERS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	cleanup_test_dir
}
trap cleanup EXIT

# ---- set-up: the libraries, Node, the image

if ! out=$("$CL/setup.sh" 2>&1); then
	fail setup "tests/clients/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
[ -n "$out" ] && echo "# $out"
NSBOX_NODE_MIN=22.19
. "$ROOT/tests/conformance/env.sh"
if ! conformance_node_ok; then
	fail setup "node $(node --version 2>&1) in PATH is older than $NSBOX_NODE_MIN"
	finish
fi
v() { node -p "require('$CL/node_modules/$1/package.json').version"; }
echo "# node $(node --version); @langchain/mcp-adapters $(v @langchain/mcp-adapters) + @langchain/core $(v @langchain/core)," \
	"@ai-sdk/mcp $(v @ai-sdk/mcp), @openai/agents $(v @openai/agents), @mastra/mcp $(v @mastra/mcp)," \
	"mcp-remote $(v mcp-remote), @modelcontextprotocol/inspector $(v @modelcontextprotocol/inspector)"

if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$LOGS/image-build.log"); then
	fail setup "images/default/build.sh failed: $(tail -5 "$LOGS/image-build.log" | tr '\n' ' ')"
	finish
fi
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$LAYOUT/index.json")
have=$("$NSBOX" --store "$STORE" inspect "$IMG" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])' 2>/dev/null)
if [ "$have" != "$want" ]; then
	echo "# root's store has ${have:-no} $IMG, the layout $want: images/default-image.sh"
	if ! (cd "$ROOT" && images/default-image.sh "$NSBOX") >"$LOGS/default-image.log" 2>&1; then
		fail setup "images/default-image.sh failed: $(tail -3 "$LOGS/default-image.log" | tr '\n' ' ')"
		finish
	fi
fi
echo "# image $IMG $want in $STORE (set-up $((SECONDS - started)) s)"

# ---- the HTTP server and the reference tool lists

if ! serve_http http "$NSBOX" --store "$STORE" serve --http 127.0.0.1:0 --image "python=$IMG"; then
	finish
fi
HTTP_PID=$PID
export NSBOX NSBOX_STORE=$STORE NSBOX_IMAGE=$IMG MCP_URL=http://127.0.0.1:$PORT/mcp \
	SSE_URL=http://127.0.0.1:$PORT/sse REF_DIR=$REF WORK=$WORK SUITE
if ! out=$(timeout 60 node "$CL/reference.mjs" 2>&1); then
	fail setup "tests/clients/reference.mjs failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
printf '%s\n' "$out"

# ---- the drivers, side by side

t0=$SECONDS
for i in "${!MATRIX[@]}"; do
	# shellcheck disable=SC2086
	(
		timeout 300 node "$CL/matrix.mjs" ${MATRIX[$i]} >"$LOGS/driver-$i.out" 2>"$LOGS/driver-$i.stderr"
		echo $? >"$LOGS/driver-$i.rc"
	) &
	DRIVERS+=($!)
done
wait "${DRIVERS[@]}"
DRIVERS=()
echo "# drivers: $((SECONDS - t0)) s"

# Their lines, driver by driver; a FAIL counts.  A driver that exited
# non-zero or printed no completion note is reported with its stderr.
for i in "${!MATRIX[@]}"; do
	out=$LOGS/driver-$i.out
	grep -E '^(PASS: |FAIL: |# )' "$out"
	_failures=$((_failures + $(grep -c '^FAIL: ' "$out")))
	rc=$(cat "$LOGS/driver-$i.rc" 2>/dev/null || echo none)
	set -- ${MATRIX[$i]}
	if [ "$rc" != 0 ] || ! grep -q "^# $1: done$" "$out"; then
		fail "driver/${MATRIX[$i]// /-}" "exited $rc$([ "$rc" = 124 ] && echo ' (timeout)') before its end: $(tail -3 "$LOGS/driver-$i.stderr" | tr '\n' ' ')"
	fi
done

# ---- every expected case exactly once, nothing else

cat "$LOGS"/driver-*.out >"$LOGS/all.out"
expected=0
for i in "${!MATRIX[@]}"; do
	line=${MATRIX[$i]}
	set -- $line
	client=$1
	shift
	for config in "$@"; do
		for c in $CASES; do
			name=$client-$config/$c
			if [[ " $NOT_APPLICABLE " == *" $name "* ]]; then
				grep -qF "# $SUITE/$name: not applicable: " "$LOGS/all.out" ||
					fail "$name" "expected the driver's \"not applicable\" note, got none"
				continue
			fi
			expected=$((expected + 1))
			n=$(grep -cE "^(PASS|FAIL): $SUITE/$name(: |$)" "$LOGS/all.out")
			if [ "$n" = 0 ]; then
				fail "$name" "missing: its driver ($line) printed no line for it (exit $(cat "$LOGS/driver-$i.rc" 2>/dev/null); stderr: $(grep -v '^$' "$LOGS/driver-$i.stderr" | tail -2 | tr '\n' ' '))"
			elif [ "$n" != 1 ]; then
				fail "$name" "printed $n times"
			fi
		done
	done
done
got=$(grep -cE "^(PASS|FAIL): $SUITE/[^/ ]+/[a-z_]+(: |$)" "$LOGS/all.out")
if [ "$got" != "$expected" ]; then
	twice=$(grep -E "^(PASS|FAIL): $SUITE/[^/ ]+/[a-z_]+(: |$)" "$LOGS/all.out" |
		sed -E 's/^(PASS|FAIL): ([^:]*)(: .*)?$/\2/' | sort | uniq -d | head -3 | tr '\n' ' ')
	fail matrix_complete "$expected cases expected, the drivers printed $got case lines${twice:+ (more than once: $twice)}"
else
	pass matrix_complete
fi

# ---- the servers

# A stdio server ends when its client closes stdin (or stops it): none may
# be left, found by the NSBOX_CLIENT_MATRIX=WORK in its environment
# (common.mjs), nor a tee of tap-stdio.sh.
ours() {
	grep -lsa -- "NSBOX_CLIENT_MATRIX=$WORK" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
	pgrep -f -- "tee -a $WORK/"
}
for i in $(seq 50); do
	[ -z "$(ours)" ] && break
	sleep 0.2
done
left=$(ours | sort -u | tr '\n' ' ')
if [ -n "$left" ]; then
	fail stdio_servers_ended "still running 10 s after the drivers: $(for p in $left; do tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | cut -c1-160; echo; done | head -3 | tr '\n' ';')"
	for p in $left; do kill -KILL "$p" 2>/dev/null; done
else
	pass stdio_servers_ended
fi

if kill -0 "$HTTP_PID" 2>/dev/null; then
	pass http_server_alive
	stop_server "$HTTP_PID"
	if [ "$STOP_RC" = 0 ]; then
		pass http_server_sigterm
	else
		fail http_server_sigterm "exit status $STOP_RC after SIGTERM: $(tail -3 "$LOGS/http.log" | tr '\n' ' ')"
	fi
else
	wait "$HTTP_PID"
	fail http_server_alive "the server died (status $?): $(tail -3 "$LOGS/http.log" | tr '\n' ' ')"
fi
SERVERS=()

echo "# clients: $expected cases in ${#MATRIX[@]} drivers; $((SECONDS - started)) s in all"
finish
