#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static enum nsbox_log_level log_level = NSBOX_LOG_WARN;
static nsbox_log_fn log_fn;
static void *log_ctx;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void nsbox_log_set_level(enum nsbox_log_level level)
{
    log_level = level;
}

enum nsbox_log_level nsbox_log_get_level(void)
{
    return log_level;
}

void nsbox_log_set_handler(nsbox_log_fn fn, void *ctx)
{
    log_fn = fn;
    log_ctx = ctx;
}

void nsbox_log(enum nsbox_log_level level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;

    if (level > log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (log_fn != NULL) {
        log_fn(level, msg, log_ctx);
        return;
    }
    /* One write per line so concurrent processes do not interleave. */
    fprintf(stderr, "nsbox: %s: %s\n", level_names[level], msg);
}
