#!/usr/bin/env bash
# nested_api (issue #31, boxes/nested.h, docs/nested.md): a nested sandbox's
# Docker API and the images handed in from the store.  Over MCP
# (tests/mcp/nested_api.py): sandbox_create {nested} refused without
# serve --allow-nested (the error names the flag), then GET /_ping answers OK,
# DOCKER_HOST is set, podman --remote and docker-compose work, a busybox image
# of the store given as nested_images runs with `podman run` and no network,
# nested_images without nested and a name the store lacks are refused, and
# the layout directory goes with the sandbox.  Through the CLI: `run --nested`
# starts the API before the command, --nested-image needs --nested, create +
# exec + rm keep DOCKER_HOST and remove the layout.  As root and as the
# unprivileged user nsboxtest (tests/setup-users.sh).
SUITE=nested_api
. "$(dirname "$0")/../lib.sh"

# The image with podman, curl and docker-compose: one variable (piece C's
# `make ci-image` gives localhost/nsbox-ci:latest).
IMG=${NSBOX_NESTED_TEST_IMAGE:-oci:/work/spike31/oci2:latest}
BB=localhost/nested-bb:1
SOCK=/run/podman/podman.sock

# prepare STORE NSBOX...: IMG and the busybox fixture (named BB) in STORE.
prepare() {
	local store=$1
	shift
	"$@" --store "$store" pull --quiet "$IMG" >"$T/pull.log" 2>&1 &&
		"$@" --store "$store" pull --quiet "oci:$F/oci/busybox:latest" >>"$T/pull.log" 2>&1 &&
		"$@" --store "$store" tag "oci:$F/oci/busybox:latest" "$BB" >>"$T/pull.log" 2>&1
}

# cli MODE STORE NSBOX...: the CLI's side.
cli() {
	local p=$1 store=$2 out id
	shift 2
	local N=("$@" --store "$store")
	expect_usage() {
		out=$("${N[@]}" create --nested-image "$BB" "$IMG" 2>&1)
		[ $? -eq 2 ] && printf '%s' "$out" | grep -q -- '--nested-image goes with --nested'
	}
	if expect_usage; then pass "$p/cli_nested_image_needs_nested"; else fail "$p/cli_nested_image_needs_nested" "$out"; fi
	out=$("${N[@]}" run --nested --memory 2g "$IMG" -- sh -c "curl -s --unix-socket $SOCK http://d/_ping; echo; echo \$DOCKER_HOST" 2>"$T/run.err")
	if [ "$(printf '%s' "$out" | head -1)" = OK ] && [ "$(printf '%s' "$out" | sed -n 2p)" = "unix://$SOCK" ]; then
		pass "$p/cli_run_nested_api_ready_before_command"
	else
		fail "$p/cli_run_nested_api_ready_before_command" "$out :: $(tail -3 "$T/run.err" | tr '\n' ' ')"
	fi
	id=$("${N[@]}" create --nested --memory 2g --nested-image "$BB" "$IMG" 2>"$T/create.err")
	out=$("${N[@]}" exec "$id" sh -c "podman run --rm $BB echo cli-nested-ok; echo \$DOCKER_HOST" 2>&1)
	if printf '%s' "$out" | grep -qx cli-nested-ok && printf '%s' "$out" | grep -qx "unix://$SOCK" &&
		[ "$(ls "$store/nested" | wc -l)" = 1 ]; then
		pass "$p/cli_create_exec_nested_image"
	else
		fail "$p/cli_create_exec_nested_image" "$id $out :: $(tail -3 "$T/create.err" | tr '\n' ' ')"
	fi
	"${N[@]}" rm "$id" >/dev/null 2>&1
	if [ -z "$(ls -A "$store/nested" 2>/dev/null)" ]; then pass "$p/cli_rm_removes_layout"; else fail "$p/cli_rm_removes_layout" "$(ls "$store/nested")"; fi
}

# -- root -----------------------------------------------------------------------
S=$T/store
if ! prepare "$S" "$NSBOX"; then
	fail setup "cannot pull $IMG or the busybox fixture: $(tail -3 "$T/pull.log" | tr '\n' ' ')"
	finish
fi
LOGS=$T
run_client root env NSBOX="$NSBOX" MODE=root STORE="$S" IMAGE="$IMG" BB="$BB" \
	timeout 900 python3 "$ROOT/tests/mcp/nested_api.py"
cli root "$S" "$NSBOX"

# -- rootless (nsboxtest) ------------------------------------------------------------
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
as_user() { runuser -u nsboxtest -- env NSBOX_LIMITS=best-effort "$@"; }
if ! prepare "$RL/store" as_user "$RL/nsbox"; then
	fail rootless/setup "cannot pull as nsboxtest: $(tail -3 "$T/pull.log" | tr '\n' ' ')"
	finish
fi
run_client rootless env NSBOX="$RL/nsbox" MODE=rootless AS_USER=1 STORE="$RL/store" IMAGE="$IMG" BB="$BB" \
	timeout 900 python3 "$ROOT/tests/mcp/nested_api.py"
cli rootless "$RL/store" as_user "$RL/nsbox"
finish
