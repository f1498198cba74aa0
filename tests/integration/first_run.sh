#!/usr/bin/env bash
# The desktop user's first run (issue #13): the README's set-up as root
# (`make default-image`, which puts the default image into root's store
# /var/lib/nsbox and makes that store shareable), then `nsbox serve` as the
# real non-root user nsboxtest from a fresh, empty home: the first
# execute_code imports the image from root's store (images/shared.c) and
# answers 42.  Also: ownership inside the rootless sandbox is the user's,
# root's store is never written by the user, images/ stays 0700, the
# error without any image names the stores and the fix, doctor and images
# list shared images, the imported image can be removed like a pulled one.
# Prints "# import" with the time the first call took.
SUITE=first_run
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"

ROOTSTORE=/var/lib/nsbox
IMG=localhost/nsbox-default:latest
install -m 755 "$NSBOX" "$T/nsbox"

# -- the README's set-up, as root -------------------------------------------------
start=$SECONDS
if ! (cd "$ROOT" && images/default-image.sh "$NSBOX") >"$T/setup.log" 2>&1; then
	fail setup "images/default-image.sh failed: $(tail -3 "$T/setup.log" | tr '\n' ' ')"
	finish
fi
echo "# default image into root's store in $((SECONDS - start)) s"

# Root's store: reachable by name (0711), refs and blobs readable, the
# unpacked trees and everything else not.
modes() { stat -c '%a' "$@" 2>&1 | tr '\n' ' '; }
# A blob of the default image (its first layer): the blobs only private
# images use (package caches, commits) and unreferenced ones stay 0600.
blob=$ROOTSTORE/blobs/sha256/$(python3 -c 'import json,sys; s=sys.argv[1]; d=json.load(open(s+"/refs.json"))["refs"][sys.argv[2]]["digest"][7:]; print(json.load(open(s+"/blobs/sha256/"+d))["layers"][0]["digest"][7:])' "$ROOTSTORE" "$IMG")
got="root=$(modes "$ROOTSTORE") blobs=$(modes "$ROOTSTORE/blobs" "$ROOTSTORE/blobs/sha256") refs=$(modes "$ROOTSTORE/refs.json") blob=$(modes "$blob")"
want="root=711  blobs=711 711  refs=644  blob=644 "
if [ "$got" = "$want" ]; then pass root_store_shareable; else fail root_store_shareable "$got"; fi
# What every pull makes must be there (a missing one is a failure, not a
# pass); sandboxes/ and cache/ appear with the first sandbox.
private=
for d in images locks tmp lock refs.lock refs-private.json sandboxes cache; do
	if [ ! -e "$ROOTSTORE/$d" ]; then
		case $d in sandboxes | cache) continue ;; esac
		private="$private $d=missing"
		continue
	fi
	m=$(stat -c %a "$ROOTSTORE/$d")
	case $m in 700 | 600) ;; *) private="$private $d=$m" ;; esac
done
if [ -z "$private" ]; then pass root_store_private_parts_0700; else fail root_store_private_parts_0700 "$private"; fi
# Another user cannot reach an unpacked rootfs, even knowing its digest.
hex=$(python3 -c 'import json; print(json.load(open("/var/lib/nsbox/refs.json"))["refs"]["localhost/nsbox-default:latest"]["digest"][7:])')
if ! runuser -u nsboxtest -- ls "$ROOTSTORE/images/$hex/rootfs/usr/bin" >/dev/null 2>&1 &&
	runuser -u nsboxtest -- cat "$ROOTSTORE/refs.json" >/dev/null 2>&1; then
	pass other_user_reads_refs_not_rootfs
else
	fail other_user_reads_refs_not_rootfs "refs unreadable or rootfs reachable"
fi

# What root's store holds, to compare after the user's runs.
snapshot() { (cd "$ROOTSTORE" && find refs.json blobs images -maxdepth 2 -printf '%p %s %T@ %m %u\n' | sort); }
snapshot >"$T/before"

