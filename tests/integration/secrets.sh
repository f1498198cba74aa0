#!/usr/bin/env bash
# secrets (issue #30, docs/secrets.md): secrets substituted at the broker, TLS
# terminated with a CA per sandbox, method/path rules, end to end.  Local
# HTTPS services (tests/secrets/servers.py: an API wanting a bearer token,
# an echo service, git smart-HTTP wanting basic auth) with a test CA
# (tests/secrets/mkcerts.sh) that the nsbox server trusts through
# SSL_CERT_FILE, as a host trusts a real service; `nsbox serve --secret ...
# --allow-net api.test=127.0.0.1:PORT,...` over stdio; a sandbox of the
# default image calls the API and pushes to git (git unpacked from Debian
# packages in a workspace: the image has none) with tokens it only knows
# as placeholders; every hostile case of the issue is a named check of
# tests/secrets/e2e.py (the table: docs/secrets.md).  As root and as the
# unprivileged user nsboxtest.
SUITE=secrets
. "$(dirname "$0")/../lib.sh"

MCP=$ROOT/tests/secrets
LOGS=$T/logs
E=$T/e2e
mkdir -p "$LOGS" "$E/git"
chmod 755 "$T" "$E"
IMG=localhost/nsbox-default:latest
TLS=$(dirname "$NSBOX")/nsbox-tls
SERVER_PID=
cleanup() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
	cleanup_test_dir
}
trap cleanup EXIT

# -- fixtures: the PKI, the tokens, the bare repository, git's packages ------------
if ! "$MCP/mkcerts.sh" "$E/certs" api.test other.test git.test >"$LOGS/certs.log" 2>&1; then
	fail setup "mkcerts.sh: $(tail -3 "$LOGS/certs.log" | tr '\n' ' ')"
	finish
fi
# Values with a fixed prefix (e2e.py's memory scan looks for it), random
# after it; 0644: the rootless server reads them too.
printf 'e2eTOK%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$E/api.tok"
printf 'e2eGIT%s\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >"$E/git.tok"
chmod 644 "$E/api.tok" "$E/git.tok"
git init -q --bare "$E/git/repo.git"
# git and the libraries of git-remote-https that the default image lacks,
# cached across runs (a few MB from the host's apt).
DEBS=${NSBOX_SECRETS_DEBS:-/var/cache/nsbox/secrets-debs}
PKGS=(git libcurl3-gnutls librtmp1 libssh2-1 libpsl5 libldap-2.5-0 libsasl2-2 libsasl2-modules-db)
if ! ls "$DEBS"/git_*.deb >/dev/null 2>&1; then
	mkdir -p "$DEBS.tmp" && (cd "$DEBS.tmp" && apt-get download -q "${PKGS[@]}" >"$LOGS/apt.log" 2>&1) &&
		rm -rf "$DEBS" && mv "$DEBS.tmp" "$DEBS"
