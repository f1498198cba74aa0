#!/usr/bin/env bash
# Packages (docs/network.md, "Packages"): real pip, npm and apt in the
# default image against registries served on 127.0.0.1 by this test
# (tests/registries/: a PEP 503 index of wheels built here, an npm
# registry, a signed Debian archive of a few real packages), as root and
# as a rootless user.
# - the CLI: `nsbox run --net 127.0.0.1:PORT IMAGE -- pip install ...`
#   works as a user expects (PEP 668 does not get in the way); without
#   --net the same install fails fast (sealed);
# - MCP (tests/mcp/packages.py): install_packages with each manager, the
#   sandbox sealed after, the cache hit on a second sandbox with no
#   request reaching the registry, installs off by the operator;
# - `nsbox images` shows the package caches apart, `nsbox prune` removes
#   them.
# Prints "# " lines with the first install's and the cached start's times.
SUITE=packages
. "$(dirname "$0")/../lib.sh"

IMG=localhost/nsbox-default:latest
S=$T/store
nsbox() { "$NSBOX" --store "$S" "$@"; }

# -- the default image (built once, cached; NSBOX_DEFAULT_IMAGE_CACHE) ------------
if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$T/build.log"); then
	fail build "images/default/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi
seed_default_store "$S"
check pull nsbox pull --quiet "oci:$LAYOUT:latest"
check tag nsbox tag "oci:$LAYOUT:latest" "$IMG"

# -- the registries ------------------------------------------------------------------
R=$T/registries
mkdir -p "$R"
chmod 755 "$T" "$R"
if ! python3 "$ROOT/tests/registries/registries.py" pypi "$R/pypi" ||
	! python3 "$ROOT/tests/registries/registries.py" npm "$R/npm" ||
	! "$ROOT/tests/registries/apt.sh" "$R/apt" >"$T/apt.log" 2>&1; then
	fail registries "$(tail -3 "$T/apt.log" | tr '\n' ' ')"
	finish
fi
chmod -R a+rX "$R"
PIDS=()
for k in pypi npm apt; do
	d=$R/$k
	[ "$k" = apt ] && d=$R/apt/repo
	python3 "$ROOT/tests/registries/registries.py" serve "$k" "$d" "$R/$k.port" 2>"$R/$k.log" &
	PIDS+=($!)
done
stop_registries() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	cleanup_test_dir
}
trap stop_registries EXIT
# served K: the registry wrote its port and answers an HTTP request there.
served() {
	[ -s "$R/$1.port" ] && curl -s -o /dev/null -m 5 "http://127.0.0.1:$(cat "$R/$1.port")/"
}
if wait_until 30 served pypi && wait_until 30 served npm && wait_until 30 served apt; then
	pass registries_served
else
	fail registries_served "ports: $(cat "$R"/*.port 2>/dev/null | tr '\n' ' '); $(tail -2 "$R"/*.log 2>/dev/null | tr '\n' ' ')"
fi
PYPI=http://127.0.0.1:$(cat "$R/pypi.port" 2>/dev/null)/simple
NPMR=http://127.0.0.1:$(cat "$R/npm.port" 2>/dev/null)
APTR=http://127.0.0.1:$(cat "$R/apt.port" 2>/dev/null)

# -- the CLI: pip as a user types it -----------------------------------------------
P=$(cat "$R/pypi.port")
out=$(nsbox run --net "127.0.0.1:$P" "$IMG" -- sh -c \
	"pip install -q --index-url $PYPI nsbox-hello && python3 -c 'import nsbox_hello; print(nsbox_hello.GREETING)'" 2>&1)
if [ "$(printf '%s' "$out" | tail -1)" = "hello from nsbox" ]; then pass cli_run_net_pip_install; else fail cli_run_net_pip_install "$out"; fi
start=$SECONDS
out=$(nsbox run "$IMG" -- pip install --index-url "$PYPI" --retries 0 --timeout 5 nsbox-hello 2>&1)
rc=$?
if [ "$rc" != 0 ] && [ $((SECONDS - start)) -lt 30 ] && [[ "$out" != *"Successfully installed"* ]]; then
	pass cli_sealed_pip_fails
else
	fail cli_sealed_pip_fails "exit $rc after $((SECONDS - start)) s: $(printf '%s' "$out" | tail -3)"
fi