# -- the user's first run: nsbox serve from a fresh home ---------------------------
fresh_home() {
	local h
	h=$(mktemp -d /tmp/nsbox-home.XXXXXX)
	chown nsboxtest: "$h"
	chmod 700 "$h"
	echo "$h"
}
H=$(fresh_home)
HOMES="$H"
cleanup_homes() {
	# Root removes the homes whatever ids (subordinate ones too) own files.
	for h in $HOMES; do rm -rf "$h"; done
	rm -rf "$T"
}
trap cleanup_homes EXIT
as_user() {
	local h=$1
	shift
	runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$h" \
		XDG_DATA_HOME="$h/.local/share" XDG_CONFIG_HOME="$h/.config" NSBOX_LIMITS=best-effort "$@"
}
OWN=$H/.local/share/nsbox

cat >"$T/client.py" <<'EOF'
"""A raw stdio MCP client: initialize, then each execute_code in argv
(LANG:CODE; @TOOL: a tool without arguments; ~SECONDS: a pause), printing one JSON line per
result."""
import json, subprocess, sys, time
p = subprocess.Popen(sys.argv[1].split("\x1f"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=open(sys.argv[2], "w"), text=True)
n = 0
progress = []
def req(method, params):
    global n
    n += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line:
            return {"error": "server closed stdout"}
        m = json.loads(line)
        if m.get("method") == "notifications/progress":
            progress.append(m["params"].get("message", ""))
        if m.get("id") == n:
            return m
req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "first-run", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()
for arg in sys.argv[3:]:
    if arg.startswith("~"):  # ~SECONDS: wait that long before the next
        time.sleep(float(arg[1:]))
        continue
    if arg.startswith("@"):  # a tool without arguments
        r = req("tools/call", {"name": arg[1:], "arguments": {}})
        print(json.dumps(r.get("result", r).get("structuredContent", r)), flush=True)
        continue
    lang, code = arg.split(":", 1)
    t0 = time.monotonic()
    progress.clear()
    r = req("tools/call", {"name": "execute_code", "arguments": {"language": lang, "code": code},
                           "_meta": {"progressToken": n + 1}})
    res = r.get("result", r)
    print(json.dumps({"seconds": round(time.monotonic() - t0, 2), "progress": progress,
                      "stdout": res.get("structuredContent", {}).get("stdout"),
                      "error": res.get("isError", False),
                      "text": " ".join(c.get("text", "") for c in res.get("content", []))}), flush=True)
p.stdin.close()
p.wait(timeout=60)
EOF
chmod 644 "$T/client.py"
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())[sys.argv[1]])' "$1"; }
serve_cmd() { # HOME EXTRA-GLOBAL-ARGS...: the argv, joined for client.py
	local h=$1
	shift
	local a=(runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$h"
		XDG_DATA_HOME="$h/.local/share" XDG_CONFIG_HOME="$h/.config" NSBOX_LIMITS=best-effort
		"$T/nsbox" "$@" serve)
	local IFS=$'\x1f'
	echo "${a[*]}"
}

if [ -e "$OWN/refs.json" ]; then fail fresh_home "$OWN already has images"; fi
# A server whose client leaves soon (initialize, 3 s, stdin closed)
# stops its early import of the default image (a child process: 1.2 GB to
# unpack, 25 s or more here) and exits, rather than making the client
# wait for it: nothing is unpacked in the own store, the log says so, and
# no process of it stays.  The first run below starts in that store: it
# imports again (first_call_says_it_imports) and its pull cleans the
# staging the stopped import left (staging_of_stopped_import_cleaned).
python3 "$T/client.py" "$(serve_cmd "$H" --debug)" "$T/serve0.err" ~3 >"$T/run0" 2>"$T/client0.err"
left=$(pgrep -u nsboxtest -f "$T/nsbox" | tr '\n' ' ')
if grep -q 'stopping the import of the default images' "$T/serve0.err" &&
	[ -z "$(ls -A "$OWN/images" 2>/dev/null)" ] && [ ! -e "$OWN/refs.json" ] && [ -z "$left" ]; then
	pass server_stops_early_import_at_exit
else
	fail server_stops_early_import_at_exit "images: $(ls "$OWN/images" 2>&1) left: $left :: $(tail -3 "$T/serve0.err" "$T/client0.err" | tr '\n' ' ')"
