/* `nsbox fork`: new detached sandboxes with a sandbox's files as they are
 * now (boxes/fork.c; the MCP tool sandbox_fork does the same through the
 * server's sessions, mcp/tools/fork.c; docs/fork.md). */
#ifndef NSBOX_BOXES_FORK_H
#define NSBOX_BOXES_FORK_H

#include "../common/err.h"
#include "box.h"

#define BOX_FORK_MAX 10

/* Commits parent's writable layer (frozen while read where the cgroup
 * can freeze) as a private image, makes n (1..BOX_FORK_MAX) detached
 * sandboxes of it with parent's limits, disk size, workdir and user (its
 * image's environment, no network, no workspace, no processes), and
 * removes the image's name (the children's leases keep it).  Their ids go
 * into ids[0..n-1].  All or none: the ones made are removed when one
 * fails.  Returns 0 or -1. */
int box_fork(struct box_ctx *ctx, struct box *parent, unsigned n, char ids[][NSBOX_ID_LEN + 1],
             struct nsbox_err *err);

#endif
