#!/usr/bin/env bash
# Builds the test image for the R and Java interpreters (docs/interpreters.md,
# "R" and "Java"): Debian bookworm minbase + r-base-core + a headless JDK
# (jshell), no Recommends, as an OCI layout, and prints the layout's path
# (tag latest).  tests/integration/interp_rjava.sh pulls it into a store of
# its own.  Not the default image: R and a JDK would add ~300 MiB to it.
#
#   tests/rjava_image/build.sh
#
# Cached as images/default/build.sh caches: $C/.stamp holds the sha256 of this
# directory's files and of images/default/mklayout.py; when it matches nothing
# is rebuilt.  A build happens in a temporary directory next to $C and is
# renamed into place; a lock keeps concurrent builds apart.
#
# Environment:
#   NSBOX_RJAVA_IMAGE_CACHE  cache directory (default /var/cache/nsbox/rjava-image)
#   NSBOX_DEBIAN_MIRROR      mirror for mmdebstrap (default http://deb.debian.org/debian)
#   NSBOX_RJAVA_IMAGE_FORCE  set to 1 to rebuild even when the stamp matches
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MKLAYOUT=$D/../../images/default/mklayout.py
C=${NSBOX_RJAVA_IMAGE_CACHE:-/var/cache/nsbox/rjava-image}
C=${C%/}
MIRROR=${NSBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
export SOURCE_DATE_EPOCH=1700000000 LC_ALL=C
umask 022

say() { printf 'rjava-image: %s\n' "$*" >&2; }
die() {
	printf 'rjava-image: error: %s\n' "$*" >&2
	exit 1
}

stamp() {
	{
		(cd "$D" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
		sha256sum <"$MKLAYOUT"
	} | sha256sum | cut -d' ' -f1
}
STAMP=$(stamp)
is_current() { [ "${NSBOX_RJAVA_IMAGE_FORCE:-0}" != 1 ] && [ -f "$C/.stamp" ] && [ "$(cat "$C/.stamp")" = "$STAMP" ]; }

image_config() {
	cat <<'JSON'
{
  "Env": [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8"
  ],
  "Cmd": ["sh"],
  "WorkingDir": "/workspace",
  "Labels": {
    "sandbox.language": "r,java,sh",
    "org.opencontainers.image.title": "nsbox-test-rjava",
    "org.opencontainers.image.description": "Debian bookworm minbase: r-base-core, openjdk-17-jdk-headless (tests only)"
  }
}
JSON
}

build() {
	local parent name t w start pkgs
	for c in mmdebstrap:mmdebstrap python3:python3 flock:util-linux sha256sum:coreutils; do
		command -v "${c%%:*}" >/dev/null 2>&1 ||
			die "missing command '${c%%:*}' (apt-get install -y ${c#*:})"
	done
	[ "$(id -u)" = 0 ] || die "building needs root (mmdebstrap); run once as root"
	parent=$(dirname "$C")
	name=$(basename "$C")
	mkdir -p "$parent"
	exec 9>"$parent/.$name.lock"
	flock 9
	if is_current; then return 0; fi
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
	# The JDK's postinst registers its man pages with update-alternatives,
	# which fails without /usr/share/man/man1 (the pages themselves are left
	# out), hence the essential hook.
	# shellcheck disable=SC2016 # the hooks' "$1" is expanded by mmdebstrap
	if ! mmdebstrap --variant=minbase --include="$pkgs" \
		--aptopt='Acquire::Retries "3"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/R/doc/*' \
		--dpkgopt='path-exclude=/usr/lib/jvm/*/lib/src.zip' \
		--essential-hook='mkdir -p "$1/usr/share/man/man1"' \
		--customize-hook='mkdir -p "$1/workspace"' \
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

if is_current; then say "cached in $C"; else build; fi
echo "$C/oci"
