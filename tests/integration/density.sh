#!/usr/bin/env bash
# Density (issue #29, docs/density.md): the server holds at most 2 fds per
# idle sandbox (one: its control socket), and a sandbox whose handles were
# dropped still runs commands, lists its changed files, counts its disk,
# reads files, commits, stops, and is reaped and removed when its init
# died (tests/density/density.py), over stdio, as root and as the rootless
# user nsboxtest.  The figures at 1,000 to 10,000 sandboxes are `make
# bench`'s (tests/bench/density_bench.py).
SUITE=density
. "$(dirname "$0")/../lib.sh"
"$ROOT/tests/setup-users.sh"
LOGS=$T/logs
mkdir -p "$LOGS" && chmod 755 "$T"
run_client density env NSBOX="$NSBOX" NSBOX_FIXTURES="$F" TMPDIR="$T" timeout 300 \
	python3 "$ROOT/tests/density/density.py"
# nsbox doctor's density line reports this host's own limits (read here
# from /proc, not from nsbox).
doc=$("$NSBOX" doctor 2>&1 | grep ' density ')
hard=$(ulimit -Hn)
pidmax=$(cat /proc/sys/kernel/pid_max)
if printf '%s' "$doc" | grep -q "$hard hard" && printf '%s' "$doc" | grep -q "pid_max $pidmax"; then
	pass doctor_density_host_limits
else
	fail doctor_density_host_limits "doctor: $doc; hard nofile $hard, pid_max $pidmax"
fi
finish
