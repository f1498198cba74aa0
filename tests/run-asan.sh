#!/usr/bin/env bash
# `make test-asan`: every test (tests/run.sh) against the AddressSanitizer +
# UndefinedBehaviorSanitizer build in build-asan/ (nsbox and unit-tests).
#
# Any sanitizer report fails the run, also one from a process whose exit
# status nobody reads: the detached removal after `nsbox run`, a helper in a
# user namespace, a server a test kills or whose status it ignores.  Reports
# go to files (log_path) in one directory instead of stderr, which many
# tests swallow; every file found there at the end is a FAIL line, and the
# files are kept in build-asan/reports/.  A canary first proves that such a
# report is caught.  Ends with "N passed, N failed" like tests/run.sh.
#
# Left out, each for a stated reason:
# - valgrind_mcp: valgrind cannot run an ASan binary (both replace malloc,
#   and valgrind refuses ASan's shadow mapping); LSan checks leaks here.
# - load_http: it bounds the server's RSS growth, which ASan's quarantine of
#   freed memory (256 MiB) and its shadow memory make meaningless, and its
#   timeouts assume an uninstrumented server.
# - first_run: the first-run experience of the README's set-up (root's
#   store made shareable, a user's first execute_code importing the
#   default image from it): its C paths run under ASan elsewhere (the
#   shared store's import in config's image_store cases, the rootless
#   server in rootless and mcp_stdio); what it adds is the set-up scripts
#   and a 1 GB import, 75 s of wall time.
# - host_profiles' three VM boots (the suite leaves them out itself when
#   NSBOX_ASAN=1; its host part runs): the guests run the same refusal code
#   of common/hostcheck.c that the host part runs under ASan here, on other
#   kernels, for ~30 s of TCG time.
# - fleet: three servers behind HAProxy in network namespaces; the server
#   paths it drives (node ids, /readyz, draining) run under ASan in
#   mcp_http and drain; what it adds is the router, the namespaces and the
#   deployment files, and 35 s of wall time.
# - pod: builds the container image and boots the VM (about 80 s); ASAN_OPTIONS
#   does not reach nsbox inside the container (crun's config sets its
#   environment), and what it adds over the rootless suites is the
#   container's settings, not new parsing or memory handling.
# - hostile: its races, time budgets and the VM's memory.max cases are
#   sized for the uninstrumented binary.  On 2026-11-22, under ASan on a
#   loaded 2-core host, 4 of its 371 cases failed (mcp-root memory_balloon
#   got no result, mcp-rootless cve_2019_5736 and file-tools client, vm
#   shm_fill), none with a sanitizer report; the balloon passes alone under
#   ASan, and all pass uninstrumented.
# - mcp_stdio's rootless over_budget_reads_still_work (tests/mcp/disk.py,
#   told by NSBOX_ASAN): rootless here means best-effort limits, so init
#   carries RLIMIT_AS, which ASan's shadow mappings already exceed; the file
#   builtins, forked from init, cannot allocate under it.  The same
#   case runs uninstrumented in make test.
# Processes started with `env -i` (the rootless parts of the sandbox and
# rootless suites) and nsbox in the VM guest (vm_cgroup_v2) do not see
# ASAN_OPTIONS: a report there goes to their stderr and fails them through
# the exit status (ASan's 1, LSan's 23); UBSan is fatal there too
# (-fno-sanitize-recover, Makefile).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
REPORTS=$(mktemp -d /tmp/nsbox-asan.XXXXXX)
# Rootless suites run nsbox as nsboxtest: it must be able to write here.
chmod 1777 "$REPORTS"
OUT=$(mktemp /tmp/nsbox-asan-out.XXXXXX)
trap 'rm -rf "$REPORTS" "$OUT"' EXIT

