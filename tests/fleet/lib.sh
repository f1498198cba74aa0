# shellcheck shell=bash
# The fleet of tests/integration/fleet.sh, shared with tests/fleet/ctl.sh
# (which the client runs to kill, drain and restart things).  Everything
# lives in network namespaces this run made: a router namespace holding
# the bridge, HAProxy (on its 127.0.0.1:8080) and the clients, and one
# namespace per node, joined to the bridge by a veth pair.  No address of
# the host's own namespace is used.
#
# Needs: FLEET_DIR (state: pids, logs, stores, token), FLEET_ID (suffix of
# the namespaces' names), NSBOX, ROOT.  Node N is `nsbox serve --http
# NET.(10+N):8080 --node-id nsbox-N` with its own store, as a StatefulSet
# pod with its own volume.  FLEET_IMAGE (busybox) serves every language the
# tests and the health check (a sandbox of the python image) use: pulling
# the python image into three stores would cost more than the suite's budget.
FLEET_NET=${FLEET_NET:-10.231.16}
FLEET_PORT=8080
ns_router() { echo "nsbfl${FLEET_ID}r"; }
ns_node() { echo "nsbfl${FLEET_ID}n$1"; }
addr_node() { echo "$FLEET_NET.$((10 + $1))"; }

# in_ns NS CMD...: CMD in network namespace NS only.  Not `ip netns exec`:
# it also remounts /sys, which hides the cgroup hierarchies nsbox needs.
in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

# fleet_net N: the namespaces, the bridge and N veth pairs.
fleet_net() {
	local r i n
	r=$(ns_router)
	ip netns add "$r" || return 1
	ip -n "$r" link set lo up &&
		ip -n "$r" link add br0 type bridge &&
		ip -n "$r" addr add "$FLEET_NET.1/24" dev br0 &&
		ip -n "$r" link set br0 up || return 1
	for ((i = 0; i < $1; i++)); do
		n=$(ns_node "$i")
		ip netns add "$n" &&
			ip -n "$n" link set lo up &&
			ip -n "$r" link add "veth$i" type veth peer name eth0 netns "$n" &&
			ip -n "$r" link set "veth$i" master br0 up &&
			ip -n "$n" addr add "$(addr_node "$i")/24" dev eth0 &&
			ip -n "$n" link set eth0 up || return 1
	done
}

# fleet_net_down N: deletes the namespaces (best effort).
fleet_net_down() {
	local i
	for ((i = 0; i < $1; i++)); do ip netns del "$(ns_node "$i")" 2>/dev/null; done
	ip netns del "$(ns_router)" 2>/dev/null
	return 0
}

# start_node N: node N in the background; its pid in node$N.pid, its exit
# status in node$N.rc once it ends.  Waits (at most 20 s) until it listens.
start_node() {
	local i=$1 d=$FLEET_DIR k
	rm -f "$d/node$i.rc" "$d/node$i.pid"
	(
		# nsenter execs nsbox: $! is nsbox's own pid (a function would fork)
		nsenter --net="/run/netns/$(ns_node "$i")" "$NSBOX" --store "$d/store$i" serve \
			--http "$(addr_node "$i"):$FLEET_PORT" --node-id "nsbox-$i" \
			--token-file "$d/token" --image "python=$FLEET_IMAGE" --image "sh=$FLEET_IMAGE" \
			--shutdown-grace 20 >>"$d/node$i.log" 2>&1 &
		echo $! >"$d/node$i.pid"
		wait $!
		echo $? >"$d/node$i.rc"
	) 2>>"$d/node$i.log" &
	for ((k = 0; k < 100; k++)); do
		grep -q "serving MCP on" "$d/node$i.log" 2>/dev/null && return 0
		[ -e "$d/node$i.rc" ] && break
		sleep 0.2
	done
	echo "node $i did not start: $(tail -3 "$d/node$i.log" 2>/dev/null | tr '\n' ' ')" >&2
	return 1
}

node_pid() { cat "$FLEET_DIR/node$1.pid" 2>/dev/null; }

# start_router [CFG]: HAProxy with CFG (default deploy/haproxy/haproxy.cfg)
# in the router namespace, on 127.0.0.1:8080; waits until the nodes that
# run are UP (their /readyz answers 200).
start_router() {
	local cfg=${1:-$ROOT/deploy/haproxy/haproxy.cfg} i
	rm -f "$FLEET_DIR/haproxy.pid"
	in_ns "$(ns_router)" env NSBOX_ROUTER_NO_DNS=1 \
		NSBOX_ROUTER_BIND="127.0.0.1:$FLEET_PORT" NSBOX_ROUTER_SOCKET="$FLEET_DIR/router.sock" \
		NSBOX_0="$(addr_node 0):$FLEET_PORT" NSBOX_1="$(addr_node 1):$FLEET_PORT" \
		NSBOX_2="$(addr_node 2):$FLEET_PORT" \
		haproxy -D -p "$FLEET_DIR/haproxy.pid" -f "$cfg" >>"$FLEET_DIR/haproxy.log" 2>&1 || return 1
	for i in 0 1 2; do
		# only the nodes that run
		if [ ! -e "$FLEET_DIR/node$i.pid" ] || [ -e "$FLEET_DIR/node$i.rc" ]; then continue; fi
		python3 "$ROOT/tests/fleet/router.py" "$FLEET_DIR/router.sock" wait "nsbox-$i" UP 20 || return 1
	done
}

# stop_router: SIGKILL (a crash: nothing is handed over) and waits.
stop_router() {
	local pid k
	pid=$(cat "$FLEET_DIR/haproxy.pid" 2>/dev/null) || return 0
	kill -KILL "$pid" 2>/dev/null
	for ((k = 0; k < 50; k++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$FLEET_DIR/haproxy.pid"
}
