/* Planted bugs (plant.h): compiled to nothing outside make asan-planted. */
#include "plant.h"

#ifdef NSBOX_SANITIZER_PLANT
#include <limits.h>
#include <stdlib.h>
#include <string.h>

bool nsbox_plant(const char *name)
{
    const char *p = getenv("NSBOX_PLANT");
    return p != NULL && strcmp(p, name) == 0;
}

/* Where the leaked copy passes: a global, cleared at once. */
char *volatile nsbox_plant_sink;
__attribute__((noinline)) void nsbox_plant_leak(const char *s)
{
    nsbox_plant_sink = strdup(s);
    nsbox_plant_sink = NULL;
}

__attribute__((noinline)) int nsbox_plant_int_max(void)
{
    static volatile int max = INT_MAX;
    return max;
}
#else
typedef int nsbox_plant_nothing; /* ISO C: a translation unit is not empty */
#endif
