#include "layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/strset.h"
#include "../common/syscalls.h"
#include "blobstream.h"
#include "digest.h"

#define ENTRIES_MAX (16u << 20)

struct dir_time {
    char *path;
    struct timespec mtime;
};

struct unpack {
    int root;
    struct archive *a;
    const struct oci_layer_opts *opts;
    struct oci_layer_stats *stats;

    /* The parent directory of the previous entry: most entries share it,
     * and resolving it once saves a path walk per file.  Invalidated by
     * every removal, since a removed directory leaves the fd stale. */
    char cache_path[PATH_MAX];
    int cache_fd;

    /* Paths this layer created: whiteouts and opaque markers only hide
     * what lower layers put there (OCI image spec, "Whiteouts"). */
    struct nsbox_strset created;

    /* Directory mtimes, applied once the layer's entries are all in. */
    struct dir_time *dirs;
    size_t n_dirs, cap_dirs;

    /* The decompressed layer, produced (and hashed) on its own thread. */
    struct oci_blobstream *stream;
};

static void note(struct unpack *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct unpack *u, const char *fmt, ...)
{
    char msg[PATH_MAX + 128];
    va_list ap;

    u->stats->skipped++;
    if (u->opts->note == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    u->opts->note(u->opts->note_ctx, msg);
}

int oci_layer_clean_path(const char *name, char *out, size_t size, struct nsbox_err *err)
{
    size_t len = 0;
    const char *p = name;

    if (size == 0)
        return nsbox_err_set(err, EINVAL, "no room for path");
    while (*p != '\0') {
        while (*p == '/')
            p++;
        const char *end = strchrnul(p, '/');
        size_t n = (size_t)(end - p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            p = end;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return nsbox_err_set(err, EINVAL,
                                 "entry \"%.200s\" climbs out of the rootfs with \"..\"", name);
        if (len + (len ? 1 : 0) + n + 1 > size)
            return nsbox_err_set(err, ENAMETOOLONG, "entry name too long: %.200s", name);
        if (len != 0)
            out[len++] = '/';
        memcpy(out + len, p, n);
        len += n;
        p = end;
    }
    out[len] = '\0';
    return 0;
}

/* Splits "a/b/c" into parent "a/b" (in place) and returns "c". */
static char *split_last(char *path)
{
    char *slash = strrchr(path, '/');
    if (slash == NULL) {
        memmove(path + 1, path, strlen(path) + 1);
        path[0] = '\0';
        return path + 1;
    }
    *slash = '\0';
    return slash + 1;
}

static void cache_drop(struct unpack *u)
{
    if (u->cache_fd >= 0)
        close(u->cache_fd);
    u->cache_fd = -1;
    u->cache_path[0] = '\0';
}

/* Called before removing path: a cached parent at or below it would go
 * stale.  The parent fd being used for the removal itself stays valid. */
static void cache_forget(struct unpack *u, const char *path)
{
    size_t n = strlen(path);
    if (u->cache_fd >= 0 && strncmp(u->cache_path, path, n) == 0 &&
        (u->cache_path[n] == '\0' || u->cache_path[n] == '/'))
        cache_drop(u);
}

static int resolve_dir(struct unpack *u, const char *path)
{
    return nsbox_openat2(u->root, path, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                         NSBOX_RESOLVE_CONFINED);
}

/* Creates each missing directory of path, resolving every prefix from the
 * root again so that a symlink met on the way stays confined. */
static int mkdir_confined(struct unpack *u, const char *path, struct nsbox_err *err)
{
    char prefix[PATH_MAX];
    size_t len = strlen(path);

    memcpy(prefix, path, len + 1);
    for (size_t i = 0; i <= len; i++) {
        if (prefix[i] != '/' && prefix[i] != '\0')
            continue;
        prefix[i] = '\0';
        _cleanup_close_ int fd = resolve_dir(u, prefix);
        if (fd < 0 && errno == ENOENT) {
            char *slash = strrchr(prefix, '/');
            const char *base = slash ? slash + 1 : prefix;
            if (slash)
                *slash = '\0';
            _cleanup_close_ int pfd = slash ? resolve_dir(u, prefix) : dup(u->root);
            if (slash)
                *slash = '/';
            if (pfd < 0 || (mkdirat(pfd, base, 0755) < 0 && errno != EEXIST))
                return nsbox_err_sys(err, "cannot create directory /%s", prefix);
            struct stat st;
            if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                return nsbox_err_set(err, ENOENT,
                                     "/%s is a symlink to a directory that does not "
                                     "exist in the image",
                                     prefix);
        } else if (fd < 0) {
            return nsbox_err_sys(err, "cannot open directory /%s", prefix);
        }
        prefix[i] = path[i];
    }
    return 0;
}

/* Returns a borrowed fd for the directory parent ("" is the root), creating
 * missing directories when create is set. */
static int open_parent(struct unpack *u, const char *parent, bool create, struct nsbox_err *err)
{
    if (parent[0] == '\0')
        return u->root;
    if (u->cache_fd >= 0 && strcmp(parent, u->cache_path) == 0)
        return u->cache_fd;
    int fd = resolve_dir(u, parent);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdir_confined(u, parent, err) < 0)
            return -1;
        fd = resolve_dir(u, parent);
    }
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open directory /%s", parent);
    cache_drop(u);
    u->cache_fd = fd;
    snprintf(u->cache_path, sizeof(u->cache_path), "%s", parent);
    return fd;
}

