#!/usr/bin/env bash
# Boots SCRIPT as root in a throw-away qemu VM (TCG) running Debian's cloud
# kernel, with a pure cgroup v2 hierarchy, and exits with SCRIPT's status.
#
#   tests/vm/run.sh [options] -- SCRIPT [ARGS...]
#
#   --mem MB            guest memory (default 1024; the initramfs is unpacked
#                       into RAM, so a big --add needs more)
#   --smp N             guest CPUs (default 2)
#   --timeout SEC       host-side limit for the whole boot (default 300):
#                       qemu is killed and run.sh exits 124
#   --add HOST[:GUEST]  copy a file or directory into the guest (recursively,
#                       modes kept, owned by root); GUEST defaults to HOST's
#                       absolute path.  For every ELF file among them, the
#                       shared libraries ldd names and the dynamic loader are
#                       copied too, at the same paths, with the host's
#                       /etc/ld.so.cache.  Libraries loaded with dlopen()
#                       (NSS, gconv, plugins) are not seen: --add them.
#   --data HOST[:GUEST] the same without the library scan (big trees,
#                       foreign root filesystems such as image rootfs)
#   --module NAME       load this kernel module too (default: overlay); its
#                       dependencies come along; busybox modprobe works
#   --env NAME=VALUE    export this in the guest's environment
#   --kernel NAME       boot another cached kernel instead of the default
#                       (bullseye = Debian 11's 5.10, bookworm-backports =
#                       6.12; tests/vm/setup.sh --kernel NAME fetches it)
#   --cpu MODEL         qemu's -cpu (default max; "max,-cx16" avoids a TCG
#                       fault in 6.12's SLUB, see host_profiles.sh)
#   --kernel-log FILE   keep the kernel's console log there
#   --append ARGS       more kernel command line (e.g. loglevel=7)
#   --suite NAME        the suite that boots this guest: names the FAIL
#                       line of a sanitizer report (below); default vm
#   -v, --verbose       print timings (initramfs build, boot) on stderr
#
# The guest: busybox (static) for every usual command, merged /usr; proc,
# sysfs, devtmpfs, devpts, /dev/shm, tmpfs on /tmp and /run (what --add put
# there is moved onto them); cgroup2 on /sys/fs/cgroup (nsdelegate) with
# +cpuset +cpu +io +memory +pids enabled for children; loopback up; hostname
# nsbox-vm; user tester (uid/gid 1000, home /home/tester) with
# tester:100000:65536 in /etc/subuid and /etc/subgid; `as-tester CMD ARGS`
# runs a command as tester.  / is a bind mount over the initramfs, so
# pivot_root works as on a real system.  NSBOX_VM=1 is set.  The test
# reporter tests/lib/guest.sh is /usr/lib/nsbox-test/guest.sh: SCRIPT sets
# SUITE and sources it (pass NAME, fail NAME REASON, finish).
# SCRIPT runs as `/bin/sh /test.sh ARGS` in /, as root, stdin /dev/null, its
# stdout and stderr on the second serial port, which run.sh streams to its
# stdout, followed by the marker line NSBOX_VM_EXIT=<status>.  Kernel
# messages go to the first serial port (--kernel-log), not to stdout.
#
# Sanitizer reports: the guest's nsbox runs with ASAN_OPTIONS and
# UBSAN_OPTIONS naming /run/nsbox-sanitizer/report (and NSBOX_SANITIZER_DIR
# that directory, for sandboxes' init and builtins), so that a report from
# a process whose output SCRIPT swallows still lands there; after SCRIPT,
# each file there is printed (NSBOX_VM_SANITIZER_REPORT FILE, then the
# file).  run.sh then scans all the guest's output for a sanitizer report
# (its first line: "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
# "runtime error:", "SUMMARY: ...Sanitizer") and prints
#   FAIL: SUITE/vm_sanitizer/GUEST: the first such line
# (GUEST: SCRIPT's name, and the --kernel's), the report as # lines.
# Processes started with env -i report on their stderr, with status 99.
#
# Exit status: SCRIPT's; 124 on timeout; 125 when the guest never printed
# the marker (kernel panic, initramfs too big for --mem, ...); 99 when
# SCRIPT passed but the guest's output holds a sanitizer report; 2 on
# usage errors or when the initramfs cannot be built.  Needs tests/vm/setup.sh
# once (as root); then works for any user.  TMPDIR is honoured.
set -uo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${NSBOX_VM_CACHE:-/var/cache/nsbox/vm}

