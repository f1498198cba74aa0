#!/usr/bin/env bash
# The ASan canary (run first in an ASan run by tests/run.sh): a use-after-free
# and a signed overflow, each in a child whose exit status nobody reads, in a
# program built with `make asan`'s flags and run with the environment the
# runner gives every ASan suite.  The parent exits 0; only the report files
# in NSBOX_SANITIZER_DIR can tell, which is how the runner judges every
# suite.  The canary's own reports are removed here once seen, so they do
# not fail the run.
SUITE=asan
. "$(dirname "$0")/../lib.sh"

dir=${NSBOX_SANITIZER_DIR:-}
if [ -z "$dir" ] || [ -z "${ASAN_OPTIONS:-}" ]; then
	fail reports_are_caught "not run under ASan (tests/run.sh sets NSBOX_SANITIZER_DIR and ASAN_OPTIONS)"
	finish
fi
cat >"$T/canary.c" <<'C'
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
C
if ! ${ASAN_CC:-clang-19} -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-o "$T/canary" "$T/canary.c" 2>"$T/cc.log"; then
	fail reports_are_caught "cannot build the canary: $(head -3 "$T/cc.log" | tr '\n' ' ')"
	finish
fi
before=$(find "$dir" -type f | sort)
"$T/canary"
rc=$?
new=$(comm -13 <(printf '%s\n' "$before") <(find "$dir" -type f | sort) | grep .)
if [ "$rc" = 0 ] && [ -n "$new" ] && grep -qs 'heap-use-after-free' $new && grep -qs 'signed integer overflow' $new; then
	pass reports_are_caught
else
	fail reports_are_caught "rc=$rc, new reports: $(echo $new)"
fi
# shellcheck disable=SC2086
rm -f $new
finish
