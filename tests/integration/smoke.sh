#!/usr/bin/env bash
# A short run of the production binary (build/nsbox: gcc -O2, the libraries
# linked statically, FORTIFY, PIE, BIND_NOW, libmicrohttpd dlopened) in the
# run where most suites test the ASan build (make test, tests/suites.tsv).
# What differs between the two builds is the compiler, its optimizer, the
# static linking and the hardening; so each layer is crossed once: the
# binary's own make-up, a registry pull (libarchive, zstd, OpenSSL's
# SHA-256), sandboxes as root and rootless (clone, seccomp, cgroup v1,
# overlay, user namespaces), the CLI's exit codes, the MCP server over
# stdio driven by the official SDK (mcp_stdio's client,
# tests/mcp/stdio.test.mjs, whole) and over HTTP (the dlopen of
# libmicrohttpd, which the ASan build links the same way).
SUITE=smoke
. "$(dirname "$0")/../lib.sh"
require_registry

R=$REGISTRY
S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"
nsbox() { "$NSBOX" --store "$S" "$@"; }

# -- the binary ----------------------------------------------------------------
if nm "$NSBOX" 2>/dev/null | grep -q __asan_init; then
	fail production_build "$NSBOX is an ASan build"
else
	pass production_build
fi
# Static where Debian ships the archive (Makefile: STATIC_LIBS); libmnl and
# libc stay shared; libmicrohttpd is not linked at all.
shared=$(ldd "$NSBOX" 2>&1 | grep -oE 'lib(archive|crypto|jansson|seccomp|cap|z|zstd|inih|microhttpd)\.so[^ ]*' | tr '\n' ' ')
[ -z "$shared" ] && pass libraries_static || fail libraries_static "linked shared: $shared"
dyn=$(readelf -d "$NSBOX" 2>&1)
if printf '%s' "$dyn" | grep -q 'BIND_NOW' && printf '%s' "$dyn" | grep -q 'PIE' &&
	nm -D "$NSBOX" | grep -q '__[a-z]*_chk'; then
	pass hardened_pie_now_fortify
else
	fail hardened_pie_now_fortify "$(printf '%s' "$dyn" | grep -E 'FLAGS' | tr '\n' ' ')"
fi
evp=$(nm "$NSBOX" | grep -c ' [TtDdRr] EVP_')
[ "$evp" = 0 ] && pass links_no_evp || fail links_no_evp "$evp EVP_ symbols linked"
v=$("$NSBOX" version)
printf '%s\n' "$v" | grep -qE '^nsbox [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{12}(-dirty)?\)$' &&
	pass version || fail version "$v"

# -- pulls -----------------------------------------------------------------------
check pull_registry_busybox nsbox pull --quiet --tls-verify=false "$R/busybox:latest"
check pull_registry_zstd nsbox pull --quiet --tls-verify=false "$R/busybox-zstd:latest"
check pull_registry_python nsbox pull --quiet --tls-verify=false "$R/python:latest"
check pull_oci_layout nsbox pull --quiet "oci:$F/oci/busybox:latest"
BB=$R/busybox:latest
PY=$R/python:latest
nsbox tag "$BB" busybox && nsbox tag "$PY" python

# -- sandboxes as root -------------------------------------------------------------
nsbox run "$BB" -- sh -c 'exit 7'
rc=$?
[ $rc = 7 ] && pass run_exit_code || fail run_exit_code "got $rc"
out=$(echo in | nsbox run "$PY" -- python3 -c 'import sys; print(sys.stdin.read().strip() * 2)')
[ "$out" = inin ] && pass run_python_stdin || fail run_python_stdin "$out"
j=$(nsbox run --json --memory 64m --disk 16m "$PY" -- python3 -c 'b = bytearray(512 << 20)')
printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["oom_killed"] and r["status"] == "oom" and "cgroup v1" in r["limits"], r' &&
	pass run_memory_limit_oom || fail run_memory_limit_oom "$(printf '%s' "$j" | head -c 300)"
