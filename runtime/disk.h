/* A sandbox's disk: where its writable layer (the overlay's upper and work
 * directories, so /workspace and every other writable path but /tmp and
 * /dev/shm) lives, and what bounds it in total.
 *
 * One of three kinds per sandbox, chosen at creation (nsbox_disk_plan):
 *   quota  As root, when the state directory's filesystem has project
 *          quotas on (ext4 mounted with prjquota, xfs with pquota): upper/
 *          and work/ get a project id of their own (the sandbox's id-range
 *          slot) with PROJINHERIT, and a block and inode hard limit.  The
 *          files stay on disk.  The sandbox cannot change a project id or
 *          the inherit flag (the kernel allows that only from the initial
 *          user namespace) and does not hold CAP_SYS_RESOURCE there, so
 *          the limit is hard for it.
 *   tmpfs  Everywhere else, rootless too: a tmpfs of the limit's size and
 *          an inode cap (one per 4 KiB, as /tmp), mounted by the sandbox's
 *          init in its own mount namespace on STATE/disk, holding upper/
 *          and work/.  Never mounted on the host: it goes with the sandbox
 *          (and the last fd to it), so a crash leaves no mount behind.
 *          The host reaches it through an fd init hands over on each new
 *          control connection (nsbox_sandbox_open, and the creator's).
 *          Its pages are memory and are charged to the sandbox's memory
 *          cgroup: the cgroup's limit is raised by the disk's size, so a
 *          full disk is ENOSPC and never an OOM kill.
 *   none   No total bound: --disk unlimited asked for it, or no kernel way
 *          worked and --limits=best-effort allows going on.  upper/ on the
 *          store's filesystem, bounded per file only (RLIMIT_FSIZE).
 * Which one holds is said in the sandbox's limits note and by
 * nsbox_disk_kind_name in every result. */
#ifndef NSBOX_RUNTIME_DISK_H
#define NSBOX_RUNTIME_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"

enum nsbox_disk_kind {
    NSBOX_DISK_NONE = 0,
    NSBOX_DISK_TMPFS = 1,
    NSBOX_DISK_QUOTA = 2,
};

/* What a sandbox's creator may ask for (nsbox_sandbox_config.disk_backend). */
enum nsbox_disk_backend {
    NSBOX_DISK_AUTO = 0,  /* quota where it works, else tmpfs */
    NSBOX_DISK_USE_TMPFS, /* tmpfs even where quota would work */
    NSBOX_DISK_USE_QUOTA, /* quota or fail */
};

struct nsbox_disk {
    enum nsbox_disk_kind kind;
    uint64_t limit_bytes;  /* 0 with NONE */
    uint64_t limit_inodes; /* 0 with NONE */
    uint32_t projid;       /* QUOTA */
    int fd;                /* TMPFS: its root on the host side, or -1 */
};

/* The inode cap that goes with a size: one per 4 KiB, at least 1024. */
uint64_t nsbox_disk_inodes_for(uint64_t bytes);

/* "tmpfs", "quota" or "none". */
const char *nsbox_disk_kind_name(enum nsbox_disk_kind kind);

/* Project quotas as the store's filesystem offers them, for a directory
 * the caller (root) owns: the filesystem under dir has project quota
 * accounting and enforcement on.  Returns true or false; *why (may be
 * NULL) says what is missing. */
bool nsbox_quota_usable(const char *dir, char *why, size_t why_size);

/* Puts dir and (when it already holds files) everything below it in
 * project projid with PROJINHERIT, and sets the project's hard limits.
 * Symlinks are never followed.  Root only.  Returns 0 or -1. */
int nsbox_quota_apply(const char *dir, uint32_t projid, uint64_t bytes, uint64_t inodes,
                      struct nsbox_err *err);

/* A project's usage on dir's filesystem.  Returns 0 or -1. */
int nsbox_quota_used(const char *dir, uint32_t projid, uint64_t *bytes, uint64_t *inodes,
                     struct nsbox_err *err);

/* Lifts a project's limits (the project is free to reuse).  Best effort. */
void nsbox_quota_clear(const char *dir, uint32_t projid);

#endif
