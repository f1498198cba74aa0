#!/usr/bin/env bash
# Builds nsbox's default image from Debian bookworm packages (python3 with
# numpy, pandas, scipy, matplotlib, pillow, requests; nodejs; TypeScript;
# sh, bash) with images/default/build.sh, which caches the OCI layout, and
# pulls it into the store as localhost/nsbox-default:latest, also tagged
# localhost/nsbox-python:latest.  See docs/default-image.md.
# Usage: images/default-image.sh [NSBOX_BINARY [GLOBAL_OPTION...]]
#   e.g. images/default-image.sh build/nsbox --store /tmp/store
set -euo pipefail
cd "$(dirname "$0")/.."
NSBOX=${1:-build/nsbox}
shift || true
LAYOUT=$(images/default/build.sh)
"$NSBOX" "$@" pull "oci:$LAYOUT:latest" >&2
"$NSBOX" "$@" tag "oci:$LAYOUT:latest" localhost/nsbox-default:latest
"$NSBOX" "$@" tag "oci:$LAYOUT:latest" localhost/nsbox-python:latest
echo "default image: localhost/nsbox-default:latest (also localhost/nsbox-python:latest)"
# Root's default store is shared (images/shared.c): say what that gives.
if [ "$(id -u)" = 0 ] && [ $# = 0 ] && [ -z "${NSBOX_STORE:-}" ]; then
	echo "in root's store /var/lib/nsbox: every user's nsbox imports it from there on first use" \
		"(unless share-images = false in /etc/nsbox/nsbox.conf; docs/store.md)"
fi
