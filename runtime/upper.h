/* A live sandbox's writable layer, read from the host (`nsbox commit`).
 *
 * Contract: the upper directory belongs to the sandbox, so it is hostile
 * and changes while the sandbox runs; these functions only hand out an fd
 * of its top and the id map its owners are to be read through.  Whoever
 * walks it must do so fd-relative, never following a symlink. */
#ifndef NSBOX_RUNTIME_UPPER_H
#define NSBOX_RUNTIME_UPPER_H

#include "../common/err.h"
#include "../common/userns.h"
#include "sandbox.h"

/* Opens sb's overlay upper directory (STATE/upper, or upper/ on its tmpfs
 * disk through sb->disk.fd, so sb must be open) O_RDONLY|O_DIRECTORY
 * without following symlinks, and fills *map with the sandbox's id map:
 * walked inside a user namespace with it (nsbox_userns_run), the files'
 * owners read as the sandbox sees them.  Rootless that is sb->idmap; as
 * root it is read from init's /proc/PID/{uid,gid}_map.  Returns the fd
 * (the caller closes it) or -1. */
int nsbox_sandbox_upper_open(const struct nsbox_sandbox *sb, struct nsbox_idmap *map,
                             struct nsbox_err *err);

/* Freezes (frozen true) or thaws every process of sb through the cgroup
 * v2 freezer (cgroup.freeze), waiting up to 5 s for the freeze to hold.
 * Returns 1 when done, 0 when sb's cgroup cannot freeze (v1, whose
 * groups nsbox makes without the freezer controller, or no cgroup), or
 * -1 on errors. */
int nsbox_sandbox_freeze(const struct nsbox_sandbox *sb, bool frozen, struct nsbox_err *err);

#endif
