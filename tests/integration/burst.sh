#!/usr/bin/env bash
# Burst (issue #29, docs/burst.md): the call queue of serve --call-queue
# (calls beyond a session's 64 wait instead of being refused; the clear
# refusal beyond the queue; a queued call cancelled; ping answered
# meanwhile; --call-queue 0 refuses at once) and the spawner the server
# clones sandboxes' inits from (tests/burst/queue.py), over stdio, as root
# and as the rootless user nsboxtest.  The burst's speed is make bench's
# (tests/bench/burst_bench.py), never asserted here.
SUITE=burst
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
LOGS=$T/logs
mkdir -p "$LOGS" "$T/store-root" && chmod 755 "$T" && chmod 700 "$T/store-root"
mkdir -p "$T/store-user" && chown nsboxtest: "$T/store-user" && chmod 700 "$T/store-user"
seed_default_store "$T/store-root"
seed_default_store "$T/store-user" nsboxtest
run_client queue env NSBOX="$NSBOX" NSBOX_FIXTURES="$F" TMPDIR="$T" \
	BURST_STORE_ROOT="$T/store-root" BURST_STORE_USER="$T/store-user" timeout 900 \
	python3 "$ROOT/tests/burst/queue.py"
finish
