#!/usr/bin/env bash
# Builds nsbox's CI image as an OCI layout from Debian bookworm packages (the
# list in ./packages: podman, buildah, skopeo, docker-compose, git, gcc, node),
# offline from everything but the Debian mirror, and prints the layout's path
# (tag latest).  It is the image for nested sandboxes (docs/nested.md):
# images/ci-image.sh pulls it into a store as localhost/nsbox-ci:latest;
# tests/run.sh builds it once per run.  The same recipe as
# images/default/build.sh, and its mklayout.py.
#
#   images/ci/build.sh
#
# The layout is cached in $C/oci.  $C/.stamp holds the sha256 of every file
# in images/ci/ and of images/default/mklayout.py: when it matches nothing is
# rebuilt, so a change to the package list, a config file or this recipe
# rebuilds.  A build happens in a temporary directory next to $C and is
# renamed into place; a lock keeps concurrent builds apart.
#
# Environment:
#   NSBOX_CI_IMAGE_CACHE  cache directory (default /var/cache/nsbox/ci-image)
#   NSBOX_DEBIAN_MIRROR   mirror for mmdebstrap (default http://deb.debian.org/debian)
#   NSBOX_CI_IMAGE_FORCE  set to 1 to rebuild even when the stamp matches
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
C=${NSBOX_CI_IMAGE_CACHE:-/var/cache/nsbox/ci-image}
C=${C%/}
MIRROR=${NSBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
MKLAYOUT=$D/../default/mklayout.py
export SOURCE_DATE_EPOCH=1700000000 LC_ALL=C
umask 022

say() { printf 'ci-image: %s\n' "$*" >&2; }
die() {
	printf 'ci-image: error: %s\n' "$*" >&2
	exit 1
}

stamp() {
	(cd "$D" && { find . -type f ! -path '*/__pycache__/*' -print0 | sort -z
		printf '%s\0' ../default/mklayout.py; } | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
STAMP=$(stamp)
is_current() { [ "${NSBOX_CI_IMAGE_FORCE:-0}" != 1 ] && [ -f "$C/.stamp" ] && [ "$(cat "$C/.stamp")" = "$STAMP" ]; }

# The image config's "config": what every sandbox of the image starts with.
# No sandbox.language label: execute_code never picks this image by itself.
# DOCKER_HOST is not here: nsbox sets it when it starts the Docker API.
image_config() {
	cat <<EOF
{
  "Env": [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    "NPM_CONFIG_UPDATE_NOTIFIER=false",
    "NPM_CONFIG_FUND=false"
  ],
  "Cmd": ["bash"],
  "WorkingDir": "/workspace",
  "Labels": {
    "org.opencontainers.image.title": "nsbox-ci",
    "org.opencontainers.image.description": "Debian bookworm for nested sandboxes: podman 4.3 (crun, netavark, slirp4netns), buildah, skopeo, docker-compose, git, gcc, make, nodejs, npm"
  }
}
EOF
}

build() {
	local parent name t w start pkgs
	for c in mmdebstrap:mmdebstrap python3:python3 flock:util-linux sha256sum:coreutils; do
		command -v "${c%%:*}" >/dev/null 2>&1 ||
			die "missing command '${c%%:*}' (apt-get install -y ${c#*:})"
	done
	[ "$(id -u)" = 0 ] || die "building needs root (mmdebstrap's root mode keeps every file's owner); run once as root"
	parent=$(dirname "$C")
	name=$(basename "$C")
	mkdir -p "$parent"
	exec 9>"$parent/.$name.lock"
	flock 9 # one build at a time; whoever waited re-checks the stamp
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
	# /var/lib/cni must exist: podman 4.3's rootless network namespace
	# bind-mounts an empty directory over the nearest existing parent of it
	# (without it /var/lib, hiding /var/lib/containers/storage/networks: every
	# bridge network is then "network not found").
	# shellcheck disable=SC2016 # the hooks' "$1" is expanded by mmdebstrap
	if ! mmdebstrap --variant=minbase --include="$pkgs" \
		--aptopt='Acquire::Retries "3"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--customize-hook='mkdir -p "$1/workspace" "$1/var/lib/containers" "$1/var/lib/cni" "$1/etc/containers/registries.conf.d"' \
		--customize-hook="install -m 0644 '$D/containers.conf' '$D/storage.conf' '$D/registries.conf' \"\$1/etc/containers/\"" \
		--customize-hook="install -m 0755 '$D/buildah' \"\$1/usr/local/bin/buildah\"" \
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
