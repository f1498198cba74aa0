#!/usr/bin/env bash
# The configuration files (cli/conffile.c, docs/config.md): precedence
# system < user < NSBOX_CONFIG < command line, seen through `serve
# --print-config` and through what the running server tells a client (the
# ceiling in tools/list); global keys (store, image-store, limits);
# repeatable keys; every mistake refused with FILE:LINE; every option of
# the serve table documented.
SUITE=config
. "$(dirname "$0")/../lib.sh"

# NSBOX_SYSTEM_CONFIG stands in for /etc/nsbox/nsbox.conf (other suites on
# this machine must not see ours); XDG_CONFIG_HOME for ~/.config.
SYS=$T/etc/nsbox.conf
USR=$T/xdg/nsbox/nsbox.conf
EXP=$T/explicit.conf
mkdir -p "$T/etc" "$T/xdg/nsbox" "$T/a" "$T/b" "$T/c"
nsbox() { env -u NSBOX_CONFIG -u NSBOX_LIMITS -u NSBOX_STORE NSBOX_SYSTEM_CONFIG="$SYS" XDG_CONFIG_HOME="$T/xdg" "$@"; }

cat >"$SYS" <<EOF
# the system's
[serve]
max-memory = 1000
max-cpus = 2
max-pids = 100
max-disk = 2000
image = python=system/python:1
allow-host-dir = $T/a
EOF
cat >"$USR" <<EOF
[serve]
max-memory = 2000
max-cpus = 3
max-pids = 200
allow-host-dir = $T/b
EOF
cat >"$EXP" <<EOF
[serve]
max-memory = 3000
max-cpus = 5
image = javascript=explicit/node:1
EOF
cfg=$(nsbox NSBOX_CONFIG="$EXP" "$NSBOX" serve --print-config --max-memory 4000 --image python=flag/python:2 2>&1)
val() { printf '%s\n' "$cfg" | sed -n "s/^$1 = //p" | tr '\n' ' '; }
got="mem=$(val max-memory)cpus=$(val max-cpus)pids=$(val max-pids)disk=$(val max-disk)timeout=$(val max-timeout)"
if [ "$got" = "mem=4000 cpus=5 pids=200 disk=2000 timeout=600 " ]; then
	pass precedence_system_user_explicit_flags
else
	fail precedence_system_user_explicit_flags "$got :: $cfg"
fi
if [ "$(val image)" = "python=flag/python:2 javascript=explicit/node:1 " ]; then pass image_flag_replaces_same_language; else fail image_flag_replaces_same_language "$(val image)"; fi
if [ "$(val allow-host-dir)" = "$T/a $T/b " ]; then pass allow_host_dir_accumulates; else fail allow_host_dir_accumulates "$(val allow-host-dir)"; fi

# Without NSBOX_CONFIG the user's file is the last; without it, the system's.
cfg=$(nsbox "$NSBOX" serve --print-config 2>&1)
if [ "$(val max-memory)" = "2000 " ]; then pass user_over_system; else fail user_over_system "$(val max-memory)"; fi
mv "$USR" "$T/usr.off"
cfg=$(nsbox "$NSBOX" serve --print-config 2>&1)
if [ "$(val max-memory)" = "1000 " ]; then pass system_alone; else fail system_alone "$(val max-memory)"; fi
mv "$T/usr.off" "$USR"

