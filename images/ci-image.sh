#!/usr/bin/env bash
# Builds nsbox's CI image from Debian bookworm packages (podman, buildah,
# skopeo, docker-compose, git, gcc, make, nodejs, npm) with images/ci/build.sh,
# which caches the OCI layout, and pulls it into the store as
# localhost/nsbox-ci:latest: the image for nested sandboxes (docs/nested.md).
# Usage: images/ci-image.sh [NSBOX_BINARY [GLOBAL_OPTION...]]
#   e.g. images/ci-image.sh build/nsbox --store /tmp/store
set -euo pipefail
cd "$(dirname "$0")/.."
NSBOX=${1:-build/nsbox}
shift || true
LAYOUT=$(images/ci/build.sh)
"$NSBOX" "$@" pull "oci:$LAYOUT:latest" >&2
"$NSBOX" "$@" tag "oci:$LAYOUT:latest" localhost/nsbox-ci:latest
echo "CI image: localhost/nsbox-ci:latest (run it with --nested, docs/nested.md)"
