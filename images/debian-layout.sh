# The one recipe for nsbox's images built from Debian bookworm packages:
# images/default/build.sh (the default image), images/ci/build.sh (the CI
# image for nested sandboxes) and tests/rjava_image/build.sh (the R and Java
# test image) each set what is theirs and source this file, which builds the
# image as an OCI layout with mmdebstrap and images/default/mklayout.py,
# offline from everything but the Debian mirror, caches it and prints the
# layout's path (tag latest).
#
# The caller sets, before `layout_main`:
#   LAYOUT_NAME   the name its messages start with (e.g. default-image)
#   D             its directory: ./packages lists the packages, and every file
#                 in it is part of the stamp
#   C             the cache directory; the layout is $C/oci
#   LAYOUT_FORCE  1 to rebuild even when the stamp matches
#   LAYOUT_WHY_ROOT  why building needs root, for the refusal
#   LAYOUT_ARGS   an array of the image's own mmdebstrap options (dpkg path
#                 rules, hooks), added to the common ones below
#   image_config  a function printing the image config's "config" JSON
#
# Caching: $C/.stamp holds the sha256 of every file in $D, of mklayout.py
# and of this file; when it matches nothing is rebuilt, so a change to a
# package list, a config file or the recipe rebuilds.  A build happens in a
# temporary directory next to $C and is renamed into place; a lock keeps
# concurrent builds apart, and whoever waited re-checks the stamp.
#
# Environment: NSBOX_DEBIAN_MIRROR, the mirror for mmdebstrap (default
# http://deb.debian.org/debian).
# shellcheck shell=bash

LAYOUT_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MKLAYOUT=$LAYOUT_LIB/default/mklayout.py
MIRROR=${NSBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
export SOURCE_DATE_EPOCH=1700000000 LC_ALL=C
umask 022

say() { printf '%s: %s\n' "$LAYOUT_NAME" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "$LAYOUT_NAME" "$*" >&2
	exit 1
}

layout_stamp() {
	{
		(cd "$D" && find . -type f ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum)
		sha256sum <"$MKLAYOUT"
		sha256sum <"$LAYOUT_LIB/debian-layout.sh"
	} | sha256sum | cut -d' ' -f1
}

layout_current() {
	[ "${LAYOUT_FORCE:-0}" != 1 ] && [ -f "$C/.stamp" ] && [ "$(cat "$C/.stamp")" = "$STAMP" ]
}

layout_build() {
	local parent name t w start pkgs c
	for c in mmdebstrap:mmdebstrap python3:python3 flock:util-linux sha256sum:coreutils; do
		command -v "${c%%:*}" >/dev/null 2>&1 ||
			die "missing command '${c%%:*}' (apt-get install -y ${c#*:})"
	done
	[ "$(id -u)" = 0 ] || die "building needs root ($LAYOUT_WHY_ROOT); run once as root"
	parent=$(dirname "$C")
	name=$(basename "$C")
	mkdir -p "$parent"
	exec 9>"$parent/.$name.lock"
	flock 9 # one build at a time; whoever waited re-checks the stamp
	if layout_current; then return 0; fi
	rm -rf "$parent/.$name.tmp."*
	t=$(mktemp -d "$parent/.$name.tmp.XXXXXX")
	# shellcheck disable=SC2064 # expand $t now
	trap "rm -rf '$t'" EXIT
	w=$t/work
	mkdir -p "$w"
	start=$(date +%s)
	pkgs=$(sed 's/#.*//' "$D/packages" | xargs | tr ' ' ',')
	say "mmdebstrap bookworm minbase + $pkgs from $MIRROR"
	image_config >"$w/config.json"
	# No manuals, info pages, translations or documentation but the
	# copyright files; the apt lists and caches go at the end.
	# shellcheck disable=SC2016 # the hook's "$1" is expanded by mmdebstrap
	if ! mmdebstrap --variant=minbase --include="$pkgs" \
		--aptopt='Acquire::Retries "3"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		"${LAYOUT_ARGS[@]}" \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
		bookworm "$w/rootfs.tar" "$MIRROR" >"$w/mmdebstrap.log" 2>&1; then
		tail -n 30 "$w/mmdebstrap.log" >&2 || true
		die "mmdebstrap failed (log above; mirror $MIRROR, set NSBOX_DEBIAN_MIRROR to change it)"
	fi
	say "rootfs in $(($(date +%s) - start))s; writing the OCI layout"
	python3 "$MKLAYOUT" "$w/rootfs.tar" "$t/oci" latest "$w/config.json"
	rm -rf "$w"
	printf '%s\n' "$STAMP" >"$t/.stamp"
	chmod 0755 "$t"
	rm -rf "$C.old"
	if [ -e "$C" ]; then mv -T "$C" "$C.old"; fi
	mv -T "$t" "$C"
	rm -rf "$C.old"
	trap - EXIT
	say "built $C in $(($(date +%s) - start))s ($(du -sh "$C/oci" | cut -f1) compressed)"
}

# Builds the layout unless the cache is current, then prints its path.
layout_main() {
	C=${C%/}
	STAMP=$(layout_stamp)
	if layout_current; then say "cached in $C"; else layout_build; fi
	echo "$C/oci"
}