# -- MCP, as root --------------------------------------------------------------------------
mcp() { # STORE USER PREFIX
	env NSBOX="$1" NSBOX_STORE="$2" SUITE="$SUITE" IMAGE="$IMG" PYPI_URL="$PYPI" NPM_URL="$NPMR" \
		APT_URL="$APTR" APT_KEY="$R/apt/key.asc" REG_LOGS="$R" AS_USER="$3" PREFIX="$4" \
		timeout 900 python3 "$ROOT/tests/mcp/packages.py" >"$T/mcp$4.out" 2>"$T/mcp$4.err"
	local rc=$?
	cat "$T/mcp$4.out"
	_failures=$((_failures + $(grep -c '^FAIL: ' "$T/mcp$4.out")))
	if [ "$rc" != 0 ] && ! grep -q '^FAIL: ' "$T/mcp$4.out"; then
		fail "${4}mcp" "exited $rc: $(tail -3 "$T/mcp$4.err" | tr '\n' ' ')"
	fi
}
mcp "$NSBOX" "$S" "" ""

# -- package caches and commits are private (issue #24, tests/mcp/private_images.py)
# run_private MODE ENV...: one mode of private_images.py, its lines passed on.
run_private() {
	local mode=$1 rc
	shift
	env NSBOX="$NSBOX" SUITE="$SUITE/private" IMAGE="$IMG" PYPI_URL="$PYPI" NPM_URL="$NPMR" \
		APT_URL="$APTR" APT_KEY="$R/apt/key.asc" "$@" \
		timeout 600 python3 "$ROOT/tests/mcp/private_images.py" "$mode" >"$T/private-$mode.out" 2>"$T/private-$mode.err"
	rc=$?
	cat "$T/private-$mode.out"
	_failures=$((_failures + $(grep -c '^FAIL: ' "$T/private-$mode.out")))
	if [ "$rc" != 0 ] && ! grep -q '^FAIL: ' "$T/private-$mode.out"; then
		fail "private_$mode" "exited $rc: $(tail -3 "$T/private-$mode.err" | tr '\n' ' ')"
	fi
}
python3 -c 'import secrets; print("alice", secrets.token_hex(16)); print("bob", secrets.token_hex(16))' >"$T/tokens"
run_private tenants NSBOX_STORE="$S" TOKEN_FILE="$T/tokens"
# Root's real store, as the README's set-up leaves it (the default image
# in it), then a new desktop user: the way it broke.
"$ROOT/tests/setup-users.sh"
install -m 755 "$NSBOX" "$T/nsbox"
if (cd "$ROOT" && images/default-image.sh "$NSBOX") >"$T/default-image.log" 2>&1; then
	UH=$(mktemp -d /tmp/nsbox-home.XXXXXX)
	chown nsboxtest: "$UH" && chmod 700 "$UH"
	run_private shared USER_NSBOX="$T/nsbox" USER_HOME="$UH"
	rm -rf "$UH"
else
	fail private_setup "images/default-image.sh: $(tail -3 "$T/default-image.log" | tr '\n' ' ')"
fi

# -- the caches in `nsbox images`, and `nsbox prune` ----------------------------------
out=$(nsbox images)
if printf '%s' "$out" | grep -q '^PACKAGE CACHE' && printf '%s' "$out" | grep -Eq '^[0-9a-f]{12} +pip +nsbox-hello'; then
	pass images_shows_caches
else
	fail images_shows_caches "$out"
fi
if ! printf '%s' "$out" | sed '/^PACKAGE CACHE/,$d' | grep -q 'nsbox-cache'; then pass images_caches_apart; else fail images_caches_apart "$out"; fi
n=$(nsbox images --names | grep -c '^localhost/nsbox-cache/packages:')
out=$(nsbox prune --keep-cache)
if [ "$(nsbox images --names | grep -c '^localhost/nsbox-cache/packages:')" = "$n" ] && [ "$n" -gt 0 ]; then pass prune_keep_cache; else fail prune_keep_cache "$n caches; $out"; fi
out=$(nsbox prune)
if [ "$(nsbox images --names | grep -c '^localhost/nsbox-cache/packages:')" = 0 ] && [[ "$out" == *", $n package caches;"* ]] &&
	nsbox inspect "$IMG" >/dev/null; then
	pass prune_removes_caches
else
	fail prune_removes_caches "$out"
fi

# -- rootless: the same, as an unprivileged user with subordinate ids -----------------
"$ROOT/tests/setup-users.sh"
install -m 755 "$NSBOX" "$T/nsbox"
RS=/home/nsboxtest/nsbox-packages-test
rm -rf "$RS"
seed_default_store "$RS" nsboxtest
as() { runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
	NSBOX_LIMITS=best-effort "$T/nsbox" --store "$RS" "$@"; }
if out=$(as pull --quiet "oci:$LAYOUT:latest" 2>&1) && out=$(as tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	pass rootless_pull
	mcp "$T/nsbox" "$RS" nsboxtest rootless_
else
	fail rootless_pull "$(printf '%s' "$out" | tail -3)"
fi
as prune >/dev/null 2>&1
rm -rf "$RS"
finish
