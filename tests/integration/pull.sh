#!/usr/bin/env bash
# Pulls through every transport, from the real local registry and from
# files, and checks what lands in the store.
SUITE=pull
. "$(dirname "$0")/../lib.sh"
require_registry

S=$T/store
R=$REGISTRY
pull() { "$NSBOX" --store "$S" pull --quiet "$@"; }

# -- registry (docker://) --------------------------------------------------
check registry_bare_reference pull --tls-verify=false "$R/busybox"
check registry_docker_transport pull --tls-verify=false "docker://$R/busybox:latest"
check registry_python pull --tls-verify=false "$R/python:latest"
check registry_zstd_layers pull --tls-verify=false "$R/busybox-zstd:latest"
check registry_multilayer pull --tls-verify=false "$R/multilayer:latest"
check registry_multiarch_index pull --tls-verify=false "$R/multiarch:latest"

# The bare name is normalized Docker's way (":latest" added), and both
# spellings point at one image.
names=$("$NSBOX" --store "$S" images --json)
if printf '%s' "$names" | python3 -c '
import json, sys
imgs = json.load(sys.stdin)
names = [n for i in imgs for n in i["names"]]
r = sys.argv[1]
# "R/busybox" and "docker://R/busybox:latest" are one reference.
assert names.count(r + "/busybox:latest") == 1, names
assert not any(n.startswith("docker://") or n == r + "/busybox" for n in names), names
assert r + "/python:latest" in names, names
' "$R"; then pass reference_normalized; else fail reference_normalized "$names"; fi

bb=$(rootfs_of "$S" "$R/busybox:latest")
if [ -x "$bb/bin/busybox" ] && [ "$(cat "$bb/home/app/hello.txt")" = "hello from app" ] &&
	[ "$(stat -c %u:%g:%a "$bb/home/app/hello.txt")" = "1000:1000:600" ] &&
	[ "$(stat -c %a "$bb/tmp")" = 1777 ]; then
	pass busybox_rootfs_contents_owners_modes
else
	fail busybox_rootfs_contents_owners_modes "$(ls -ln "$bb/home/app" "$bb" 2>&1 | tr '\n' ' ')"
fi

py=$(rootfs_of "$S" "$R/python:latest")
if [ -e "$py/usr/bin/python3" ] && chroot "$py" python3 -c 'import json; print(json.dumps([1]))' | grep -qx '\[1\]'; then
	pass python_rootfs_runs_python
else
	fail python_rootfs_runs_python "python3 missing or broken in $py"
fi

ml=$(rootfs_of "$S" "$R/multilayer:latest")
if diff -u "$F/oci/multilayer.expected" <(python3 "$ROOT/tests/fixtures/list-tree.py" "$ml" /data) >"$T/ml.diff"; then
	pass multilayer_whiteouts_opaque_hardlinks
else
	fail multilayer_whiteouts_opaque_hardlinks "$(head -20 "$T/ml.diff" | tr '\n' ' ')"
fi

ma=$(rootfs_of "$S" "$R/multiarch:latest")
if [ "$(cat "$ma/arch")" = amd64 ]; then pass multiarch_resolves_host_platform; else fail multiarch_resolves_host_platform "arch=$(cat "$ma/arch" 2>&1)"; fi

zs=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["manifests"][0]["digest"])' "$F/oci/busybox-zstd/index.json")
if "$NSBOX" --store "$S" inspect "$R/busybox-zstd:latest" >/dev/null &&
	[ -x "$(rootfs_of "$S" "$R/busybox-zstd:latest")/bin/busybox" ]; then
	pass zstd_rootfs
else
	fail zstd_rootfs "no busybox in zstd image ($zs)"
fi

# -- pinned by digest ---------------------------------------------------------
digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$R/busybox:latest")
check pull_by_digest pull --tls-verify=false "$R/busybox@$digest"
if "$NSBOX" --store "$S" images --json | grep -q "\"$R/busybox@$digest\""; then
	pass digest_reference_recorded
else
	fail digest_reference_recorded "no $R/busybox@$digest in images"
fi
if [ "$("$NSBOX" --store "$S" inspect "$R/busybox@$digest" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')" = "$digest" ]; then
	pass oci_registry_digest_preserved
else
	fail oci_registry_digest_preserved "local digest differs from the registry's $digest"
fi

# -- file transports ------------------------------------------------------------
check transport_oci pull "oci:$F/oci/busybox:latest"
check transport_oci_archive pull "oci-archive:$F/archives/busybox-oci.tar:latest"
check transport_docker_archive pull "docker-archive:$F/archives/busybox-docker.tar"
check transport_dir pull "dir:$F/dir/busybox"
check transport_oci_uncompressed pull "oci:$F/oci/busybox-plain:latest"
(cd "$F/oci" && "$NSBOX" --store "$S" pull --quiet oci:busybox:latest) >/dev/null 2>&1
if "$NSBOX" --store "$S" images --json | grep -q "\"oci:$F/oci/busybox:latest\""; then
	pass relative_oci_path_made_absolute
