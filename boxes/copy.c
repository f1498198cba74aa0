/* Files between the host and a box (copy.h).  From `nsbox cp`
 * (cli/cp_cmd.c) and the server's copy tools (mcp/tools/host.c), which
 * had one implementation each. */
#include "copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"

#define CHUNK (8u << 20) /* bytes per in-sandbox operation, each way */
#define MODE_KEEP 01777  /* no setuid, no setgid */

struct copy {
    struct box *box;
    struct box_files f;
    const struct box_copy_policy *p;
    struct box_copy_stats *st;
    struct nsbox_err *err;
};

/* A host path for messages: the allowed directory's name before it. */
static const char *shown(const struct copy *c, const char *host, char *buf, size_t size)
{
    if (c->p->host_dir == NULL)
        return host;
    snprintf(buf, size, "%s/%s", c->p->host_dir, host);
    return buf;
}

/* ---- paths ---- */

static const char *base_name(const char *p)
{
    static char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", p);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    const char *s = strrchr(buf, '/');
    return s ? s + 1 : buf;
}

/* "dir/." : the directory's contents, not the directory. */
static bool contents_only(const char *p)
{
    size_t n = strlen(p);
    return n >= 2 && strcmp(p + n - 2, "/.") == 0;
}

/* ---- the sandbox side ---- */

struct sb_stat {
    bool exists;
    enum nsbox_file_type type;
    uint32_t mode;
    int64_t size; /* a regular file's (a symlink's target: -1, unknown) */
};

/* What path is inside, and its mode (a symlink at path followed, inside:
 * its target's type, the default mode). */
static int sandbox_stat(struct copy *c, const char *path, struct sb_stat *st)
{
    struct nsbox_file_list l = {0};
    char parent[PATH_MAX];
    memset(st, 0, sizeof(*st));
    snprintf(parent, sizeof(parent), "%s", path);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        snprintf(parent, sizeof(parent), ".");
    else
        slash == parent ? (void)(parent[1] = '\0') : (void)(*slash = '\0');
    const char *name = base_name(path);
    if (strcmp(name, "/") != 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
        if (box_file_list(&c->f, parent, 1, &l, c->err) < 0)
            return c->err->code == ENOENT ? 0 : -1;
        for (size_t i = 0; i < l.n; i++)
            if (strcmp(l.v[i].path, name) == 0)
                *st = (struct sb_stat){true, l.v[i].type, l.v[i].mode, l.v[i].size};
        nsbox_file_list_free(&l);
        if (!st->exists || st->type != NSBOX_FILE_SYMLINK)
            return 0;
    }
    /* "/", ".", "..", or a symlink: a directory when it lists as one. */
    if (box_file_list(&c->f, path, 1, &l, c->err) == 0) {
        nsbox_file_list_free(&l);
        *st = (struct sb_stat){true, NSBOX_FILE_DIRECTORY, 0755, -1};
    } else if (c->err->code == ENOTDIR) {
        *st = (struct sb_stat){true, NSBOX_FILE_REGULAR, 0644, -1};
    } else if (c->err->code == ENOENT) {
        st->exists = false; /* a dangling symlink, inside */
    } else {
        return -1;
    }
    return 0;
}

/* ---- host -> sandbox ---- */

