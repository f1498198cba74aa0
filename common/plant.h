/* Planted bugs: `make asan-planted` only (tests/integration/sanitizers.sh
 * proves that a sanitizer report from each kind of nsbox process is
 * caught).  NSBOX_PLANT(name, code...) runs code when the environment's
 * NSBOX_PLANT names it, in a build compiled with -DNSBOX_SANITIZER_PLANT;
 * in every other build it is nothing.  Here, not in runtime/sanitizer.h,
 * so that a front end's plant (cli/main.c) needs no door into the
 * runtime. */
#ifndef NSBOX_COMMON_PLANT_H
#define NSBOX_COMMON_PLANT_H

#ifdef NSBOX_SANITIZER_PLANT
#include <stdbool.h>

/* True when NSBOX_PLANT names it. */
bool nsbox_plant(const char *name);
/* A copy of s, forgotten: a leak whose allocation names the caller. */
void nsbox_plant_leak(const char *s);
/* Where planted code puts a pointer so that the compiler keeps it. */
extern char *volatile nsbox_plant_sink;
/* INT_MAX, unknown to the compiler: for an overflow it cannot see. */
int nsbox_plant_int_max(void);
#define NSBOX_PLANT(name, ...)                                                                     \
    do {                                                                                           \
        if (nsbox_plant(name)) {                                                                   \
            __VA_ARGS__;                                                                           \
        }                                                                                          \
    } while (0)
#else
#define NSBOX_PLANT(name, ...) ((void)0)
#endif

#endif
