# Runs inside the cgroup v2 VM (booted by tests/integration/pod.sh): the
# nsbox container under crun, once per pod-like configuration in
# /disk/cfg/<variant>/config.json (written on the host by
# deploy/container/pod-config.py), each running /pod/pod-inside.sh VARIANT.
# /pod.img: ext4 with the container's rootfs (/bundle/rootfs, ids shifted
# to 200000..265535 as a user-namespaced pod's are) and the configs.
SUITE=pod
. "${GUEST_LIB:-/usr/lib/nsbox-test/guest.sh}"
modprobe loop 2>/dev/null
mkdir -p /disk
if ! mount -o loop /pod.img /disk; then
	fail setup "cannot mount /pod.img"
	finish
fi
# The store volume, owned by the pod's root; one for every variant (the
# first imports the preloaded image).
mkdir -p /tmp/store
chown 200000:200000 /tmp/store
for v in $(cat /disk/variants); do
	out=$(crun run --bundle "/disk/cfg/$v" "pod-$v" 2>&1)
	rc=$?
	echo "$out" | grep -E '^(PASS|FAIL)'
	if ! echo "$out" | grep -qE '^(PASS|FAIL)'; then
		fail "$v/container_ran" "crun exit $rc: $(echo "$out" | tail -5)"
	fi
	crun delete -f "pod-$v" >/dev/null 2>&1
done
finish
