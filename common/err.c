#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vformat(struct nsbox_err *err, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

/* Keeps the start of a long message: the outermost context comes first. */
static void copy_truncated(struct nsbox_err *err, const char *s)
{
    size_t n = strnlen(s, sizeof(err->msg) - 1);
    memcpy(err->msg, s, n);
    err->msg[n] = '\0';
}

int nsbox_err_set(struct nsbox_err *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return -1;
    err->code = code;
    va_start(ap, fmt);
    vformat(err, fmt, ap);
    va_end(ap);
    return -1;
}

int nsbox_err_sys(struct nsbox_err *err, const char *fmt, ...)
{
    int saved = errno;
    char reason[128];
    va_list ap;

    if (err == NULL)
        return -1;
    err->code = saved;
    va_start(ap, fmt);
    vformat(err, fmt, ap);
    va_end(ap);
    /* strerror_r (GNU) may return a static string instead of filling ours. */
    const char *s = strerror_r(saved, reason, sizeof(reason));
    char joined[NSBOX_ERR_MSG_MAX + 160];
    snprintf(joined, sizeof(joined), "%.*s: %.150s", NSBOX_ERR_MSG_MAX - 1, err->msg, s);
    copy_truncated(err, joined);
    errno = saved;
    return -1;
}

int nsbox_err_prefix(struct nsbox_err *err, const char *fmt, ...)
{
    char joined[2 * NSBOX_ERR_MSG_MAX + 2];
    va_list ap;

    if (err == NULL)
        return -1;
    va_start(ap, fmt);
    int n = vsnprintf(joined, NSBOX_ERR_MSG_MAX, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : strlen(joined);
    memcpy(joined + len, ": ", 2);
    memcpy(joined + len + 2, err->msg, strnlen(err->msg, sizeof(err->msg) - 1) + 1);
    copy_truncated(err, joined);
    return -1;
}

void nsbox_err_clear(struct nsbox_err *err)
{
    if (err == NULL)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}