/* Up to len bytes (less only at the end of the file).  Returns the count or -1. */
static ssize_t read_full(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

static int put_file(struct copy *c, int fd, const char *host, const char *dst)
{
    _cleanup_free_ char *buf = malloc(CHUNK);
    uint64_t total = 0;
    bool first = true;
    if (buf == NULL)
        return nsbox_err_set(c->err, ENOMEM, "out of memory");
    for (;;) {
        ssize_t n = read_full(fd, buf, CHUNK);
        if (n < 0)
            return nsbox_err_sys(c->err, "cannot read %s", host);
        total += (uint64_t)n;
        if (total > c->p->file_max)
            return nsbox_err_set(c->err, EFBIG, "%s is larger than %llu bytes", host,
                                 (unsigned long long)c->p->file_max);
        if ((n > 0 || first) &&
            box_file_write(&c->f, dst, buf, (size_t)n, !first, NULL, c->err) < 0)
            return -1;
        first = false;
        if ((size_t)n < CHUNK)
            break;
    }
    c->st->files++;
    c->st->bytes += total;
    return 0;
}

/* chmod inside, as the sandbox's user (the builtins set no modes): the
 * image's own chmod, so an image without one keeps 0644/0755. */
static void set_mode(struct copy *c, const char *path, mode_t mode)
{
    if (!c->p->keep_modes)
        return;
    char m[16];
    snprintf(m, sizeof(m), "%o", (unsigned)(mode & MODE_KEEP));
    char *argv[] = {"chmod", m, "--", (char *)path, NULL};
    struct nsbox_exec_opts eo;
    struct nsbox_exec_result res;
    struct nsbox_err e;
    box_exec_defaults(c->box, &eo);
    eo.argv = argv;
    eo.capture = true;
    eo.output_cap = 4096;
    eo.cancel = c->p->cancel;
    if (nsbox_sandbox_exec(&c->box->sb, &eo, &res, &e) < 0 || res.exit_code != 0)
        nsbox_warn("cannot set the mode of %s inside the sandbox", path);
    else
        nsbox_exec_result_free(&res);
}

static int put_tree(struct copy *c, int dfd, const char *host, const char *dst, int depth);

/* name in dfd (host) to dst (inside): a file, or a directory recursively. */
static int put_entry(struct copy *c, int dfd, const char *name, const char *host, const char *dst,
                     int depth)
{
    struct stat st;
    _cleanup_close_ int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return nsbox_err_sys(c->err, "cannot open %s", host);
    if (S_ISDIR(st.st_mode)) {
        if (depth > 64)
            return nsbox_err_set(c->err, ELOOP, "%s: more than 64 levels", host);
        _cleanup_close_ int d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0 || box_file_mkdir(&c->f, dst, c->err) < 0)
            return d < 0 ? nsbox_err_sys(c->err, "cannot open %s", host) : -1;
        if (put_tree(c, d, host, dst, depth + 1) < 0)
            return -1;
        set_mode(c, dst, st.st_mode);
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        nsbox_warn("skipped %s: not a regular file or directory", host);
        c->st->skipped++;
        return 0;
    }
    _cleanup_close_ int f = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f < 0 || fstat(f, &st) < 0 || !S_ISREG(st.st_mode))
        return nsbox_err_sys(c->err, "cannot open %s", host);
    if (put_file(c, f, host, dst) < 0)
        return -1;
    if ((st.st_mode & 07777) != 0644)
        set_mode(c, dst, st.st_mode);
    return 0;
}

static int put_tree(struct copy *c, int dfd, const char *host, const char *dst, int depth)
{
    struct nsbox_err e;
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(dfd, ".", &e);
    char h[PATH_MAX], s[PATH_MAX];
    if (d == NULL)
        return nsbox_err_set(c->err, e.code, "%s: %s", host, e.msg);
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(h, sizeof(h), "%s/%s", host, de->d_name);
        snprintf(s, sizeof(s), "%s%s%s", dst, strcmp(dst, "/") == 0 ? "" : "/", de->d_name);
        if (put_entry(c, dirfd(d), de->d_name, h, s, depth) < 0)
            return -1;
    }
    return 0;
}

/* Where src goes inside: dst itself, or (docker cp's rules) beneath an
 * existing directory dst by src's name.  Returns 0 or -1. */
static int in_target(struct copy *c, const char *src, bool is_dir, const char *dst, char *target,
                     size_t size)
{
    struct sb_stat ds;
    if (c->p->exact) {
        snprintf(target, size, "%s", dst);
        return 0;
    }
    if (sandbox_stat(c, dst, &ds) < 0)
        return -1;
    bool into = ds.exists && ds.type == NSBOX_FILE_DIRECTORY;
    if (ds.exists && !into && is_dir)
        return nsbox_err_set(c->err, ENOTDIR, "cannot copy directory %s onto file %s", src, dst);
    if (!ds.exists && dst[strlen(dst) - 1] == '/' && !is_dir)
        return nsbox_err_set(c->err, ENOENT, "directory %s does not exist", dst);
    if (into && !(is_dir && contents_only(src)))
        snprintf(target, size, "%s%s%s", dst, dst[strlen(dst) - 1] == '/' ? "" : "/",
                 base_name(src));
    else
        snprintf(target, size, "%s", dst);
    return 0;
}

