#!/usr/bin/env bash
# Builds nsbox's default image as an OCI layout from Debian bookworm packages
# (the list in ./packages), offline from everything but the Debian mirror,
# and prints the layout's path (tag latest).  images/default-image.sh pulls
# it into a store; tests pull it from here.  See docs/default-image.md.
#
#   images/default/build.sh
#
# The recipe, its cache and its lock are images/debian-layout.sh's; this file
# says what is the default image's own: its config and its build hooks.
# $C/.stamp covers every file in images/default/, so a change to the package
# list, nsbox-ts or this file rebuilds.
#
# Environment:
#   NSBOX_DEFAULT_IMAGE_CACHE  cache directory (default /var/cache/nsbox/default-image)
#   NSBOX_DEBIAN_MIRROR        mirror for mmdebstrap (default http://deb.debian.org/debian)
#   NSBOX_DEFAULT_IMAGE_FORCE  set to 1 to rebuild even when the stamp matches
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAYOUT_NAME=default-image
C=${NSBOX_DEFAULT_IMAGE_CACHE:-/var/cache/nsbox/default-image}
LAYOUT_FORCE=${NSBOX_DEFAULT_IMAGE_FORCE:-0}
LAYOUT_WHY_ROOT="mmdebstrap chroots to bake the font cache"
# shellcheck source=images/debian-layout.sh
. "$D/../debian-layout.sh"

# The names execute_code knows (mcp/tools/languages.c), aliases included:
# the image is found by this label.
LANGUAGES="python,python3,javascript,node,typescript,ts,sh,bash"

# The image config's "config": what every sandbox of the image starts with.
# MPLCONFIGDIR is in the image (1777, font cache built at build time) since
# /tmp is a fresh tmpfs in each sandbox and a cold font cache costs seconds.
# PIP_BREAK_SYSTEM_PACKAGES: Debian marks its python externally managed (PEP
# 668) and pip then refuses every install; a sandbox is disposable, so the
# model's own `pip install` must just work.  PIP_ROOT_USER_ACTION: no warning
# about root (the sandbox's root is no one's).  The npm ones keep npm from
# calling home for version and funding notices (there is no network).
image_config() {
	cat <<JSON
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
JSON
}

# No headers, compiler internals or static libraries; the matplotlib font
# cache and nsbox-ts's TypeScript cache are built into the image, and
# nsbox-ts is tried once.
# shellcheck disable=SC2016 # the hooks' "$1" is expanded by mmdebstrap
LAYOUT_ARGS=(
	--dpkgopt='path-exclude=/usr/include/*'
	--dpkgopt='path-exclude=/usr/lib/gcc/*'
	--dpkgopt='path-exclude=/usr/libexec/gcc/*'
	--dpkgopt='path-exclude=/usr/lib/*.a'
	--customize-hook='mkdir -p "$1/workspace"'
	--customize-hook="install -m 0755 '$D/nsbox-ts' \"\$1/usr/local/bin/nsbox-ts\""
	--customize-hook='install -d -m 1777 "$1/var/cache/matplotlib"'
	--customize-hook="chroot \"\$1\" env MPLBACKEND=Agg MPLCONFIGDIR=/var/cache/matplotlib python3 '-c' 'import matplotlib.pyplot as p; from matplotlib import font_manager as f; f.findfont(\"DejaVu Sans\", fallback_to_default=False)'"
	--customize-hook='chmod a+r "$1"/var/cache/matplotlib/*'
	--customize-hook='chroot "$1" /usr/local/bin/nsbox-ts --make-cache'
	--customize-hook="chroot \"\$1\" /usr/local/bin/nsbox-ts -e 'const n: number = 1; console.log(n)' >/dev/null"
)

layout_main
