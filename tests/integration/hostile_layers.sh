#!/usr/bin/env bash
# Hostile image layers (threat model: "Image layers are hostile archives").
# Each case in $F/hostile/CASES is pulled through the real CLI; the outcome
# is asserted exactly: rejected with a clear error and nothing left behind,
# or confined inside the rootfs, or skipped entries with a note.
SUITE=hostile_layers
. "$(dirname "$0")/../lib.sh"

S=$T/store
CANARIES=(/tmp/nsbox-canary-dotdot /tmp/nsbox-canary-dotdot2 /tmp/nsbox-canary-symabs
	/tmp/nsbox-canary-symrel /tmp/nsbox-canary-layers /tmp/nsbox-canary-overwrite
	/tmp/nsbox-canary-absolute /nsbox-canary-absolute)
rm -f "${CANARIES[@]}"
# The whiteout-escape case must not be able to delete this host file.
echo keep >/tmp/nsbox-canary-whiteout
passwd_sum=$(sha256sum /etc/passwd)

images_before() { ls "$S/images" 2>/dev/null | wc -l; }

# Why each rejected case must fail (a fragment of the expected message).
declare -A WHY=(
	[dotdot]='climbs out of the rootfs'
	[dotdot-inner]='climbs out of the rootfs'
	[hardlink-dotdot]='climbs out of the rootfs'
	[whiteout-dotdot]='invalid whiteout'
	[whiteout-escape]='climbs out of the rootfs'
	[truncated-gzip]='truncated|unexpected end|Truncated'
	[huge-declared]='size limit'
)

"$NSBOX" --store "$S" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null 2>&1

while IFS=$'\t' read -r name expect _desc; do
	[[ -z $name || $name == \#* ]] && continue
	ref="oci:$F/hostile/$name:latest"
	before=$(images_before)
	out=$("$NSBOX" --store "$S" pull --quiet "$ref" 2>&1)
	rc=$?
	case $expect in
	reject)
		if [ $rc -ne 1 ]; then
			fail "$name" "expected the pull to fail, got exit $rc"
		elif ! printf '%s' "$out" | grep -Eq -- "${WHY[$name]:-.}"; then
			fail "$name" "unclear error: $out"
		elif [ "$(images_before)" != "$before" ] || [ -n "$(ls "$S/tmp")" ]; then
			fail "$name" "a half-unpacked image or staging dir was left behind"
		elif "$NSBOX" --store "$S" inspect "$ref" >/dev/null 2>&1; then
			fail "$name" "the reference was recorded despite the failure"
		else
			pass "$name"
		fi
		;;
	confine | skip)
		if [ $rc -ne 0 ]; then
			fail "$name" "expected success: $out"
			continue
		fi
		r=$(rootfs_of "$S" "$ref")
		ok=1
		case $name in
		absolute) [ "$(cat "$r/nsbox-canary-absolute")" = abs ] || ok=0 ;;
		symlink-escape-abs) [ -f "$r/tmp/nsbox-canary-symabs" ] || ok=0 ;;
		symlink-escape-rel) [ -f "$r/tmp/nsbox-canary-symrel" ] || ok=0 ;;
		symlink-escape-layers) [ -f "$r/tmp/nsbox-canary-layers" ] || ok=0 ;;
		symlink-overwrite)
			[ -f "$r/victim" ] && [ ! -L "$r/victim" ] && [ "$(cat "$r/victim")" = x ] &&
				[ ! -e "$r/tmp/nsbox-canary-overwrite" ] || ok=0
			;;
		hardlink-abs) [ "$(stat -c %i "$r/hl2")" = "$(stat -c %i "$r/etc/passwd")" ] || ok=0 ;;
		hardlink-through-symlink) [ "$(stat -c %i "$r/hl3")" = "$(stat -c %i "$r/etc/passwd")" ] || ok=0 ;;
		devices)
			[ ! -e "$r/dev/evil-mem" ] && [ ! -e "$r/dev/evil-sda" ] && [ "$(cat "$r/dev-ok")" = ok ] || ok=0
			# The skip is recorded, not silent.
			grep -q 'character device' "$S/images/$(basename "$(dirname "$r")")/image.json" || ok=0
			;;
		*) ok=0 ;;
		esac
		if [ $ok = 1 ]; then pass "$name"; else fail "$name" "not confined as expected in $r"; fi
		;;
	*) fail "$name" "unknown expectation $expect" ;;
	esac
done <"$F/hostile/CASES"

leaked=()
for c in "${CANARIES[@]}"; do [ -e "$c" ] && leaked+=("$c"); done
if [ ${#leaked[@]} = 0 ]; then pass no_canary_on_host; else fail no_canary_on_host "found ${leaked[*]}"; fi
if [ "$(cat /tmp/nsbox-canary-whiteout 2>/dev/null)" = keep ]; then
	pass host_file_survives_whiteout
else
	fail host_file_survives_whiteout "/tmp/nsbox-canary-whiteout was removed"
fi
rm -f /tmp/nsbox-canary-whiteout
if [ "$(sha256sum /etc/passwd)" = "$passwd_sum" ]; then pass host_passwd_untouched; else fail host_passwd_untouched "changed"; fi

# A blob corrupted in the store after the pull is caught on the next unpack:
# skopeo reuses blobs already present, nsbox re-hashes while unpacking.
S2=$T/store2
"$NSBOX" --store "$S2" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null
layer=$(python3 -c '
import json, sys
idx = json.load(open(sys.argv[1] + "/index.json"))
m = idx["manifests"][0]["digest"].split(":")[1]
man = json.load(open(sys.argv[1] + "/blobs/sha256/" + m))
print(man["layers"][-1]["digest"].split(":")[1])' "$F/oci/busybox")
"$NSBOX" --store "$S2" rmi "oci:$F/oci/busybox:latest" >/dev/null
printf 'X' | dd of="$S2/blobs/sha256/$layer" bs=1 seek=100 conv=notrunc status=none
expect_fail corrupt_blob_in_store_detected 'corrupt|hashes to|invalid|truncated|malformed' \
	"$NSBOX" --store "$S2" pull --quiet "oci:$F/oci/busybox:latest"
if [ -z "$(ls "$S2/images")" ] && [ -z "$(ls "$S2/tmp")" ]; then
	pass corrupt_blob_leaves_no_image
else
	fail corrupt_blob_leaves_no_image "images: $(ls "$S2/images") tmp: $(ls "$S2/tmp")"
fi

finish
