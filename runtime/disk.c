/* A sandbox's disk: the bound of its writable layer (see disk.h).
 *
 * Host side: nsbox_disk_plan picks the kind before the clone (and, for a
 * quota, puts upper/ and work/ in the sandbox's project); the limits note
 * says which holds.  Child side: nsbox_disk_mount_tmpfs mounts the tmpfs in
 * the sandbox's mount namespace.  Usage: statfs of the tmpfs through the fd
 * init handed over, or the project's quota, or (no bound) a walk. */
#include "disk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/quota.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/syscalls.h"
#include "disk_internal.h"
#include "du.h"
#include "proto.h"
#include "sandbox.h"

/* The sandboxes' projects: one per root id-range slot (32000 of them). */

/* The kernel's QCMD shifts an int: Q_SETQUOTA (0x800008) << 8 overflows
 * it (undefined behaviour; UBSan stops there).  The same, unsigned. */
#define QUOTA_CMD(cmd, type) (((unsigned)(cmd) << SUBCMDSHIFT) | ((unsigned)(type)&SUBCMDMASK))
#define SANDBOX_PROJID_BASE 0x6e000000u

uint64_t nsbox_disk_inodes_for(uint64_t bytes)
{
    uint64_t n = bytes / 4096;
    return n < 1024 ? 1024 : n;
}

const char *nsbox_disk_kind_name(enum nsbox_disk_kind kind)
{
    return kind == NSBOX_DISK_TMPFS ? "tmpfs" : kind == NSBOX_DISK_QUOTA ? "quota" : "none";
}

/* ---- project quotas ---- */

bool nsbox_quota_usable(const char *dir, char *why, size_t why_size)
{
    char dummy[8];
    if (why == NULL)
        why = dummy, why_size = sizeof(dummy);
    if (geteuid() != 0) {
        snprintf(why, why_size, "project quotas need root");
        return false;
    }
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_size, "cannot open %s: %s", dir, strerror(errno));
        return false;
    }
    struct fs_quota_statv st = {.qs_version = FS_QSTATV_VERSION1};
    if (nsbox_quotactl_fd(fd, QUOTA_CMD(Q_XGETQSTATV, PRJQUOTA), 0, &st) < 0) {
        /* ENOSYS: no quotactl_fd (before 5.14), or no quota support for
         * this filesystem in the kernel (ext4 without CONFIG_QFMT_V2). */
        snprintf(why, why_size,
                 "no project quotas on the store's filesystem (%s; ext4: mkfs -O quota,project "
                 "and mount -o prjquota, with a kernel that has quota_v2; xfs: mount -o pquota)",
                 strerror(errno));
        return false;
    }
    if (!(st.qs_flags & FS_QUOTA_PDQ_ACCT) || !(st.qs_flags & FS_QUOTA_PDQ_ENFD)) {
        snprintf(why, why_size,
                 "project quotas are not enforced on the store's filesystem "
                 "(mount it with prjquota, or pquota on xfs)");
        return false;
    }
    struct fsxattr fa;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0) {
        snprintf(why, why_size, "the store's filesystem has no project ids (FS_IOC_FSGETXATTR)");
        return false;
    }
    return true;
}

static int set_project(int fd, uint32_t projid, bool dir)
{
    struct fsxattr fa;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0)
        return -1;
    if (fa.fsx_projid == projid && (!dir || (fa.fsx_xflags & FS_XFLAG_PROJINHERIT)))
        return 0;
    fa.fsx_projid = projid;
    if (dir)
        fa.fsx_xflags |= FS_XFLAG_PROJINHERIT;
    return ioctl(fd, FS_IOC_FSSETXATTR, &fa);
}

/* Every directory and regular file below dfd (owned by the caller, which
 * is root: the tree may be a sandbox's, so nothing is followed and
 * nothing but directories and regular files is opened). */
static int project_tree(int dfd, uint32_t projid, int depth, struct nsbox_err *err)
{
    if (depth > 256)
        return nsbox_err_set(err, ELOOP, "the workspace is nested too deep to put in a project");
    int fd = dup(dfd);
    _cleanup_closedir_ DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return nsbox_err_sys(err, "cannot list a directory to put in a project");
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (de->d_type != DT_DIR && de->d_type != DT_REG)
            continue;
        bool is_dir = de->d_type == DT_DIR;
        _cleanup_close_ int c = openat(dfd, de->d_name,
                                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                           (is_dir ? O_DIRECTORY : 0));
        if (c < 0)
            continue; /* gone, or swapped for something else: not ours to follow */
        struct stat st;
        if (fstat(c, &st) < 0 || (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
            continue;
        if (set_project(c, projid, is_dir) < 0)
            return nsbox_err_sys(err, "cannot set the project of %s", de->d_name);
        if (is_dir && project_tree(c, projid, depth + 1, err) < 0)
            return -1;
    }
    return 0;
}

int nsbox_quota_apply(const char *dir, uint32_t projid, uint64_t bytes, uint64_t inodes,
                      struct nsbox_err *err)
{
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", dir);
    struct fsxattr fa;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0)
        return nsbox_err_sys(err, "cannot read the project of %s", dir);
    bool fresh = fa.fsx_projid != projid || !(fa.fsx_xflags & FS_XFLAG_PROJINHERIT);
    if (set_project(fd, projid, true) < 0)
        return nsbox_err_sys(err, "cannot put %s in project %u", dir, projid);
    if (fresh && project_tree(fd, projid, 0, err) < 0)
        return -1;
    struct if_dqblk q = {.dqb_bhardlimit = (bytes + 1023) / 1024, /* in 1 KiB blocks */
                         .dqb_ihardlimit = inodes,
                         .dqb_valid = QIF_LIMITS};
    if (nsbox_quotactl_fd(fd, QUOTA_CMD(Q_SETQUOTA, PRJQUOTA), (int)projid, &q) < 0)
        return nsbox_err_sys(err, "cannot set the quota of project %u on %s", projid, dir);
    return 0;
}

