#!/usr/bin/env bash
# cgroup v2 enforcement, proved in a qemu VM (TCG) booting Debian's cloud
# kernel: this host's memory/pids/cpu controllers sit on cgroup v1.  The
# harness self-test runs first, then nsbox itself in the guest (as root, and
# as a user with a delegated cgroup), on a store built here.
SUITE=vm_cgroup_v2
. "$(dirname "$0")/../lib.sh"

# The harness proves the guest kernel enforces v2 limits at all.  (Its
# lines are vm/NAME; renamed under this suite: tests/run.sh counts a suite's
# results by their names.)
bash "$ROOT/tests/vm/selftest.sh" >"$T/selftest.out" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP)' "$T/selftest.out" | sed -E 's#^(PASS|FAIL|SKIP): vm/#\1: vm_cgroup_v2/selftest/#'
if [ "$rc" != 0 ] && ! grep -q '^FAIL: ' "$T/selftest.out"; then
	fail vm_selftest "tests/vm/selftest.sh exited $rc without a FAIL line: $(tail -3 "$T/selftest.out" | tr '\n' ' ')"
fi

PROBE=$T/probe # (its own: suites run side by side)
"$ROOT/tests/probe/build.sh" "$PROBE" ||
	{ fail setup "cannot build the probe"; finish; }
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bb" "$PROBE:/usr/local/bin/probe"

# root's store, and the tester's: a rootless single-id store whose files all
# belong to the user (uid 1000 in the guest).
mkdir -p "$T/disk"
"$NSBOX" --store "$T/disk/root" pull --quiet "oci:$T/bb:latest" >/dev/null || { fail setup "pull"; finish; }
img=$("$NSBOX" --store "$T/disk/root" images --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["digest"][7:19])')
cp -a "$T/disk/root" "$T/disk/tester"
rm -rf "$T/disk/tester/sandboxes" "$T/disk/tester/cache"
chown -R 1000:1000 "$T/disk/tester"
mke2fs -q -t ext4 -d "$T/disk" "$T/store.img" 128M || { fail setup "mke2fs"; finish; }

"$ROOT/tests/vm/run.sh" --suite "$SUITE" --mem 768 --timeout 240 --module loop \
	--add "$NSBOX:/usr/local/bin/nsbox" --data "$T/store.img:/store.img" \
	-- "$ROOT/tests/vm/guest-nsbox.sh" "$img" >"$T/guest.out" 2>&1
rc=$?
grep -E '^(PASS|FAIL)' "$T/guest.out"
# tests/vm/guest-nsbox.sh prints one line for each of its 16 checks.
n=$(grep -cE '^(PASS|FAIL): vm_cgroup_v2/' "$T/guest.out")
if [ "$n" != 16 ]; then
	fail guest_ran_every_check "$n of 16 results (exit $rc): $(tail -5 "$T/guest.out" | tr '\n' ' ')"
fi
finish
