#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

static int rm_tree_contents(int dfd, struct nsbox_err *err);

/* A directory its owner made unreadable (chmod 0: a landlock-mode
 * sandbox's files are the user's own, with no namespace root to override
 * the mode): made 0700 through an O_PATH fd of that very directory, never
 * a path a symlink could redirect, then opened.  Returns the fd or -1. */
static int open_unreadable_dir(int dirfd, const char *name)
{
    char path[64];
    _cleanup_close_ int p = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p < 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", p);
    if (chmod(path, 0700) < 0)
        return -1;
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Whether the directory fd is on another mount than its parent dirfd. */
static bool is_mount_point(int dirfd, int fd)
{
    struct statx parent, self;
    if (statx(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &parent) == 0 &&
        statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &self) == 0 &&
        (parent.stx_mask & self.stx_mask & STATX_MNT_ID))
        return parent.stx_mnt_id != self.stx_mnt_id || parent.stx_dev_major != self.stx_dev_major ||
               parent.stx_dev_minor != self.stx_dev_minor;
    struct stat ps, ss;
    return fstat(dirfd, &ps) == 0 && fstat(fd, &ss) == 0 && ps.st_dev != ss.st_dev;
}

static int rm_entry(int dirfd, const char *name, struct nsbox_err *err)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    int unlink_errno = errno;
    if (errno != EISDIR && errno != EPERM)
        return nsbox_err_sys(err, "cannot remove %s", name);
    /* A directory: O_NOFOLLOW|O_DIRECTORY guarantees we descend into the
     * directory itself, never through a symlink swapped in its place. */
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES)
        fd = open_unreadable_dir(dirfd, name);
    if (fd < 0 && errno == ENOTDIR) /* not a directory: unlink's EPERM was real */
        return nsbox_err_set(err, unlink_errno, "cannot remove %s: %s", name,
                             strerror(unlink_errno));
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s for removal", name);
    /* Never descend into another mount: one left inside the tree (an image
     * rootfs, a bind of the store's workspaces) must not be emptied with it.
     * A bind of the same filesystem has the same st_dev: the mount ids
     * tell (statx, Linux 5.8), st_dev where they are not known. */
    if (dirfd != AT_FDCWD && is_mount_point(dirfd, fd)) /* AT_FDCWD: no parent to compare */
        return nsbox_err_set(err, EXDEV, "refusing to remove %s: it is a mount point", name);
    /* A read-only directory cannot lose entries; root would not care, an
     * unprivileged owner does. */
    fchmod(fd, 0700);
    if (rm_tree_contents(fd, err) < 0)
        return nsbox_err_prefix(err, "%s", name);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return nsbox_err_sys(err, "cannot remove directory %s", name);
    return 0;
}

static int rm_tree_contents(int dfd, struct nsbox_err *err)
{
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(dfd, ".", err);
    if (d == NULL)
        return -1;
    struct dirent *de;
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (rm_entry(dfd, de->d_name, err) < 0)
            return -1;
    }
    if (errno != 0)
        return nsbox_err_sys(err, "readdir");
    return 0;
}

DIR *nsbox_opendir_at(int dirfd, const char *name, struct nsbox_err *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        nsbox_err_sys(err, "cannot open directory %s", name);
        return NULL;
    }
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        nsbox_err_sys(err, "cannot list directory %s", name);
        close(fd);
    }
    return d;
}

int nsbox_rm_rf_at(int dirfd, const char *name, struct nsbox_err *err)
{
    return rm_entry(dirfd, name, err);
}

int nsbox_mkdir_p(const char *path, mode_t mode, struct nsbox_err *err)
{
    char buf[PATH_MAX];

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return nsbox_err_set(err, ENAMETOOLONG, "path too long: %s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return nsbox_err_sys(err, "cannot create directory %s", buf);
        *p = saved;
        if (saved == '\0')
            break;
    }
    return 0;
}

char *nsbox_read_file_at(int dirfd, const char *name, size_t max, size_t *len,
                         struct nsbox_err *err)
{
    struct stat st;
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        nsbox_err_sys(err, "cannot open %s", name);
        return NULL;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        nsbox_err_set(err, EINVAL, "%s is not a regular file", name);
        return NULL;
    }
    if ((size_t)st.st_size > max) {
        nsbox_err_set(err, EFBIG, "%s is too large (%lld bytes, limit %zu)", name,
                      (long long)st.st_size, max);
        return NULL;
    }
    _cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    size_t off = 0;
    while (off < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            nsbox_err_sys(err, "cannot read %s", name);
            return NULL;
        }
        if (n == 0)
            break;
        off += (size_t)n;
    }
    buf[off] = '\0';
    if (len != NULL)
        *len = off;
    return TAKE_PTR(buf);
}

int nsbox_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                         bool durable, struct nsbox_err *err)
{
    char tmp[NAME_MAX + 1];

    if (snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid()) >= (int)sizeof(tmp))
        return nsbox_err_set(err, ENAMETOOLONG, "name too long: %s", name);
    _cleanup_close_ int fd = openat(dirfd, tmp,
                                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot create %s", tmp);
    if (nsbox_write_all(fd, data, len) < 0 || (durable && fsync(fd) < 0)) {
        nsbox_err_sys(err, "cannot write %s", tmp);
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        nsbox_err_sys(err, "cannot rename %s to %s", tmp, name);
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    return 0;
}

int nsbox_write_file_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                            struct nsbox_err *err)
{
    return write_replace(dirfd, name, data, len, mode, true, err);
}

int nsbox_write_file_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                             struct nsbox_err *err)
{
    return write_replace(dirfd, name, data, len, mode, false, err);
}

int nsbox_lock_at(int dirfd, const char *name, int operation, struct nsbox_err *err)
{
    _cleanup_close_ int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open lock file %s", name);
    while (flock(fd, operation) < 0) {
        if (errno == EINTR)
            continue;
        return nsbox_err_sys(err, "cannot lock %s", name);
    }
    return TAKE_FD(fd);
}

bool nsbox_path_plain_relative(const char *p)
{
    for (;;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (p[n] == '\0')
            return true;
        p += n + 1;
    }
}
