#!/usr/bin/env bash
# `nsbox serve` (stdio, as root) under valgrind's memcheck for one long
# session (tests/valgrind/session.py: 60 sandboxes created, used and
# stopped, one-shot runs, workspaces, file and host-copy tools, timeouts, a
# cancellation, protocol errors):
#   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect
#            --error-exitcode=99 --trace-children=no nsbox serve
# Asserted: every answer of the session; the server exits 0 (not 99); its
# leak summary shows no definite or indirect leak; no process under
# valgrind (the server, its helpers, each sandbox's init and the children
# init forks) reports an invalid access or another memcheck error.
#
# --trace-children=no: the programs nsbox executes (skopeo, newuidmap, the
# commands in sandboxes) run natively; what nsbox forks stays under
# valgrind.  tests/valgrind/native_syscalls.c (LD_PRELOAD) runs the system
# calls valgrind 3.19 does not know on the real CPU and ends forked children
# without a leak check (it says why); tests/valgrind/nsbox.supp holds the
# one false report.  The ASan build cannot run under valgrind: NSBOX is
# ignored here when it names one (make test-asan leaves this suite out).
SUITE=valgrind_mcp
. "$(dirname "$0")/../lib.sh"

VG=$ROOT/tests/valgrind
BIN=$NSBOX
if nm "$BIN" 2>/dev/null | grep -q __asan_init; then
	BIN=$ROOT/build/nsbox
fi
if ! command -v valgrind >/dev/null || [ ! -r /usr/include/valgrind/valgrind.h ]; then
	fail setup "valgrind is not installed (make deps)"
	finish
fi
if ! cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$T/native.so" "$VG/native_syscalls.c" 2>"$T/cc.log"; then
	fail setup "cannot build the shim: $(head -3 "$T/cc.log" | tr '\n' ' ')"
	finish
fi
S=$T/store
for img in python busybox; do
	if ! out=$("$BIN" --store "$S" pull --quiet "oci:$F/oci/$img:latest" 2>&1) ||
		! out=$("$BIN" --store "$S" tag "oci:$F/oci/$img:latest" "$img" 2>&1); then
		fail setup "cannot pull oci:$F/oci/$img:latest: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
		finish
	fi
done
mkdir -p "$T/host"

# One log for every process: a forked child cannot open a log file of its
# own (%p) once it is inside a sandbox's mount namespace; lines carry the
# pid as "==PID==" (pids inside sandboxes are those of their namespace).
LOGF=$T/valgrind.log
cat >"$T/serve" <<EOF
#!/bin/sh
exec env LD_PRELOAD=$T/native.so valgrind --leak-check=full \\
	--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \\
	--trace-children=no --suppressions=$VG/nsbox.supp --log-file=$LOGF "$BIN" "\$@"
EOF
chmod 755 "$T/serve"
start=$SECONDS
env NSBOX="$T/serve" NSBOX_STORE="$S" HOST_DIR="$T/host" SUITE="$SUITE" \
	timeout 1200 python3 "$VG/session.py" >"$T/session.out" 2>"$T/session.err"
rc=$?
grep -E '^(PASS: |FAIL: |# )' "$T/session.out"
_failures=$((_failures + $(grep -c '^FAIL: ' "$T/session.out")))
if [ "$rc" -ne 0 ] && ! grep -q '^FAIL: ' "$T/session.out"; then
	fail session "exited $rc without a FAIL line: $(tail -3 "$T/session.err" | tr '\n' ' ')"
fi
echo "# session under valgrind: $((SECONDS - start)) s"

# The server is the process valgrind started: the first "Command:" line.
server=$(sed -n 's/^==\([0-9]*\)== Command: .* serve.*/\1/p' "$LOGF" | head -1)
summary() { grep "^==$server== *$1" "$LOGF" | head -1 | sed 's/^==[0-9]*== *//'; }
definite=$(summary 'definitely lost:')
indirect=$(summary 'indirectly lost:')
if [ -z "$server" ]; then
	fail no_leaks "no valgrind log for the server"
elif grep -q "^==$server== All heap blocks were freed" "$LOGF" ||
	{ [ "$definite" = "definitely lost: 0 bytes in 0 blocks" ] &&
		[ "$indirect" = "indirectly lost: 0 bytes in 0 blocks" ]; }; then
	pass no_leaks
else
	fail no_leaks "${definite:-no leak summary}; ${indirect:-} (log: $(grep -A12 "^==$server== .*are definitely lost" "$LOGF" | head -12 | tr '\n' ' ' | cut -c1-600))"
fi
if [ -n "$server" ] && [ "$(summary 'ERROR SUMMARY:' | cut -d' ' -f3)" = 0 ]; then
	pass server_error_summary_zero
else
	fail server_error_summary_zero "$(summary 'ERROR SUMMARY:')"
fi
# Memcheck's error kinds, in any process (children print theirs as they
# happen; they end without a summary).
kinds='Invalid (read|write|free)|uninitialised|Syscall param|Mismatched free|overlap|Conditional jump|Use of uninitialised|Argument .* of function|fishy'
if grep -Eq "^==[0-9]+== ($kinds)" "$LOGF"; then
	fail no_invalid_access "$(grep -E -m3 -A4 "^==[0-9]+== ($kinds)" "$LOGF" | tr '\n' ' ' | cut -c1-700)"
else
	pass no_invalid_access
fi
# A system call valgrind does not know fails with ENOSYS and nsbox takes
# another path (or fails) than it would natively; clone3 (435) is expected:
# nsbox falls back to clone, which valgrind follows.
unknown=$(grep -o 'unhandled amd64-linux syscall: [0-9]*' "$LOGF" | grep -v ': 435$' | sort -u | tr '\n' ' ')
if [ -z "$unknown" ]; then
	pass no_unknown_syscalls
else
	fail no_unknown_syscalls "$unknown(run them natively in tests/valgrind/native_syscalls.c)"
fi
if [ "$_failures" -gt 0 ]; then
	cp "$LOGF" "$ROOT/build/valgrind_mcp.log" 2>/dev/null && echo "# full log: build/valgrind_mcp.log"
fi
finish
