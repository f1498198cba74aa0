#!/usr/bin/env bash
# A local Debian archive for the package tests: a few small real packages
# from the host's apt (`apt-get download`: jq with its libraries libjq1 and
# libonig5, and hello; no maintainer scripts but ldconfig triggers), laid
# out as dists/bookworm/main/binary-ARCH + pool/ by apt-ftparchive, and
# signed (InRelease, Release.gpg) with a key made here, so that apt checks
# it as it checks a real mirror: nsbox never tells apt to trust a source
# (no [trusted=yes]); the operator gives the mirror's key (--apt-key).
#
#   tests/registries/apt.sh DIR      -> DIR/repo (the archive), DIR/key.asc
set -euo pipefail
D=${1:?usage: apt.sh DIR}
PKGS="jq libjq1 libonig5 hello"
ARCH=$(dpkg --print-architecture)
for c in apt-ftparchive:apt-utils gpg:gpg; do
	command -v "${c%%:*}" >/dev/null || {
		echo "apt.sh: missing ${c%%:*} (apt-get install -y ${c#*:})" >&2
		exit 1
	}
done
mkdir -p "$D/repo/pool/main" "$D/repo/dists/bookworm/main/binary-$ARCH" "$D/gnupg"
chmod 700 "$D/gnupg"
# apt-get download writes to the current directory; as root it warns that
# _apt cannot write there, harmlessly.
(cd "$D/repo/pool/main" && apt-get download -q $PKGS 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
for p in $PKGS; do
	ls "$D/repo/pool/main/${p}"_*.deb >/dev/null 2>&1 || {
		echo "apt.sh: apt-get download $p failed (apt-get update on the host?)" >&2
		exit 1
	}
done
cd "$D/repo"
apt-ftparchive packages pool >"dists/bookworm/main/binary-$ARCH/Packages"
gzip -9kn "dists/bookworm/main/binary-$ARCH/Packages"
apt-ftparchive -o APT::FTPArchive::Release::Suite=bookworm \
	-o APT::FTPArchive::Release::Codename=bookworm \
	-o APT::FTPArchive::Release::Components=main \
	-o APT::FTPArchive::Release::Architectures="$ARCH" \
	release dists/bookworm >dists/bookworm/Release
export GNUPGHOME=$D/gnupg
gpg -q --batch --passphrase '' --quick-gen-key 'nsbox test archive <archive@nsbox.test>' ed25519 sign never 2>/dev/null
gpg -q --batch --yes --clearsign -o dists/bookworm/InRelease dists/bookworm/Release
gpg -q --batch --yes -abs -o dists/bookworm/Release.gpg dists/bookworm/Release
gpg -q --batch --armor --export >"$D/key.asc"
gpgconf --kill gpg-agent 2>/dev/null || true
