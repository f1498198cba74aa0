#!/usr/bin/env bash
# Builds the test image for the R and Java interpreters (docs/interpreters.md,
# "R" and "Java"): Debian bookworm minbase + r-base-core + a headless JDK
# (jshell), no Recommends, as an OCI layout, and prints the layout's path
# (tag latest).  tests/integration/interp_rjava.sh pulls it into a store of
# its own.  Not the default image: R and a JDK would add ~300 MiB to it.
#
#   tests/rjava_image/build.sh
#
# The recipe, its cache and its lock are images/debian-layout.sh's; this file
# says what is this image's own.  $C/.stamp covers every file in this
# directory.
#
# Environment:
#   NSBOX_RJAVA_IMAGE_CACHE  cache directory (default /var/cache/nsbox/rjava-image)
#   NSBOX_DEBIAN_MIRROR      mirror for mmdebstrap (default http://deb.debian.org/debian)
#   NSBOX_RJAVA_IMAGE_FORCE  set to 1 to rebuild even when the stamp matches
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAYOUT_NAME=rjava-image
C=${NSBOX_RJAVA_IMAGE_CACHE:-/var/cache/nsbox/rjava-image}
LAYOUT_FORCE=${NSBOX_RJAVA_IMAGE_FORCE:-0}
LAYOUT_WHY_ROOT="mmdebstrap"
# shellcheck source=images/debian-layout.sh
. "$D/../../images/debian-layout.sh"

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

# The JDK's postinst registers its man pages with update-alternatives,
# which fails without /usr/share/man/man1 (the pages themselves are left
# out), hence the essential hook.
# shellcheck disable=SC2016 # the hooks' "$1" is expanded by mmdebstrap
LAYOUT_ARGS=(
	--dpkgopt='path-exclude=/usr/share/R/doc/*'
	--dpkgopt='path-exclude=/usr/lib/jvm/*/lib/src.zip'
	--essential-hook='mkdir -p "$1/usr/share/man/man1"'
	--customize-hook='mkdir -p "$1/workspace"'
)

layout_main
