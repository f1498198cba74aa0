#!/usr/bin/env bash
# rmi, prune and leases, and a store that survives interrupted or
# concurrent pulls.
SUITE=store_ops
. "$(dirname "$0")/../lib.sh"
require_registry

S=$T/store
R=$REGISTRY
n_images() { ls "$S/images" | wc -l; }
n_blobs() { ls "$S/blobs/sha256" | wc -l; }

"$NSBOX" --store "$S" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null
"$NSBOX" --store "$S" pull --quiet "oci-archive:$F/archives/busybox-oci.tar:latest" >/dev/null
"$NSBOX" --store "$S" pull --quiet --tls-verify=false "$R/multilayer:latest" >/dev/null
bb=$("$NSBOX" --store "$S" inspect "oci:$F/oci/busybox:latest" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')

# Two references, one image: removing one keeps the image.
if [ "$(n_images)" = 2 ]; then pass two_refs_one_image; else fail two_refs_one_image "$(n_images) images"; fi
out=$("$NSBOX" --store "$S" rmi "oci:$F/oci/busybox:latest")
if [ "$(n_images)" = 2 ] && ! printf '%s' "$out" | grep -q deleted &&
	"$NSBOX" --store "$S" inspect "oci-archive:$F/archives/busybox-oci.tar:latest" >/dev/null; then
	pass rmi_keeps_image_with_other_refs
else
	fail rmi_keeps_image_with_other_refs "$out"
fi

# A sandbox's lease (a shared flock) keeps an unreferenced image alive.
lease=$S/images/${bb#sha256:}/lease
# The lock holder itself is killed later, so no child may inherit the fd.
# It says "held" once it has the lock: rmi goes after that, not after a
# guessed 0.3 s.
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(30)' "$lease" >"$T/holder.out" &
holder=$!
wait_until 20 grep -q held "$T/holder.out"
out=$("$NSBOX" --store "$S" rmi "oci-archive:$F/archives/busybox-oci.tar:latest")
if [ -d "$S/images/${bb#sha256:}/rootfs" ] && ! printf '%s' "$out" | grep -q deleted; then
	pass lease_blocks_removal
else
	fail lease_blocks_removal "image removed while leased: $out"
fi
out=$("$NSBOX" --store "$S" prune)
if printf '%s' "$out" | grep -q 'kept 1 in use' && [ -d "$S/images/${bb#sha256:}" ]; then
	pass prune_keeps_leased_image
else
	fail prune_keeps_leased_image "$out"
fi
kill $holder 2>/dev/null
wait $holder 2>/dev/null
out=$("$NSBOX" --store "$S" prune)
if printf '%s' "$out" | grep -q '^Removed 1 images' && [ ! -e "$S/images/${bb#sha256:}" ] && [ "$(n_images)" = 1 ]; then
	pass prune_removes_unused_image
else
	fail prune_removes_unused_image "$out; images: $(n_images)"
fi

# Blobs of the remaining image survive, the busybox-only ones go.
ml=$(rootfs_of "$S" "$R/multilayer:latest")
kept_ok=1
for d in $(python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))
print(i["digest"], i["config_digest"], *i["layers"])' "$(dirname "$ml")/image.json"); do
	[ -f "$S/blobs/sha256/${d#sha256:}" ] || kept_ok=0
done
if [ $kept_ok = 1 ] && [ "$(n_blobs)" -le 7 ]; then pass prune_keeps_needed_blobs_only; else fail prune_keeps_needed_blobs_only "blobs: $(n_blobs)"; fi

# rmi by digest prefix removes every reference.
"$NSBOX" --store "$S" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null
"$NSBOX" --store "$S" pull --quiet "dir:$F/dir/busybox" >/dev/null
dg=$("$NSBOX" --store "$S" inspect "dir:$F/dir/busybox" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"][7:19])')
out=$("$NSBOX" --store "$S" rmi "$dg")
if printf '%s' "$out" | grep -q deleted && ! "$NSBOX" --store "$S" inspect "oci:$F/oci/busybox:latest" >/dev/null 2>&1 &&
	! "$NSBOX" --store "$S" images | grep -q "dir:$F"; then
	pass rmi_by_digest_prefix
else
	fail rmi_by_digest_prefix "$out"
fi
# tag: a second (Docker-style) name for an image; transports are not names.
"$NSBOX" --store "$S" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null
"$NSBOX" --store "$S" tag "oci:$F/oci/busybox:latest" localhost/bb:1
d1=$("$NSBOX" --store "$S" inspect localhost/bb:1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
d2=$("$NSBOX" --store "$S" inspect "oci:$F/oci/busybox:latest" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then pass tag_names_same_image; else fail tag_names_same_image "$d1 vs $d2"; fi
expect_fail tag_rejects_transport 'Docker-style' "$NSBOX" --store "$S" tag localhost/bb:1 oci:/tmp/x
expect_fail rmi_unknown 'no image' "$NSBOX" --store "$S" rmi "oci:$F/oci/none:latest"

# -- interrupted pulls ------------------------------------------------------
# Kill the pull while it unpacks python: no image appears, the reference is
# not recorded, and the next pull (or prune) cleans the leftovers.
S3=$T/store3
"$NSBOX" --store "$S3" pull --quiet --tls-verify=false "$R/busybox:latest" >/dev/null
"$NSBOX" --store "$S3" pull --quiet --tls-verify=false "$R/python:latest" >/dev/null &
puller=$!
# (the kill lands while the unpack runs: its staging tree was seen first)
unpacking() { ls "$S3/tmp" 2>/dev/null | grep -q '^unpack-'; }
wait_until 30 unpacking && seen=1 || seen=0
sleep 0.2
pkill -KILL -P $puller 2>/dev/null
kill -KILL $puller 2>/dev/null
wait $puller 2>/dev/null
if [ "$seen" = 1 ] && [ "$(ls "$S3/images" | wc -l)" = 1 ] && ! "$NSBOX" --store "$S3" inspect "$R/python:latest" >/dev/null 2>&1; then
	pass killed_pull_leaves_no_image
else
	fail killed_pull_leaves_no_image "unpack seen: $seen; images: $(ls "$S3/images" | wc -l); tmp: $(ls "$S3/tmp")"
fi
check pull_after_kill_succeeds "$NSBOX" --store "$S3" pull --quiet --tls-verify=false "$R/python:latest"
if [ -z "$(ls "$S3/tmp")" ] && [ -x "$(rootfs_of "$S3" "$R/python:latest")/usr/bin/python3" ]; then
	pass leftovers_cleaned_on_next_pull
else
	fail leftovers_cleaned_on_next_pull "tmp: $(ls "$S3/tmp")"
fi

# -- concurrent pulls -----------------------------------------------------------
# Four pulls of one image into one empty store, plus a different image:
# all succeed, one unpack, a consistent reference table.
S4=$T/store4
pids=()
for i in 1 2 3 4; do
	"$NSBOX" --store "$S4" pull --quiet --tls-verify=false "$R/python:latest" >"$T/c$i.out" 2>&1 &
	pids+=($!)
done
"$NSBOX" --store "$S4" pull --quiet --tls-verify=false "$R/multilayer:latest" >"$T/c5.out" 2>&1 &
pids+=($!)
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
if [ $rcs = 0 ] && [ "$(ls "$S4/images" | wc -l)" = 2 ] && [ -z "$(ls "$S4/tmp")" ] &&
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["refs"]; assert len(r)==2, r' "$S4/refs.json"; then
	pass concurrent_pulls_consistent
else
	fail concurrent_pulls_consistent "failures=$rcs images=$(ls "$S4/images" | wc -l) $(cat "$T"/c*.out | tr '\n' ' ')"
fi
digests=$(cat "$T"/c[1-4].out | awk '{print $2}' | sort -u | wc -l)
if [ "$digests" = 1 ]; then pass concurrent_pulls_same_digest; else fail concurrent_pulls_same_digest "$(cat "$T"/c*.out)"; fi

finish