usage() {
	sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}
die() {
	echo "vm: $*" >&2
	exit 2
}

MEM=1024
SMP=2
TIMEOUT=300
VERBOSE=0
KLOG=
KNAME=
CPU=max
APPEND=
SUITE_NAME=vm
adds=()     # "scan|HOST|GUEST"
modules=(overlay)
envs=()
while [ $# -gt 0 ]; do
	case $1 in
	--mem) MEM=${2:?}; shift 2 ;;
	--mem=*) MEM=${1#*=}; shift ;;
	--smp) SMP=${2:?}; shift 2 ;;
	--smp=*) SMP=${1#*=}; shift ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--timeout=*) TIMEOUT=${1#*=}; shift ;;
	--add | --data)
		[ $# -ge 2 ] || usage
		kind=scan; [ "$1" = --data ] && kind=data
		spec=$2; shift 2
		host=${spec%%:*}
		if [ "$host" = "$spec" ]; then guest=; else guest=${spec#*:}; fi
		[ -e "$host" ] || die "--add: $host does not exist"
		host=$(cd "$(dirname "$host")" && echo "$PWD/$(basename "$host")")
		[ -n "$guest" ] || guest=$host
		case $guest in /*) ;; *) die "--add: guest path must be absolute: $guest" ;; esac
		adds+=("$kind|$host|$guest")
		;;
	--module) modules+=("${2:?}"); shift 2 ;;
	--env)
		[[ "${2:-}" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env wants NAME=VALUE"
		envs+=("$2"); shift 2 ;;
	--kernel-log) KLOG=${2:?}; shift 2 ;;
	--kernel) KNAME=${2:?}; shift 2 ;;
	--cpu) CPU=${2:?}; shift 2 ;;
	--kernel=*) KNAME=${1#*=}; shift ;;
	--append) APPEND="$APPEND ${2:?}"; shift 2 ;;
	--suite) SUITE_NAME=${2:?}; shift 2 ;;
	-v | --verbose) VERBOSE=1; shift ;;
	-h | --help) usage ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
SCRIPT=$1
shift
if ! [ -f "$SCRIPT" ] || ! [ -r "$SCRIPT" ]; then
	die "cannot read $SCRIPT"
fi
SCRIPT=$(cd "$(dirname "$SCRIPT")" && echo "$PWD/$(basename "$SCRIPT")")
[[ "$MEM" =~ ^[0-9]+$ ]] || die "--mem wants megabytes"
[[ "$SMP" =~ ^[0-9]+$ ]] || die "--smp wants a number"
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout wants seconds"

# ---- the cached kernel -------------------------------------------------------
KCACHE=$CACHE
if [ -n "$KNAME" ]; then
	[[ "$KNAME" =~ ^[a-z0-9-]+$ ]] || die "--kernel wants a name such as bullseye"
	KCACHE=$CACHE/$KNAME
fi
if ! [ -r "$KCACHE/vm.env" ]; then
	"$HERE/setup.sh" ${KNAME:+--kernel "$KNAME"} >/dev/null || die "tests/vm/setup.sh ${KNAME:+--kernel $KNAME }failed"
fi
# shellcheck disable=SC1091
. "$KCACHE/vm.env"
[ -r "$NSBOX_VM_KERNEL" ] || die "no kernel at $NSBOX_VM_KERNEL: run tests/vm/setup.sh"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing: run tests/vm/setup.sh"
command -v cpio >/dev/null || die "cpio is missing: run tests/vm/setup.sh"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsbox-vm.XXXXXX") || die "cannot make a temporary directory"
QEMU_PIDFILE=$TMP/qemu.pid
# shellcheck disable=SC2317 # (called from the traps)
stop_qemu() {
	local pid
	[ -s "$QEMU_PIDFILE" ] || return 0
	pid=$(cat "$QEMU_PIDFILE" 2>/dev/null) || return 0
	# Only our own qemu: the pid file could be stale.
	if [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = qemu-system-x86 ]; then
		kill -TERM "$pid" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "$QEMU_PIDFILE"
}
# shellcheck disable=SC2317
cleanup() {
	stop_qemu
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 130' INT
trap 'cleanup; trap - EXIT; exit 143' TERM HUP

t_build0=$(now)
R=$TMP/root
mkdir -p "$R"
cd "$R" || die "cannot enter $R"

# ---- layout: merged /usr, like the Debian host -------------------------------
mkdir -p usr/bin usr/sbin usr/lib usr/lib64 usr/local/bin usr/local/sbin \
	dev proc sys tmp run root home/tester etc/nsbox-vm mnt var/tmp
ln -s usr/bin bin
ln -s usr/sbin sbin
ln -s usr/lib lib
ln -s usr/lib64 lib64
chmod 1777 tmp var/tmp
chmod 700 root
# (Only root can make these; without them the kernel warns once, and /init
# works all the same since devtmpfs is mounted before any output.)
mknod -m 600 dev/console c 5 1 2>/dev/null
mknod -m 666 dev/null c 1 3 2>/dev/null

# ---- busybox -----------------------------------------------------------------
cp "$NSBOX_VM_BUSYBOX" usr/bin/busybox
"$NSBOX_VM_BUSYBOX" --list-full | while read -r applet; do
	case $applet in
	bin/busybox | usr/bin/busybox) continue ;;
	esac
	# Resolve bin/ and sbin/ through the merged-usr links.
	case $applet in
	bin/*) p=usr/$applet ;;
	sbin/*) p=usr/$applet ;;
	*) p=$applet ;;
	esac
	[ -e "$p" ] || [ -L "$p" ] || ln -s /usr/bin/busybox "$p"
done

# ---- kernel modules ----------------------------------------------------------
# modules.index (from setup.sh): "name path-under-MODDIR dep,dep|-".
declare -A mod_path=() mod_deps=()
mod_order=() # dependencies before the modules that need them
add_module() { # NAME
	local name=${1//-/_} line d
	[ -n "${mod_path[$name]:-}" ] && return 0
	line=$(awk -v n="$name" '$1 == n { print $2, $3; exit }' "$NSBOX_VM_MODINDEX")
	if [ -z "$line" ]; then
		# Built into the kernel: nothing to load.
		grep -q "/$name.ko\$" "$NSBOX_VM_MODDIR/modules.builtin" 2>/dev/null && return 0
		grep -q "/${name//_/-}.ko\$" "$NSBOX_VM_MODDIR/modules.builtin" 2>/dev/null && return 0
		die "kernel module $name not found in $NSBOX_VM_KPKG"
	fi
	mod_path[$name]=${line%% *}
	mod_deps[$name]=${line#* }
	[ "${mod_deps[$name]}" = - ] && mod_deps[$name]=
	for d in ${mod_deps[$name]//,/ }; do
		add_module "$d"
	done
	mod_order+=("$name")
}
# closure NAME: NAME's dependencies, transitively, one per line.
closure() {
	local d
	for d in ${mod_deps[$1]//,/ }; do
		[ -n "${mod_path[$d]:-}" ] || continue # built in
		echo "$d"
		closure "$d"
	done
}
plain() { # a module's path without a compression suffix
	local p=${1%.xz}
	p=${p%.zst}
	echo "${p%.gz}"
}
for m in "${modules[@]}"; do add_module "$m"; done
kmods=lib/modules/$NSBOX_VM_KREL
mkdir -p "$kmods"
: >"$kmods/modules.dep"
: >etc/nsbox-vm/modules
for name in ${mod_order[@]+"${mod_order[@]}"}; do
	p=${mod_path[$name]}
	src=$NSBOX_VM_MODDIR/$p
	dst=$(plain "$p")
	mkdir -p "$kmods/$(dirname "$dst")"
	# busybox insmod cannot read compressed modules: store them plain.
	case $p in
	*.ko.xz) xz -dc "$src" >"$kmods/$dst" ;;
	*.ko.zst) zstd -qdc "$src" >"$kmods/$dst" ;;
	*.ko.gz) gzip -dc "$src" >"$kmods/$dst" ;;
	*) cp "$src" "$kmods/$dst" ;;
	esac || die "cannot copy module $p"
	echo "/$kmods/$dst" >>etc/nsbox-vm/modules
	# modules.dep as kmod writes it (all dependencies, the last one to be
	# loaded first), so modprobe works in the guest too.
	deps=
	for i in $(seq $((${#mod_order[@]} - 1)) -1 0); do
		d=${mod_order[$i]}
		if closure "$name" | grep -qx "$d"; then
			deps="$deps $(plain "${mod_path[$d]}")"
		fi
	done
	echo "$dst:$deps" >>"$kmods/modules.dep"
done
for f in modules.builtin modules.order; do
	[ -r "$NSBOX_VM_MODDIR/$f" ] && cp "$NSBOX_VM_MODDIR/$f" "$kmods/"
done

# ---- --add ---------------------------------------------------------------------
elves=()
for a in ${adds[@]+"${adds[@]}"}; do
	IFS='|' read -r kind host guest <<<"$a"
	dst=$R$guest
	mkdir -p "$(dirname "$dst")" || die "cannot create $(dirname "$guest") in the guest"
	if [ -d "$host" ] && [ -d "$dst" ]; then
		cp -a "$host/." "$dst/" || die "cannot copy $host"
	else
		cp -aH "$host" "$dst" || die "cannot copy $host"
	fi
	[ "$kind" = scan ] || continue
	# ELF files among them (a builtin read of 4 bytes each: no fork per file).
	while IFS= read -r -d '' f; do
		IFS= read -r -N 4 magic <"$f" 2>/dev/null || continue
		[ "$magic" = $'\x7fELF' ] && elves+=("$f")
	done < <(find -H "$host" -type f -print0)
done
if [ "${#elves[@]}" -gt 0 ]; then
	# The libraries ldd resolves (=> /path) and the loader (a bare /path).
	printf '%s\0' "${elves[@]}" | xargs -0 -r ldd >"$TMP/ldd" 2>/dev/null
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(0x/ { print $1 }' "$TMP/ldd" |
		sort -u >"$TMP/libs"
	# (A foreign binary's unknown libraries are its own business: warn only.)
	awk '/:$/ { f = $0 } $2 == "=>" && $3 == "not" { print "vm: warning: " (f == "" ? "an added ELF file" : f) " needs " $1 ", which ldd cannot find" }' \
		"$TMP/ldd" | sort -u >&2
	while IFS= read -r lib; do
		[ -e "$R$lib" ] && continue
		mkdir -p "$R$(dirname "$lib")"
		cp -L "$lib" "$R$lib" || die "cannot copy library $lib"
	done <"$TMP/libs"
	# The host's loader cache, for libraries outside the default directories
	# (its entries for libraries left out only fall through to the default).
	if [ -s "$TMP/libs" ] && [ -r /etc/ld.so.cache ] && ! [ -e etc/ld.so.cache ]; then
		cp /etc/ld.so.cache etc/ld.so.cache
	fi
fi

# ---- script, arguments, environment ---------------------------------------------
cp "$SCRIPT" test.sh || die "cannot copy $SCRIPT"
chmod 755 test.sh
# The guests' reporter (pass, fail, finish: tests/lib/guest.sh), for SCRIPT
# to source.
mkdir -p usr/lib/nsbox-test && cp "$HERE/../lib/guest.sh" usr/lib/nsbox-test/guest.sh ||
	die "cannot copy tests/lib/guest.sh"
squote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
	for arg in "$@"; do
		squote "$arg"
		printf ' '
	done
	echo
} >etc/nsbox-vm/args
{
	for e in ${envs[@]+"${envs[@]}"}; do
		printf 'export %s=' "${e%%=*}"
		squote "${e#*=}"
		echo
	done
} >etc/nsbox-vm/env

# ---- users, hosts ------------------------------------------------------------------
cat >etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
tester:x:1000:1000:tester:/home/tester:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >etc/group <<'EOF'
root:x:0:
tty:x:5:
tester:x:1000:
nogroup:x:65534:
EOF
cat >etc/shadow <<'EOF'
root:*:19000:0:99999:7:::
tester:*:19000:0:99999:7:::
nobody:*:19000:0:99999:7:::
EOF
chmod 640 etc/shadow
echo 'tester:100000:65536' >etc/subuid
echo 'tester:100000:65536' >etc/subgid
echo nsbox-vm >etc/hostname
printf '127.0.0.1\tlocalhost nsbox-vm\n::1\tlocalhost ip6-localhost\n' >etc/hosts
: >etc/resolv.conf
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >etc/nsswitch.conf
echo "$NSBOX_VM_KREL" >etc/nsbox-vm/kernel
# as-tester CMD [ARGS...]: run CMD as the unprivileged user tester.
cat >usr/bin/as-tester <<'EOF2'
#!/bin/sh
# Runs CMD ARGS as tester (uid/gid 1000), with its HOME and XDG_RUNTIME_DIR.
[ $# -ge 1 ] || { echo "usage: as-tester CMD [ARGS...]" >&2; exit 2; }
export XDG_RUNTIME_DIR=/run/user/1000
exec su -s /bin/sh -c 'cd "$HOME" && exec "$@"' -- tester as-tester "$@"
EOF2
chmod 755 usr/bin/as-tester

# ---- /init ----------------------------------------------------------------------
cat >init <<'EOF'
#!/bin/sh
# Stage 1: the initramfs is the kernel's rootfs, which pivot_root refuses to
# leave; bind it onto itself and chroot into that, so the guest's / is an
# ordinary mount, as on a real system.
if [ "${NSBOX_VM_STAGE:-1}" = 1 ]; then
	/bin/mount --bind / /mnt && cd /mnt && /bin/mount --move . / &&
		NSBOX_VM_STAGE=2 exec /usr/sbin/chroot . /init
	echo "nsbox-vm: could not re-root the initramfs; going on without" >/dev/console
fi
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8 NSBOX_VM=1
unset NSBOX_VM_STAGE
umask 022
cd /
mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o nosuid,mode=755 devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
# tmpfs on /tmp and /run, keeping whatever --add put there.
tmpfs_on() {
	mount -t tmpfs -o "nosuid,nodev,mode=$2" tmpfs /mnt || return
	for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
		if [ -e "$f" ] || [ -L "$f" ]; then mv "$f" /mnt/; fi
	done
	mount --move /mnt "$1"
}
tmpfs_on /tmp 1777
tmpfs_on /run 755
# Sanitizer reports (run.sh's header): every user may write here.
mkdir -m 1777 /run/nsbox-sanitizer
export NSBOX_SANITIZER_DIR=/run/nsbox-sanitizer
export ASAN_OPTIONS="log_path=/run/nsbox-sanitizer/report:exitcode=99:halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="log_path=/run/nsbox-sanitizer/report:exitcode=99:halt_on_error=1:print_stacktrace=1"
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
klog() { echo "nsbox-vm: $* (uptime $(cut -d' ' -f1 /proc/uptime))" >/dev/ttyS0; }
klog "init"
mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup 2>/dev/null ||
	mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
ctl=
for c in cpuset cpu io memory pids; do
	grep -qw "$c" /sys/fs/cgroup/cgroup.controllers && ctl="$ctl +$c"
done
echo "$ctl" >/sys/fs/cgroup/cgroup.subtree_control
while read -r m; do
	insmod "$m" || echo "nsbox-vm: insmod $m failed" >/dev/ttyS0
done </etc/nsbox-vm/modules
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
hostname nsbox-vm
mkdir -p /run/user/1000
chown 1000:1000 /home/tester /run/user/1000
chmod 700 /run/user/1000
chmod 755 /home/tester
. /etc/nsbox-vm/env
# The script's output: the second serial port, without \n -> \r\n.
out=/dev/ttyS1
stty -F $out -opost -echo 2>/dev/null
eval "set -- $(cat /etc/nsbox-vm/args)"
klog "test start"
/bin/sh /test.sh "$@" </dev/null >$out 2>&1
rc=$?
klog "test end ($rc)"
for f in /run/nsbox-sanitizer/*; do
	[ -f "$f" ] || continue
	echo "NSBOX_VM_SANITIZER_REPORT $f"
	cat "$f"
done >$out 2>&1
echo "NSBOX_VM_EXIT=$rc" >$out
sync
poweroff -f
# No ACPI power-off: a reboot ends qemu too (-no-reboot).
reboot -f
EOF
chmod 755 init

# ---- pack --------------------------------------------------------------------------
INITRD=$TMP/initrd.gz
chmod 755 .
find . | sort | cpio -o -H newc -R 0:0 --reproducible --quiet 2>"$TMP/cpio.err" |
	gzip -1 -n >"$INITRD"
if [ "${PIPESTATUS[2]}" -ne 0 ] || ! [ -s "$INITRD" ]; then
	cat "$TMP/cpio.err" >&2
	die "could not build the initramfs"
fi
cd /
payload_kb=$(du -sk "$R" | awk '{ print $1 }')
rm -rf "$R"
t_build1=$(now)
initrd_kb=$(($(stat -c %s "$INITRD") / 1024))
[ "$VERBOSE" = 1 ] && echo "vm: initramfs ${payload_kb} KiB (${initrd_kb} KiB gzip) built in $(elapsed "$t_build0" "$t_build1") s" >&2
if [ $((payload_kb * 2 / 1024 + 160)) -gt "$MEM" ]; then
	echo "vm: warning: the initramfs unpacks to $((payload_kb / 1024)) MiB; --mem $MEM may be too small" >&2
fi

# ---- boot ----------------------------------------------------------------------------
KLOGFILE=$TMP/kernel.log
OUT=$TMP/out.log
t_boot0=$(now)
# A guest kernel that panics before the test starts (TCG: "Oops: int3" in
# an interrupt, once in a CI run, 4 s into the boot) is booted once more,
# said on stderr; a panic after "test start" is the test's, never retried.
for boot in 1 2; do
{
	timeout -k 5 "$TIMEOUT" qemu-system-x86_64 \
		-accel tcg -cpu "$CPU" -smp "$SMP" -m "$MEM" \
		-nodefaults -no-user-config -display none -no-reboot \
		-monitor none -serial "file:$KLOGFILE" -serial stdio \
		-pidfile "$QEMU_PIDFILE" \
		-kernel "$NSBOX_VM_KERNEL" -initrd "$INITRD" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 oops=panic$APPEND" \
		</dev/null 2>"$TMP/qemu.err"
	echo $? >"$TMP/qemu.rc"
} | tee "$OUT" &
wait $!
if [ "$boot" = 1 ] && ! grep -aq '^NSBOX_VM_EXIT=' "$OUT" && ! grep -aq 'nsbox-vm: test start' "$KLOGFILE" &&
	grep -aqE 'Kernel panic|Oops: ' "$KLOGFILE"; then
	echo "vm: the guest kernel panicked before the test started; booting once more: $(grep -aE -m1 'Oops: |Kernel panic' "$KLOGFILE" | tr -d '\r' | cut -c1-160)" >&2
	rm -f "$QEMU_PIDFILE"
	continue
fi
break
done
t_boot1=$(now)
qrc=$(cat "$TMP/qemu.rc" 2>/dev/null || echo 125)
rm -f "$QEMU_PIDFILE"
[ -n "$KLOG" ] && cp "$KLOGFILE" "$KLOG"

if [ "$VERBOSE" = 1 ]; then
	echo "vm: boot to poweroff $(elapsed "$t_boot0" "$t_boot1") s (qemu exit $qrc); guest:" >&2
	grep -a '^nsbox-vm: ' "$KLOGFILE" | tr -d '\r' | sed 's/^/vm:   /' >&2
fi

# A sanitizer report anywhere in the guest's output fails the boot, the
# guest named (header), whatever else happened.
pattern='ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|LeakSanitizer has encountered|runtime error: |SUMMARY: [A-Za-z]*Sanitizer'
sanitized=0
if tr -d '\r' <"$OUT" | grep -aqE "$pattern"; then
	sanitized=1
	guest=$(basename "$SCRIPT" .sh)${KNAME:+-$KNAME}
	first=$(tr -d '\r' <"$OUT" | grep -aE -m1 "$pattern" | sed 's/^==[0-9]*==//' | cut -c1-200)
	echo "FAIL: $SUITE_NAME/vm_sanitizer/$guest: a sanitizer report in the guest: $first"
	tr -d '\r' <"$OUT" | grep -aE -A40 "$pattern|^NSBOX_VM_SANITIZER_REPORT " | head -80 | sed 's/^/# /'
fi

if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm: timed out after $TIMEOUT s; qemu killed" >&2
	echo "vm: last kernel messages:" >&2
	tail -n 15 "$KLOGFILE" | tr -d '\r' | sed 's/^/vm:   /' >&2
	exit 124
fi
status=$(tr -d '\r' <"$OUT" | sed -n 's/^NSBOX_VM_EXIT=\([0-9][0-9]*\)$/\1/p' | tail -n1)
if [ -z "$status" ]; then
	echo "vm: the guest ended without reporting a status (qemu exit $qrc)" >&2
	[ -s "$TMP/qemu.err" ] && sed 's/^/vm: qemu: /' "$TMP/qemu.err" >&2
	echo "vm: last kernel messages:" >&2
	tail -n 25 "$KLOGFILE" | tr -d '\r' | sed 's/^/vm:   /' >&2
	if grep -aqi -e 'initramfs unpacking failed' -e 'deadlocked on memory' -e 'out of memory' \
		-e 'allocation failure' "$KLOGFILE"; then
		echo "vm: the guest ran out of memory: the initramfs unpacks to $((payload_kb / 1024)) MiB; raise --mem (now $MEM)" >&2
	fi
	exit 125
fi

[ "$sanitized" = 1 ] && [ "$status" = 0 ] && exit 99
exit "$status"
