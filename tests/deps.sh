#!/usr/bin/env bash
# `make deps`: installs the Debian packages nsbox builds with, runs with and
# is tested with.  docs/dependencies.md says why each one is here.
set -eu
BUILD="gcc make pkg-config libc6-dev libjansson-dev libarchive-dev libssl-dev zlib1g-dev libzstd-dev libseccomp-dev libcap-dev libmnl-dev libmicrohttpd-dev libinih-dev"
RUNTIME="skopeo uidmap"
TESTS="clang-format mmdebstrap umoci docker-registry python3 ca-certificates bsdutils util-linux qemu-system-x86 criu busybox-static cpio e2fsprogs xz-utils bubblewrap clang libclang-rt-14-dev clang-19 libclang-rt-19-dev valgrind python3-matplotlib python3-pandas node-typescript apt-utils gpg openssl haproxy python3-yaml python3-websockets crun runc chromium podman"
if [ "$(id -u)" != 0 ]; then
	echo "make deps: run as root (sudo make deps)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# apt-cache knows nothing on a fresh machine until the lists are fetched.
if [ -z "$(find /var/lib/apt/lists -name '*Packages*' -newermt '-1 day' 2>/dev/null | head -1)" ]; then
	apt-get update -qq
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $BUILD $RUNTIME $TESTS >/dev/null
# The MCP tests drive nsbox with the official TypeScript SDK: Node 18+.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
echo "make deps: installed $BUILD $RUNTIME $TESTS (node $(node --version 2>/dev/null))"
