/* Error convention for the whole library (see docs/errors.md).
 *
 * A function that can fail returns an int (< 0 on failure) or a pointer
 * (NULL on failure) and fills a caller-supplied struct nsbox_err.  Errors
 * never allocate: the message lives in a fixed buffer.  Callers add context
 * on the way up with nsbox_err_prefix(); only the top level reports. */
#ifndef NSBOX_ERR_H
#define NSBOX_ERR_H

#include <stddef.h>

#define NSBOX_ERR_MSG_MAX 1024

struct nsbox_err {
    int code;                    /* errno value, or 0 when not a system error */
    char msg[NSBOX_ERR_MSG_MAX]; /* human-readable, no trailing newline */
};

/* Sets err (if non-NULL) to code and a formatted message.  Returns -1. */
int nsbox_err_set(struct nsbox_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like nsbox_err_set(err, errno, ...) with ": strerror(errno)" appended.
 * Returns -1.  errno is preserved. */
int nsbox_err_sys(struct nsbox_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepends "context: " to the message already in err.  Returns -1. */
int nsbox_err_prefix(struct nsbox_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Resets err to "no error". */
void nsbox_err_clear(struct nsbox_err *err);

#endif
