#!/usr/bin/env bash
# The hostile suite (tests/hostile/hostile.py): the threat model's cases
# through the CLI and the MCP server, as root and rootless, on this host;
# then the resource and kernel-surface cases that need a cgroup v2 kernel,
# in the qemu VM (tests/hostile/vm-guest.sh).  Sets up the images (busybox
# + the static probe, a setuid-root copy of it, and hostile /proc and /dev
# variants), both stores, and the canaries.  ONLY=REGEX runs matching cases
# (ONLY=egress: only the egress allow-list cases, tests/hostile/egress_cases.py).
# Every result line is also kept in $T/results: without ONLY, each front's
# count is checked against the case tables (tests/hostile/counts.py).  A
# harness that exits non-zero without a FAIL line is a FAIL.
SUITE=hostile
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
U=nsboxtest

PROBE=$T/probe # (its own: suites run side by side)
"$ROOT/tests/probe/build.sh" "$PROBE" ||
	{ fail setup "cannot build the probe"; finish; }

# Canaries: a secret file and a directory on the host that the sandboxes'
# symlinks aim at, owned by the rootless user (so that an escape as that
# user could read or write them).
mkdir -p "$T/canary-dir"
secret="nsbox-host-secret-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
echo "$secret" >"$T/canary-secret"
echo "$secret" >"$T/canary-dir/secret"
printf '\x89PNG\r\n\x1a\nhost canary picture %s' "$secret" >"$T/canary-dir/canary.png"
chown -R "$U" "$T/canary-dir" "$T/canary-secret"
chmod 600 "$T/canary-secret"

