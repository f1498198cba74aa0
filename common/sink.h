/* What a command's event loop reads from (runtime/exec.c for a command,
 * mcp/interp/interp.c for an interpreter's cell): its output pipes, each
 * drained into a capped, growing buffer, and its timeout as a timerfd.
 * No threads: the caller polls the fds and calls in here when they are
 * readable. */
#ifndef NSBOX_COMMON_SINK_H
#define NSBOX_COMMON_SINK_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* One output pipe and what was kept of it. */
struct nsbox_sink {
    int fd;        /* the read end, non-blocking; -1 once at EOF or error */
    int forward;   /* streaming: the caller's fd each read is copied to; -1 none */
    bool borrowed; /* fd is someone else's (closed with its owner): left open at EOF */
    char *buf;     /* what was kept, NUL-terminated, or NULL; the caller frees it */
    size_t len, cap;
    size_t limit;   /* the most kept; the rest is read and dropped */
    bool truncated; /* something was dropped (over limit, or out of memory) */
};

/* Reads what is there: forwards it when streaming, keeps up to limit
 * bytes, drops the rest.  At EOF (or an error but EAGAIN and EINTR) fd
 * becomes -1, closed first unless borrowed. */
void nsbox_sink_read(struct nsbox_sink *s);

/* Reads whatever is already in the pipe (a writer that flushed before
 * saying it is done), without waiting for more. */
void nsbox_sink_drain(struct nsbox_sink *s);

/* *fd: a timerfd (CLOCK_MONOTONIC, non-blocking, CLOEXEC) that becomes
 * readable timeout_s seconds from now, or -1 when timeout_s <= 0.
 * Returns 0, or -1 with err (*fd, if open, is still the caller's to
 * close). */
int nsbox_timer_start(double timeout_s, int *fd, struct nsbox_err *err);

#endif