# The running server applies it: a call above the configured ceiling is
# refused naming it, one below it runs.
S=$T/store
check pull_python "$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest"
# (The system file's python=system/python:1 does not exist: the flag's
# image replaces it, or nothing would run.)
out=$(nsbox NSBOX_CONFIG="$EXP" python3 - "$NSBOX" "$S" "oci:$F/oci/python:latest" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "--store", sys.argv[2], "serve", "--limits", "best-effort",
                      "--image", "python=" + sys.argv[3]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
def req(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m
req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
r = req(2, "tools/call", {"name": "execute_code", "arguments": {"code": "print(6*7)", "memory_mb": 2500}})
print("under", r.get("result", {}).get("structuredContent", {}).get("stdout", "").strip())
r = req(3, "tools/call", {"name": "execute_code", "arguments": {"code": "print(1)", "memory_mb": 3500}})
print("over", json.dumps(r.get("result", r)))
p.stdin.close()
p.wait(timeout=30)
EOF
)
if printf '%s' "$out" | grep -q '^under 42$'; then pass server_runs_below_config_ceiling; else fail server_runs_below_config_ceiling "$out"; fi
if printf '%s' "$out" | grep '^over' | grep -q 'from 16 to 3000"'; then pass server_refuses_above_config_ceiling; else fail server_refuses_above_config_ceiling "$out"; fi

# -- global keys --------------------------------------------------------------------
printf 'limits = best-effort\n' >"$T/limits.conf"
cfg=$(nsbox NSBOX_CONFIG="$T/limits.conf" "$NSBOX" serve --print-config 2>&1)
if [ "$(val limits)" = "best-effort " ]; then pass global_limits; else fail global_limits "$cfg"; fi
cfg=$(nsbox NSBOX_CONFIG="$T/limits.conf" "$NSBOX" serve --print-config --limits strict 2>&1)
if [ "$(val limits)" = "strict " ]; then pass limits_flag_wins; else fail limits_flag_wins "$cfg"; fi

# store: the files' store is used, --store wins over it.
printf 'store = %s\n' "$T/cfgstore" >"$T/store.conf"
nsbox NSBOX_CONFIG="$T/store.conf" "$NSBOX" images >/dev/null 2>&1
nsbox NSBOX_CONFIG="$T/store.conf" "$NSBOX" --store "$T/flagstore" images >/dev/null 2>&1
if [ -d "$T/cfgstore/blobs" ] && [ -d "$T/flagstore/blobs" ] && [ ! -e "$T/cfgstore/refs.json" ]; then pass store_key_and_flag; else fail store_key_and_flag "$(ls "$T")"; fi

# image-store: a store named there serves images, imported on first use
# (here as root, where no shared store is consulted by default).
check pull_busybox_into_shared "$NSBOX" --store "$T/shared" pull --quiet "oci:$F/oci/busybox:latest"
printf 'store = %s\nimage-store = %s\n' "$T/own" "$T/shared" >"$T/shared.conf"
out=$(nsbox NSBOX_CONFIG="$T/shared.conf" "$NSBOX" images 2>&1)
if printf '%s' "$out" | grep -q "oci:$F/oci/busybox:latest .*$T/shared"; then pass image_store_key_listed; else fail image_store_key_listed "$out"; fi
out=$(nsbox NSBOX_CONFIG="$T/shared.conf" "$NSBOX" run "oci:$F/oci/busybox:latest" -- echo imported 2>&1)
if [ "$out" = imported ] && grep -q "\"origin\": \"$T/shared\"" "$T"/own/images/*/image.json; then pass image_store_key_imports; else fail image_store_key_imports "$out"; fi
expect_fail image_store_flag_replaces_key "no image oci:$F/oci/python:latest in your store $T/own and the shared store $T/c \(empty\)" \
	nsbox NSBOX_CONFIG="$T/shared.conf" "$NSBOX" --image-store "$T/c" inspect "oci:$F/oci/python:latest"

# A hostile shared store: a layer whose bytes do not match its digest, a
# blob that is a symlink to a host file.  The import fails naming it and
# leaves nothing in the own store.
check pull_busybox_into_evil "$NSBOX" --store "$T/evil" pull --quiet "oci:$F/oci/busybox:latest"
layer=$(find "$T/evil/blobs/sha256" -type f -size +100k | head -1)
head -c "$(stat -c %s "$layer")" /dev/urandom >"$layer"
expect_fail shared_corrupt_layer_refused "blob sha256:$(basename "$layer") in the shared store is corrupt" \
	"$NSBOX" --store "$T/own2" --image-store "$T/evil" inspect "oci:$F/oci/busybox:latest"
# (Verified blobs copied before it, the config, stay: prune removes them.)
if [ ! -e "$T/own2/blobs/sha256/$(basename "$layer")" ] && [ -z "$(find "$T/own2/images" "$T/own2/tmp" -mindepth 1)" ]; then
	pass shared_corrupt_layer_leaves_nothing
else
	fail shared_corrupt_layer_leaves_nothing "$(find "$T/own2" | tr '\n' ' ')"
fi
rm -rf "$T/evil" "$T/own3"
check pull_busybox_into_evil2 "$NSBOX" --store "$T/evil" pull --quiet "oci:$F/oci/busybox:latest"
small=$(find "$T/evil/blobs/sha256" -type f -size -4k | head -1)
ln -sf /etc/shadow "$small"
expect_fail shared_symlinked_blob_refused "from $T/evil: blob sha256:$(basename "$small").*Too many levels of symbolic links" \
	"$NSBOX" --store "$T/own3" --image-store "$T/evil" inspect "oci:$F/oci/busybox:latest"
if [ -z "$(find "$T/own3/images" -mindepth 1)" ] && ! grep -rqs root: "$T/own3/blobs"; then pass shared_symlinked_blob_not_followed; else fail shared_symlinked_blob_not_followed "$(ls -la "$T/own3/blobs/sha256")"; fi

# -- mistakes: FILE:LINE, and nothing runs --------------------------------------------
bad_config() { # NAME PATTERN CONTENT
	printf '%b' "$3" >"$T/bad.conf"
	local out rc
	out=$(nsbox NSBOX_CONFIG="$T/bad.conf" "$NSBOX" images 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -Eq -- "$2"; then pass "$1"; else fail "$1" "exit $rc: $out"; fi
}
bad_config unknown_key "$T/bad.conf:3: unknown key \"colour\"" '# c\nstore = /tmp/x\ncolour = blue\n'
bad_config unknown_serve_key "$T/bad.conf:2: \[serve\] max-memroy: unknown key" '[serve]\nmax-memroy = 5\n'
bad_config bad_serve_value "$T/bad.conf:4: \[serve\] cpus: --cpus takes a positive number" '\n[serve]\n\ncpus = lots\n'
bad_config unknown_section "$T/bad.conf:2: unknown section \[server\]" '[server]\nhttp = 1\n'
bad_config command_line_only "$T/bad.conf:2: \[serve\] help: help is a command-line option only" '[serve]\nhelp = 1\n'
bad_config bad_limits "$T/bad.conf:1: limits = lax" 'limits = lax\n'
bad_config relative_store "$T/bad.conf:1: store = rel/dir: must be an absolute path" 'store = rel/dir\n'
bad_config bad_share "$T/bad.conf:1: share-images = maybe" 'share-images = maybe\n'
bad_config syntax "$T/bad.conf:2: not a KEY = VALUE line" '[serve]\njust words\n'
printf 'limits = strict\n' >"$T/open.conf"
chmod 666 "$T/open.conf"
out=$(nsbox NSBOX_CONFIG="$T/open.conf" "$NSBOX" images 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q 'writable by other users'; then pass world_writable_refused; else fail world_writable_refused "$out"; fi
out=$(nsbox NSBOX_CONFIG="$T/missing.conf" "$NSBOX" images 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q "$T/missing.conf: No such file"; then pass missing_explicit_refused; else fail missing_explicit_refused "$out"; fi
# A bad system file stops serve as well, before anything starts.
printf '[serve]\nmemory = 0\n' >"$SYS"
out=$(nsbox "$NSBOX" serve </dev/null 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q "$SYS:2: \[serve\] memory"; then pass bad_system_file_stops_serve; else fail bad_system_file_stops_serve "$out"; fi

# -- documentation: every option of the table, every global key ---------------------
missing=
for o in $("$NSBOX" serve --help | sed -n 's/^  --\([a-z-]*\).*/\1/p') store image-store share-images limits; do
	[ "$o" = help ] && continue
	grep -q -- "^| \`$o\`" "$ROOT/docs/config.md" || missing="$missing $o"
done
if [ -z "$missing" ]; then pass every_key_documented; else fail every_key_documented "docs/config.md lacks:$missing"; fi
finish
