#!/usr/bin/env bash
# Terminals over HTTP (issue #28, docs/services-terminal.md): terminal_open
# and its WebSocket against a real `nsbox serve --http` with python and
# busybox sandboxes, driven by python3-websockets (tests/services/
# terminal.py), as root and as the rootless test user nsboxtest; then
# xterm.js with its attach addon in Debian's headless Chromium
# (tests/services/terminal_browser.py; npm ci in tests/services/xterm).
SUITE=terminal
. "$(dirname "$0")/../lib.sh"

# Debian's python3 has python3-websockets (tests/deps.sh).
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
PYI=localhost/term-python:latest
BBI=localhost/term-busybox:latest

# client NAME CMD...: the program's PASS/FAIL/# lines, and a FAIL when it
# crashed without one.
client() {
	local name=$1 rc nfail
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	grep -E '^(PASS: |FAIL: |# )' "$T/$name.out"
	nfail=$(grep -c '^FAIL: ' "$T/$name.out")
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$name" "exited $rc without a FAIL line: $(tail -3 "$T/$name.err" | tr '\n' ' ')"
	fi
}

# pull_images RUNNER STORE: the two images into STORE, tagged.
pull_images() {
	local run=$1 store=$2 out
	out=$($run "$NSBOX" --store "$store" pull --quiet "oci:$F/oci/python:latest" 2>&1) &&
		out=$($run "$NSBOX" --store "$store" tag "oci:$F/oci/python:latest" "$PYI" 2>&1) &&
		out=$($run "$NSBOX" --store "$store" pull --quiet "oci:$F/oci/busybox:latest" 2>&1) &&
		out=$($run "$NSBOX" --store "$store" tag "oci:$F/oci/busybox:latest" "$BBI" 2>&1) ||
		{ printf '%s' "$out" | tail -2 | tr '\n' ' '; return 1; }
}

as_root() { "$@"; }
S=$T/store
if why=$(pull_images as_root "$S"); then
	client root env NSBOX="$NSBOX" SUITE="$SUITE" timeout 600 "$PY" "$ROOT/tests/services/terminal.py" \
		"$S" "$PYI" "$BBI"
	# The browser: xterm.js's exact versions (package-lock.json).
	XT=$ROOT/tests/services/xterm
	if [ -f "$XT/node_modules/@xterm/xterm/package.json" ] ||
		out=$(cd "$XT" && npm ci --no-audit --no-fund 2>&1); then
		client browser env NSBOX="$NSBOX" SUITE="$SUITE/browser" timeout 300 "$PY" \
			"$ROOT/tests/services/terminal_browser.py" "$S" "$PYI"
	else
		fail browser_setup "npm ci in tests/services/xterm failed: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	fi
else
	fail setup "cannot pull the images: $why"
fi

"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL" && chmod 755 "$T"
as_user() {
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
		NSBOX_LIMITS=best-effort "$@"
}
NSBOX_ROOT=$NSBOX
NSBOX=$RL/nsbox
if why=$(pull_images as_user "$RL/store"); then
	client rootless as_user NSBOX="$NSBOX" SUITE="$SUITE/rootless" timeout 600 /usr/bin/python3 \
		"$ROOT/tests/services/terminal.py" "$RL/store" "$PYI" "$BBI"
else
	fail rootless_setup "cannot pull the images as nsboxtest: $why"
fi
as_user "$NSBOX" --store "$RL/store" prune >/dev/null 2>&1
NSBOX=$NSBOX_ROOT
finish
