/* Files between the host and a box: `nsbox cp` and the server's copy_in /
 * copy_out, one implementation with the host side confined once.
 *
 * The sandbox side goes only through boxes/files.h (the in-sandbox file
 * builtins, as the sandbox's user, over the workspace budget: a copy in
 * is refused over it, watched between writes and measured after): its
 * paths, "..", and symlinks mean what they mean inside and never reach
 * the host.  The host side is resolved with openat2 and the caller's
 * RESOLVE_* flags (never fewer than BOX_COPY_RESOLVE: no symlink, no
 * magic link; the server adds RESOLVE_BENEATH its allowed directory) and
 * walked with O_NOFOLLOW: a symlink on the host (one a sandbox planted
 * through a rw volume, say) is never followed, and an existing host file
 * is replaced only when the policy says so and it is a regular file,
 * never through a symlink.  Only regular files and directories are
 * copied; other entries inside a copied directory are skipped with a
 * warning.
 *
 * Contract: the caller holds the box for the copy alone (as for box_run).
 * Errors name the path and why; nothing is written to stdout. */
#ifndef NSBOX_BOXES_COPY_H
#define NSBOX_BOXES_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/syscalls.h"
#include "box.h"
#include "files.h"

/* The host lookup's least confinement. */
#define BOX_COPY_RESOLVE (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* How a copy goes: the front end's choice, the confinement the same. */
struct box_copy_policy {
    int host_dirfd;       /* host paths resolve at this directory (AT_FDCWD: the cwd) */
    const char *host_dir; /* its name in messages, or NULL */
    uint64_t resolve;     /* openat2 RESOLVE_* for the host path: BOX_COPY_RESOLVE or more */
    uint64_t file_max;    /* the largest file either way (EFBIG past it) */
    /* The server's copy tools: DST names the copy and only a regular file
     * is copied.  Else docker cp's rules: an existing directory receives
     * SRC by its name (a directory SRC ending in "/." gives its contents),
     * otherwise DST names the copy; directories are copied whole. */
    bool exact;
    bool replace;     /* out: an existing regular host file is replaced; else EEXIST */
    bool keep_modes;  /* modes kept without setuid and setgid; else 0644 / 0755 */
    double timeout_s; /* each in-sandbox operation's */
    const struct nsbox_cancel *cancel;
};

struct box_copy_stats {
    unsigned long files, skipped; /* regular files copied; entries skipped */
    uint64_t bytes;               /* of the files copied */
};

/* Copies host (a file or, unless exact, a directory; resolved at
 * p->host_dirfd) to dst inside box.  Returns 0 with *st filled, or -1
 * with err (EDQUOT: the workspace is over its budget). */
int box_copy_in(struct box *box, const char *host, const char *dst, const struct box_copy_policy *p,
                struct box_copy_stats *st, struct nsbox_err *err);

/* Copies src inside box to host (its directory must exist, resolved at
 * p->host_dirfd).  Returns 0 with *st filled, or -1 with err. */
int box_copy_out(struct box *box, const char *src, const char *host,
                 const struct box_copy_policy *p, struct box_copy_stats *st, struct nsbox_err *err);

#endif