int nsbox_quota_used(const char *dir, uint32_t projid, uint64_t *bytes, uint64_t *inodes,
                     struct nsbox_err *err)
{
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", dir);
    struct if_dqblk q = {0};
    if (nsbox_quotactl_fd(fd, QUOTA_CMD(Q_GETQUOTA, PRJQUOTA), (int)projid, &q) < 0)
        return nsbox_err_sys(err, "cannot read the quota of project %u on %s", projid, dir);
    *bytes = q.dqb_curspace;
    *inodes = q.dqb_curinodes;
    return 0;
}

void nsbox_quota_clear(const char *dir, uint32_t projid)
{
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct if_dqblk q = {.dqb_valid = QIF_LIMITS};
    if (fd >= 0)
        nsbox_quotactl_fd(fd, QUOTA_CMD(Q_SETQUOTA, PRJQUOTA), (int)projid, &q);
}

/* ---- the sandbox's disk ---- */

int nsbox_disk_plan(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *sb, uint32_t slot,
                    struct nsbox_err *err)
{
    char why[256] = "", path[PATH_MAX + 16];

    sb->disk = (struct nsbox_disk){.kind = NSBOX_DISK_NONE, .fd = -1};
    if (cfg->disk_bytes == 0)
        return 0;
    sb->disk.limit_bytes = cfg->disk_bytes;
    sb->disk.limit_inodes = nsbox_disk_inodes_for(cfg->disk_bytes);
    bool quota = !sb->rootless && cfg->disk_backend != NSBOX_DISK_USE_TMPFS &&
                 nsbox_quota_usable(sb->state_dir, why, sizeof(why));
    if (!quota && cfg->disk_backend == NSBOX_DISK_USE_QUOTA)
        return nsbox_err_set(err, ENOTSUP, "a project-quota disk was asked for: %s",
                             sb->rootless ? "project quotas need root" : why);
    if (!quota) {
        sb->disk.kind = NSBOX_DISK_TMPFS;
        return 0;
    }
    sb->disk.kind = NSBOX_DISK_QUOTA;
    sb->disk.projid = SANDBOX_PROJID_BASE + slot;
    /* upper/ and work/ are empty and the project's old files (a sandbox
     * of this slot that died) are gone with its state dir or soon will
     * be: the limit holds for what this sandbox writes. */
    /* Nested mode: the nested engine's storage too (nested.h). */
    static const char *const dirs[] = {"upper", "work", "containers"};
    for (size_t i = 0; i < (cfg->nested ? 3u : 2u); i++) {
        snprintf(path, sizeof(path), "%s/%s", sb->state_dir, dirs[i]);
        if (nsbox_quota_apply(path, sb->disk.projid, cfg->disk_bytes, sb->disk.limit_inodes, err) <
            0)
            return nsbox_err_prefix(err, "the sandbox's disk");
    }
    return 0;
}

uint64_t nsbox_disk_memory_limit(const struct nsbox_sandbox_config *cfg,
                                 const struct nsbox_sandbox *sb)
{
    uint64_t m = cfg->limits.memory_bytes;
    return m && sb->disk.kind == NSBOX_DISK_TMPFS ? m + sb->disk.limit_bytes : m;
}

void nsbox_disk_note(const struct nsbox_sandbox_config *cfg, const struct nsbox_sandbox *sb,
                     bool memcg, char *note, size_t size)
{
    size_t l = strlen(note);
    unsigned long long mib = (unsigned long long)(sb->disk.limit_bytes >> 20);

    if (l >= size)
        return;
    if (sb->disk.kind == NSBOX_DISK_QUOTA)
        snprintf(note + l, size - l, "; disk: %llu MiB total (project quota %u)", mib,
                 sb->disk.projid);
    else if (sb->disk.kind == NSBOX_DISK_TMPFS && memcg && cfg->limits.memory_bytes)
        snprintf(note + l, size - l,
                 "; disk: %llu MiB total (tmpfs in memory; memory limit raised to %llu MiB)", mib,
                 (unsigned long long)(nsbox_disk_memory_limit(cfg, sb) >> 20));
    else if (sb->disk.kind == NSBOX_DISK_TMPFS)
        snprintf(note + l, size - l, "; disk: %llu MiB total (tmpfs in memory)", mib);
    else if (cfg->rlimit_fsize)
        snprintf(note + l, size - l, "; disk: %llu MiB per file, no total limit",
                 (unsigned long long)(cfg->rlimit_fsize >> 20));
    else
        snprintf(note + l, size - l, "; disk: no limit");
}