# exitcode=99 keeps a sanitizer abort apart from nsbox's own exit 1.  One
# runtime (clang's) serves both: the log_path read last wins, so both name
# the same files (DIR/report.PID).
sanitize_env() { # DIR
	export ASAN_OPTIONS="log_path=$1/report:exitcode=99:halt_on_error=1:detect_leaks=1"
	export UBSAN_OPTIONS="log_path=$1/report:exitcode=99:halt_on_error=1:print_stacktrace=1"
}

passed=0 failed=0
pass() { echo "PASS: asan/$1"; passed=$((passed + 1)); }
fail() { echo "FAIL: asan/$1: $2"; failed=$((failed + 1)); }

# The canary: a use-after-free and a signed overflow, each in a child whose
# exit status is ignored, in a program built with `make asan`'s flags.  The
# parent exits 0; only the report files can tell.
canary() {
	local dir=$REPORTS/canary
	mkdir -p "$dir"
	cat >"$dir/canary.c" <<'EOF'
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    (void)argv;
    if (fork() == 0) {
        char *volatile p = malloc(8);
        free(p);
        _exit(p[0]);
    }
    if (fork() == 0) {
        volatile int x = INT_MAX;
        _exit(x + argc > 0);
    }
    while (wait(NULL) > 0)
        ;
    return 0;
}
EOF
	if ! clang -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-o "$dir/canary" "$dir/canary.c" 2>"$dir/cc.log"; then
		fail reports_are_caught "cannot build the canary: $(head -3 "$dir/cc.log" | tr '\n' ' ')"
		return
	fi
	mkdir -p "$dir/reports"
	(sanitize_env "$dir/reports" && "$dir/canary")
	local rc=$?
	if [ "$rc" = 0 ] && grep -qs 'heap-use-after-free' "$dir"/reports/report.* &&
		grep -qs 'signed integer overflow' "$dir"/reports/report.*; then
		pass reports_are_caught
	else
		fail reports_are_caught "rc=$rc, reports: $(ls "$dir/reports" | tr '\n' ' ')"
	fi
	rm -rf "$dir"
}
canary

# Every suite tests/run.sh knows (the integration suites and hostile) but
# those left out above, or those TESTS names.
all=$(for t in tests/integration/*.sh; do basename "$t" .sh; done; [ -f tests/hostile/run.sh ] && echo hostile)
suites=${TESTS:-$all}
TESTS=$(for s in $suites; do case $s in valgrind_mcp | load_http | first_run | fleet | hostile | pod) ;; *) echo "$s" ;; esac; done | tr '\n' ' ')
sanitize_env "$REPORTS"
export TESTS NSBOX=$ROOT/build-asan/nsbox UNIT=$ROOT/build-asan/unit-tests NSBOX_ASAN=1
start=$SECONDS
# tests/run.sh's own total is replaced by the one below.
tests/run.sh 2>&1 | tee "$OUT" | grep --line-buffered -Ev '^[0-9]+ passed, [0-9]+ failed$'
unset ASAN_OPTIONS UBSAN_OPTIONS
echo "   (test-asan: $((SECONDS - start)) s)"
total=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT" | tail -1)
if [ -z "$total" ]; then
	fail run "tests/run.sh printed no total"
else
	set -- $total
	passed=$((passed + $1)) failed=$((failed + $3))
fi

reports=$(find "$REPORTS" -maxdepth 1 -type f -name 'report.*' | sort)
if [ -z "$reports" ]; then
	pass no_sanitizer_reports
else
	rm -rf build-asan/reports && mkdir -p build-asan/reports
	shown=0
	for r in $reports; do
		cp "$r" build-asan/reports/
		what=$(grep -m1 -E 'ERROR: |runtime error|SUMMARY' "$r" | cut -c1-200)
		fail "report_$(basename "$r")" "${what:-$(head -1 "$r")} (build-asan/reports/$(basename "$r"))"
		# The first few in full; the rest are in build-asan/reports/.
		[ $((shown += 1)) -le 3 ] && head -40 "$r" | sed 's/^/# /'
	done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
