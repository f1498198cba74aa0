#!/usr/bin/env bash
# Builds nsbox's default python image from Debian packages (no registry
# needed: mmdebstrap, then an OCI layout) and pulls it into the store.
# Usage: images/default-image.sh [NSBOX_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
NSBOX=${1:-build/nsbox}
F=${NSBOX_FIXTURES:-/var/cache/nsbox/fixtures}
tests/fixtures/build.sh >&2
"$NSBOX" pull "oci:$F/oci/python:latest"
"$NSBOX" tag "oci:$F/oci/python:latest" localhost/nsbox-python:latest
echo "default image: localhost/nsbox-python:latest"
