/* File watches in a box: the front ends' door to runtime/watch.h (inotify
 * inside the sandbox, as the box's user; never a host path).
 *
 * Contract: box_watch_start runs as one operation on the box (the caller
 * excludes other operations, as for box_run: it uses the box's control
 * socket); the rest needs nothing of the box and may run on another
 * thread, one at a time per watch.  Not available under landlock
 * isolation (no mount namespace: a path would be the host's). */
#ifndef NSBOX_BOXES_WATCH_H
#define NSBOX_BOXES_WATCH_H

#include <stdbool.h>

#include "../runtime/watch.h"
#include "box.h"

/* Watches path (absolute, in box): a directory itself, anything else
 * through its parent directory (so a file that does not exist yet can be
 * watched; its parent must).  Returns 0 with *w filled, or -1 with err
 * (ENOENT, EACCES, ENOTSUP under landlock isolation, ...). */
int box_watch_start(struct box *box, const char *path, struct nsbox_watch *w,
                    struct nsbox_err *err);

/* The fd to poll (readable: call box_watch_drain). */
int box_watch_fd(const struct nsbox_watch *w);

/* Whether w is a directory watch. */
bool box_watch_is_dir(const struct nsbox_watch *w);

/* 1 something changed, 0 nothing, -1 the watch ended (*changed: a change
 * came with the end).  Never blocks. */
int box_watch_drain(struct nsbox_watch *w, bool *changed);

/* Ends it.  Idempotent. */
void box_watch_stop(struct nsbox_watch *w);

#endif
