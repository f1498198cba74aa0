# Shared by the shell tests.  Each test prints exactly one line:
#   PASS: <suite>/<name>      or      FAIL: <suite>/<name>: <reason>
# or, only where tests/skips.allow lists it with its reason,
#   SKIP: <suite>/<name>: <reason>
# tests/run.sh counts them against the suite's expected count
# (tests/suites.tsv) and wants "# done <suite>" (finish) as the last line:
# a suite that ends without it died early.  Source this, set SUITE, call
# the helpers.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NSBOX=${NSBOX:-$ROOT/build/nsbox}
F=${NSBOX_FIXTURES:-/var/cache/nsbox/fixtures}
SUITE=${SUITE:-$(basename "$0" .sh)}
REGISTRY=${NSBOX_TEST_REGISTRY:-}

T=$(mktemp -d /tmp/nsbox-test.XXXXXX)
chmod 755 "$T"
cleanup_test_dir() { rm -rf "$T"; }
trap cleanup_test_dir EXIT

_failures=0
pass() { echo "PASS: $SUITE/$1"; }
# skip NAME REASON: a test that cannot run here; allowed only when
# tests/skips.allow lists SUITE/NAME (tests/run.sh fails it otherwise).
skip() { echo "SKIP: $SUITE/$1: $2"; }
fail() {
	echo "FAIL: $SUITE/$1: $2"
	_failures=$((_failures + 1))
}

# check NAME CMD...: passes when CMD succeeds; shows its output when not.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "command failed: $* :: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
}

# expect_fail NAME PATTERN CMD...: passes when CMD fails with exit status 1
# (nsbox's own failure) and its stderr matches PATTERN (grep -E).
expect_fail() {
	local name=$1 pattern=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 1 ]; then
		fail "$name" "expected exit 1, got $rc :: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	elif ! printf '%s' "$out" | grep -Eq -- "$pattern"; then
		fail "$name" "error does not match /$pattern/: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	else
		pass "$name"
	fi
}

# wait_until SECONDS CMD...: runs CMD every 0.05 s until it succeeds
# (status 0) or SECONDS (whole seconds) have passed (status 1): a wait for
# the condition itself, never a fixed sleep that a loaded machine outruns.
wait_until() {
	local end=$((${EPOCHREALTIME/[.,]/} + $1 * 1000000))
	shift
	until "$@"; do
		[ "${EPOCHREALTIME/[.,]/}" -lt "$end" ] || return 1
		sleep 0.05
	done
}

# require_registry: the suite needs tests/run.sh's local registry.
require_registry() {
	if [ -z "$REGISTRY" ]; then
		echo "FAIL: $SUITE/setup: NSBOX_TEST_REGISTRY is not set (run through tests/run.sh)"
		exit 1
	fi
}

# The CI image for nested sandboxes (images/ci/build.sh; tests/run.sh builds
# it once per run for the suites named nested*).
CI_LAYOUT=${NSBOX_CI_LAYOUT:-${NSBOX_CI_IMAGE_CACHE:-/var/cache/nsbox/ci-image}/oci}

# nested_registry_conf: a registries.conf drop-in that lets podman, buildah
# and skopeo inside a nested sandbox pull from the run's local registry
# (plain HTTP): write it to /etc/containers/registries.conf.d/50-test.conf
# inside.  The sandbox reaches the registry only with --net $REGISTRY (an
# ADDR rule: the host's 127.0.0.1:PORT through the broker, docs/network.md).
nested_registry_conf() {
	printf '[[registry]]\nlocation = "%s"\ninsecure = true\n' "$REGISTRY"
}

# rootfs_of STORE REF: the rootfs path of an image in a store.
rootfs_of() {
	"$NSBOX" --store "$1" inspect "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])'
}

# stop_server PID: SIGTERM, then waits at most 60 s.  Sets STOP_RC (124 when
# it had to be killed).
stop_server() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		STOP_RC=124
	else
		wait "$pid"
		STOP_RC=$?
	fi
}