int nsbox_disk_mount_tmpfs(int state_fd, const struct nsbox_disk *d, int *root_fd,
                           struct nsbox_err *err)
{
    char target[64], opts[96];
    struct statfs sf;

    *root_fd = -1;
    _cleanup_close_ int at = openat(state_fd, "disk",
                                    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (at < 0)
        return nsbox_err_sys(err, "cannot open the sandbox's disk mountpoint");
    snprintf(target, sizeof(target), "/proc/self/fd/%d", at);
    snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0755",
             (unsigned long long)d->limit_bytes, (unsigned long long)d->limit_inodes);
    if (mount("nsbox-disk", target, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
        return nsbox_err_sys(err, "cannot mount the sandbox's disk (a %llu MiB tmpfs)",
                             (unsigned long long)(d->limit_bytes >> 20));
    /* Looked up again from the state dir, the name leads onto the mount. */
    int fd = openat(state_fd, "disk", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC) {
        if (fd >= 0)
            close(fd);
        return nsbox_err_set(err, EIO, "the sandbox's disk is not the tmpfs just mounted");
    }
    if (mkdirat(fd, "upper", 0755) < 0 || mkdirat(fd, "work", 0755) < 0) {
        close(fd);
        return nsbox_err_sys(err, "cannot populate the sandbox's disk");
    }
    *root_fd = fd;
    return 0;
}

void nsbox_disk_release(const struct nsbox_sandbox *sb)
{
    if (sb->disk.kind == NSBOX_DISK_QUOTA)
        nsbox_quota_clear(sb->state_dir[0] ? sb->state_dir : "/", sb->disk.projid);
}

int nsbox_sandbox_disk_usage(const struct nsbox_sandbox *sb, struct nsbox_disk_usage *u,
                             struct nsbox_err *err)
{
    char path[PATH_MAX + 16];
    struct statfs sf;

    *u = (struct nsbox_disk_usage){.kind = sb->disk.kind,
                                   .limit_bytes = sb->disk.limit_bytes,
                                   .limit_inodes = sb->disk.limit_inodes};
    switch (sb->disk.kind) {
    case NSBOX_DISK_TMPFS: {
        _cleanup_close_ int fd = nsbox_sandbox_disk_open(sb, err);
        if (fd < 0)
            return -1;
        if (fstatfs(fd, &sf) < 0)
            return nsbox_err_sys(err, "cannot statfs the disk of sandbox %s", sb->id);
        u->used_bytes = (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
        u->used_inodes = (uint64_t)(sf.f_files - sf.f_ffree);
        return 0;
    }
    case NSBOX_DISK_QUOTA:
        snprintf(path, sizeof(path), "%s/upper", sb->state_dir);
        return nsbox_quota_used(path, sb->disk.projid, &u->used_bytes, &u->used_inodes, err);
    case NSBOX_DISK_NONE:
        break;
    }
    return nsbox_disk_walk_used(sb, u, err);
}

/* No bound: what the upper layer holds, by a walk (as the sandbox's ids
 * rootless: its files belong to them). */
int nsbox_disk_walk_used(const struct nsbox_sandbox *sb, struct nsbox_disk_usage *u,
                         struct nsbox_err *err)
{
    char path[PATH_MAX + 16];
    struct nsbox_du du;

    snprintf(path, sizeof(path), "%s/upper", sb->state_dir);
    if (nsbox_du(path, sb->rootless && sb->idmap.n_uid ? &sb->idmap : NULL, &du, err) < 0)
        return -1;
    u->used_bytes = du.bytes;
    u->used_inodes = du.inodes;
    return 0;
}

int nsbox_disk_fd_recv(struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    struct nsbox_msg_disk m;
    struct pollfd p = {.fd = sb->ctl, .events = POLLIN};
    int fds[3];

    if (poll(&p, 1, 10000) != 1)
        return nsbox_err_set(err, ETIMEDOUT, "sandbox %s did not hand over its disk", sb->id);
    ssize_t n = nsbox_proto_recv(sb->ctl, &m, sizeof(m), fds, err);
    if (n < 0)
        return -1;
    for (int i = 1; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (n != (ssize_t)sizeof(m) || m.type != NSBOX_MSG_DISK || fds[0] < 0) {
        if (fds[0] >= 0)
            close(fds[0]);
        return nsbox_err_set(err, EPROTO, "sandbox %s did not hand over its disk", sb->id);
    }
    sb->disk.fd = fds[0];
    return 0;
}
