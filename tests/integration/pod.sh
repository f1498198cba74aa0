#!/usr/bin/env bash
# nsbox inside a pod-like container: the image `make container-image`
# builds (here with the busybox fixture preloaded, plus the probe), run by
# Debian's crun in the cgroup v2 VM with a config.json that mimics a
# Kubernetes pod with hostUsers: false (65536 ids), procMount, a read-only
# or writable cgroupfs, and a seccomp profile.  One knob at a time:
#   full             deploy/seccomp/nsbox-pod.json, Unmasked /proc, rw cgroupfs,
#                    no added capability: doctor clean, real sandboxes, limits
#   sysadmin         the same with CAP_SYS_ADMIN (works too; not needed)
#   cgroup-ro        read-only cgroupfs: "cgroups degraded", strict refuses
#   masked           procMount Default: /proc cannot be mounted, reported
#   default-seccomp  the runtime default profile: clone refused, reported
#   default-sysadmin the default profile with CAP_SYS_ADMIN: pivot_root refused
#   drop-RULE        nsbox-pod.json without one of its additions: each one is
#                    needed (the profile is no wider than nsbox needs)
# Also: the image pushes to a registry with skopeo and pulls back, and runc
# runs it on this host (hybrid cgroups, which crun refuses).
# Docs: docs/container.md.
SUITE=pod
. "$(dirname "$0")/../lib.sh"

for rt in crun runc; do
	command -v $rt >/dev/null || { fail setup "$rt is missing (make deps)"; finish; }
done
# -- the image: busybox + probe preloaded, so the suite stays fast ----------
PROBE=$T/probe # (its own: suites run side by side)
"$ROOT/tests/probe/build.sh" "$PROBE" ||
	{ fail setup "cannot build the probe"; finish; }
python3 "$ROOT/tests/fixtures/add-layer.py" "$F/oci/busybox" "$T/bb" "$PROBE:/usr/local/bin/probe"
t0=$(date +%s)
if "$ROOT/deploy/container/build.sh" --nsbox "$NSBOX" --preload "$T/bb:latest" --out "$T/oci" >/dev/null 2>"$T/build.err"; then
	pass image_builds
else
	fail image_builds "$(tail -3 "$T/build.err" | tr '\n' ' ')"
	finish
fi
echo "pod: image built in $(($(date +%s) - t0)) s" >&2
cfg=$(umoci stat --image "$T/oci:latest" --json 2>/dev/null)
ep=$(skopeo inspect --config "oci:$T/oci:latest" 2>/dev/null)
if echo "$ep" | grep -q '"/usr/local/bin/nsbox-entrypoint"' && echo "$ep" | grep -q '"0.0.0.0:8080"' &&
	echo "$ep" | grep -q '"/var/lib/nsbox"'; then
	pass image_entrypoint_serves_http_store_volume
else
	fail image_entrypoint_serves_http_store_volume "$ep"
fi
: "$cfg"

# -- push and pull back with skopeo (the test registry, when run.sh has one) -
if [ -n "${REGISTRY:-}" ]; then
	if skopeo copy --quiet --dest-tls-verify=false "oci:$T/oci:latest" "docker://$REGISTRY/nsbox:latest" &&
		skopeo copy --quiet --src-tls-verify=false "docker://$REGISTRY/nsbox:latest" "oci:$T/pulled:latest"; then
		pass image_pushes_and_pulls_with_skopeo
	else
		fail image_pushes_and_pulls_with_skopeo "skopeo copy failed"
	fi
fi

# -- the pod's rootfs, ids shifted as a hostUsers:false pod's are ----------
D=$T/disk
mkdir -p "$D/cfg" "$D/pod"
umoci unpack --uid-map 0:200000:65536 --gid-map 0:200000:65536 --image "$T/oci:latest" "$D/bundle" >/dev/null ||
	{ fail setup "umoci unpack"; finish; }
