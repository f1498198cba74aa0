/* A minimal test harness.  Each test prints one line:
 *     PASS: <suite>/<name>
 *     FAIL: <suite>/<name>: <file>:<line>: <what>
 *     SKIP: <suite>/<name>: <reason>     (SKIP(); tests/skips.allow must list it)
 * tests/run.sh counts those lines across C and shell tests alike.  A test
 * that cannot run here says so with SKIP and returns: it is never a PASS. */
#ifndef NSBOX_CHECK_H
#define NSBOX_CHECK_H

#include <stdio.h>
#include <string.h>

extern const char *check_suite;
extern int check_failed_now;  /* set when the current test failed */
extern int check_skipped_now; /* set when the current test skipped (SKIP) */
extern int check_pass, check_fail, check_skip;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond) && !check_failed_now) {                                                        \
            check_failed_now = 1;                                                                  \
            printf("FAIL: %s/%s: %s:%d: %s\n", check_suite, check_current, __FILE__, __LINE__,     \
                   #cond);                                                                         \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *_a = (a), *_b = (b);                                                           \
        if ((_a == NULL || _b == NULL || strcmp(_a, _b) != 0) && !check_failed_now) {              \
            check_failed_now = 1;                                                                  \
            printf("FAIL: %s/%s: %s:%d: %s == \"%s\", expected \"%s\"\n", check_suite,             \
                   check_current, __FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
        }                                                                                          \
    } while (0)

extern const char *check_current;

/* SKIP("why %s", ...): the current test cannot run on this host; its line
 * is SKIP with the reason instead of PASS (printed when the test returns,
 * so that a CHECK failing around it still makes it one FAIL line).  The
 * caller returns right after. */
extern char check_skip_reason[256];
#define SKIP(...)                                                                                  \
    do {                                                                                           \
        check_skipped_now = 1;                                                                     \
        snprintf(check_skip_reason, sizeof(check_skip_reason), __VA_ARGS__);                       \
    } while (0)

#define RUN_TEST(fn)                                                                               \
    do {                                                                                           \
        check_current = #fn;                                                                       \
        check_failed_now = 0;                                                                      \
        check_skipped_now = 0;                                                                     \
        fn();                                                                                      \
        if (check_failed_now)                                                                      \
            check_fail++;                                                                          \
        else if (check_skipped_now) {                                                              \
            check_skip++;                                                                          \
            printf("SKIP: %s/%s: %s\n", check_suite, #fn, check_skip_reason);                      \
        } else {                                                                                   \
            check_pass++;                                                                          \
            printf("PASS: %s/%s\n", check_suite, #fn);                                             \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

#endif