/* Makes room for a new entry called base in pfd (path is its full name).  Returns 1 when an
 * existing directory should be kept (want_dir), 0 when the slot is free. */
static int clear_slot(struct unpack *u, int pfd, const char *base, const char *path, bool want_dir,
                      struct nsbox_err *err)
{
    struct stat st;

    if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return nsbox_err_sys(err, "cannot stat %s", base);
    }
    if (want_dir && S_ISDIR(st.st_mode))
        return 1;
    cache_forget(u, path);
    if (S_ISDIR(st.st_mode))
        return nsbox_rm_rf_at(pfd, base, err);
    if (unlinkat(pfd, base, 0) < 0)
        return nsbox_err_sys(err, "cannot replace %s", base);
    return 0;
}

static void entry_ids(struct unpack *u, struct archive_entry *e, uid_t *uid, gid_t *gid)
{
    int64_t eu = archive_entry_uid(e), eg = archive_entry_gid(e);
    uint32_t limit = u->opts->id_limit;

    if (eu < 0 || eu > UINT32_MAX - 1 || eg < 0 || eg > UINT32_MAX - 1 ||
        (limit != 0 && ((uint64_t)eu >= limit || (uint64_t)eg >= limit))) {
        u->stats->ids_clamped++;
        eu = eu >= 0 && (limit == 0 || (uint64_t)eu < limit) ? eu : 0;
        eg = eg >= 0 && (limit == 0 || (uint64_t)eg < limit) ? eg : 0;
    }
    *uid = (uid_t)eu;
    *gid = (gid_t)eg;
}

static void entry_times(struct archive_entry *e, struct timespec ts[2])
{
    ts[1].tv_sec = archive_entry_mtime(e);
    ts[1].tv_nsec = archive_entry_mtime_nsec(e);
    ts[0] = ts[1];
}

/* Ownership before mode: chown clears the setuid and setgid bits. */
static int set_meta_fd(struct unpack *u, int fd, struct archive_entry *e, const char *path,
                       bool times, struct nsbox_err *err)
{
    struct timespec ts[2];
    uid_t uid;
    gid_t gid;

    if (u->opts->keep_ownership) {
        entry_ids(u, e, &uid, &gid);
        if (fchown(fd, uid, gid) < 0 && errno != EINVAL)
            return nsbox_err_sys(err, "cannot chown /%s", path);
    }
    if (fchmod(fd, archive_entry_perm(e) & 07777) < 0)
        return nsbox_err_sys(err, "cannot chmod /%s", path);
    entry_times(e, ts);
    if (times && futimens(fd, ts) < 0)
        return nsbox_err_sys(err, "cannot set times of /%s", path);
    return 0;
}

