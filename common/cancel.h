/* Cancelling a running exec from another thread, without a race.
 *
 * A cancel is an eventfd that nsbox_sandbox_exec polls beside the
 * command's pipes.  Firing it makes the exec kill every process of the
 * sandbox but init, through the same control socket and after its own
 * exec request, so a command can never start after the kill that was
 * meant for it (a bare nsbox_sandbox_kill_all() sent between "about to
 * exec" and the exec request would miss it).  It stays fired: an exec that
 * starts with a fired cancel is killed at once. */
#ifndef NSBOX_COMMON_CANCEL_H
#define NSBOX_COMMON_CANCEL_H

#include <stdbool.h>

#include "err.h"

struct nsbox_cancel {
    int fd; /* an eventfd; -1 when not made */
};

/* Makes c, not fired.  Returns 0, or -1 with err (out of fds). */
int nsbox_cancel_init(struct nsbox_cancel *c, struct nsbox_err *err);

/* Fires c (async-signal-safe, any thread; idempotent). */
void nsbox_cancel_fire(struct nsbox_cancel *c);

/* Whether c has been fired. */
bool nsbox_cancel_fired(const struct nsbox_cancel *c);

/* Releases c (safe on a zeroed-then-failed or already closed one). */
void nsbox_cancel_close(struct nsbox_cancel *c);

#endif
