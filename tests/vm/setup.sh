#!/usr/bin/env bash
# Prepares what tests/vm/run.sh needs to boot a real cgroup v2 kernel under
# qemu (TCG): the Debian packages qemu-system-x86, busybox-static and cpio,
# and ONE Debian cloud kernel, unpacked into the cache
#   ${NSBOX_VM_CACHE:-/var/cache/nsbox/vm}
# Idempotent: a second run only checks and prints the cache's vm.env.
# The kernel is the concrete package that linux-image-cloud-amd64 depends on
# when the cache is first made; it is kept until NSBOX_VM_REFRESH=1.
#
#   tests/vm/setup.sh [--kernel NAME]
#
# --kernel NAME prepares another kernel beside the default one, cached in
# CACHE/NAME/ (its own vm.env; tests/vm/run.sh --kernel NAME boots it):
#   bullseye            Debian 11's cloud kernel (5.10): no overlayfs in a
#                       user namespace (5.11), no idmapped mounts (5.12)
#   bookworm-backports  the newest cloud kernel of bookworm-backports (6.12)
# The package comes from that suite through a private apt list in
# CACHE/NAME/apt (apt-get update/download with Dir::Etc::sourcelist and
# Dir::State::Lists pointed there): /etc/apt is never touched.
#
# vm.env (sourced by run.sh) records:
#   NSBOX_VM_KPKG     the kernel package, e.g. linux-image-6.1.0-56-cloud-amd64
#   NSBOX_VM_KVERSION its Debian version
#   NSBOX_VM_KREL     the kernel release (uname -r in the guest)
#   NSBOX_VM_KERNEL   path of vmlinuz
#   NSBOX_VM_MODDIR   path of lib/modules/<release> (the whole tree is kept)
#   NSBOX_VM_CONFIG   path of the kernel's config
#   NSBOX_VM_BUSYBOX  a statically linked busybox
set -euo pipefail

CACHE=${NSBOX_VM_CACHE:-/var/cache/nsbox/vm}
KNAME=
case ${1:-} in
--kernel) KNAME=${2:?--kernel wants a name}; shift 2 ;;
--kernel=*) KNAME=${1#*=}; shift ;;
esac
SUITE=
case $KNAME in
'') ;;
bullseye) SUITE=bullseye ;;
bookworm-backports) SUITE=bookworm-backports ;;
*) echo "vm-setup: unknown kernel '$KNAME' (bullseye, bookworm-backports)" >&2; exit 2 ;;
esac
[ -n "$KNAME" ] && CACHE=$CACHE/$KNAME
ENVFILE=$CACHE/vm.env
# apt, on the system's lists or (for --kernel) on a private list of SUITE.
APT_OPTS=()
if [ -n "$SUITE" ]; then
	APT_OPTS=(-o "Dir::Etc::sourcelist=$CACHE/apt/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$CACHE/apt/lists" -o "Dir::Cache=$CACHE/apt/cache")
fi