chmod 755 "$D/bundle"
install -m 0755 "$ROOT/tests/vm/pod-inside.sh" "$D/pod/pod-inside.sh"
install -m 0644 "$ROOT/tests/lib/guest.sh" "$D/pod/guest.sh"
P=$ROOT/deploy/seccomp/nsbox-pod.json
DEFAULT=$T/runtime-default.json
# The runtime default the profile was derived from: the pod profile less
# nsbox's additions (exactly what seccomp-profiles/merge.py appended).
python3 - "$P" "$DEFAULT" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["syscalls"] = [r for r in p["syscalls"] if not (r.get("comment") or "").startswith("nsbox:")]
json.dump(p, open(sys.argv[2], "w"))
PY
variant() {
	local name=$1
	shift
	mkdir -p "$D/cfg/$name"
	python3 "$ROOT/deploy/container/pod-config.py" "$D/bundle/config.json" --idmap 200000 \
		--root /disk/bundle/rootfs --cgroups-path "/pod-$name" \
		--bind /tmp/store:/var/lib/nsbox --bind-ro /disk/pod:/pod "$@" \
		--args /bin/sh /pod/pod-inside.sh "$name" >"$D/cfg/$name/config.json" ||
		{ fail setup "pod-config.py $name"; finish; }
	echo "$name" >>"$D/variants"
}
variant full --proc unmasked --cgroup rw --seccomp "$P"
variant sysadmin --proc unmasked --cgroup rw --seccomp "$P" --sys-admin
variant cgroup-ro --proc unmasked --cgroup ro --seccomp "$P"
variant masked --proc masked --cgroup rw --seccomp "$P"
variant default-seccomp --proc unmasked --cgroup rw --seccomp "$DEFAULT"
variant default-sysadmin --proc unmasked --cgroup rw --seccomp "$DEFAULT" --sys-admin
n_add=0
for rule in $(python3 -c 'import json,sys; [print(r["names"][0]) for r in json.load(open(sys.argv[1]))["syscalls"] if (r.get("comment") or "").startswith("nsbox:")]' "$P"); do
	variant "drop-$rule" --proc unmasked --cgroup rw --seccomp "$P" --drop "$rule"
	n_add=$((n_add + 1))
done
# -- runc on this host (hybrid cgroups: crun refuses them, runc runs) -----
# The shipped profile and Unmasked /proc: sandboxes work; the host's v1
# controllers are not the container's to delegate, which nsbox reports.
mkdir -p "$T/runc" "$T/runc-store"
chown 200000:200000 "$T/runc-store"
python3 "$ROOT/deploy/container/pod-config.py" "$D/bundle/config.json" --idmap 200000 \
	--root "$D/bundle/rootfs" --proc unmasked --seccomp "$P" --bind "$T/runc-store:/var/lib/nsbox" \
	--args /bin/sh -c 'nsbox-entrypoint doctor; nsbox run --limits=best-effort localhost/nsbox-default -- sh -c "echo SANDBOX-RAN; grep Seccomp: /proc/self/status"' \
	>"$T/runc/config.json"
out=$(cd "$T/runc" && timeout 120 runc run "nsbox-pod-$$" 2>&1)
runc delete -f "nsbox-pod-$$" >/dev/null 2>&1
if echo "$out" | grep -qE '^ok +container +in a user namespace' &&
	echo "$out" | grep -qE '^SANDBOX-RAN$' && echo "$out" | grep -qE 'Seccomp:[[:space:]]+2'; then
	pass runc_sandbox_runs_inside
else
	fail runc_sandbox_runs_inside "$(echo "$out" | tail -8 | tr '\n' ' ')"
fi
if echo "$out" | grep -qE '^FAIL +cgroups +no usable cgroup'; then
	pass runc_hybrid_host_cgroups_reported
else
	fail runc_hybrid_host_cgroups_reported "$(echo "$out" | grep cgroups | tr '\n' ' ')"
fi

rm -f "$D/bundle/config.json"
mke2fs -q -t ext4 -d "$D" "$T/pod.img" 320M || { fail setup "mke2fs"; finish; }

t0=$(date +%s)
"$ROOT/tests/vm/run.sh" --suite "$SUITE" --mem 1536 --timeout 300 --module loop \
	--add "$(command -v crun):/usr/bin/crun" --data "$T/pod.img:/pod.img" \
	-- "$ROOT/tests/vm/guest-pod.sh" >"$T/guest.out" 2>&1
rc=$?
echo "pod: VM ran in $(($(date +%s) - t0)) s (exit $rc)" >&2
grep -E '^(PASS|FAIL)' "$T/guest.out"
n=$(grep -cE '^(PASS|FAIL): pod/' "$T/guest.out")
# full 12 (serve --http too), sysadmin 11, cgroup-ro 5, masked 3, the default profile 2 + 2,
# one per addition.
want=$((12 + 11 + 5 + 3 + 2 + 2 + n_add))
if [ "$n" -lt "$want" ]; then
	fail guest_ran_every_check "only $n of $want results (exit $rc): $(tail -8 "$T/guest.out" | tr '\n' ' ')"
fi
finish
