/* Dropping privilege for good.
 *
 * A sandbox's init keeps only SETUID, SETGID and KILL (to start commands as
 * the image's user and to stop them) and NET_BIND_SERVICE (the egress
 * broker's listeners, egress/egress.h) and has an empty bounding set, which
 * the commands it forks inherit; each command empties every other set
 * before execve.  no_new_privs and the NOROOT securebits (locked)
 * make sure neither setuid binaries, file capabilities nor being uid 0
 * bring any capability back. */
#ifndef NSBOX_RUNTIME_CAPS_H
#define NSBOX_RUNTIME_CAPS_H

#include <stdbool.h>

#include "../common/err.h"

/* For init: bounding set emptied, securebits locked, permitted/effective
 * = the four, inheritable and ambient empty, no_new_privs.  nested
 * (docs/nested.md): CAP_SETFCAP too, which the kernel asks of whoever
 * writes uid 0 into a child user namespace's map (idmap_service.c); file
 * capabilities grant nothing in the sandbox all the same (no_new_privs,
 * empty bounding set).  Returns 0 or -1. */
int nsbox_caps_limit_for_init(bool nested, struct nsbox_err *err);

/* The idmap service's request handler (a fork of init): permitted and
 * effective = SETUID, SETGID, SETFCAP only.  Returns 0 or -1. */
int nsbox_caps_for_idmap(struct nsbox_err *err);

/* Empties ambient, inheritable, permitted and effective and sets
 * no_new_privs.  Returns 0 or -1. */
int nsbox_caps_clear(struct nsbox_err *err);

#endif
