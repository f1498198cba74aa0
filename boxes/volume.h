/* The user's volumes (`-v HOST:SANDBOX[:OPTS]`): parsed here, opened and
 * checked by box_create (boxes/volume.c). */
#ifndef NSBOX_BOXES_VOLUME_H
#define NSBOX_BOXES_VOLUME_H

#include "../common/err.h"
#include "../runtime/sandbox.h"

/* Parses a volume "HOST:SANDBOX[:OPTS]" in place (spec is cut at its
 * colons; out->source and out->target point into it).  OPTS: a comma list
 * of ro (the default), rw, noexec.  HOST must be absolute; SANDBOX
 * absolute, without "." or "..", not / and not in /proc, /sys or /dev.
 * Returns 0, or -1 with err (EINVAL: a usage error) saying what is wrong. */
int box_volume_parse(char *spec, struct nsbox_bind *out, struct nsbox_err *err);

#endif