/* For inodes we cannot open without side effects (symlinks, FIFOs). */
static int set_meta_at(struct unpack *u, int pfd, const char *base, struct archive_entry *e,
                       bool is_link, struct nsbox_err *err)
{
    struct timespec ts[2];
    uid_t uid;
    gid_t gid;

    if (u->opts->keep_ownership) {
        entry_ids(u, e, &uid, &gid);
        if (fchownat(pfd, base, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != EINVAL)
            return nsbox_err_sys(err, "cannot chown %s", base);
    }
    /* The FIFO was created by us a moment ago in a tree no one else
     * writes to, so following is moot; symlinks have no mode. */
    if (!is_link && fchmodat(pfd, base, archive_entry_perm(e) & 07777, 0) < 0)
        return nsbox_err_sys(err, "cannot chmod %s", base);
    entry_times(e, ts);
    if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
        return nsbox_err_sys(err, "cannot set times of %s", base);
    return 0;
}

static int charge(struct unpack *u, uint64_t n, const char *path, struct nsbox_err *err)
{
    if (u->opts->budget == NULL)
        return 0;
    if (*u->opts->budget < n)
        return nsbox_err_set(err, EFBIG,
                             "/%s: the image exceeds its size limit (raise it "
                             "with --max-image-size)",
                             path);
    *u->opts->budget -= n;
    return 0;
}

static int write_all_at(int fd, const char *buf, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, buf, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int copy_data(struct unpack *u, int fd, const char *path, struct nsbox_err *err)
{
    const void *buf;
    size_t size;
    la_int64_t off;
    int r;

    while ((r = archive_read_data_block(u->a, &buf, &size, &off)) == ARCHIVE_OK ||
           r == ARCHIVE_WARN) {
        if (charge(u, size, path, err) < 0)
            return -1;
        if (write_all_at(fd, buf, size, off) < 0)
            return nsbox_err_sys(err, "cannot write /%s", path);
        u->stats->bytes += size;
    }
    if (r != ARCHIVE_EOF)
        return nsbox_err_set(err, EIO, "/%s: %s", path, archive_error_string(u->a));
    return 0;
}

static int make_file(struct unpack *u, int pfd, const char *base, const char *path,
                     struct archive_entry *e, struct nsbox_err *err)
{
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int64_t size = archive_entry_size(e);

    /* Refuse before writing a byte: a header may declare a terabyte. */
    if (u->opts->budget != NULL && size > 0 && (uint64_t)size > *u->opts->budget)
        return charge(u, (uint64_t)size, path, err);
    _cleanup_close_ int fd = openat(pfd, base, flags, 0600);
    if (fd < 0 && errno == EEXIST) {
        if (clear_slot(u, pfd, base, path, false, err) < 0)
            return -1;
        fd = openat(pfd, base, flags, 0600);
    }
    if (fd < 0)
        return nsbox_err_sys(err, "cannot create /%s", path);
    if (copy_data(u, fd, path, err) < 0)
        return -1;
    /* Sparse entries may end in a hole that no data block covers. */
    if (size > 0 && ftruncate(fd, size) < 0)
        return nsbox_err_sys(err, "cannot size /%s", path);
    return set_meta_fd(u, fd, e, path, true, err);
}

static int remember_dir_time(struct unpack *u, const char *path, struct archive_entry *e,
                             struct nsbox_err *err)
{
    struct timespec ts[2];

    if (u->n_dirs == u->cap_dirs) {
        size_t cap = u->cap_dirs ? u->cap_dirs * 2 : 256;
        struct dir_time *d = realloc(u->dirs, cap * sizeof(*d));
        if (d == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        u->dirs = d;
        u->cap_dirs = cap;
    }
    entry_times(e, ts);
    u->dirs[u->n_dirs].path = strdup(path);
    if (u->dirs[u->n_dirs].path == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    u->dirs[u->n_dirs++].mtime = ts[1];
    return 0;
}

static int make_dir(struct unpack *u, int pfd, const char *base, const char *path,
                    struct archive_entry *e, struct nsbox_err *err)
{
    if (mkdirat(pfd, base, 0700) < 0) {
        if (errno != EEXIST)
            return nsbox_err_sys(err, "cannot create directory /%s", path);
        int keep = clear_slot(u, pfd, base, path, true, err);
        if (keep < 0)
            return -1;
        if (!keep && mkdirat(pfd, base, 0700) < 0)
            return nsbox_err_sys(err, "cannot create directory /%s", path);
    }
    _cleanup_close_ int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open directory /%s", path);
    if (set_meta_fd(u, fd, e, path, false, err) < 0)
        return -1;
    return remember_dir_time(u, path, e, err);
}

static int make_symlink(struct unpack *u, int pfd, const char *base, const char *path,
                        struct archive_entry *e, struct nsbox_err *err)
{
    const char *target = archive_entry_symlink(e);

    /* The target is only a string here: it is resolved later, confined to
     * the rootfs by RESOLVE_IN_ROOT on our side and by pivot_root in the
     * sandbox, so "/etc" or "../../.." cannot reach the host. */
    if (target == NULL || target[0] == '\0')
        return nsbox_err_set(err, EINVAL, "symlink /%s has no target", path);
    if (clear_slot(u, pfd, base, path, false, err) < 0)
        return -1;
    if (symlinkat(target, pfd, base) < 0)
        return nsbox_err_sys(err, "cannot create symlink /%s", path);
    return set_meta_at(u, pfd, base, e, true, err);
}

static int make_hardlink(struct unpack *u, int pfd, const char *base, const char *path,
                         const char *target_name, struct nsbox_err *err)
{
    char target[PATH_MAX];

    if (oci_layer_clean_path(target_name, target, sizeof(target), err) < 0)
        return nsbox_err_prefix(err, "hardlink /%s", path);
    if (target[0] == '\0' || strcmp(target, path) == 0)
        return nsbox_err_set(err, EINVAL, "hardlink /%s points at itself or the root", path);
    char *tbase = split_last(target);
    /* Resolved like any other path: a hardlink can only name an inode that
     * is already inside the rootfs. */
    _cleanup_close_ int tfd = target[0] ? resolve_dir(u, target) : dup(u->root);
    if (tfd < 0)
        return nsbox_err_sys(err, "hardlink /%s: target directory /%s", path, target);
    if (clear_slot(u, pfd, base, path, false, err) < 0)
        return -1;
    /* flags 0: a symlink target is linked itself, never followed. */
    if (linkat(tfd, tbase, pfd, base, 0) < 0)
        return nsbox_err_sys(err, "cannot hardlink /%s to %s", path, target_name);
    return 0;
}

static int make_fifo(struct unpack *u, int pfd, const char *base, const char *path,
                     struct archive_entry *e, struct nsbox_err *err)
{
    if (clear_slot(u, pfd, base, path, false, err) < 0)
        return -1;
    if (mkfifoat(pfd, base, 0600) < 0)
        return nsbox_err_sys(err, "cannot create FIFO /%s", path);
    return set_meta_at(u, pfd, base, e, false, err);
}

static int remove_unless_created(struct unpack *u, int pfd, const char *parent, const char *name,
                                 struct nsbox_err *err)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s%s%s", parent, parent[0] ? "/" : "", name);
    if (nsbox_strset_has(&u->created, path))
        return 0;
    cache_forget(u, path);
    return nsbox_rm_rf_at(pfd, name, err);
}

static int opaque_dir(struct unpack *u, const char *parent, struct nsbox_err *err)
{
    int pfd = open_parent(u, parent, false, err);
    if (pfd < 0)
        return errno == ENOENT ? 0 : -1;
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(pfd, ".", err);
    if (d == NULL)
        return nsbox_err_prefix(err, "opaque directory /%s", parent);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (remove_unless_created(u, dirfd(d), parent, de->d_name, err) < 0)
            return -1;
    }
    return 0;
}

static int whiteout(struct unpack *u, const char *parent, const char *base, struct nsbox_err *err)
{
    const char *victim = base + 4;

    if (strcmp(base, ".wh..wh..opq") == 0)
        return opaque_dir(u, parent, err);
    if (strncmp(base, ".wh..wh.", 8) == 0) {
        note(u, "skipped reserved whiteout name /%s%s%s", parent, parent[0] ? "/" : "", base);
        return 0;
    }
    if (victim[0] == '\0' || strcmp(victim, ".") == 0 || strcmp(victim, "..") == 0)
        return nsbox_err_set(err, EINVAL, "invalid whiteout /%s%s%s", parent, parent[0] ? "/" : "",
                             base);
    int pfd = open_parent(u, parent, false, err);
    if (pfd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    return remove_unless_created(u, pfd, parent, victim, err);
}

static int apply_root_entry(struct unpack *u, struct archive_entry *e, struct nsbox_err *err)
{
    if (archive_entry_filetype(e) != AE_IFDIR)
        return nsbox_err_set(err, EINVAL, "an entry tries to replace the root directory");
    return set_meta_fd(u, u->root, e, "", false, err);
}

static int apply_entry(struct unpack *u, struct archive_entry *e, struct nsbox_err *err)
{
    char path[PATH_MAX], parent[PATH_MAX];
    const char *name = archive_entry_pathname(e);
    const char *hardlink = archive_entry_hardlink(e);

    if (name == NULL)
        return nsbox_err_set(err, EINVAL, "entry without a name");
    if (oci_layer_clean_path(name, path, sizeof(path), err) < 0)
        return -1;
    if (path[0] == '\0')
        return apply_root_entry(u, e, err);
    memcpy(parent, path, strlen(path) + 1);
    char *base = split_last(parent);
    if (strncmp(base, ".wh.", 4) == 0)
        return whiteout(u, parent, base, err);

    mode_t type = archive_entry_filetype(e);
    if (hardlink == NULL &&
        (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFSOCK || type == 0)) {
        note(u, "skipped /%s: %s cannot be created in an image", path,
             type == AE_IFCHR   ? "character device"
             : type == AE_IFBLK ? "block device"
                                : "special file");
        return 0;
    }
    int pfd = open_parent(u, parent, true, err);
    if (pfd < 0)
        return -1;
    int r;
    if (hardlink != NULL)
        r = make_hardlink(u, pfd, base, path, hardlink, err);
    else if (type == AE_IFREG)
        r = make_file(u, pfd, base, path, e, err);
    else if (type == AE_IFDIR)
        r = make_dir(u, pfd, base, path, e, err);
    else if (type == AE_IFLNK)
        r = make_symlink(u, pfd, base, path, e, err);
    else
        r = make_fifo(u, pfd, base, path, e, err);
    if (r < 0)
        return -1;
    if (nsbox_strset_add(&u->created, path) < 0)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    return 0;
}

/* Directories get their own mtime last: creating their children moved it.
 * Deepest first, so setting a child never disturbs its parent again. */
static void apply_dir_times(struct unpack *u)
{
    for (size_t i = u->n_dirs; i-- > 0;) {
        struct timespec ts[2] = {u->dirs[i].mtime, u->dirs[i].mtime};
        int fd = nsbox_openat2(u->root, u->dirs[i].path,
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0,
                               NSBOX_RESOLVE_CONFINED);
        if (fd >= 0) {
            futimens(fd, ts);
            close(fd);
        }
    }
}

static la_ssize_t read_blob(struct archive *a, void *ctx, const void **buf)
{
    struct unpack *u = ctx;
    struct nsbox_err err;
    ssize_t n = oci_blobstream_next(u->stream, buf, &err);

    if (n < 0) {
        archive_set_error(a, err.code, "%s", err.msg);
        return -1;
    }
    return n;
}

/* The digest covers every byte of the blob, also any that tar did not
 * need (padding, trailing data). */
static int check_digest(struct unpack *u, const char *expected, struct nsbox_err *err)
{
    char actual[OCI_DIGEST_BUF];

    if (oci_blobstream_finish(u->stream, actual, err) < 0)
        return -1;
    if (strcmp(actual, expected) != 0)
        return nsbox_err_set(err, EBADMSG, "layer blob %s is corrupt: its content hashes to %s",
                             expected, actual);
    return 0;
}

static struct archive *open_archive(struct unpack *u, struct nsbox_err *err)
{
    struct archive *a = archive_read_new();
    if (a == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    /* The blob stream decompresses; libarchive only parses tar (and never
     * runs an external program). */
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_support_format_empty(a) != ARCHIVE_OK ||
        archive_read_support_filter_none(a) != ARCHIVE_OK ||
        archive_read_open(a, u, NULL, read_blob, NULL) != ARCHIVE_OK) {
        nsbox_err_set(err, EIO, "cannot read layer: %s", archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    return a;
}

static int unpack_entries(struct unpack *u, struct nsbox_err *err)
{
    struct archive_entry *e;
    int r;

    while ((r = archive_read_next_header(u->a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        if (++u->stats->entries > ENTRIES_MAX)
            return nsbox_err_set(err, E2BIG, "layer has more than %u entries", ENTRIES_MAX);
        if (apply_entry(u, e, err) < 0)
            return -1;
    }
    if (r != ARCHIVE_EOF)
        return nsbox_err_set(err, EIO, "malformed layer: %s", archive_error_string(u->a));
    return 0;
}

static void unpack_release(struct unpack *u)
{
    cache_drop(u);
    nsbox_strset_clear(&u->created);
    for (size_t i = 0; i < u->n_dirs; i++)
        free(u->dirs[i].path);
    free(u->dirs);
    if (u->a != NULL)
        archive_read_free(u->a);
    oci_blobstream_free(u->stream);
}

int oci_layer_apply(int rootfs_fd, int blob_fd, const char *expected_digest,
                    const struct oci_layer_opts *opts, struct oci_layer_stats *stats,
                    struct nsbox_err *err)
{
    struct oci_layer_stats local = {0};
    struct unpack u = {
        .root = rootfs_fd,
        .opts = opts,
        .stats = stats ? stats : &local,
        .cache_fd = -1,
    };
    int r = -1;

    if (!oci_digest_valid(expected_digest))
        return nsbox_err_set(err, EINVAL, "invalid layer digest");
    if (oci_blobstream_start(blob_fd, &u.stream, err) < 0)
        return -1;
    /* UTF-8 names in pax headers reach us unconverted only under a UTF-8
     * locale, which libarchive reads per thread: this thread's, for this
     * layer (setlocale at start-up cost every nsbox run and exec 0.1 ms). */
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    locale_t saved = utf8 != (locale_t)0 ? uselocale(utf8) : (locale_t)0;
    u.a = open_archive(&u, err);
    if (u.a == NULL || unpack_entries(&u, err) < 0) {
        /* A damaged blob usually shows up as a decompression or tar error;
         * name the real cause when the bytes do not match the digest. */
        struct nsbox_err derr;
        if (check_digest(&u, expected_digest, &derr) < 0 && derr.code == EBADMSG)
            *err = derr;
        goto out;
    }
    if (check_digest(&u, expected_digest, err) < 0)
        goto out;
    apply_dir_times(&u);
    r = 0;
out:
    unpack_release(&u);
    if (utf8 != (locale_t)0) {
        uselocale(saved);
        freelocale(utf8);
    }
    return r;
}