static int copy_in(struct copy *c, const char *src, const char *dst)
{
    struct stat st;
    char target[PATH_MAX], buf[PATH_MAX * 2];
    const char *name = shown(c, src, buf, sizeof(buf));
    _cleanup_close_ int fd = nsbox_openat2(c->p->host_dirfd, src, O_PATH | O_CLOEXEC, 0,
                                           c->p->resolve | BOX_COPY_RESOLVE);
    if (fd < 0 || fstat(fd, &st) < 0)
        return nsbox_err_set(c->err, errno, "cannot open %.200s: %s%s", name, strerror(errno),
                             errno == ELOOP || errno == EXDEV
                                 ? " (symlinks on the host and escapes are refused)"
                                 : "");
    bool is_dir = S_ISDIR(st.st_mode) && !c->p->exact;
    if (!is_dir && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > c->p->file_max))
        return nsbox_err_set(c->err, S_ISREG(st.st_mode) ? EFBIG : EINVAL,
                             "%.200s is not a regular file%s of at most %llu bytes", name,
                             c->p->exact ? "" : " or directory",
                             (unsigned long long)c->p->file_max);
    if (in_target(c, src, is_dir, dst, target, sizeof(target)) < 0)
        return -1;
    /* A directory: walked from the opened fd itself ("." of it). */
    if (is_dir)
        return put_entry(c, fd, ".", name, target, 0);
    /* Reopened through the fd itself: no second lookup of src. */
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    _cleanup_close_ int f = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return nsbox_err_sys(c->err, "cannot open %s", name);
    if (put_file(c, f, name, target) < 0)
        return -1;
    if ((st.st_mode & 07777) != 0644)
        set_mode(c, target, st.st_mode);
    return 0;
}

/* ---- sandbox -> host ---- */

/* name in pfd (host) opened for the copy, never through a symlink:
 * created, or replaced when it is a regular file and the policy says so.
 * *made says whether it was created here.  Returns the fd or -1. */
static int host_file(struct copy *c, int pfd, const char *name, const char *host, bool *made)
{
    int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    c->p->keep_modes ? 0600 : 0644);
    *made = fd >= 0;
    if (fd < 0 && errno == EEXIST && c->p->replace)
        fd = openat(pfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || ftruncate(fd, 0) < 0) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        return nsbox_err_set(c->err, e, "cannot write %.200s: %s", host,
                             e == ELOOP    ? "it is a symlink (never written through)"
                             : e == EEXIST ? "it exists (replacing it was not asked for)"
                             : e == EINVAL ? "not a regular file"
                                           : strerror(e));
    }
    return fd;
}

/* The sandbox file path into name in pfd (host), at most file_max bytes;
 * a file made here and not finished is removed. */
static int get_file(struct copy *c, const char *path, int pfd, const char *name, const char *host,
                    uint32_t mode)
{
    bool made;
    _cleanup_close_ int fd = host_file(c, pfd, name, host, &made);
    if (fd < 0)
        return -1;
    int64_t off = 0;
    int r = 0;
    while (r == 0) {
        _cleanup_(nsbox_file_data_free) struct nsbox_file_data d = {0};
        if (box_file_read(&c->f, path, off, CHUNK, &d, c->err) < 0)
            r = -1;
        else if (d.len > 0 && nsbox_write_all(fd, d.data, d.len) < 0)
            r = nsbox_err_sys(c->err, "cannot write %s", host);
        else if ((uint64_t)(off += (int64_t)d.len) > c->p->file_max)
            r = nsbox_err_set(c->err, EFBIG, "%s is larger than %llu bytes", path,
                              (unsigned long long)c->p->file_max);
        else if (!d.truncated || d.len == 0)
            break;
    }
    if (r == 0 && c->p->keep_modes && fchmod(fd, mode & MODE_KEEP) < 0)
        r = nsbox_err_sys(c->err, "cannot set the mode of %s", host);
    if (r < 0) {
        if (made)
            unlinkat(pfd, name, 0);
        return -1;
    }
    c->st->files++;
    c->st->bytes += (uint64_t)off;
    return 0;
}

/* A directory name in pfd, made when missing; never a symlink. */
static int host_dir(struct copy *c, int pfd, const char *name, const char *host)
{
    if (mkdirat(pfd, name, 0700) < 0 && errno != EEXIST)
        return nsbox_err_sys(c->err, "cannot create %s", host);
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_set(c->err, errno, "cannot use %s: %s", host,
                             errno == ENOTDIR || errno == ELOOP
                                 ? "not a directory (a symlink is never followed)"
                                 : strerror(errno));
    return fd;
}

