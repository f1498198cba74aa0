#!/usr/bin/env bash
# Builds nsbox's CI image as an OCI layout from Debian bookworm packages (the
# list in ./packages: podman, buildah, skopeo, docker-compose, git, gcc, node),
# offline from everything but the Debian mirror, and prints the layout's path
# (tag latest).  It is the image for nested sandboxes (docs/nested.md):
# images/ci-image.sh pulls it into a store as localhost/nsbox-ci:latest;
# tests/run.sh builds it once per run.
#
#   images/ci/build.sh
#
# The recipe, its cache and its lock are images/debian-layout.sh's; this file
# says what is the CI image's own: its config and its containers files.
# $C/.stamp covers every file in images/ci/, so a change to the package list,
# a config file or this file rebuilds.
#
# Environment:
#   NSBOX_CI_IMAGE_CACHE  cache directory (default /var/cache/nsbox/ci-image)
#   NSBOX_DEBIAN_MIRROR   mirror for mmdebstrap (default http://deb.debian.org/debian)
#   NSBOX_CI_IMAGE_FORCE  set to 1 to rebuild even when the stamp matches
set -euo pipefail
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAYOUT_NAME=ci-image
C=${NSBOX_CI_IMAGE_CACHE:-/var/cache/nsbox/ci-image}
LAYOUT_FORCE=${NSBOX_CI_IMAGE_FORCE:-0}
LAYOUT_WHY_ROOT="mmdebstrap's root mode keeps every file's owner"
# shellcheck source=images/debian-layout.sh
. "$D/../debian-layout.sh"

# The image config's "config": what every sandbox of the image starts with.
# No sandbox.language label: execute_code never picks this image by itself.
# DOCKER_HOST is not here: nsbox sets it when it starts the Docker API.
image_config() {
	cat <<'JSON'
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
JSON
}

# /var/lib/cni must exist: podman 4.3's rootless network namespace
# bind-mounts an empty directory over the nearest existing parent of it
# (without it /var/lib, hiding /var/lib/containers/storage/networks: every
# bridge network is then "network not found").
# shellcheck disable=SC2016 # the hooks' "$1" is expanded by mmdebstrap
LAYOUT_ARGS=(
	--customize-hook='mkdir -p "$1/workspace" "$1/var/lib/containers" "$1/var/lib/cni" "$1/etc/containers/registries.conf.d"'
	--customize-hook="install -m 0644 '$D/containers.conf' '$D/storage.conf' '$D/registries.conf' \"\$1/etc/containers/\""
	--customize-hook="install -m 0755 '$D/buildah' \"\$1/usr/local/bin/buildah\""
)

layout_main
