#!/usr/bin/env bash
# nested (issue #31, docs/nested.md): the real CI workflows inside a nested
# sandbox of the CI image (localhost/nsbox-ci:latest, images/ci/), as root
# and as the unprivileged user nsboxtest.  One sandbox per user, `nsbox
# create --nested --net $REGISTRY`, shared by the cases as one CI job shares
# its machine; each case is one `nsbox exec` of tests/nested/cases.sh
# (mounted read-only at /t), timed here:
#   podman_run          podman run --rm of the run's registry's busybox
#                       (docker:// through the egress broker)
#   compose             docker-compose 1.29 up through DOCKER_HOST: httpd and
#                       a client that fetches from it by service name
#   testcontainers      the npm testcontainers package (installed once on the
#                       host, cached in /var/cache/nsbox, given read-only):
#                       GenericContainer, getHost/getMappedPort, stop
#   buildah_bud         buildah bud (FROM the registry; RUN; COPY), then run
#   nsbox_strict        nsbox inside: strict limits refused (no cgroup there)
#   nsbox_best_effort   nsbox inside with --limits best-effort: runs, says so
#   published_port_from_host  a nested container's published port (podman
#                       run -d -p 8089) reached from the host only through
#                       the sandbox's own `create -p 127.0.0.1:HP:8089`
# and, as root, the nested profile's chroot rule dropped: buildah's named error.
# Each asserts on a random token that went through the nested container.
# Needs /dev/net/tun usable by any id (Debian's 0666; .ci/run sets it): the
# bridge network (compose), published ports (Testcontainers) and buildah's
# RUN use slirp4netns; without it those cases fail ("slirp4netns failed:
# open("/dev/net/tun") ...") and the "# ROOT: ... ready" line quotes the
# warning of `nsbox create` that names the fix.  Rootless here means
# best-effort limits: --memory is RLIMIT_AS, hence 32g (docs/nested.md).
SUITE=nested
. "$(dirname "$0")/../lib.sh"
require_registry

LOGS=$T/logs
W=$T/work # what the sandbox sees at /t, /opt/tc, /opt/nsbox
mkdir -p "$LOGS" "$W/bin" "$T/bin"
IMG=localhost/nsbox-ci:latest
TC_VERSION=10.28.0 # node >= 14; 11.x and 12.x want a newer node than bookworm's 18
TC=${NSBOX_TESTCONTAINERS:-/var/cache/nsbox/testcontainers-$TC_VERSION}
BOX=
BOX_OWNER=
cleanup() {
	if [ -n "$BOX" ]; then
		if [ "$BOX_OWNER" = root ]; then "$NSBOX" --store "$T/store" rm "$BOX" >/dev/null 2>&1
		else as_user "$T/bin/nsbox" --store "$T/rl-store" rm "$BOX" >/dev/null 2>&1; fi
	fi
	# NSBOX_NESTED_LOGS=DIR keeps each case's whole output
	[ -n "${NSBOX_NESTED_LOGS:-}" ] && cp -r "$LOGS/." "$NSBOX_NESTED_LOGS/"
	cleanup_test_dir
}
trap cleanup EXIT
as_user() { runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
	NSBOX_LIMITS=best-effort "$@"; }
ms() { echo $((${EPOCHREALTIME/[.,]/} / 1000)); }
short() { printf '%s' "$1" | tail -c 600 | tr '\n' ' '; }

# -- fixtures: the CI image, testcontainers, the files -----------------------------
# (built once per run by tests/run.sh; found current in its cache here)
if ! CI_LAYOUT=$("$ROOT/images/ci/build.sh" 2>"$LOGS/ci-image.log"); then
	fail setup "images/ci/build.sh failed: $(tail -3 "$LOGS/ci-image.log" | tr '\n' ' ')"
	finish
fi
# testcontainers from the npm registry, once per machine (a lock: suites of
# two runs may race), without install scripts (ssh2's optional native
# module is not needed: it falls back to JavaScript).
if [ ! -e "$TC/node_modules/testcontainers/package.json" ]; then
	mkdir -p "$(dirname "$TC")"
	(
		flock 9
		if [ ! -e "$TC/node_modules/testcontainers/package.json" ]; then
			rm -rf "$TC.tmp" && mkdir -p "$TC.tmp" &&
				echo '{"name":"nsbox-nested-test","private":true}' >"$TC.tmp/package.json" &&
				(cd "$TC.tmp" && npm install --no-audit --no-fund --ignore-scripts "testcontainers@$TC_VERSION") &&
				chmod -R a+rX "$TC.tmp" && rm -rf "$TC" && mv "$TC.tmp" "$TC"
		fi
	) 9>"$TC.lock" >"$LOGS/npm.log" 2>&1