else
	fail relative_oci_path_made_absolute "relative oci:busybox not recorded as oci:$F/oci/busybox:latest"
fi
# One test: every file transport's rootfs holds the image's busybox.
missing=
for ref in "oci-archive:$F/archives/busybox-oci.tar:latest" "docker-archive:$F/archives/busybox-docker.tar" "dir:$F/dir/busybox"; do
	r=$(rootfs_of "$S" "$ref")
	[ -n "$r" ] && [ -x "$r/bin/busybox" ] || missing="$missing ${ref%%:*} (rootfs '$r')"
done
[ -z "$missing" ] && pass file_transport_rootfs_contents || fail file_transport_rootfs_contents "no busybox via:$missing"

# Names outside ASCII travel in pax headers as UTF-8 and land byte for byte
# (libarchive converts them under a per-thread UTF-8 locale while a layer
# is applied; nsbox sets no process locale).
echo utf8 >"$T/utf8.txt"
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/utf8" "$T/utf8.txt:/opt/café-ü/naïve-名前 $(printf 'x%.0s' $(seq 120)).txt:0644"
pull "oci:$T/utf8:latest" >/dev/null
r=$(rootfs_of "$S" "oci:$T/utf8:latest")
want=$(printf '%s' "café-ü/naïve-名前 $(printf 'x%.0s' $(seq 120)).txt" | od -An -tx1 | tr -d ' \n')
got=$(cd "$r/opt" 2>/dev/null && printf '%s' */* | od -An -tx1 | tr -d ' \n')
[ -n "$got" ] && [ "$got" = "$want" ] && [ "$(cat "$r/opt/"*/*)" = utf8 ] && pass utf8_pax_names_exact || fail utf8_pax_names_exact "got $(ls -R "$r/opt" 2>&1 | head -3)"

# The same layers are stored once, whatever the transport.
blobs=$(ls "$S/blobs/sha256" | wc -l)
check pull_again_is_idempotent pull "oci:$F/oci/busybox:latest"
if [ "$(ls "$S/blobs/sha256" | wc -l)" = "$blobs" ] && [ -z "$(ls "$S/tmp")" ]; then
	pass blobs_deduplicated_and_no_leftovers
else
	fail blobs_deduplicated_and_no_leftovers "blobs $blobs -> $(ls "$S/blobs/sha256" | wc -l), tmp: $(ls "$S/tmp")"
fi

# Every stored blob is what its name says.
bad=0
for b in "$S"/blobs/sha256/*; do
	[ "$(sha256sum <"$b" | cut -d' ' -f1)" = "$(basename "$b")" ] || bad=$((bad + 1))
done
if [ "$bad" = 0 ]; then pass blobs_content_addressed; else fail blobs_content_addressed "$bad blobs do not match their names"; fi

# -- configs and listing ------------------------------------------------------------
insp=$("$NSBOX" --store "$S" inspect "$R/python:latest")
if printf '%s' "$insp" | python3 -c '
import json, sys
i = json.load(sys.stdin)
c = i["config"]
assert i["languages"] == "python", i
assert c["cmd"] == ["python3"], c
assert any(e.startswith("PATH=") for e in c["env"]), c
assert c["labels"]["sandbox.language"] == "python"
assert i["size"] > 50_000_000, i["size"]
'; then pass inspect_config_and_languages; else fail inspect_config_and_languages "$insp"; fi

table=$("$NSBOX" --store "$S" images)
if printf '%s' "$table" | grep -E "^$R/python +latest +[0-9a-f]{12} +[A-Za-z0-9 ]+ ago +[0-9.]+MB +python$" >/dev/null; then
	pass images_table
else
	fail images_table "$table"
fi

# -- errors ---------------------------------------------------------------------------
expect_fail tls_verified_by_default 'HTTP response to HTTPS client|http: server gave HTTP' \
	"$NSBOX" --store "$S" pull --quiet "$R/busybox:latest"
expect_fail missing_image_clear_error 'manifest unknown|not found|404' \
	"$NSBOX" --store "$S" pull --quiet --tls-verify=false "$R/nope:latest"
expect_fail bad_reference_uppercase 'must be lowercase' "$NSBOX" --store "$S" pull Python
expect_fail unsupported_transport 'not supported' "$NSBOX" --store "$S" pull docker-daemon:busybox:latest
expect_fail missing_layout 'no such file|not exist' "$NSBOX" --store "$S" pull "oci:$T/nothing:latest"
expect_fail lookup_unknown 'no image' "$NSBOX" --store "$S" inspect never-pulled
if [ -z "$(ls "$S/tmp")" ]; then pass failed_pulls_leave_nothing; else fail failed_pulls_leave_nothing "tmp: $(ls "$S/tmp")"; fi

# -- store location ------------------------------------------------------------------
NSBOX_STORE=$T/envstore "$NSBOX" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null 2>&1
if [ -d "$T/envstore/images" ] && [ "$(stat -c %a "$T/envstore")" = 700 ]; then
	pass nsbox_store_env_and_mode
else
	fail nsbox_store_env_and_mode "no $T/envstore/images or wrong mode"
fi

finish
