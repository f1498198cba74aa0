/* The space a directory tree takes on disk, measured by walking it.
 *
 * Contract: counts what the tree holds as allocated space, not file
 * sizes: st_blocks * 512 of every inode (the top directory included), a
 * hard-linked inode once however many names it has, so a sparse file
 * counts the blocks it really uses and a hard link costs nothing more.
 * The tree may belong to a running sandbox that changes it during the
 * walk (files appearing, vanishing, a directory swapped for a symlink):
 *   - no symlink is ever followed: each directory is opened with
 *     O_NOFOLLOW | O_DIRECTORY from its parent's fd, never by a path, so
 *     a swap between the look and the open fails the open and the entry
 *     counts as what lstat saw; a symlink counts as its own inode;
 *   - no other filesystem is entered (as du -x: the sandbox cannot mount
 *     on the host's side of the tree, and an operator's mount is not its);
 *   - the walk is iterative (an explicit stack of directory streams, at
 *     most NSBOX_DU_MAX_DEPTH deep) and visits at most max_entries
 *     entries; when either bound stops it, `truncated` says so and the
 *     numbers are a lower bound;
 *   - an entry that vanishes under it is skipped, not an error.
 * Rootless, a sandbox's files belong to subordinate ids and its
 * directories may be 0700: nsbox_du walks inside a user namespace with
 * the sandbox's id map (as the removal of a sandbox does), where the
 * walker is root over those ids.  As root no namespace is needed.
 * Nothing here allocates more than the hard-link set (bounded by
 * max_entries) and the directory stack. */
#ifndef NSBOX_RUNTIME_DU_H
#define NSBOX_RUNTIME_DU_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"
#include "../common/userns.h"

#define NSBOX_DU_MAX_DEPTH 128          /* directories below the top */
#define NSBOX_DU_MAX_ENTRIES (1u << 20) /* entries visited by nsbox_du */

struct nsbox_du {
    uint64_t bytes;  /* allocated: st_blocks * 512, each inode once */
    uint64_t inodes; /* distinct inodes, the top directory included */
    bool truncated;  /* a bound stopped the walk: both are lower bounds */
};

/* Measures the tree at dir (a directory; not followed when a symlink),
 * with NSBOX_DU_MAX_ENTRIES.  rootless_map: the id map the tree's files
 * live in (the walk runs in a user namespace with it), or NULL as root.
 * Returns 0 with *out filled, or -1 with err set (dir cannot be opened,
 * the namespace could not be made). */
int nsbox_du(const char *dir, const struct nsbox_idmap *rootless_map, struct nsbox_du *out,
             struct nsbox_err *err);

/* The walk itself, in this process, from an open directory fd (borrowed;
 * O_RDONLY or O_PATH) with a bound of max_entries entries.  Returns 0 with
 * *out filled, or -1 with err set. */
int nsbox_du_at(int dirfd, uint64_t max_entries, struct nsbox_du *out, struct nsbox_err *err);

#endif