fi
stopped_staging=$(ls "$OWN/tmp" 2>/dev/null | tr '\n' ' ')
echo "# the stopped import left in STORE/tmp: ${stopped_staging:-nothing}"
python3 "$T/client.py" "$(serve_cmd "$H" --debug)" "$T/serve1.err" \
	@list_languages 'python:print(6*7)' \
	'sh:stat -c %u /usr/bin/python3; touch /etc/x && echo etc-ok; mkdir -p /usr/local/lib/python3.11/dist-packages/nsbox_t && echo pip-ok' \
	>"$T/run1" 2>"$T/client1.err"
# list_languages, before anything was imported, offers the shared image.
if sed -n 1p "$T/run1" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not any(l["language"] == "python" and l["image"] == "localhost/nsbox-default:latest" for l in d["languages"]))'; then
	pass list_languages_sees_shared_image
else
	fail list_languages_sees_shared_image "$(sed -n 1p "$T/run1")"
fi
first=$(sed -n 2p "$T/run1")
if [ "$(printf '%s' "$first" | field stdout)" = 42 ]; then
	pass first_execute_code_42
else
	fail first_execute_code_42 "$first :: $(tail -3 "$T/serve1.err" "$T/client1.err" | tr '\n' ' ')"
fi
if printf '%s' "$first" | field progress | grep -q 'importing the image from a shared image store'; then
	pass first_call_says_it_imports
else
	fail first_call_says_it_imports "$first"
