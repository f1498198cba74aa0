#ifndef NSBOX_RUNTIME_MOUNTS_H
#define NSBOX_RUNTIME_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "nested.h"

#define NSBOX_MOUNT_MAX_BINDS 32 /* = NSBOX_MAX_BINDS */

/* One bind (sandbox.h, struct nsbox_bind), as the child mounts it. */
struct nsbox_mount_bind {
    char src[64];    /* "/proc/self/fd/N" of the source in this mount namespace */
    const char *dst; /* absolute inside */
    bool file;       /* a regular file (else a directory) */
    bool rw, noexec;
    bool preset; /* an idmapped mount whose attributes the host side set
                    (and the kernel locked): bound as it is */
    bool copy;   /* struct nsbox_bind.copy: the files of copy_fd (the
                    source directory, open for reading, borrowed) copied
                    onto the private tmpfs and bound from there */
    int copy_fd;
};

struct nsbox_mount_config {
    const char *lower;   /* the image rootfs (or its idmapped mount) */
    const char *upper;   /* the sandbox's writable layer */
    const char *work;    /* overlay's work directory, same filesystem */
    const char *merged;  /* where the overlay is mounted before pivot_root */
    bool userxattr;      /* overlay mounted in a user namespace */
    uint64_t tmp_bytes;  /* size of the /tmp tmpfs */
    uint64_t shm_bytes;  /* size of the /dev/shm tmpfs */
    const char *workdir; /* created inside when missing; may be NULL */
    /* A persistent workspace at workdir, or NULL: the upper layer of an
     * overlay whose lower layer (empty) and work directory are given too,
     * all "/proc/self/fd/N", the work directory on the upper's mount. */
    const char *workspace, *workspace_lower, *workspace_work;
    struct nsbox_mount_bind binds[NSBOX_MOUNT_MAX_BINDS];
    size_t n_binds;
    /* An empty directory outside the new root where a small tmpfs of
     * nsbox's own files is mounted: /etc/resolv.conf and /etc/hosts
     * (net.h; NULL: the image's; hostname goes in hosts) and the copied
     * binds, each bound read-only from there. */
    const char *private_dir;
    const char *hostname;
    /* Nested mode (nested.h): a plain /proc, /sys/fs/cgroup, /dev/net/tun
     * and the rest; off: nothing changes. */
    struct nsbox_nested_mount nested;
};

/* In a fresh mount namespace (of the sandbox's user namespace): builds the
 * sandbox's tree and pivots into it.  Returns 0 or -1. */
int nsbox_mounts_setup(const struct nsbox_mount_config *c, struct nsbox_err *err);

struct nsbox_sandbox_config;

/* STATE/vols/N into buf: where, as root, the host side mounts bind N's
 * idmapped mount for the child to copy. */
void nsbox_binds_point(const char *state_dir, size_t i, char *buf, size_t size);

/* Whether bind i is mounted that way: root, and an opened bind (a volume). */
bool nsbox_binds_idmapped(const struct nsbox_sandbox_config *cfg, size_t i);

/* Host side, before the clone: STATE/vols/N for each idmapped bind, a
 * directory or an empty file as its source is.  Returns 0 or -1. */
int nsbox_binds_make_points(const struct nsbox_sandbox_config *cfg, const char *state_dir,
                            struct nsbox_err *err);

/* In the child's new mount namespace, with the host's credentials: each
 * bind's source opened into fds[i] (the caller closes them) and described
 * in mb[i] -- a driver directory by path (readable, when copied), an
 * opened bind rootless found again and required to be the same inode, an
 * idmapped one at its point.  Returns 0 or -1. */
int nsbox_binds_open(const struct nsbox_sandbox_config *cfg, const char *state_dir, int fds[],
                     struct nsbox_mount_bind *mb, struct nsbox_err *err);

/* Host side, before the clone: the directories the overlay of the
 * workspace (an absolute path) needs beside it, .overlay/NAME/lower (empty)
 * and .overlay/NAME/work in its parent, made when missing with the
 * caller's ids, which are the sandbox's root's.  Returns 0 or -1. */
int nsbox_workspace_prepare(const char *workspace, struct nsbox_err *err);

#endif