# For suites that start `nsbox serve --http` and drive it with a client
# program; both need LOGS (a directory) and SERVERS (an array) set.
# serve_http NAME CMD...: runs CMD (an `nsbox ... serve --http ADDRESS ...`)
# in the background, its stdout and stderr in LOGS/NAME.out and .log, and
# waits (at most 20 s) for the port it prints.  Sets PID and PORT and adds
# PID to SERVERS; returns 1, with a FAIL line, when it does not come up.
serve_http() {
	local name=$1 i
	shift
	"$@" >"$LOGS/$name.out" 2>"$LOGS/$name.log" &
	PID=$!
	SERVERS+=("$PID")
	PORT=
	for i in $(seq 100); do
		PORT=$(sed -n 's|^nsbox: serving MCP on http://.*:\([0-9]*\)/mcp .*|\1|p' "$LOGS/$name.log" | head -1)
		[ -n "$PORT" ] && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.2
	done
	fail "$name" "the server did not start: $(tail -3 "$LOGS/$name.log" | tr '\n' ' ')"
	return 1
}

# run_client NAME CMD...: runs a test program with SUITE set, passes its
# PASS/FAIL/SKIP/# lines through (all of its output in LOGS/NAME.client), and
# turns a crash without a FAIL line, or a run without a PASS, into a FAIL.
run_client() {
	local name=$1 rc nfail
	shift
	env SUITE="$SUITE" "$@" 2>"$LOGS/$name.stderr" | tee "$LOGS/$name.client" |
		grep -E --line-buffered '^(PASS: |FAIL: |SKIP: |# )'
	rc=${PIPESTATUS[0]}
	nfail=$(grep -c '^FAIL: ' "$LOGS/$name.client")
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$name" "exited $rc without a FAIL line: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	elif [ "$rc" -eq 0 ] && ! grep -q '^PASS: ' "$LOGS/$name.client"; then
		fail "$name" "ran no test: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	fi
	return "$rc"
}

# seed_default_store DIR [USER]: when tests/run.sh pulled the default image
# once for the run (NSBOX_DEFAULT_STORE, root's; NSBOX_DEFAULT_STORE_RL,
# nsboxtest's), DIR (absent or empty) starts as a hard-link copy of that
# store's images and blobs, owned by USER when given; the suite's own
# `pull oci:LAYOUT:latest` then finds the image there and unpacks nothing.
# Safe to share: nsbox never writes into a file of an unpacked tree or a
# blob (images/linktree.c relies on the same), it replaces them; the image
# records, leases and reference tables are copied, not linked.  Without
# the runner's stores (a suite run alone) it does nothing.
seed_default_store() {
	local dir=$1 user=${2:-} src f
	if [ -n "$user" ]; then src=${NSBOX_DEFAULT_STORE_RL:-}; else src=${NSBOX_DEFAULT_STORE:-}; fi
	[ -n "$src" ] && [ -e "$src/.seed-ready" ] || return 0
	[ -z "$(ls -A "$dir" 2>/dev/null)" ] || return 0
	mkdir -p "$dir" && chmod 700 "$dir" && { [ -z "$user" ] || chown "$user": "$dir"; } || return 0
	if ! cp -a --link "$src/images" "$src/blobs" "$dir/" 2>/dev/null; then
		rm -rf "${dir:?}/images" "${dir:?}/blobs"
		return 0
	fi
	for f in "$src"/images/*/image.json "$src"/images/*/lease "$src"/refs.json "$src"/refs-private.json; do
		[ -e "$f" ] && cp -a --remove-destination "$f" "$dir/${f#"$src"/}"
	done
	echo "# the default image from the run's shared store (hard links of $src)"
}

# finish: the completion marker, then the suite's status (1: a FAIL).
finish() {
	echo "# done $SUITE"
	exit $((_failures > 0))
}
