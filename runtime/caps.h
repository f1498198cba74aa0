/* Dropping privilege for good.
 *
 * A sandbox's init keeps only SETPCAP, SETUID, SETGID and KILL (to start
 * commands as the image's user and to stop them); each command empties
 * every set before execve.  no_new_privs and the NOROOT securebits (locked)
 * make sure neither setuid binaries, file capabilities nor being uid 0
 * bring any capability back. */
#ifndef NSBOX_RUNTIME_CAPS_H
#define NSBOX_RUNTIME_CAPS_H

#include "../common/err.h"

/* For init: bounding set reduced to the four, securebits locked,
 * permitted/effective = the four, inheritable and ambient empty,
 * no_new_privs.  Returns 0 or -1. */
int nsbox_caps_limit_for_init(struct nsbox_err *err);

/* Empties the bounding set (needs CAP_SETPCAP, so call it before switching
 * to a non-root uid).  Returns 0 or -1. */
int nsbox_caps_drop_bounding(struct nsbox_err *err);

/* Empties ambient, inheritable, permitted and effective and sets
 * no_new_privs.  Returns 0 or -1. */
int nsbox_caps_clear(struct nsbox_err *err);

#endif
