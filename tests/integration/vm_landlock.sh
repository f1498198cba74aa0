#!/usr/bin/env bash
# --isolation=landlock where it is meant to be used: a host on which the
# user can make no user namespace at all.  A qemu VM (TCG) boots Debian's
# 6.1 cloud kernel (Landlock ABI 2: no truncate, ioctl or signal scoping),
# turns kernel.unprivileged_userns_clone off, and runs
# tests/vm/guest-landlock.sh: namespaces mode refuses, landlock mode runs
# and confines, and what ABI 2 lacks is both reported and really absent.
SUITE=vm_landlock
. "$(dirname "$0")/../lib.sh"

PROBE=$T/probe # (its own: suites run side by side)
"$ROOT/tests/probe/build.sh" "$PROBE" ||
	{ fail setup "cannot build the probe"; finish; }

# The tester's store (single-id rootless layout, as vm_cgroup_v2's): an
# image, so that namespaces mode gets as far as making the sandbox.
mkdir -p "$T/disk"
"$NSBOX" --store "$T/disk/tester" pull --quiet "oci:$F/oci/busybox:latest" >/dev/null || { fail setup "pull"; finish; }
img=$("$NSBOX" --store "$T/disk/tester" images --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["digest"][7:19])')
rm -rf "$T/disk/tester/sandboxes" "$T/disk/tester/cache"
chown -R 1000:1000 "$T/disk/tester"
mke2fs -q -t ext4 -d "$T/disk" "$T/store.img" 64M >/dev/null 2>&1 || { fail setup "mke2fs"; finish; }

"$ROOT/tests/vm/run.sh" --suite "$SUITE" --mem 768 --timeout 240 --module loop \
	--add "$NSBOX:/usr/local/bin/nsbox" --add "$PROBE:/usr/local/bin/probe" \
	--data "$T/store.img:/store.img" \
	-- "$ROOT/tests/vm/guest-landlock.sh" "$img" >"$T/guest.out" 2>&1
rc=$?
grep -E '^(PASS|FAIL)' "$T/guest.out"
# tests/vm/guest-landlock.sh prints one line for each of its 17 checks.
n=$(grep -cE '^(PASS|FAIL): vm_landlock/' "$T/guest.out")
if [ "$n" != 17 ]; then
	fail guest_ran_every_check "$n of 17 results (exit $rc): $(tail -5 "$T/guest.out" | tr '\n' ' ')"
fi
finish
