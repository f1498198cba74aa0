#!/usr/bin/env bash
# Builds a container image of nsbox itself as an OCI layout (tag latest),
# from Debian bookworm packages: mmdebstrap's minbase plus the few runtime
# libraries build/nsbox loads dynamically (libmnl0, libmicrohttpd12 for
# serve --http), skopeo (nsbox pulls through it) and ca-certificates for
# registry pulls; then nsbox, its seccomp profiles, the entrypoint, and a
# sandbox image preloaded as an OCI layout that the entrypoint imports into
# the store volume on first start.  `make container-image` runs it.
#
#   deploy/container/build.sh [--nsbox BIN] [--preload OCI_LAYOUT[:TAG]] [--out DIR]
#
#   --nsbox BIN      the nsbox binary (default build/nsbox)
#   --preload L:T    the sandbox image to preload (default: the default image,
#                    built or reused by images/default/build.sh; tests pass
#                    the busybox fixture so they stay fast)
#   --out DIR        where the layout goes (default build/container/oci)
#
# The Debian rootfs tarball is cached in $NSBOX_CONTAINER_CACHE (default
# /var/cache/nsbox/container), keyed by the package list, so a rebuild
# costs seconds.  Prints the layout's path.  Needs root (mmdebstrap, umoci).
set -euo pipefail
cd "$(dirname "$0")/../.."
NSBOX=build/nsbox
PRELOAD=
OUT=build/container/oci
while [ $# -gt 0 ]; do
	case $1 in
	--nsbox) NSBOX=$2; shift 2 ;;
	--preload) PRELOAD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "usage: $0 [--nsbox BIN] [--preload OCI_LAYOUT[:TAG]] [--out DIR]" >&2; exit 2 ;;
	esac
done
say() { printf 'container-image: %s\n' "$*" >&2; }
die() { printf 'container-image: error: %s\n' "$*" >&2; exit 1; }
[ -x "$NSBOX" ] || die "no nsbox binary at $NSBOX (make first)"
export SOURCE_DATE_EPOCH=1700000000 LC_ALL=C
umask 022

# Only what build/nsbox needs at run time: libmnl0 (ldd build/nsbox lists
# libc and libmnl; the rest is linked in), libmicrohttpd12 (dlopen()ed by
# serve --http), skopeo (nsbox pulls through it),
# ca-certificates (registries over https).  No uidmap: inside a container
# nsbox runs as the container's root and writes id maps itself.
PACKAGES="libmnl0,libmicrohttpd12,ca-certificates,skopeo"
CACHE=${NSBOX_CONTAINER_CACHE:-/var/cache/nsbox/container}
KEY=$(printf '%s %s %s' "$PACKAGES" "$(sed -n '/^\tmmdebstrap/,/bookworm/p' "$0" | sha256sum)" "${NSBOX_DEBIAN_MIRROR:-}" | sha256sum | cut -c1-16)
BASE=$CACHE/base-$KEY.tar
if ! [ -s "$BASE" ]; then
	mkdir -p "$CACHE"
	say "mmdebstrap minbase + $PACKAGES (once)"
	# No documentation, and no CNI plugins: skopeo's dependency
	# golang-github-containers-common pulls them in (44 MB) for podman.
	mmdebstrap --quiet --format=tar --variant=minbase --include="$PACKAGES" \
		--aptopt='APT::Install-Recommends "false"' \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/lib/cni/*' \
		bookworm "$BASE.tmp" ${NSBOX_DEBIAN_MIRROR:+"$NSBOX_DEBIAN_MIRROR"} >&2 ||
		die "mmdebstrap failed"
	mv "$BASE.tmp" "$BASE"
fi

if [ -z "$PRELOAD" ]; then
	PRELOAD="$(images/default/build.sh):latest"
fi
PRELOAD_DIR=${PRELOAD%:*}
PRELOAD_TAG=${PRELOAD##*:}
if [ "$PRELOAD_DIR" = "$PRELOAD" ]; then PRELOAD_TAG=latest; fi
[ -f "$PRELOAD_DIR/index.json" ] || die "--preload: $PRELOAD_DIR is not an OCI layout"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nsbox-ctr.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
umoci init --layout "$WORK/oci"
umoci new --image "$WORK/oci:latest"
umoci unpack --image "$WORK/oci:latest" "$WORK/bundle" >/dev/null
R=$WORK/bundle/rootfs
tar -C "$R" -xf "$BASE"
install -D -m 0755 "$NSBOX" "$R/usr/local/bin/nsbox"
# nsbox-tls (TLS termination for secrets and method/path rules) next to
# nsbox, where the broker looks first; libssl3 comes with ca-certificates
# (openssl).
if [ -x "$(dirname "$NSBOX")/nsbox-tls" ]; then
	install -D -m 0755 "$(dirname "$NSBOX")/nsbox-tls" "$R/usr/local/bin/nsbox-tls"
else
	say "no nsbox-tls next to $NSBOX: the image cannot terminate TLS (secrets, method/path rules)"
fi
install -D -m 0755 deploy/container/entrypoint.sh "$R/usr/local/bin/nsbox-entrypoint"
mkdir -p "$R/usr/share/nsbox/seccomp-profiles" "$R/var/lib/nsbox"
cp seccomp-profiles/*.json "$R/usr/share/nsbox/seccomp-profiles/" 2>/dev/null || true
# The preloaded image, as a one-tag OCI layout the entrypoint pulls from.
skopeo copy --quiet "oci:$PRELOAD_DIR:$PRELOAD_TAG" "oci:$R/usr/share/nsbox/preload:latest" >&2 ||
	die "cannot copy $PRELOAD"
umoci repack --image "$WORK/oci:latest" "$WORK/bundle" >/dev/null
umoci config --image "$WORK/oci:latest" \
	--config.entrypoint /usr/local/bin/nsbox-entrypoint \
	--config.cmd serve --config.cmd --http --config.cmd 0.0.0.0:8080 \
	--config.env NSBOX_STORE=/var/lib/nsbox \
	--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--config.volume /var/lib/nsbox \
	--config.exposedports 8080/tcp \
	--config.workingdir / \
	--config.label org.opencontainers.image.title=nsbox \
	--config.label "org.opencontainers.image.description=nsbox serve --http; see docs/container.md"
umoci gc --layout "$WORK/oci"
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
mv "$WORK/oci" "$OUT"
say "$(du -sh "$OUT" | cut -f1) at $OUT (tag latest)"
echo "$OUT"
