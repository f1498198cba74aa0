#!/usr/bin/env bash
# tests/bench/run.sh node_capacity: what one `nsbox serve --http` node holds
# on this machine (docs/deploy.md, "Capacity of one node"), through the SDK
# client (tests/bench/node_capacity.mjs): calls/s on kept sandboxes straight
# to the node against the same through HAProxy (deploy/haproxy/haproxy.cfg,
# the router's cost), one-shot sandboxes/s, memory per idle session and per
# kept sandbox.  Everything on 127.0.0.1/127.0.0.2; both servers end with
# the script.
# usage: node_capacity.sh NSBOX STORE RUNS
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export BENCH_DIR=$ROOT/tests/bench
NSBOX=$1 STORE=$2 RUNS=${3:-3}
D=$(mktemp -d /tmp/nsbox-capacity.XXXXXX)
SRV= ; HAP=
cleanup() {
	[ -n "$HAP" ] && kill "$HAP" 2>/dev/null
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
command -v haproxy >/dev/null || { echo "node_capacity: haproxy missing (make deps)" >&2; exit 1; }
"$ROOT/tests/mcp/setup.sh" >/dev/null

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"
# the router listens on 127.0.0.2 with the node's port: Host must carry it
"$NSBOX" --store "$STORE" serve --http 127.0.0.1:0 --node-id nsbox-0 --token-file "$D/token" \
	--allow-host 127.0.0.2 --max-total-sandboxes 256 --max-sandboxes 16 \
	--max-sessions 256 --max-connections-per-ip 256 2>"$D/serve.log" &
SRV=$!
PORT=
for _ in $(seq 100); do
	PORT=$(sed -n 's|^nsbox: serving MCP on http://.*:\([0-9]*\)/mcp .*|\1|p' "$D/serve.log" | head -1)
	[ -n "$PORT" ] && break
	sleep 0.2
done
[ -n "$PORT" ] || { tail -3 "$D/serve.log" >&2; exit 1; }
env NSBOX_ROUTER_NO_DNS=1 NSBOX_ROUTER_BIND="127.0.0.2:$PORT" NSBOX_ROUTER_SOCKET="$D/router.sock" \
	NSBOX_0="127.0.0.1:$PORT" NSBOX_1=127.0.0.1:1 NSBOX_2=127.0.0.1:1 \
	haproxy -D -p "$D/haproxy.pid" -f "$ROOT/deploy/haproxy/haproxy.cfg"
HAP=$(cat "$D/haproxy.pid")
python3 "$ROOT/tests/fleet/router.py" "$D/router.sock" wait nsbox-0 UP 60

out=$(node "$ROOT/tests/bench/node_capacity.mjs" "http://127.0.0.1:$PORT/mcp" "http://127.0.0.2:$PORT/mcp" \
	"$(cat "$D/token")" "$SRV" "$RUNS")
python3 - "$out" <<'PYEOF'
import json, os, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from benchlib import line, spread
r = json.loads(sys.argv[1])
d, h = statistics.median(r["direct_cps"]), statistics.median(r["router_cps"])
c, n = r["conc"], len(r["direct_cps"])
print(f"\nnode_capacity: one nsbox serve --http node, python fixture, {c} sessions at once, {r['calls_per_session']} calls each per run, {n} runs")
print(f"  {'':62} {'min':>7} {'median':>7} {'max':>7}   runs, in order")
for label, k in (("calls/s, execute_code print(1), kept sandboxes, straight", "direct_cps"),
                 ("calls/s, the same through HAProxy (deploy/haproxy)", "router_cps")):
    v = r[k]
    print(f"  {label:62} {min(v):7.1f} {statistics.median(v):7.1f} {max(v):7.1f}   {' '.join(f'{x:.1f}' for x in v)}")
print(f"  execute_code pass, a fresh sandbox each (one-shot)           {r['oneshot_cps']:7.1f} calls/s (one run)")
print(f"  {r['sessions']} idle sessions: {r['session_setup_ms']:.1f} ms each to open, server RSS {r['rss_per_session_kib']:.1f} KiB per session")
print(f"  {r['sandboxes']} kept python sandboxes: {r['sandbox_create_ms']:.0f} ms each to create, "
      f"host MemAvailable drop {r['memavailable_per_sandbox_kib']:.0f} KiB and server RSS {r['rss_per_sandbox_kib']:.1f} KiB per sandbox")
print(f"  server RSS at the end: {r['server_rss_kib']} KiB; POSTs re-sent after the node dropped a connection (--max-connections-per-ip): {r['retries']}")
# context, no target: here the router takes its CPU from the node's two cores
ms = lambda k: [1000 / x for x in r[k]]
print(line("node_capacity_calls", [f"nsbox_ms={spread(ms('router_cps'))}", f"baseline_ms={spread(ms('direct_cps'))}",
                                   f"ratio={d / h:.2f}"], n=n))
print(line("node_capacity", [f"cps_direct={spread(r['direct_cps'], '{:.1f}')}", f"cps_router={spread(r['router_cps'], '{:.1f}')}",
                             f"oneshot_cps={r['oneshot_cps']:.1f}", f"session_kib={r['rss_per_session_kib']:.1f}",
                             f"sandbox_kib={r['memavailable_per_sandbox_kib']:.0f}"], n=n))
PYEOF