/* The host directory for entry rel's parent below top, component by
 * component with O_NOFOLLOW. */
static int host_parent(struct copy *c, int top, const char *rel, const char *host)
{
    int fd = dup(top);
    char comp[NAME_MAX + 1];
    for (const char *p = rel; fd >= 0;) {
        size_t n = strcspn(p, "/");
        if (p[n] == '\0')
            return fd;
        snprintf(comp, sizeof(comp), "%.*s", (int)n, p);
        int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
        p += n + 1;
    }
    return nsbox_err_sys(c->err, "cannot open the directory of %s", host);
}

static int get_tree(struct copy *c, const char *src, int top, const char *host)
{
    struct nsbox_file_list l = {0};
    char s[PATH_MAX], h[PATH_MAX];
    if (box_file_list(&c->f, src, 64, &l, c->err) < 0)
        return -1;
    int r = 0;
    if (l.truncated)
        r = nsbox_err_set(c->err, E2BIG, "%s has too many entries to copy", src);
    for (size_t i = 0; r == 0 && i < l.n; i++) {
        const struct nsbox_file_entry *e = &l.v[i];
        snprintf(s, sizeof(s), "%s/%s", src, e->path);
        snprintf(h, sizeof(h), "%s/%s", host, e->path);
        if (e->name_not_utf8 || !nsbox_path_plain_relative(e->path) ||
            (e->type != NSBOX_FILE_REGULAR && e->type != NSBOX_FILE_DIRECTORY)) {
            nsbox_warn("skipped %s: a %s", s,
                       e->name_not_utf8 ? "name that is not UTF-8" : nsbox_file_type_name(e->type));
            c->st->skipped++;
            continue;
        }
        _cleanup_close_ int pfd = host_parent(c, top, e->path, h);
        const char *name = base_name(e->path);
        if (pfd < 0) {
            r = -1;
        } else if (e->type == NSBOX_FILE_DIRECTORY) {
            /* u+rwx kept: the copy must still go into it */
            _cleanup_close_ int d = host_dir(c, pfd, name, h);
            if (d < 0 || fchmod(d, (e->mode | 0700) & MODE_KEEP) < 0)
                r = d < 0 ? -1 : nsbox_err_sys(c->err, "cannot set the mode of %s", h);
        } else {
            r = get_file(c, s, pfd, name, h, e->mode);
        }
    }
    nsbox_file_list_free(&l);
    return r;
}

/* host's directory, opened symlink-free (as the policy resolves), and
 * its last component into *name (pointing into buf).  Returns the fd or
 * -1. */
static int host_parent_of(struct copy *c, const char *host, char *buf, size_t size,
                          const char **name)
{
    char shown_buf[PATH_MAX * 2];
    snprintf(buf, size, "%s", host);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    char *slash = strrchr(buf, '/');
    *name = slash ? slash + 1 : buf;
    const char *pdir = slash == NULL ? "." : slash == buf ? "/" : (*slash = '\0', buf);
    int pfd = nsbox_openat2(c->p->host_dirfd, pdir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                            c->p->resolve | BOX_COPY_RESOLVE);
    if (pfd < 0)
        return nsbox_err_set(
            c->err, errno, "cannot open %.200s: %s", shown(c, pdir, shown_buf, sizeof(shown_buf)),
            errno == ELOOP || errno == EXDEV ? "a symlink or an escape on the way (refused)"
                                             : strerror(errno));
    return pfd;
}

/* A directory src into the host: beneath into (docker cp: an existing
 * directory) or as name in pfd. */
static int out_tree(struct copy *c, const struct sb_stat *ss, const char *src, int pfd,
                    const char *name, int into, const char *dst)
{
    char host[PATH_MAX];
    const char *leaf = into >= 0 && !contents_only(src) ? base_name(src) : NULL;
    if (leaf != NULL && (strcmp(leaf, "/") == 0 || strcmp(leaf, "..") == 0))
        leaf = NULL;
    snprintf(host, sizeof(host), "%s%s%s", dst, leaf ? "/" : "", leaf ? leaf : "");
    _cleanup_close_ int top = leaf        ? host_dir(c, into, leaf, host)
                              : into >= 0 ? dup(into)
                                          : host_dir(c, pfd, name, host);
    if (top < 0 || get_tree(c, src, top, host) < 0)
        return -1;
    if (leaf != NULL || into < 0) /* made here: the source's mode, u+rwx kept */
        if (fchmod(top, (ss->mode | 0700) & MODE_KEEP) < 0)
            return nsbox_err_sys(c->err, "cannot set the mode of %s", host);
    return 0;
}

