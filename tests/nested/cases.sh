#!/usr/bin/env bash
# The workflows of tests/integration/nested.sh, run INSIDE a nested sandbox of
# the CI image (localhost/nsbox-ci:latest, docs/nested.md) by `nsbox exec BOX
# -- bash /t/cases.sh CASE REGISTRY TOKEN`.  This directory is mounted
# read-only at /t; node_modules of the npm testcontainers package at /opt/tc,
# nsbox's binary at /opt/nsbox, the busybox fixture's OCI layout at /fx/busybox.
# Each case prints what nested.sh asserts on (TOKEN in what a nested container
# served or built proves the data went through it) and exits non-zero on
# failure; nothing here decides PASS or FAIL.
#   podman          podman run --rm of REGISTRY/busybox (pulled through the broker)
#   compose         docker-compose up: httpd + a client fetching from it by name
#   testcontainers  node + testcontainers: GenericContainer, mapped port, stop
#   buildah         buildah bud (FROM the registry; RUN; COPY), then podman run
#   nsbox           nsbox run inside: strict limits refused, best-effort runs
#   publish         a detached container publishing 8089 (podman run -d -p):
#                   nested.sh fetches it from the host through `create -p`
#   unpublish       removes that container
set -u
CASE=$1 REG=$2 TOKEN=$3
export REG TOKEN
# The run's registry is plain HTTP: mark it insecure (a drop-in, as a CI job
# would for its own mirror).
mkdir -p /etc/containers/registries.conf.d
printf '[[registry]]\nlocation = "%s"\ninsecure = true\n' "$REG" >/etc/containers/registries.conf.d/50-test.conf

case $CASE in
publish)
	podman run -d --rm -p 8089:8089 --name "pub-$TOKEN" "$REG/busybox:latest" \
		sh -c "echo pub-$TOKEN >/www; exec httpd -f -p 8089 -h /" >/dev/null || exit 1
	for _ in $(seq 50); do
		[ "$(curl -s http://127.0.0.1:8089/www)" = "pub-$TOKEN" ] && echo "published-up" && exit 0
		sleep 0.1
	done
	exit 1
	;;
unpublish)
	podman rm -f -t 0 "pub-$TOKEN" >/dev/null
	;;
podman)
	podman run --rm "$REG/busybox:latest" sh -c "echo podman-ran-$TOKEN-\$((6 * 7))"
	;;
compose)
	# A project directory of its own (compose names the project after it).
	rm -rf /tmp/nsboxtest && mkdir /tmp/nsboxtest && cp /t/docker-compose.yml /tmp/nsboxtest/ && cd /tmp/nsboxtest || exit 1
	# -t 1: httpd as PID 1 ignores SIGTERM; without it the web service's stop
	# waits compose's 10 s default.
	docker-compose --ansi never up -t 1 --abort-on-container-exit --exit-code-from client
	rc=$?
	docker-compose --ansi never down -t 1 >/dev/null 2>&1
	exit "$rc"
	;;
testcontainers)
	# Ryuk (the reaper container) is pulled from Docker Hub and mounts the
	# Docker socket; nested containers die with the sandbox anyway.
	TESTCONTAINERS_RYUK_DISABLED=true TC_IMAGE=$REG/busybox:latest node /t/tc.js
	;;
buildah)
	rm -rf /tmp/bud && mkdir /tmp/bud && cp /t/Dockerfile /tmp/bud/ && echo "$TOKEN" >/tmp/bud/token.txt || exit 1
	# The image's /usr/local/bin/buildah runs Debian's inside podman's user
	# namespace (podman unshare): buildah 1.28 would write its id maps itself,
	# which the sandbox's root (no capability) may not (images/ci/buildah).
	buildah bud --build-arg "REG=$REG" -t localhost/nsboxtest-built:latest /tmp/bud || exit 1
	podman run --rm localhost/nsboxtest-built:latest
	;;
nsbox)
	export NSBOX_STORE=/tmp/inner-store
	/opt/nsbox/nsbox pull --quiet oci:/fx/busybox:latest >/dev/null || exit 1
	echo "--- strict"
	/opt/nsbox/nsbox run oci:/fx/busybox:latest -- echo strict-ran 2>&1
	echo "strict exit $?"
	echo "--- best-effort"
	/opt/nsbox/nsbox run --limits best-effort --json oci:/fx/busybox:latest -- \
		sh -c "echo inner-$TOKEN; cat /proc/self/uid_map" 2>&1
	echo "best-effort exit $?"
	;;
*)
	echo "cases.sh: unknown case $CASE" >&2
	exit 2
	;;
esac
