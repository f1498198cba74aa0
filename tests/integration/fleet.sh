#!/usr/bin/env bash
# A fleet behind a router (docs/deploy.md): three `nsbox serve --http
# --node-id nsbox-N` nodes in network namespaces on a bridge, Debian's
# HAProxy in front with deploy/haproxy/haproxy.cfg (routing on the node
# prefix of Mcp-Session-Id and Mcp-Param-Sandbox-Id), driven through the
# router by the official SDK client and by raw 2026-07-28 requests
# (tests/fleet/fleet.mjs): 50 sessions spread over the nodes and each stays
# on its node; a stateless client's calls follow its sandbox handle; a hard
# restart of HAProxy loses nothing; a node drained with SIGTERM finishes its
# running call, still serves its sandboxes, refuses new ones, gets no new
# session and exits 0; a killed node's sessions get 404 and re-initialize
# on a live node.  Then the same with deploy/haproxy/haproxy-stick.cfg, to
# show the stick table's weakness: a router restart loses sessions.  And the
# deployment files: haproxy -c, YAML, the Kubernetes manifests against the
# router config (tests/fleet/check_deploy.py), systemd-analyze verify.
# Everything runs in namespaces this suite makes and deletes (trap).
SUITE=fleet
. "$(dirname "$0")/../lib.sh"

FLEET_DIR=$T
FLEET_ID=$$
FLEET_IMAGE=oci:$F/oci/busybox:latest
export FLEET_DIR FLEET_ID FLEET_IMAGE NSBOX ROOT
. "$ROOT/tests/fleet/lib.sh"
LOGS=$T

fleet_down() {
	local i pid
	stop_router
	for i in 0 1 2; do
		pid=$(node_pid "$i") && kill -KILL "$pid" 2>/dev/null
	done
	for i in 0 1 2; do
		# a killed node leaves its sandboxes: stop them through its store
		if [ -d "$T/store$i" ]; then
			"$NSBOX" --store "$T/store$i" ps -q 2>/dev/null | xargs -r "$NSBOX" --store "$T/store$i" rm >/dev/null 2>&1
		fi
	done
	fleet_net_down 3
}
trap 'fleet_down; [ -n "${FLEET_KEEP:-}" ] || cleanup_test_dir' EXIT

# fleet_client NAME CMD...: run_client (tests/lib.sh), and a client run
# in a namespace must also reach its last line.
fleet_client() {
	local name=$1
	run_client "$@"
	local rc=$?
	if [ "$2" = nsenter ] && ! grep -q '^# done$' "$LOGS/$name.client"; then
		fail "$name" "ended before its last test (exit $rc): $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	fi
}

# ---- the deployment files (no fleet needed)

for cfg in haproxy.cfg haproxy-stick.cfg; do
	check "haproxy_c_$cfg" env NSBOX_ROUTER_NO_DNS=1 NSBOX_0=127.0.0.1:1 NSBOX_1=127.0.0.1:2 \
		NSBOX_2=127.0.0.1:3 haproxy -c -q -f "$ROOT/deploy/haproxy/$cfg"
done
fleet_client check_deploy python3 "$ROOT/tests/fleet/check_deploy.py" "$ROOT"