log() { echo "vm-setup: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || [ -r "$ENVFILE" ] || die "must run as root the first time (installs packages, writes $CACHE)"

# ---- packages --------------------------------------------------------------
need_pkgs=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_pkgs+=(qemu-system-x86)
command -v cpio >/dev/null 2>&1 || need_pkgs+=(cpio)
# busybox-static installs a statically linked /bin/busybox (it replaces the
# dynamic "busybox" package, which would not run without its libraries).
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need_pkgs+=(busybox-static)
command -v xz >/dev/null 2>&1 || need_pkgs+=(xz-utils)
# selftest.sh builds its helper with cc -static: gcc and libc.a.
command -v cc >/dev/null 2>&1 || need_pkgs+=(gcc)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || need_pkgs+=(libc6-dev)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "missing packages (${need_pkgs[*]}): run this as root"
	log "installing ${need_pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends "${need_pkgs[@]}" >/tmp/nsbox-vm-apt.$$ 2>&1; then
		log "apt-get install failed; running apt-get update and retrying"
		apt-get update >/tmp/nsbox-vm-apt.$$ 2>&1 || {
			cat /tmp/nsbox-vm-apt.$$ >&2
			rm -f /tmp/nsbox-vm-apt.$$
			die "apt-get update failed"
		}
		apt-get install -y --no-install-recommends "${need_pkgs[@]}" >/tmp/nsbox-vm-apt.$$ 2>&1 || {
			cat /tmp/nsbox-vm-apt.$$ >&2
			rm -f /tmp/nsbox-vm-apt.$$
			die "apt-get install ${need_pkgs[*]} failed"
		}
	fi
	rm -f /tmp/nsbox-vm-apt.$$
fi

# ---- kernel ----------------------------------------------------------------
env_ok() {
	[ -r "$ENVFILE" ] || return 1
	(
		# shellcheck disable=SC1090
		. "$ENVFILE"
		[ -r "${NSBOX_VM_KERNEL:-}" ] && [ -d "${NSBOX_VM_MODDIR:-}" ] &&
			[ -r "${NSBOX_VM_CONFIG:-}" ] && [ -x "${NSBOX_VM_BUSYBOX:-}" ]
	)
}

if [ "${NSBOX_VM_REFRESH:-0}" != 1 ] && env_ok; then
	cat "$ENVFILE"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "the kernel cache is missing or incomplete: run this as root"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
# Another setup may have finished while this one waited for the lock.
if [ "${NSBOX_VM_REFRESH:-0}" != 1 ] && env_ok; then
	cat "$ENVFILE"
	exit 0
fi

# The concrete kernel package that the cloud metapackage points at (never a
# glob: apt-get download with a pattern fetches every version there is).
resolve_kpkg() {
	apt-cache "${APT_OPTS[@]}" depends linux-image-cloud-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n1
}
if [ -n "$SUITE" ]; then
	mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial"
	echo "deb http://deb.debian.org/debian $SUITE main" >"$CACHE/apt/sources.list"
	id _apt >/dev/null 2>&1 && chown -R _apt "$CACHE/apt/lists" "$CACHE/apt/cache"
	log "apt-get update of a private list: $SUITE"
	apt-get "${APT_OPTS[@]}" update >/dev/null 2>&1 || die "apt-get update of $SUITE failed"
fi
kpkg=$(resolve_kpkg)
if [ -z "$kpkg" ] && [ -z "$SUITE" ]; then
	log "linux-image-cloud-amd64 is not in the package lists; running apt-get update"
	apt-get update >/dev/null 2>&1 || die "apt-get update failed"
	kpkg=$(resolve_kpkg)
fi
[[ "$kpkg" =~ ^linux-image-[0-9][0-9a-z.+-]*-cloud-amd64$ ]] ||
	die "could not resolve the package behind linux-image-cloud-amd64 (got '$kpkg')"

work=$(mktemp -d "$CACHE/.setup.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
# apt drops privileges to _apt for downloads: let it write here.
id _apt >/dev/null 2>&1 && chown _apt "$work"
log "downloading $kpkg"
(cd "$work" && apt-get "${APT_OPTS[@]}" download "$kpkg" >/dev/null) || die "apt-get download $kpkg failed"
deb=$(find "$work" -maxdepth 1 -name "${kpkg}_*.deb" | head -n1)
[ -n "$deb" ] || die "apt-get download left no .deb for $kpkg"
kversion=$(dpkg-deb -f "$deb" Version)
mkdir "$work/tree"
dpkg -x "$deb" "$work/tree"
vmlinuz=$(find "$work/tree/boot" -maxdepth 1 -name 'vmlinuz-*' | head -n1)
[ -n "$vmlinuz" ] || die "$kpkg has no boot/vmlinuz-*"
krel=${vmlinuz##*/vmlinuz-}
[ -d "$work/tree/lib/modules/$krel" ] || die "$kpkg has no lib/modules/$krel"
[ -r "$work/tree/boot/config-$krel" ] || die "$kpkg has no boot/config-$krel"
rm -f "$deb"

# Index of modules: "name path-relative-to-MODDIR deps,comma,separated".
# (The package has no modules.dep: depmod runs at install time.)  Read from
# each module's .modinfo; compressed modules are indexed by their real name.
(
	cd "$work/tree/lib/modules/$krel"
	find kernel -type f \( -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' -o -name '*.ko.gz' \) | LC_ALL=C sort |
		while read -r f; do
			case $f in
			*.ko) cat -- "$f" ;;
			*.ko.xz) xz -dc -- "$f" ;;
			*.ko.zst) zstd -dc -- "$f" ;;
			*.ko.gz) gzip -dc -- "$f" ;;
			esac | tr '\0' '\n' | awk -v f="$f" '
				/^name=/ { n = substr($0, 6) }
				/^depends=/ { d = substr($0, 9) }
				END {
					if (n == "") { n = f; sub(/.*\//, "", n); sub(/\.ko.*$/, "", n); gsub(/-/, "_", n) }
					print n, f, (d == "" ? "-" : d)
				}'
		done
) >"$work/modules.index"

# Swap the new kernel in.
rm -rf "$CACHE/kernel" "$CACHE/modules.index"
mv "$work/tree" "$CACHE/kernel"
mv "$work/modules.index" "$CACHE/modules.index"
cat >"$ENVFILE.new" <<EOF
NSBOX_VM_KPKG=$kpkg
NSBOX_VM_KVERSION=$kversion
NSBOX_VM_KREL=$krel
NSBOX_VM_KERNEL=$CACHE/kernel/boot/vmlinuz-$krel
NSBOX_VM_MODDIR=$CACHE/kernel/lib/modules/$krel
NSBOX_VM_CONFIG=$CACHE/kernel/boot/config-$krel
NSBOX_VM_MODINDEX=$CACHE/modules.index
NSBOX_VM_BUSYBOX=/bin/busybox
EOF
mv "$ENVFILE.new" "$ENVFILE"

# Report how the features a container runtime needs are built.
cfg=$CACHE/kernel/boot/config-$krel
for opt in USER_NS PID_NS NET_NS UTS_NS IPC_NS TIME_NS SECCOMP SECCOMP_FILTER CGROUPS MEMCG CGROUP_PIDS \
	CGROUP_SCHED CFS_BANDWIDTH BLK_CGROUP CPUSETS CGROUP_BPF OVERLAY_FS TMPFS DEVTMPFS; do
	v=$(sed -n "s/^CONFIG_$opt=//p" "$cfg")
	log "CONFIG_$opt=${v:-n}"
done
log "ready: $kpkg $kversion ($krel) in $CACHE"
cat "$ENVFILE"