id=$(nsbox create "$BB")
nsbox exec "$id" -- sh -c 'echo kept >/workspace/f'
out=$(nsbox exec "$id" -- cat /workspace/f)
[ "$out" = kept ] && pass create_exec_workspace || fail create_exec_workspace "$out"
nsbox exec --timeout 1 "$id" -- sh -c 'setsid sleep 991 & sleep 992'
rc=$?
left=$(nsbox exec "$id" -- sh -c 'ps -o args | grep -c "^sleep 99[12]"')
[ "$rc" = 137 ] && [ "$left" = 0 ] && pass exec_timeout_kills_all || fail exec_timeout_kills_all "rc=$rc left=$left"
nsbox rm "$id" >/dev/null
[ ! -d "$S/sandboxes/$id" ] && pass rm_removes_state || fail rm_removes_state "$(ls "$S/sandboxes")"
out=$(nsbox run --bogus "$BB" -- true 2>&1)
rc=$?
[ $rc = 2 ] && printf '%s' "$out" | grep -q 'bogus' && pass usage_error_exit_2 || fail usage_error_exit_2 "rc=$rc $out"

# -- rootless -------------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
install -m 755 "$NSBOX" "$T/nsbox"
mkdir -p "$T/rl" && chown nsboxtest "$T/rl"
as() { runuser -u nsboxtest -- env -i PATH=/usr/bin:/bin HOME=/home/nsboxtest NSBOX_LIMITS=best-effort "$T/nsbox" --store "$T/rl/store" "$@"; }
check rootless_pull as pull --quiet --tls-verify=false "$BB"
j=$(as run --json "$BB" -- sh -c 'id -u; stat -c %u:%g /home/app/hello.txt')
printf '%s' "$j" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["stdout"] == "0\n1000:1000\n" and r["limits"].startswith("best-effort"), r' &&
	pass rootless_run_ids_mapped || fail rootless_run_ids_mapped "$j"

# -- MCP over stdio: the official SDK client, as mcp_stdio runs it -------------------
# (Its store holds what mcp_stdio's holds: the python and busybox fixtures,
# named after their languages.)
for img in python busybox; do
	"$NSBOX" --store "$T/sdk" pull --quiet "oci:$F/oci/$img:latest" >/dev/null &&
		"$NSBOX" --store "$T/sdk" tag "oci:$F/oci/$img:latest" "$img" || fail sdk_setup "cannot pull $img"
done
if out=$("$ROOT/tests/mcp/setup.sh" 2>&1); then
	run_client sdk env NSBOX="$NSBOX" NSBOX_STORE="$T/sdk" SUITE="$SUITE/sdk" MCP_LOG_DIR="$LOGS" \
		timeout 300 node "$ROOT/tests/mcp/stdio.test.mjs"
else
	fail sdk "tests/mcp/setup.sh failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
fi

# -- MCP over HTTP: libmicrohttpd, dlopened ----------------------------------------------
SERVERS=()
if serve_http http "$NSBOX" --store "$S" serve --http 127.0.0.1:0 --image "python=$PY"; then
	pass http_serves
	r=$(curl -sS -m 30 -D "$T/h" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' \
		"http://127.0.0.1:$PORT/mcp" 2>&1)
	sid=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$T/h")
	printf '%s' "$r" | grep -q '"serverInfo"' && [ -n "$sid" ] && pass http_initialize || fail http_initialize "$r"
	curl -sS -m 10 -o /dev/null -H 'Content-Type: application/json' -H "Mcp-Session-Id: $sid" \
		-H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "http://127.0.0.1:$PORT/mcp"
	r=$(curl -sS -m 120 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' \
		-d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(6*7)"}}}' \
		"http://127.0.0.1:$PORT/mcp" 2>&1)
	printf '%s' "$r" | grep -q '"stdout": *"42\\n"' && pass http_execute_code || fail http_execute_code "$(printf '%s' "$r" | tail -c 300)"
	stop_server "$PID"
	[ "$STOP_RC" = 0 ] && pass http_sigterm_exit_0 || fail http_sigterm_exit_0 "exit $STOP_RC: $(tail -2 "$LOGS/http.log" | tr '\n' ' ')"
fi
finish
