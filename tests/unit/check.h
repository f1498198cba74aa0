/* A minimal test harness.  Each test prints one line:
 *     PASS: <suite>/<name>
 *     FAIL: <suite>/<name>: <file>:<line>: <what>
 * tests/run.sh counts those lines across C and shell tests alike. */
#ifndef NSBOX_CHECK_H
#define NSBOX_CHECK_H

#include <stdio.h>
#include <string.h>

extern const char *check_suite;
extern int check_failed_now; /* set when the current test failed */
extern int check_pass, check_fail;

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

#define RUN_TEST(fn)                                                                               \
    do {                                                                                           \
        check_current = #fn;                                                                       \
        check_failed_now = 0;                                                                      \
        fn();                                                                                      \
        if (check_failed_now)                                                                      \
            check_fail++;                                                                          \
        else {                                                                                     \
            check_pass++;                                                                          \
            printf("PASS: %s/%s\n", check_suite, #fn);                                             \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

#endif
