#!/usr/bin/env bash
# The two front ends behave alike (issue #26): tests/integration/parity.py
# drives the same scenarios through the `nsbox` command line and through
# `nsbox serve` over stdio, and asserts the same outcome (results, changed
# files, timeouts, the network audit, the workspace budget).  Both reach
# the runtime only through boxes/ (tests/integration/layers.sh keeps it
# so); this is the behaviour that buys.  As root.
SUITE=parity
. "$(dirname "$0")/../lib.sh"

S=$T/store
LOGS=$T/logs
mkdir -p "$LOGS"
if ! out=$("$NSBOX" --store "$S" pull --quiet "oci:$F/oci/python:latest" 2>&1) ||
	! out=$("$NSBOX" --store "$S" tag "oci:$F/oci/python:latest" python 2>&1); then
	fail setup "cannot pull and tag oci:$F/oci/python:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
	finish
fi
run_client parity timeout 600 env NSBOX="$NSBOX" NSBOX_STORE="$S" python3 "$ROOT/tests/integration/parity.py"
finish
