#!/usr/bin/env bash
# Installs the MCP client tests' npm packages (tests/mcp/package-lock.json,
# exact versions) into tests/mcp/node_modules with `npm ci`, only when
# node_modules is missing or the lock changed since the last install (stamp:
# node_modules/.nsbox-lock.sha256).  Needs node >= 18 and npm, and the npm
# registry.  On a fresh Debian 12 machine: `apt-get install -y nodejs npm`
# (Debian's nodejs is 18.20, npm 9.2; the lock keeps every package installable
# on Node 18 -- see "overrides" in package.json).
set -eu
cd "$(dirname "$0")"
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "tests/mcp/setup.sh: '$tool' not found; install it (Debian 12: apt-get install -y nodejs npm)" >&2
		exit 1
	fi
done
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 18 ]; then
	echo "tests/mcp/setup.sh: node $(node --version 2>/dev/null) is too old; need >= 18" >&2
	exit 1
fi
stamp=node_modules/.nsbox-lock.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)-node$major
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -f node_modules/@modelcontextprotocol/sdk/package.json ]; then
	exit 0
fi
if ! out=$(npm ci --no-audit --no-fund 2>&1); then
	printf '%s\n' "$out" | tail -20 >&2
	echo "tests/mcp/setup.sh: npm ci failed (is the npm registry reachable?)" >&2
	exit 1
fi
printf '%s\n' "$want" >"$stamp"
echo "tests/mcp: installed @modelcontextprotocol/sdk $(node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version')"
