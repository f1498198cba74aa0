/* The spawner: a small single-threaded process that clones sandboxes'
 * inits for a long-lived, many-threaded caller (the MCP server), so that
 * no creation copies the caller's address space (spawner.c says why and
 * how; docs/burst.md has the figures).  Started once, early, by the
 * caller (boxes/box.c box_spawner_start); used by namespaces_spawn.c when
 * started; without it creation works as before. */
#ifndef NSBOX_RUNTIME_SPAWNER_H
#define NSBOX_RUNTIME_SPAWNER_H

#include <stdbool.h>
#include <sys/types.h>

#include "../common/err.h"

struct spawn; /* spawn_ns.h */

/* Forks the spawner (once; later calls do nothing) and makes the caller a
 * child subreaper.  Call it while the caller is small, before its threads
 * multiply.  Returns 0 or -1. */
int nsbox_spawner_start(struct nsbox_err *err);

/* Ends the spawner and reaps it (sandboxes it made live on).  Only when
 * no creation is under way: one would then clone the old way. */
void nsbox_spawner_stop(void);

/* Whether the spawner was started. */
bool nsbox_spawner_running(void);

/* Clones s's child from the spawner (as clone_via_helper would):
 * returns init's pid, by then the caller's child, with *placed as the
 * helper's; -1 with errno when the clone failed; -2 when the spawner
 * cannot be reached (none, or gone), the caller then clones itself. */
pid_t nsbox_spawner_clone(struct spawn *s, int flags, bool *placed);

#endif