echo FAKE >"$T/fake"
# A 96 MiB file in an image layer: the disk cases race its copy-up.
yes nsbox-lower-layer | head -c $((96 << 20)) >"$T/big96"
add() { python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/img-$1" "${@:2}"; }
add probe "$PROBE:/usr/local/bin/probe" "$PROBE:/usr/local/bin/probe-suid:4755"
add procsym "symlink:/etc:/proc"
add devsym "symlink:/:/dev"
add fakeproc "$PROBE:/usr/local/bin/probe" "$T/fake:/proc/sys/kernel/core_pattern" "$T/fake:/proc/self/status"
add bigfile "$PROBE:/usr/local/bin/probe" "$T/big96:/data/big"
rm -f "$T/big96"
chmod -R a+rX "$T"

# Private copies: the binary canary must not see a rebuild of build/nsbox.
install -m 755 "$NSBOX" "$T/nsbox-rootless"
install -m 755 "$NSBOX" "$T/nsbox-root"
# Both stores on a filesystem of their own (a loop-mounted ext4 image): its
# free space moves only with what this suite's sandboxes write, so the
# host-side bound checked after every case is not blurred by other tests.
truncate -s 4G "$T/fs.img"
mkdir -p "$T/fs"
mkfs.ext4 -q -F "$T/fs.img" && mount -o loop "$T/fs.img" "$T/fs" ||
	{ fail setup "cannot mount a loop ext4 for the stores"; finish; }
unmount_fs() {
	mountpoint -q "$T/fs" && umount -l "$T/fs"
	cleanup_test_dir
}
trap unmount_fs EXIT
chmod 755 "$T/fs"
STORE=$T/fs/store
STORE_RL=$T/fs/store-rl
mkdir -p "$STORE_RL" && chown "$U" "$STORE_RL"
as_user() { runuser -u "$U" -- env -i PATH=/usr/bin:/bin HOME=/home/$U "$@"; }
for img in probe procsym devsym fakeproc bigfile; do
	"$NSBOX" --store "$STORE" pull --quiet "oci:$T/img-$img:latest" >/dev/null &&
		"$NSBOX" --store "$STORE" tag "oci:$T/img-$img:latest" "hostile-$img" &&
		as_user "$T/nsbox-rootless" --store "$STORE_RL" pull --quiet "oci:$T/img-$img:latest" >/dev/null &&
		as_user "$T/nsbox-rootless" --store "$STORE_RL" tag "oci:$T/img-$img:latest" "hostile-$img" ||
		{ fail setup "cannot pull $img"; finish; }
done

RESULTS=$T/results
: >"$RESULTS"
# harness NAME RC OUT: a harness (a Python driver, the VM) that exited RC
# with output OUT (a file): any status but 0 with no FAIL line in OUT is a
# FAIL of its own (Python exits 1 on an uncaught exception too).
harness() {
	if [ "$2" != 0 ] && ! grep -q '^FAIL: ' "$3"; then
		fail "$1" "exited $2 without a FAIL line: $(grep -v -E '^(PASS|FAIL|SKIP|#)' "$3" | tail -3 | tr '\n' ' ')"
	fi
}

# The rootless fronts' config: no shared image store (hostile.py, Front).
printf 'image-store =\n' >"$T/no-shared.conf" && chmod 644 "$T/no-shared.conf"
env NSBOX="$T/nsbox-root" NSBOX_RL="$T/nsbox-rootless" STORE="$STORE" STORE_RL="$STORE_RL" WORK="$T" \
	NO_SHARED_CONF="$T/no-shared.conf" IMAGE=hostile-probe PROCSYM_IMAGE=hostile-procsym DEVSYM_IMAGE=hostile-devsym BIGFILE_IMAGE=hostile-bigfile \
	FAKEPROC_IMAGE=hostile-fakeproc CANARY_ENV="nsbox-env-canary-$RANDOM$RANDOM" \
	CANARY_FILE="$T/canary-secret" CANARY_DIR="$T/canary-dir" ROOTLESS_USER=$U \
	timeout 1500 python3 "$ROOT/tests/hostile/hostile.py" 2>&1 | tee "$T/hostile.out" | grep -E '^(PASS|FAIL|SKIP|#)'
rc=${PIPESTATUS[0]}
grep -E '^(PASS|FAIL|SKIP): ' "$T/hostile.out" >>"$RESULTS"
_failures=$((_failures + $(grep -c '^FAIL: ' "$T/hostile.out")))
harness hostile_py "$rc" "$T/hostile.out"

# The egress allow-list's attacks (tests/hostile/egress_cases.py), root and
# rootless, with its own test image (a test CA trusted), servers and canaries.
if [ -z "${ONLY:-}" ] || [[ "$ONLY" == *egress* ]]; then
	mkdir -p "$T/egress-work" && chmod 755 "$T/egress-work"
	# The seal helper links the runtime (no CLI command seals a live sandbox);
	# the Makefile's LDLIBS, word-split on purpose.
	# shellcheck disable=SC2016
	libs=$(printf 'print-libs:\n\t@echo $(LDLIBS)\n' | make -s --no-print-directory -C "$ROOT" -f Makefile -f - print-libs)
	# shellcheck disable=SC2086
	cc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -O2 -o "$T/egress_seal" \
		"$ROOT/tests/hostile/egress_seal.c" "$ROOT/build/libnsbox.a" $libs ||
		fail egress/setup "cannot build tests/hostile/egress_seal.c"
	env NSBOX="$T/nsbox-root" NSBOX_RL="$T/nsbox-rootless" STORE="$STORE" STORE_RL="$STORE_RL" \
		WORK="$T/egress-work" PROBE="$PROBE" SEAL="$T/egress_seal" ROOTLESS_USER=$U ONLY="${ONLY:-}" \
		timeout 900 python3 "$ROOT/tests/hostile/egress_cases.py" 2>&1 | tee "$T/egress.out" | grep -E '^(PASS|FAIL|SKIP|#)'
	rc=${PIPESTATUS[0]}
	grep -E '^(PASS|FAIL|SKIP): ' "$T/egress.out" >>"$RESULTS"
	_failures=$((_failures + $(grep -c '^FAIL: ' "$T/egress.out")))
	harness egress_cases_py "$rc" "$T/egress.out"
fi

# Exposed ports and the preview proxy under attack (tests/hostile/services_cases.py),
# root and rootless: each case starts its own `nsbox serve --http`.
if [ -z "${ONLY:-}" ] || [[ "$ONLY" == *services* ]]; then
	mkdir -p "$T/services-work" && chmod 755 "$T/services-work"
	env NSBOX="$T/nsbox-root" NSBOX_RL="$T/nsbox-rootless" STORE="$STORE" STORE_RL="$STORE_RL" \
		WORK="$T/services-work" ROOTLESS_USER=$U ONLY="${ONLY:-}" \
		timeout 1200 python3 "$ROOT/tests/hostile/services_cases.py" 2>&1 | tee "$T/services.out" | grep -E '^(PASS|FAIL|SKIP|#)'
	rc=${PIPESTATUS[0]}
	grep -E '^(PASS|FAIL|SKIP): ' "$T/services.out" >>"$RESULTS"
	_failures=$((_failures + $(grep -c '^FAIL: ' "$T/services.out")))
	harness services_cases_py "$rc" "$T/services.out"
fi

# The host-side file attacks (file tools, copy_in/copy_out) and the protocol
# attacks, rootless: the same clients that tests/integration/mcp_stdio.sh
# runs as root, against a server run by the unprivileged user (raw_protocol.py
# with this suite's markers, tests/markers.md).
for img in python busybox; do
	as_user "$T/nsbox-rootless" --store "$STORE_RL" pull --quiet "oci:$F/oci/$img:latest" >/dev/null &&
		as_user "$T/nsbox-rootless" --store "$STORE_RL" tag "oci:$F/oci/$img:latest" "$img" ||
		fail mcp-rootless/setup "cannot pull $img"
done
mkdir -p "$T/mcp-logs" && chown "$U" "$T/mcp-logs"
for client in file_tools:files host_copy:host raw_protocol:protocol; do
	if [ -n "${ONLY:-}" ] && ! [[ "mcp-rootless/${client#*:}/" =~ $ONLY ]]; then
		continue
	fi
	out=$(cd "$ROOT/tests/mcp" && as_user NSBOX="$T/nsbox-rootless" NSBOX_STORE="$STORE_RL" NSBOX_LIMITS=best-effort \
		SUITE="hostile/mcp-rootless/${client#*:}" MCP_LOG_DIR="$T/mcp-logs" TMPDIR=/tmp RAW_MARKERS="3140 3145" \
		timeout 600 python3 "${client%:*}.py" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -E '^(PASS|FAIL|SKIP): ' | tee -a "$RESULTS"
	_failures=$((_failures + $(printf '%s\n' "$out" | grep -c '^FAIL: ')))
	if [ $rc != 0 ] && ! printf '%s' "$out" | grep -q '^FAIL: '; then
		fail "mcp-rootless/${client#*:}" "exited $rc: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
	fi
done

# The cases that need cgroup v2 or kernel features this host lacks, in the
# VM: root's store and a rootless single-id store (uid 1000 in the guest).
if [ -n "${ONLY:-}" ] && ! [[ vm/ =~ $ONLY ]]; then
	finish
fi
mkdir -p "$T/disk"
cp -a "$STORE" "$T/disk/root"
"$NSBOX" --store "$T/disk/root" rmi hostile-bigfile "oci:$T/img-bigfile:latest" >/dev/null 2>&1
# The egress cases' python image (tests/hostile/egress_cases.py): the guest
# runs none of them, and it alone would fill the guest's disk.
"$NSBOX" --store "$T/disk/root" rmi hostile-egress "oci:$T/egress-work/egress/img:latest" >/dev/null 2>&1
# Nor any of the exposed-port cases' (tests/hostile/services_cases.py): the
# python fixture.
"$NSBOX" --store "$T/disk/root" rmi "oci:$F/oci/python:latest" >/dev/null 2>&1
# Only what the guest needs: the image's 96 MiB layer and blob, workspaces
# the cases above left, sandboxes and caches would fill the 256 MiB disk
# (the stores are copied twice: root's and tester's).
"$NSBOX" --store "$T/disk/root" prune >/dev/null 2>&1
rm -rf "$T/disk/root/sandboxes" "$T/disk/root/cache" "$T/disk/root/workspaces"
echo "# vm: the guest's stores: $(du -sm "$T/disk/root" | cut -f1) MiB each"
img=$("$NSBOX" --store "$T/disk/root" inspect hostile-probe | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"][7:19])')
cp -a "$T/disk/root" "$T/disk/tester"
chown -R 1000:1000 "$T/disk/tester"
if ! mke2fs -q -t ext4 -d "$T/disk" "$T/store.img" 256M >/dev/null; then
	fail vm/setup "mke2fs"
	finish
fi
# Under ASan the guest also gets the uninstrumented binary, for the one case
# whose memory bound the ASan build's init does not fit (vm-guest.sh).
vm_asan=()
if [ "${NSBOX_ASAN:-0}" = 1 ]; then
	vm_asan=(--env NSBOX_ASAN=1 --add "${NSBOX_PLAIN:-$ROOT/build/nsbox}:/usr/local/bin/nsbox-plain")
fi
"$ROOT/tests/vm/run.sh" --mem 768 --timeout 300 --module loop "${vm_asan[@]}" \
	--add "$T/nsbox-root:/usr/local/bin/nsbox" --add "$PROBE:/usr/local/bin/probe" --data "$T/store.img:/store.img" \
	-- "$ROOT/tests/hostile/vm-guest.sh" "$img" >"$T/guest.out" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP)' "$T/guest.out" | tee -a "$RESULTS"
_failures=$((_failures + $(grep -c '^FAIL: ' "$T/guest.out")))
if [ "$rc" != 0 ] && ! grep -q '^FAIL: ' "$T/guest.out"; then
	fail vm/guest_ran_every_case "the guest exited $rc without a FAIL line: $(tail -5 "$T/guest.out" | tr '\n' ' ')"
fi
# Every front ran: each printed exactly its case table's number of lines.
if [ -z "${ONLY:-}" ]; then
	python3 "$ROOT/tests/hostile/counts.py" check "$RESULTS" >"$T/counts.out" 2>&1
	rc=$?
	cat "$T/counts.out"
	_failures=$((_failures + $(grep -c '^FAIL: ' "$T/counts.out")))
	harness counts "$rc" "$T/counts.out"
fi
finish