fi
if [ ! -e "$TC/node_modules/testcontainers/package.json" ]; then
	fail setup "npm install testcontainers@$TC_VERSION failed: $(tail -3 "$LOGS/npm.log" | tr '\n' ' ')"
	finish
fi
# nsbox inside is the production binary (an ASan build's runtime is not in
# the CI image).
cp -r "$ROOT/tests/nested/." "$W/" && install -m 755 "${NSBOX_PLAIN:-$NSBOX}" "$W/bin/nsbox" &&
	install -m 755 "$NSBOX" "$T/bin/nsbox" && install -m 755 "$(dirname "$NSBOX")/nsbox-newidmap" "$T/bin/" ||
	{ fail setup "cannot copy tests/nested and nsbox"; finish; }
chmod -R a+rX "$W"
MOUNTS=(-v "$W:/t" -v "$TC:/opt/tc" -v "$W/bin:/opt/nsbox" -v "$F/oci/busybox:/fx/busybox")
TUN=$(stat -c %a /dev/net/tun 2>/dev/null)
echo "# /dev/net/tun mode ${TUN:-absent} (bridge networks and published ports need 666)"

# nested_run WHO: the cases in one nested sandbox.  NS is the nsbox command
# line (array) for that user, STORE its store.
nested_run() {
	local who=$1 out t0 t1 token case rc HP got
	if ! out=$("${NS[@]}" pull --quiet "oci:$CI_LAYOUT:latest" 2>&1) ||
		! out=$("${NS[@]}" tag "oci:$CI_LAYOUT:latest" "$IMG" 2>&1); then
		fail "$who/create" "cannot pull the CI image: $(short "$out")"
		return
	fi
	t0=$(ms)
	# --memory: as root a cgroup limit; rootless here (no delegated cgroup,
	# best-effort) it is RLIMIT_AS, and Go (podman) and Node's WebAssembly
	# (ssh2 in testcontainers) reserve many GiB of address space.
	HP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	if ! BOX=$("${NS[@]}" create --nested --net "$REGISTRY" --memory "$MEM" --pids 1024 --disk 2g -p "127.0.0.1:$HP:8089" \
		"${MOUNTS[@]}" "$IMG" 2>"$LOGS/$who-create.err"); then
		BOX=
		fail "$who/create" "nsbox create --nested failed: $(short "$(cat "$LOGS/$who-create.err")")"
		return
	fi
	BOX_OWNER=$who
	t1=$(ms)
	out=$("${NS[@]}" exec "$BOX" -- sh -c 'echo "DOCKER_HOST=$DOCKER_HOST"; curl -s --unix-socket /run/podman/podman.sock http://d/_ping' 2>&1)
	if [ "$out" = $'DOCKER_HOST=unix:///run/podman/podman.sock\nOK' ]; then
		pass "$who/create"
	else
		fail "$who/create" "no Docker API at DOCKER_HOST: $(short "$out") :: $(short "$(cat "$LOGS/$who-create.err")")"
	fi
	echo "# $who: nested sandbox with its Docker API ready in $((t1 - t0)) ms $(short "$(cat "$LOGS/$who-create.err")")"
	for case in podman testcontainers compose buildah nsbox; do
		token=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
		t0=$(ms)
		out=$("${NS[@]}" exec --timeout 180 "$BOX" -- bash /t/cases.sh "$case" "$REGISTRY" "$token" 2>&1)
		rc=$?
		t1=$(ms)
		printf '%s\n' "$out" >"$LOGS/$who-$case.log"
		echo "# $who/$case: $((t1 - t0)) ms (exit $rc)"
		case $case in
		podman)
			if [ "$rc" = 0 ] && grep -qx "podman-ran-$token-42" <<<"$out"; then pass "$who/podman_run"
			else fail "$who/podman_run" "exit $rc: $(short "$out")"; fi ;;
		testcontainers)
			if [ "$rc" = 0 ] && grep -q "^tc: http://localhost:[0-9]*/ -> tc-web-$token in" <<<"$out"; then
				pass "$who/testcontainers"
			else fail "$who/testcontainers" "exit $rc: $(short "$out")"; fi ;;
		compose)
			if [ "$rc" = 0 ] && grep -q "client_1 *| compose-web-$token\$" <<<"$out"; then pass "$who/compose"
			else fail "$who/compose" "exit $rc: $(short "$out")"; fi ;;
		buildah)
			if [ "$rc" = 0 ] && grep -qx "built-by-buildah-RUN copied-$token" <<<"$out"; then pass "$who/buildah_bud"
			else fail "$who/buildah_bud" "exit $rc: $(short "$out")"; fi ;;
		nsbox)
			# No cgroup inside (an empty /sys/fs/cgroup): strict refuses, naming
			# the way out; best-effort runs in its own namespaces, says so, and
			# maps many ids (its newuidmap is nsbox's, served by the outer init).
			local strict=${out%%--- best-effort*} be=${out#*--- best-effort}
			if grep -q 'strict exit 125' <<<"$strict" && grep -q 'no usable cgroup' <<<"$strict" &&
				grep -q -- '--limits=best-effort' <<<"$strict" && ! grep -q strict-ran <<<"$strict"; then
				pass "$who/nsbox_strict"
			else fail "$who/nsbox_strict" "$(short "$strict")"; fi
			if grep -q 'best-effort exit 0' <<<"$be" && grep -q "\"stdout\":\"inner-$token\\\\n" <<<"$be" &&
				grep -q '"isolation":{"mode":"namespaces","missing":\[\]}' <<<"$be" &&
				grep -q '"limits":"best-effort: ' <<<"$be"; then
				pass "$who/nsbox_best_effort"
			else fail "$who/nsbox_best_effort" "$(short "$be")"; fi
			echo "# $who/nsbox: inner uid_map $(grep -o '"stdout":"[^"]*"' <<<"$be" | sed 's/.*uid_map//; s/\\n/ /g' | tr -s ' ')"
			;;
		esac
	done
	# A nested container's published port, from the host: only through the
	# sandbox's own publish (nested containers' ports land in the sandbox's
	# network namespace, never the host's).
	token=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
	out=$("${NS[@]}" exec --timeout 60 "$BOX" -- bash /t/cases.sh publish "$REGISTRY" "$token" 2>&1)
	got=$(curl -s -m 5 "http://127.0.0.1:$HP/www" 2>&1)
	if grep -qx published-up <<<"$out" && [ "$got" = "pub-$token" ]; then pass "$who/published_port_from_host"
	else fail "$who/published_port_from_host" "inside: $(short "$out") host got: $(short "$got")"; fi
	"${NS[@]}" exec --timeout 60 "$BOX" -- bash /t/cases.sh unpublish "$REGISTRY" "$token" >/dev/null 2>&1
	t0=$(ms)
	out=$("${NS[@]}" rm "$BOX" 2>&1) || fail "$who/create" "nsbox rm: $(short "$out")"
	echo "# $who: removed in $(($(ms) - t0)) ms"
	BOX=
}

# -- root --------------------------------------------------------------------------
NS=("$NSBOX" --store "$T/store")
MEM=2g
nested_run root

# The nested profile's chroot rule (added for buildah) is needed: without it
# the same build fails with the error its comment names (nested_runtime drops
# each of the other additions against podman run).
python3 - "$ROOT/seccomp-profiles" "$T/drop-chroot.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1] + "/nested.json"))
rule = [r for r in json.load(open(sys.argv[1] + "/nested-additions.json"))["rules"] if r["names"] == ["chroot"]][0]
d["syscalls"] = [x for x in d["syscalls"] if x.get("comment") != rule["comment"]]
json.dump(d, open(sys.argv[2], "w"))
EOF2
drop_chroot() {
	NSBOX_TEST_NESTED_PROFILE=$T/drop-chroot.json "${NS[@]}" run --nested --net "$REGISTRY" --memory "$MEM" \
		--pids 1024 --disk 2g "${MOUNTS[@]}" "$IMG" -- bash /t/cases.sh buildah "$REGISTRY" dropped 2>&1
}
t0=$(ms)
out=$(drop_chroot)
echo "# root/drop_chroot: $(($(ms) - t0)) ms"
# buildah's copier subprocess once died before it could report the refused
# chroot ("error decoding response from copier subprocess: EOF"): the
# named error is asked of one more run then, never waived.
if ! grep -q 'chrooting to directory' <<<"$out" && grep -q 'error decoding response from copier subprocess: EOF' <<<"$out"; then
	echo "# root/drop_chroot: buildah's copier died before reporting (EOF); once more"
	out=$(drop_chroot)
fi
if grep -q 'error in copier subprocess: chrooting to directory .*: operation not permitted' <<<"$out" && ! grep -q 'copied-dropped' <<<"$out"; then
	pass root/drop_chroot_fails_buildah_with_its_named_error
else
	fail root/drop_chroot_fails_buildah_with_its_named_error "$(short "$out")"
fi

# -- rootless ----------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
mkdir -p "$T/rl-store" && chown nsboxtest: "$T/rl-store" && chmod 700 "$T/rl-store"
NS=(as_user "$T/bin/nsbox" --store "$T/rl-store")
MEM=32g
nested_run rootless
as_user "$T/bin/nsbox" --store "$T/rl-store" rmi "$IMG" >/dev/null 2>&1
finish