# systemd-analyze verify: the units as installed, with ExecStart's binary
# where this tree has it; any warning (an unknown key...) fails.
systemd_verify() {
	local unit=$1 out rc bin
	shift
	mkdir -p "$T/units"
	bin=$(readlink -f "$NSBOX")
	sed -e "s|/usr/local/bin/nsbox|$bin|" -e "s|%h/.local/bin/nsbox|$bin|" \
		"$ROOT/deploy/systemd/$unit" >"$T/units/$unit"
	out=$(XDG_RUNTIME_DIR=$T/units systemd-analyze "$@" verify "$T/units/$unit" 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && [ -z "$out" ]; then
		pass "systemd_verify_$unit"
	else
		fail "systemd_verify_$unit" "rc $rc: $(printf '%s' "$out" | head -3 | tr '\n' ' ')"
	fi
}
if command -v systemd-analyze >/dev/null; then
	systemd_verify nsbox.service
	systemd_verify nsbox-user.service --user
else
	# Debian's systemd package has it (every CI host): its absence is a
	# broken setup, not a test that may be left out.
	fail systemd_verify_nsbox.service "systemd-analyze missing (apt-get install systemd)"
	fail systemd_verify_nsbox-user.service "systemd-analyze missing (apt-get install systemd)"
fi

# ---- setup

for c in ip haproxy node; do
	if ! command -v "$c" >/dev/null; then
		fail setup "missing command $c (make deps)"
		finish
	fi
done
if ! "$NSBOX" serve --help 2>&1 | grep -q -- --node-id; then
	fail setup "nsbox serve has no --node-id"
	finish
fi
if ! out=$("$ROOT/tests/mcp/setup.sh" 2>&1); then
	fail setup "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	finish
fi
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
for i in 0 1 2; do
	if ! out=$("$NSBOX" --store "$T/store$i" pull --quiet "$FLEET_IMAGE" 2>&1); then
		fail setup "cannot pull busybox: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		finish
	fi
done
if ! fleet_net 3; then
	fail setup "cannot make the namespaces and the bridge"
	finish
fi
t0=$SECONDS
for i in 0 1 2; do
	start_node "$i" || {
		fail setup "node $i did not start"
		finish
	}
done
if ! start_router; then
	fail setup "HAProxy did not start or a node is not UP: $(tail -3 "$T/haproxy.log" | tr '\n' ' ') $(python3 "$ROOT/tests/fleet/router.py" "$T/router.sock" status 2>&1 | tr '\n' ' ')"
	finish
fi
echo "# fleet up in $((SECONDS - t0)) s: $(python3 "$ROOT/tests/fleet/router.py" "$T/router.sock" status | tr '\n' ' ')"

# ---- prefix routing: the scenario

fleet_client fleet nsenter --net="/run/netns/$(ns_router)" env FLEET_URL="http://127.0.0.1:$FLEET_PORT/mcp" \
	FLEET_TOKEN="$(cat "$T/token")" FLEET_CTL="$ROOT/tests/fleet/ctl.sh" FLEET_DIR="$T" \
	FLEET_ID="$FLEET_ID" FLEET_IMAGE="$FLEET_IMAGE" NSBOX="$NSBOX" timeout 150 node "$ROOT/tests/fleet/fleet.mjs"
echo "# prefix scenario done at $((SECONDS - t0)) s"

# ---- the stick-table variant: works until the router restarts

stop_router
for i in 1 2; do
	[ -e "$T/node$i.rc" ] || kill -KILL "$(node_pid "$i")" 2>/dev/null
	for ((k = 0; k < 50; k++)); do [ -e "$T/node$i.rc" ] && break; sleep 0.1; done
	start_node "$i" || fail stick_setup "node $i did not restart"
done
if start_router "$ROOT/deploy/haproxy/haproxy-stick.cfg"; then
	fleet_client stick nsenter --net="/run/netns/$(ns_router)" env FLEET_URL="http://127.0.0.1:$FLEET_PORT/mcp" \
		FLEET_TOKEN="$(cat "$T/token")" FLEET_CTL="$ROOT/tests/fleet/ctl.sh" FLEET_DIR="$T" \
		FLEET_ID="$FLEET_ID" FLEET_IMAGE="$FLEET_IMAGE" NSBOX="$NSBOX" timeout 60 node "$ROOT/tests/fleet/stick.mjs" \
		"$ROOT/deploy/haproxy/haproxy-stick.cfg"
else
	fail stick_setup "HAProxy with haproxy-stick.cfg did not start: $(tail -3 "$T/haproxy.log" | tr '\n' ' ')"
fi
echo "# fleet suite: $((SECONDS - t0)) s with the fleet up"
finish
