/* The monotonic clock in milliseconds: for intervals (timeouts, ticks,
 * rate limits), never for dates. */
#ifndef NSBOX_COMMON_CLOCK_H
#define NSBOX_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t nsbox_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
