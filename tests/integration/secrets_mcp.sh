#!/usr/bin/env bash
# Secrets and method/path grants through `nsbox serve` over stdio (issue
# #30, the operator's and the model's side): tests/mcp/secret_tools.py
# (--secret and [secret.NAME] parse errors that never quote the value,
# --print-config, list_secrets, sandbox_create {secrets}: placeholders,
# never the value in the sandbox or the store, the secrets' hosts in the
# grant, ceiling refusals, plain-HTTP substitution in the bound header only
# with the echo scrubbed and the request audited, a bare name narrowed to
# the ceiling's method and path rules), as root and as nsboxtest
# (tests/setup-users.sh).  Substitution over HTTPS is tests/integration/
# secrets.sh's.
SUITE=secrets_mcp
. "$(dirname "$0")/../lib.sh"

MCP=$ROOT/tests/mcp
S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"

if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail setup "cannot pull and tag oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi

# run_client NAME CMD...: the program's PASS/FAIL/# lines through, a crash
# without a FAIL line turned into one.
run_client() {
	local name=$1 rc nfail
	shift
	"$@" 2>"$LOGS/$name.stderr" | tee "$LOGS/$name.out" | grep -E --line-buffered '^(PASS: |FAIL: |SKIP: |# )'
	rc=${PIPESTATUS[0]}
	nfail=$(grep -c '^FAIL: ' "$LOGS/$name.out")
	_failures=$((_failures + nfail))
	if [ "$rc" -ne 0 ] && [ "$nfail" -eq 0 ]; then
		fail "$name" "exited $rc without a FAIL line: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	elif [ "$rc" -eq 0 ] && ! grep -q '^PASS: ' "$LOGS/$name.out"; then
		fail "$name" "ran no test: $(tail -3 "$LOGS/$name.stderr" | tr '\n' ' ')"
	fi
}

run_client root timeout 300 env NSBOX="$NSBOX" NSBOX_STORE="$S" SUITE="$SUITE" python3 "$MCP/secret_tools.py"

# Rootless (best-effort limits: this host delegates no cgroup v2).
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && chmod 755 "$T" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
# The broker's TLS helper lives next to nsbox (secrets and method/path rules need it).
install -m 755 "$(dirname "$NSBOX")/nsbox-tls" "$RL/nsbox-tls"
runuser -u nsboxtest -- "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$F/oci/python:latest" >/dev/null 2>&1
runuser -u nsboxtest -- "$RL/nsbox" --store "$RL/store" tag "oci:$F/oci/python:latest" python >/dev/null 2>&1
run_client rootless timeout 300 runuser -u nsboxtest -- env NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" \
	NSBOX_ASAN="${NSBOX_ASAN:-}" NSBOX_LIMITS=best-effort SUITE="$SUITE/rootless" python3 "$MCP/secret_tools.py"
finish
