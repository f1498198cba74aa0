/* Which files a run created or changed in a sandbox's working directory.
 *
 * Everything a sandbox writes lands on the host: in its overlay's upper
 * layer (STATE/upper), or in the persistent workspace mounted at its
 * workdir.  A snapshot walks the host directory that holds the working
 * directory's files, before and after a run, and the diff compares sizes
 * and mtimes.  The tree is the sandbox's, so hostile: the walk never
 * follows a symlink, reads metadata only, and is bounded in entries and
 * depth (see changes.c). */
#ifndef NSBOX_RUNTIME_CHANGES_H
#define NSBOX_RUNTIME_CHANGES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox.h"

#define NSBOX_CHANGES_MAX 5000 /* files a snapshot looks at */

struct nsbox_snap_entry {
    char *path; /* relative to the working directory */
    int64_t mtime_ns;
    int64_t size;
};

struct nsbox_snapshot {
    struct nsbox_snap_entry *v;
    size_t n, cap;
    bool truncated;      /* more files than the walk looks at */
    char base[PATH_MAX]; /* the host directory the tree lives in */
    char rel[PATH_MAX];  /* the working directory beneath it ("" itself) */
    /* base is /proc/self/fd/FD/upper of a tmpfs disk's fd, held until
     * nsbox_snapshot_free (the handle itself may hold none). */
    bool holds_fd;
    int fd;
};

/* The regular files under cwd (a path inside sb; NULL: its workdir) as
 * the host holds them.  Never fails: a directory that cannot be walked
 * gives an empty snapshot.  Free with nsbox_snapshot_free. */
void nsbox_changes_take(const struct nsbox_sandbox *sb, const char *cwd, struct nsbox_snapshot *s);

void nsbox_snapshot_free(struct nsbox_snapshot *s);

enum nsbox_change_kind { NSBOX_CHANGE_CREATED, NSBOX_CHANGE_MODIFIED };

/* "created", "modified". */
const char *nsbox_change_kind_name(enum nsbox_change_kind k);

struct nsbox_change {
    char *path; /* relative to the working directory; any bytes */
    enum nsbox_change_kind kind;
    int64_t size;
    const char *mime; /* an image type by the name (nsbox_mime_from_name), or NULL */
};

struct nsbox_changes {
    struct nsbox_change *v;
    size_t n;
    bool truncated; /* either snapshot was */
};

/* The files of after that are new or changed since before.  Returns 0 with
 * out filled (free with nsbox_changes_free), or -1 when out of memory. */
int nsbox_changes_diff(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                       struct nsbox_changes *out, struct nsbox_err *err);

void nsbox_changes_free(struct nsbox_changes *c);

/* The contents of path (from a diff of s) when it is still a regular file
 * of at most max bytes, opened without following any symlink.  Returns a
 * malloc'ed buffer with *len set, or NULL. */
unsigned char *nsbox_changes_read(const struct nsbox_snapshot *s, const char *path, size_t max,
                                  size_t *len);

#endif