fi
echo "# first execute_code (import from root's store included): $(printf '%s' "$first" | field seconds) s"
grep -o 'imported sha256:[0-9a-f]\{12\}.* in [0-9.]* s' "$T/serve1.err" | sed 's/^/# /'
second=$(sed -n 3p "$T/run1")
if [ "$(printf '%s' "$second" | field stdout)" = "0
etc-ok
pip-ok" ]; then
	pass imported_rootfs_owned_by_sandbox_root
else
	fail imported_rootfs_owned_by_sandbox_root "$second"
fi

# The stopped import's staging (blobs half copied, a tree half unpacked)
# went with the first run's import (images/unpack.c: store_lock_for_pull).
if [ -d "$OWN/tmp" ] && [ -z "$(ls -A "$OWN/tmp")" ]; then
	pass staging_of_stopped_import_cleaned
else
	fail staging_of_stopped_import_cleaned "$(ls -A "$OWN/tmp" 2>&1 | tr '\n' ' ')"
fi

# The user's own store now has it, recorded as imported, owned by the user.
if grep -q '"origin": "/var/lib/nsbox"' "$OWN"/images/*/image.json 2>/dev/null &&
	[ "$(stat -c %U "$OWN/images")" = nsboxtest ] &&
	grep -q "\"$IMG\"" "$OWN/refs.json"; then
	pass imported_into_own_store_with_origin
else
	fail imported_into_own_store_with_origin "$(ls -la "$OWN" "$OWN/images" 2>&1 | tr '\n' ' ')"
fi
snapshot >"$T/after"
if cmp -s "$T/before" "$T/after"; then pass shared_store_never_written; else fail shared_store_never_written "$(diff "$T/before" "$T/after" | head -5 | tr '\n' ' ')"; fi

# The CLI sees it too, as the user's own image; rmi and prune empty the
# user's store as after a pull, and root's is untouched.
if as_user "$H" "$T/nsbox" images --names 2>&1 | grep -qx "$IMG"; then pass images_lists_imported; else fail images_lists_imported "$(as_user "$H" "$T/nsbox" images 2>&1 | tr '\n' ' ')"; fi
names=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["refs"]))' "$OWN/refs.json")
# shellcheck disable=SC2086
check own_store_rmi as_user "$H" "$T/nsbox" --image-store "" rmi $names
check own_store_prune as_user "$H" "$T/nsbox" --image-store "" prune
if [ -z "$(ls "$OWN/images")" ] && [ -z "$(ls "$OWN/blobs/sha256")" ]; then pass own_store_self_contained; else fail own_store_self_contained "$(ls "$OWN/images" "$OWN/blobs/sha256" | tr '\n' ' ')"; fi
snapshot >"$T/after2"
if cmp -s "$T/before" "$T/after2"; then pass shared_store_untouched_by_rmi; else fail shared_store_untouched_by_rmi "$(diff "$T/before" "$T/after2" | head -5 | tr '\n' ' ')"; fi

# -- listing shared images -------------------------------------------------------
H2=$(fresh_home)
HOMES="$HOMES $H2"
out=$(as_user "$H2" "$T/nsbox" images 2>&1)
if printf '%s' "$out" | grep -q 'In shared stores' && printf '%s' "$out" | grep "$IMG" | grep -q /var/lib/nsbox; then
	pass images_marks_shared
else
	fail images_marks_shared "$out"
fi
out=$(as_user "$H2" "$T/nsbox" doctor 2>&1)
if printf '%s' "$out" | grep -E "^ +shared +$IMG" | grep -q 'languages: .*python'; then pass doctor_lists_shared_images; else fail doctor_lists_shared_images "$(printf '%s' "$out" | grep -A3 images | tr '\n' ' ')"; fi
if [ ! -e "$H2/.local/share/nsbox/refs.json" ]; then pass listing_imports_nothing; else fail listing_imports_nothing "refs.json appeared"; fi
# The import alone, through the CLI (any lookup imports).
t0=$(date +%s%N)
check cli_lookup_imports as_user "$H2" "$T/nsbox" inspect "$IMG"
echo "# import of $IMG alone ($(du -sm "$ROOTSTORE/blobs" | cut -f1) MB of blobs; $(df --output=fstype "$H2" | tail -1)): $((($(date +%s%N) - t0) / 1000000)) ms"

# -- no image anywhere: the error names the stores and the fix ---------------------
H3=$(fresh_home)
HOMES="$HOMES $H3"
mkdir -p "$T/empty-store"
python3 "$T/client.py" "$(serve_cmd "$H3" --image-store "$T/empty-store")" "$T/serve3.err" \
	'python:print(6*7)' >"$T/run3" 2>"$T/client3.err"
r3=$(sed -n 1p "$T/run3")
text=$(printf '%s' "$r3" | field text)
if [ "$(printf '%s' "$r3" | field error)" = True ] && [[ "$text" == *"your store $H3/.local/share/nsbox"* ]] &&
	[[ "$text" == *"$T/empty-store (empty)"* ]] && [[ "$text" == *"sudo make default-image"* ]] &&
	[[ "$text" == *"nsbox pull"* ]]; then
	pass no_image_error_names_stores_and_fix
else
	fail no_image_error_names_stores_and_fix "$r3"
fi
expect_fail cli_no_image_names_stores "no image $IMG in your store .* and the shared store $T/nowhere \(absent\)" \
	as_user "$H3" "$T/nsbox" --image-store "$T/nowhere" inspect "$IMG"
out=$(as_user "$H3" "$T/nsbox" --image-store "$T/empty-store" doctor 2>&1)
if printf '%s' "$out" | grep -q 'no image serves python' && printf '%s' "$out" | grep -q 'sudo make default-image'; then
	pass doctor_says_what_to_do
else
	fail doctor_says_what_to_do "$(printf '%s' "$out" | tail -6 | tr '\n' ' ')"
fi

# -- sharing can be turned off, and is root's default store's only ------------------
printf 'share-images = false\n' >"$T/noshare.conf"
printf 'share-images = true\n' >"$T/share.conf"
check noshare_tag env NSBOX_CONFIG="$T/noshare.conf" "$NSBOX" tag "$IMG" localhost/first-run-tmp:latest
got=$(modes "$ROOTSTORE" "$ROOTSTORE/refs.json")
check reshare_tag "$NSBOX" tag "$IMG" localhost/first-run-tmp:latest
check reshare_rmi "$NSBOX" rmi localhost/first-run-tmp:latest
got="$got/ $(modes "$ROOTSTORE" "$ROOTSTORE/refs.json")"
if [ "$got" = "700 600 / 711 644 " ]; then pass share_images_false_makes_0700; else fail share_images_false_makes_0700 "$got"; fi
check other_store_pull "$NSBOX" --store "$T/rs" pull --quiet "oci:$F/oci/busybox:latest"
check other_store_share_pull env NSBOX_CONFIG="$T/share.conf" "$NSBOX" --store "$T/rs2" pull --quiet "oci:$F/oci/busybox:latest"
got="$(modes "$T/rs" "$T/rs/refs.json")/ $(modes "$T/rs2" "$T/rs2/refs.json" "$T/rs2/images")"
if [ "$got" = "700 600 / 711 644 700 " ]; then pass only_default_store_shared_unless_asked; else fail only_default_store_shared_unless_asked "$got"; fi
finish