static int copy_out(struct copy *c, const char *src, const char *dst_rel)
{
    struct sb_stat ss;
    struct stat st;
    char host[PATH_MAX], buf[PATH_MAX], dst_buf[PATH_MAX * 2];
    const char *name, *dst = shown(c, dst_rel, dst_buf, sizeof(dst_buf));
    if (sandbox_stat(c, src, &ss) < 0)
        return -1;
    if (!ss.exists)
        return nsbox_err_set(c->err, ENOENT, "%s: no such file or directory in the sandbox", src);
    bool is_dir = ss.type == NSBOX_FILE_DIRECTORY && !c->p->exact;
    if (!is_dir && ss.type != NSBOX_FILE_REGULAR)
        return nsbox_err_set(c->err, EINVAL, "%s is a %s: only %s copied", src,
                             nsbox_file_type_name(ss.type),
                             c->p->exact ? "regular files are" : "files and directories are");
    if (!is_dir && ss.size > 0 && (uint64_t)ss.size > c->p->file_max)
        return nsbox_err_set(c->err, EFBIG, "%s is larger than %llu bytes", src,
                             (unsigned long long)c->p->file_max);
    /* DST's directory must exist, symlink-free; DST itself is looked at
     * without following. */
    _cleanup_close_ int pfd = host_parent_of(c, dst_rel, buf, sizeof(buf), &name);
    if (pfd < 0)
        return -1;
    bool exists = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && S_ISLNK(st.st_mode))
        return nsbox_err_set(c->err, ELOOP, "%s is a symlink: refused (never written through)",
                             dst);
    if (c->p->exact)
        return get_file(c, src, pfd, name, dst, ss.mode);
    if (!exists && dst[strlen(dst) - 1] == '/' && !is_dir)
        return nsbox_err_set(c->err, ENOENT, "directory %s does not exist", dst);
    _cleanup_close_ int into = -1;
    if (exists && S_ISDIR(st.st_mode)) {
        into = host_dir(c, pfd, name, dst);
        if (into < 0)
            return -1;
    }
    if (is_dir && exists && !S_ISDIR(st.st_mode))
        return nsbox_err_set(c->err, ENOTDIR, "cannot copy directory %s onto file %s", src, dst);
    if (is_dir)
        return out_tree(c, &ss, src, pfd, name, into, dst);
    if (into >= 0) {
        snprintf(host, sizeof(host), "%s/%s", dst, base_name(src));
        return get_file(c, src, into, base_name(src), host, ss.mode);
    }
    return get_file(c, src, pfd, name, dst, ss.mode);
}

/* ---- the entry points ---- */

static int copy_begin(struct copy *c, struct box *box, enum box_file_kind kind,
                      const struct box_copy_policy *p, struct box_copy_stats *st,
                      struct nsbox_err *err)
{
    *c = (struct copy){.box = box, .p = p, .st = st, .err = err};
    *st = (struct box_copy_stats){0};
    struct box_file_opts o = {
        .timeout_s = p->timeout_s, .write_max = p->file_max, .cancel = p->cancel};
    return box_files_begin(box, kind, &o, &c->f, err);
}

int box_copy_in(struct box *box, const char *host, const char *dst, const struct box_copy_policy *p,
                struct box_copy_stats *st, struct nsbox_err *err)
{
    struct copy c;
    if (copy_begin(&c, box, BOX_FILE_WRITES, p, st, err) < 0)
        return -1;
    return box_files_end(&c.f, copy_in(&c, host, dst));
}

int box_copy_out(struct box *box, const char *src, const char *host,
                 const struct box_copy_policy *p, struct box_copy_stats *st, struct nsbox_err *err)
{
    struct copy c;
    if (copy_begin(&c, box, BOX_FILE_READS, p, st, err) < 0)
        return -1;
    return box_files_end(&c.f, copy_out(&c, src, host));
}
