#!/usr/bin/env bash
# Builds nsbox's default image as an OCI layout from Debian bookworm packages
# (the list in ./packages), offline from everything but the Debian mirror,
# and prints the layout's path (tag latest).  images/default-image.sh pulls
# it into a store; tests pull it from here.  See docs/default-image.md.
#
#   images/default/build.sh
#
# The layout is cached in $C/oci.  $C/.stamp holds the sha256 of every file
# in images/default/: when it matches nothing is rebuilt, so a change to the
# package list (or to this recipe) rebuilds.  A build happens in a temporary
# directory next to $C and is renamed into place; a lock keeps concurrent
# builds apart.
#
# Environment:
#   NSBOX_DEFAULT_IMAGE_CACHE  cache directory (default /var/cache/nsbox/default-image)
#   NSBOX_DEBIAN_MIRROR        mirror for mmdebstrap (default http://deb.debian.org/debian)
#   NSBOX_DEFAULT_IMAGE_FORCE  set to 1 to rebuild even when the stamp matches
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
C=${NSBOX_DEFAULT_IMAGE_CACHE:-/var/cache/nsbox/default-image}
C=${C%/}
MIRROR=${NSBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The names execute_code knows (mcp/tools/languages.c), aliases included:
# the image is found by this label.
LANGUAGES="python,python3,javascript,node,typescript,ts,sh,bash"
export SOURCE_DATE_EPOCH=1700000000 LC_ALL=C
umask 022

say() { printf 'default-image: %s\n' "$*" >&2; }
die() {
	printf 'default-image: error: %s\n' "$*" >&2
	exit 1
}

stamp() {
	(cd "$D" && find . -type f ! -path '*/__pycache__/*' -print0 |
		sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
STAMP=$(stamp)
is_current() { [ "${NSBOX_DEFAULT_IMAGE_FORCE:-0}" != 1 ] && [ -f "$C/.stamp" ] && [ "$(cat "$C/.stamp")" = "$STAMP" ]; }

# The image config's "config": what every sandbox of the image starts with.
# MPLCONFIGDIR is in the image (1777, font cache built at build time) since
# /tmp is a fresh tmpfs in each sandbox and a cold font cache costs seconds.
# PIP_BREAK_SYSTEM_PACKAGES: Debian marks its python externally managed (PEP
# 668) and pip then refuses every install; a sandbox is disposable, so the
# model's own `pip install` must just work.  PIP_ROOT_USER_ACTION: no warning
# about root (the sandbox's root is no one's).  The npm ones keep npm from
# calling home for version and funding notices (there is no network).
image_config() {
	cat <<EOF
{
  "Env": [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    "MPLBACKEND=Agg",
    "MPLCONFIGDIR=/var/cache/matplotlib",
    "PIP_BREAK_SYSTEM_PACKAGES=1",
    "PIP_ROOT_USER_ACTION=ignore",
    "PIP_DISABLE_PIP_VERSION_CHECK=1",
    "NPM_CONFIG_UPDATE_NOTIFIER=false",
    "NPM_CONFIG_FUND=false"
  ],
  "Cmd": ["bash"],
  "WorkingDir": "/workspace",
  "Labels": {
    "sandbox.language": "$LANGUAGES",
    "org.opencontainers.image.title": "nsbox-default",
    "org.opencontainers.image.description": "Debian bookworm: python3 (numpy pandas scipy matplotlib pillow requests flask), nodejs, typescript, bash"
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
	[ "$(id -u)" = 0 ] || die "building needs root (mmdebstrap chroots to bake the font cache); run once as root"
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
	# shellcheck disable=SC2016 # the hooks' "$1" is expanded by mmdebstrap
	if ! mmdebstrap --variant=minbase --include="$pkgs" \
		--aptopt='Acquire::Retries "3"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/include/*' \
		--dpkgopt='path-exclude=/usr/lib/gcc/*' \
		--dpkgopt='path-exclude=/usr/libexec/gcc/*' \
		--dpkgopt='path-exclude=/usr/lib/*.a' \
		--customize-hook='mkdir -p "$1/workspace"' \
		--customize-hook="install -m 0755 '$D/nsbox-ts' \"\$1/usr/local/bin/nsbox-ts\"" \
		--customize-hook='install -d -m 1777 "$1/var/cache/matplotlib"' \
		--customize-hook="chroot \"\$1\" env MPLBACKEND=Agg MPLCONFIGDIR=/var/cache/matplotlib python3 '-c' 'import matplotlib.pyplot as p; from matplotlib import font_manager as f; f.findfont(\"DejaVu Sans\", fallback_to_default=False)'" \
		--customize-hook='chmod a+r "$1"/var/cache/matplotlib/*' \
		--customize-hook='chroot "$1" /usr/local/bin/nsbox-ts --make-cache' \
		--customize-hook="chroot \"\$1\" /usr/local/bin/nsbox-ts -e 'const n: number = 1; console.log(n)' >/dev/null" \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
		bookworm "$w/rootfs.tar" "$MIRROR" >"$w/mmdebstrap.log" 2>&1; then
		tail -n 30 "$w/mmdebstrap.log" >&2 || true
		die "mmdebstrap failed (log above; mirror $MIRROR, set NSBOX_DEBIAN_MIRROR to change it)"
	fi
	say "rootfs in $(($(date +%s) - start))s; writing the OCI layout"
	python3 "$D/mklayout.py" "$w/rootfs.tar" "$t/oci" latest "$w/config.json"
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
