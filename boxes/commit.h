/* A box's writable layer saved as an image (boxes/commit.c). */
#ifndef NSBOX_BOXES_COMMIT_H
#define NSBOX_BOXES_COMMIT_H

#include "../common/err.h"
#include "box.h"

/* Saves box's writable layer as a new image over the one it was made from
 * and points name at it (boxes/commit.c: frozen while read where the
 * cgroup can freeze).  digest receives the new image id.  Returns 0 or -1;
 * the sandbox runs on either way. */
int box_commit(struct box *box, const char *name, const char *message, char digest[OCI_DIGEST_BUF],
               struct nsbox_err *err);

#endif
