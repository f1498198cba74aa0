/* A hard-link copy of an unpacked rootfs, the start of a committed image
 * whose layers are its base's plus one (unpack.c: store_unpack_on_base).
 *
 * Directories are made anew (owner, mode, times and xattrs copied): a
 * layer applied on top sets directory metadata in place and adds or
 * removes entries, which must not show in the base.  Every other inode is
 * shared: oci/layer.c never writes into an existing non-directory; it
 * unlinks and creates a new inode (make_file's O_EXCL, clear_slot), and
 * whiteouts only unlink.  So the base's files are never modified. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "internal.h"

/* A deeper tree is not worth the fds it would hold open: the caller
 * unpacks in full instead. */
#define LINK_TREE_DEPTH_MAX 128
#define XATTR_BUF 4096 /* larger lists or values: ERANGE, and a full unpack */

/* oci/layer.c sets no xattr, so a base directory carries at most what the
 * filesystem gave it.  security.selinux is left to the filesystem, as in a
 * from-scratch unpack; any other is copied, or the copy fails. */
static int copy_xattrs(int src, int dst, struct nsbox_err *err)
{
    char names[XATTR_BUF], value[XATTR_BUF];
    ssize_t len = flistxattr(src, names, sizeof(names));

    if (len < 0)
        return errno == ENOTSUP ? 0 : nsbox_err_sys(err, "cannot list xattrs");
    for (char *n = names; n < names + len; n += strlen(n) + 1) {
        if (strcmp(n, "security.selinux") == 0)
            continue;
        ssize_t vlen = fgetxattr(src, n, value, sizeof(value));
        if (vlen < 0 || fsetxattr(dst, n, value, (size_t)vlen, 0) < 0)
            return nsbox_err_sys(err, "cannot copy xattr %s", n);
    }
    return 0;
}

/* Ownership before mode: chown clears the setuid and setgid bits.  Times
 * last, once the children are in. */
static int copy_dir_meta(int src, int dst, const struct stat *st, struct nsbox_err *err)
{
    struct timespec ts[2] = {st->st_atim, st->st_mtim};

    if (fchown(dst, st->st_uid, st->st_gid) < 0)
        return nsbox_err_sys(err, "cannot chown");
    if (fchmod(dst, st->st_mode & 07777) < 0)
        return nsbox_err_sys(err, "cannot chmod");
    if (copy_xattrs(src, dst, err) < 0)
        return -1;
    if (futimens(dst, ts) < 0)
        return nsbox_err_sys(err, "cannot set times");
    return 0;
}

static int link_dir(int src, int dst, int depth, struct nsbox_err *err);

/* One entry of a directory: a directory copied, anything else linked.
 * linkat without AT_SYMLINK_FOLLOW links a symlink itself. */
static int link_entry(int src, int dst, const char *name, int depth, struct nsbox_err *err)
{
    struct stat st;

    if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return nsbox_err_sys(err, "cannot stat %s", name);
    if (!S_ISDIR(st.st_mode)) {
        if (linkat(src, name, dst, name, 0) < 0)
            return nsbox_err_sys(err, "cannot link %s", name);
        return 0;
    }
    if (depth >= LINK_TREE_DEPTH_MAX)
        return nsbox_err_set(err, ELOOP, "%s: more than %d directories deep", name,
                             LINK_TREE_DEPTH_MAX);
    if (mkdirat(dst, name, 0700) < 0)
        return nsbox_err_sys(err, "cannot create %s", name);
    _cleanup_close_ int s = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_close_ int d = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s < 0 || d < 0)
        return nsbox_err_sys(err, "cannot open %s", name);
    if (link_dir(s, d, depth + 1, err) < 0 || copy_dir_meta(s, d, &st, err) < 0)
        return nsbox_err_prefix(err, "%s", name);
    return 0;
}

static int link_dir(int src, int dst, int depth, struct nsbox_err *err)
{
    int fd = dup(src);
    if (fd < 0)
        return nsbox_err_sys(err, "dup");
    _cleanup_closedir_ DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return nsbox_err_sys(err, "cannot list a directory");
    }
    struct dirent *de;
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (link_entry(src, dst, de->d_name, depth, err) < 0)
            return -1;
    }
    if (errno != 0)
        return nsbox_err_sys(err, "readdir");
    return 0;
}

int store_link_tree(int src_fd, int dst_fd, struct nsbox_err *err)
{
    struct stat st;

    if (fstat(src_fd, &st) < 0)
        return nsbox_err_sys(err, "cannot stat the base rootfs");
    if (link_dir(src_fd, dst_fd, 0, err) < 0 || copy_dir_meta(src_fd, dst_fd, &st, err) < 0)
        return nsbox_err_prefix(err, "copying the base rootfs");
    return 0;
}