fi
debs=("$DEBS"/*.deb)
if [ "${#debs[@]}" -ne "${#PKGS[@]}" ] || [ ! -e "${debs[0]}" ]; then
	fail setup "apt-get download ${PKGS[*]} failed: $(tail -3 "$LOGS/apt.log" 2>/dev/null | tr '\n' ' ')"
	finish
fi

# -- the services --------------------------------------------------------------------
python3 "$MCP/servers.py" "$E" "$E/certs" --api-token "$E/api.tok" --git-user user \
	--git-token "$E/git.tok" --git-root "$E/git" api.test=api other.test=other git.test=git \
	>"$LOGS/servers.log" 2>&1 &
SERVER_PID=$!
wait_until 20 test -s "$E/ports.json" || {
	fail setup "the services did not start: $(tail -3 "$LOGS/servers.log" | tr '\n' ' ')"
	finish
}
chmod 644 "$E/requests.jsonl"
port() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$E/ports.json" "$1"; }
PA=$(port api.test)
PG=$(port git.test)

# The oracles themselves: the API refuses a request without the token and
# takes one with it; git refuses a push with a wrong password (a
# placeholder's shape) and takes one with the value.  Without these, "the
# call succeeded" could mean a service that checks nothing.
CURL=(curl -s -o /dev/null -w '%{http_code}' --cacert "$E/certs/ca.pem" --resolve "api.test:$PA:127.0.0.1")
a=$("${CURL[@]}" "https://api.test:$PA/v1/items")
b=$("${CURL[@]}" -H "Authorization: Bearer $(cat "$E/api.tok")" "https://api.test:$PA/v1/items")
if [ "$a" = 401 ] && [ "$b" = 200 ]; then pass fixture_api_checks_token; else fail fixture_api_checks_token "without: $a, with: $b"; fi
W=$T/hostwork
git init -q "$W" && git -C "$W" -c user.name=h -c user.email=h@x commit -q --allow-empty -m fixture
gpush() {
	GIT_SSL_CAINFO=$E/certs/ca.pem GIT_TERMINAL_PROMPT=0 git -C "$W" -c "http.curloptResolve=git.test:$PG:127.0.0.1" \
		push -q "https://user:$1@git.test:$PG/repo.git" "HEAD:refs/heads/$2" >>"$LOGS/hostpush.log" 2>&1
}
if ! gpush "nsbox-secret-git-AAAAAAAAAAAAAAAAAAAAAAAA" wrong && gpush "$(cat "$E/git.tok")" fixture &&
	[ "$(git --git-dir="$E/git/repo.git" log --format=%s fixture 2>/dev/null)" = fixture ]; then
	pass fixture_git_checks_password
else
	fail fixture_git_checks_password "$(tail -3 "$LOGS/hostpush.log" | tr '\n' ' ')"
fi

# workspace STORE OWNER: git's packages where sandbox_create {workspace: "gitdebs"} finds them.
workspace() {
	mkdir -p "$1/workspaces/gitdebs" && cp "$DEBS"/*.deb "$1/workspaces/gitdebs/" &&
		chown -R "$2" "$1/workspaces"
}
if ! LAYOUT=$("$ROOT/images/default/build.sh" 2>"$T/build.log"); then
	fail setup "images/default/build.sh failed: $(tail -5 "$T/build.log" | tr '\n' ' ')"
	finish
fi

# -- root --------------------------------------------------------------------------
S=$T/store
seed_default_store "$S"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$LAYOUT:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	fail setup "cannot pull the default image: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
workspace "$S" root
run_client root env NSBOX="$NSBOX" NSBOX_STORE="$S" E2E="$E" E2E_PREFIX=root/ timeout 400 \
	python3 "$MCP/e2e.py"

# -- rootless ----------------------------------------------------------------------
"$ROOT/tests/setup-users.sh"
RL=$T/rootless
mkdir -p "$RL" && install -m 755 "$NSBOX" "$RL/nsbox" && chown nsboxtest "$RL"
[ -x "$TLS" ] && install -m 755 "$TLS" "$RL/nsbox-tls"
as_user() { runuser -u nsboxtest -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/nsboxtest \
	NSBOX_LIMITS=best-effort "$@"; }
seed_default_store "$RL/store" nsboxtest
if out=$(as_user "$RL/nsbox" --store "$RL/store" pull --quiet "oci:$LAYOUT:latest" 2>&1) &&
	out=$(as_user "$RL/nsbox" --store "$RL/store" tag "oci:$LAYOUT:latest" "$IMG" 2>&1); then
	workspace "$RL/store" nsboxtest
	run_client rootless env NSBOX="$RL/nsbox" NSBOX_STORE="$RL/store" E2E="$E" E2E_USER=nsboxtest \
		E2E_PREFIX=rootless/ timeout 400 python3 "$MCP/e2e.py"
else
	fail rootless_setup "cannot pull the default image as nsboxtest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
fi
as_user "$RL/nsbox" --store "$RL/store" rmi "$IMG" >/dev/null 2>&1
as_user "$RL/nsbox" --store "$RL/store" prune >/dev/null 2>&1
finish
