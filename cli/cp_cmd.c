/* nsbox cp SRC ID:DST | ID:SRC DST: files between the host and a live
 * sandbox (made by `nsbox create`), with the MCP copy tools' confinement.
 *
 * The sandbox side goes only through the in-sandbox file builtins
 * (runtime/files.h), run as the sandbox's user: its paths, "..", and
 * symlinks mean what they mean inside and never reach the host.  The host
 * side is resolved with RESOLVE_NO_SYMLINKS and walked with O_NOFOLLOW:
 * a symlink on the host (one the sandbox planted through a rw volume, say)
 * is never followed, and an existing host file is replaced (as docker cp
 * does) only when it is a regular file, never through a symlink.  Only
 * regular files and directories are copied; symlinks, FIFOs, sockets and
 * devices inside a copied directory are skipped with a warning.  Modes
 * are kept without setuid and setgid; each file is copied in chunks of
 * CHUNK bytes, at most CP_FILE_MAX.  docker cp's rules for DST: an
 * existing directory receives SRC by its name (a directory SRC ending in
 * "/." gives its contents instead); otherwise DST names the copy. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../boxes/box.h"
#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../common/syscalls.h"
#include "../runtime/files.h"
#include "cli.h"

#define CHUNK (8u << 20)
#define CP_FILE_MAX (1ull << 30) /* box_defaults.rlimit_fsize */
#define MODE_KEEP 01777          /* no setuid, no setgid */
#define HOST_RESOLVE (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

struct cp {
    struct box box;
    struct nsbox_file_ctx fctx;
    struct nsbox_err err;
    unsigned long files, skipped;
};

/* ---- paths ---- */

/* "ID:PATH": the colon before any slash. */
static char *sandbox_part(char *arg)
{
    char *colon = strchr(arg, ':');
    char *slash = strchr(arg, '/');
    return colon != NULL && colon != arg && (slash == NULL || colon < slash) ? colon : NULL;
}

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
};

/* What path is inside, and its mode (a symlink at path followed, inside:
 * its target's type, the default mode). */
static int sandbox_stat(struct cp *c, const char *path, struct sb_stat *st)
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
        if (nsbox_file_list(&c->box.sb, &c->fctx, parent, 1, &l, &c->err) < 0)
            return c->err.code == ENOENT ? 0 : -1;
        for (size_t i = 0; i < l.n; i++)
            if (strcmp(l.v[i].path, name) == 0)
                *st = (struct sb_stat){true, l.v[i].type, l.v[i].mode};
        nsbox_file_list_free(&l);
        if (!st->exists || st->type != NSBOX_FILE_SYMLINK)
            return 0;
    }
    /* "/", ".", "..", or a symlink: a directory when it lists as one. */
    if (nsbox_file_list(&c->box.sb, &c->fctx, path, 1, &l, &c->err) == 0) {
        nsbox_file_list_free(&l);
        *st = (struct sb_stat){true, NSBOX_FILE_DIRECTORY, 0755};
    } else if (c->err.code == ENOTDIR) {
        *st = (struct sb_stat){true, NSBOX_FILE_REGULAR, 0644};
    } else if (c->err.code == ENOENT) {
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

static int put_file(struct cp *c, int fd, const char *host, const char *dst)
{
    _cleanup_free_ char *buf = malloc(CHUNK);
    uint64_t total = 0;
    bool first = true;
    if (buf == NULL)
        return nsbox_err_set(&c->err, ENOMEM, "out of memory");
    for (;;) {
        ssize_t n = read_full(fd, buf, CHUNK);
        if (n < 0)
            return nsbox_err_sys(&c->err, "cannot read %s", host);
        total += (uint64_t)n;
        if (total > CP_FILE_MAX)
            return nsbox_err_set(&c->err, EFBIG, "%s is larger than %llu bytes", host,
                                 (unsigned long long)CP_FILE_MAX);
        if ((n > 0 || first) &&
            nsbox_file_write(&c->box.sb, &c->fctx, dst, buf, (size_t)n, !first, NULL, &c->err) < 0)
            return -1;
        first = false;
        if ((size_t)n < CHUNK)
            break;
    }
    c->files++;
    return 0;
}

/* chmod inside, as the sandbox's user (the builtins set no modes): the
 * image's own chmod, so an image without one keeps 0644/0755. */
static void set_mode(struct cp *c, const char *path, mode_t mode)
{
    char m[16];
    snprintf(m, sizeof(m), "%o", (unsigned)(mode & MODE_KEEP));
    char *argv[] = {"chmod", m, "--", (char *)path, NULL};
    struct nsbox_exec_opts eo;
    struct nsbox_exec_result res;
    struct nsbox_err e;
    box_exec_defaults(&c->box, &eo);
    eo.argv = argv;
    eo.capture = true;
    eo.output_cap = 4096;
    if (nsbox_sandbox_exec(&c->box.sb, &eo, &res, &e) < 0 || res.exit_code != 0)
        nsbox_warn("cannot set the mode of %s inside the sandbox", path);
    else
        nsbox_exec_result_free(&res);
}

static int put_tree(struct cp *c, int dfd, const char *host, const char *dst, int depth);

/* name in dfd (host) to dst (inside): a file, or a directory recursively. */
static int put_entry(struct cp *c, int dfd, const char *name, const char *host, const char *dst,
                     int depth)
{
    struct stat st;
    _cleanup_close_ int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return nsbox_err_sys(&c->err, "cannot open %s", host);
    if (S_ISDIR(st.st_mode)) {
        if (depth > 64)
            return nsbox_err_set(&c->err, ELOOP, "%s: more than 64 levels", host);
        _cleanup_close_ int d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0 || nsbox_file_mkdir(&c->box.sb, &c->fctx, dst, &c->err) < 0)
            return d < 0 ? nsbox_err_sys(&c->err, "cannot open %s", host) : -1;
        if (put_tree(c, d, host, dst, depth + 1) < 0)
            return -1;
        set_mode(c, dst, st.st_mode);
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        nsbox_warn("skipped %s: not a regular file or directory", host);
        c->skipped++;
        return 0;
    }
    _cleanup_close_ int f = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f < 0 || fstat(f, &st) < 0 || !S_ISREG(st.st_mode))
        return nsbox_err_sys(&c->err, "cannot open %s", host);
    if (put_file(c, f, host, dst) < 0)
        return -1;
    if ((st.st_mode & 07777) != 0644)
        set_mode(c, dst, st.st_mode);
    return 0;
}

static int put_tree(struct cp *c, int dfd, const char *host, const char *dst, int depth)
{
    struct nsbox_err e;
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(dfd, ".", &e);
    char h[PATH_MAX], s[PATH_MAX];
    if (d == NULL)
        return nsbox_err_set(&c->err, e.code, "%s: %s", host, e.msg);
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

static int copy_in(struct cp *c, const char *src, const char *dst)
{
    struct stat st;
    struct sb_stat ds;
    char target[PATH_MAX];
    _cleanup_close_ int fd = nsbox_openat2(AT_FDCWD, src, O_PATH | O_CLOEXEC, 0, HOST_RESOLVE);
    if (fd < 0 || fstat(fd, &st) < 0)
        return nsbox_err_set(&c->err, errno, "cannot open %s: %s%s", src, strerror(errno),
                             errno == ELOOP ? " (a symlink on the host is never followed)" : "");
    if (sandbox_stat(c, dst, &ds) < 0)
        return -1;
    bool into = ds.exists && ds.type == NSBOX_FILE_DIRECTORY;
    if (ds.exists && !into && S_ISDIR(st.st_mode))
        return nsbox_err_set(&c->err, ENOTDIR, "cannot copy directory %s onto file %s", src, dst);
    if (!ds.exists && dst[strlen(dst) - 1] == '/' && !S_ISDIR(st.st_mode))
        return nsbox_err_set(&c->err, ENOENT, "directory %s does not exist", dst);
    if (into && !(S_ISDIR(st.st_mode) && contents_only(src)))
        snprintf(target, sizeof(target), "%s%s%s", dst, dst[strlen(dst) - 1] == '/' ? "" : "/",
                 base_name(src));
    else
        snprintf(target, sizeof(target), "%s", dst);
    /* A directory: walked from the opened fd itself ("." of it). */
    if (S_ISDIR(st.st_mode))
        return put_entry(c, fd, ".", src, target, 0);
    if (!S_ISREG(st.st_mode))
        return nsbox_err_set(&c->err, EINVAL, "%s is not a regular file or directory", src);
    /* Reopened through the fd itself: no second lookup of src. */
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    _cleanup_close_ int f = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return nsbox_err_sys(&c->err, "cannot open %s", src);
    if (put_file(c, f, src, target) < 0)
        return -1;
    if ((st.st_mode & 07777) != 0644)
        set_mode(c, target, st.st_mode);
    return 0;
}

/* ---- sandbox -> host ---- */

/* The sandbox file path into name in pfd (host): created or replaced,
 * O_NOFOLLOW, only a regular file. */
static int get_file(struct cp *c, const char *path, int pfd, const char *name, const char *host,
                    uint32_t mode)
{
    _cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || ftruncate(fd, 0) < 0)
        return nsbox_err_set(&c->err, fd < 0 ? errno : EINVAL, "cannot write %s: %s", host,
                             fd < 0 && errno == ELOOP ? "it is a symlink (never written through)"
                             : fd < 0                 ? strerror(errno)
                                                      : "not a regular file");
    for (int64_t off = 0;;) {
        _cleanup_(nsbox_file_data_free) struct nsbox_file_data d = {0};
        if (nsbox_file_read(&c->box.sb, &c->fctx, path, off, CHUNK, &d, &c->err) < 0)
            return -1;
        if (d.len > 0 && nsbox_write_all(fd, d.data, d.len) < 0)
            return nsbox_err_sys(&c->err, "cannot write %s", host);
        off += (int64_t)d.len;
        if ((uint64_t)off > CP_FILE_MAX)
            return nsbox_err_set(&c->err, EFBIG, "%s is larger than %llu bytes", path,
                                 (unsigned long long)CP_FILE_MAX);
        if (!d.truncated || d.len == 0)
            break;
    }
    if (fchmod(fd, mode & MODE_KEEP) < 0)
        return nsbox_err_sys(&c->err, "cannot set the mode of %s", host);
    c->files++;
    return 0;
}

/* A directory name in pfd, made when missing; never a symlink. */
static int host_dir(struct cp *c, int pfd, const char *name, const char *host)
{
    if (mkdirat(pfd, name, 0700) < 0 && errno != EEXIST)
        return nsbox_err_sys(&c->err, "cannot create %s", host);
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_set(&c->err, errno, "cannot use %s: %s", host,
                             errno == ENOTDIR || errno == ELOOP
                                 ? "not a directory (a symlink is never followed)"
                                 : strerror(errno));
    return fd;
}

/* The host directory for entry rel's parent below top, component by
 * component with O_NOFOLLOW. */
static int host_parent(struct cp *c, int top, const char *rel, const char *host)
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
    return nsbox_err_sys(&c->err, "cannot open the directory of %s", host);
}

static int get_tree(struct cp *c, const char *src, int top, const char *host)
{
    struct nsbox_file_list l = {0};
    char s[PATH_MAX], h[PATH_MAX];
    if (nsbox_file_list(&c->box.sb, &c->fctx, src, 64, &l, &c->err) < 0)
        return -1;
    int r = 0;
    if (l.truncated)
        r = nsbox_err_set(&c->err, E2BIG, "%s has too many entries to copy", src);
    for (size_t i = 0; r == 0 && i < l.n; i++) {
        const struct nsbox_file_entry *e = &l.v[i];
        snprintf(s, sizeof(s), "%s/%s", src, e->path);
        snprintf(h, sizeof(h), "%s/%s", host, e->path);
        if (e->name_not_utf8 || !nsbox_path_plain_relative(e->path) ||
            (e->type != NSBOX_FILE_REGULAR && e->type != NSBOX_FILE_DIRECTORY)) {
            nsbox_warn("skipped %s: a %s", s,
                       e->name_not_utf8 ? "name that is not UTF-8" : nsbox_file_type_name(e->type));
            c->skipped++;
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
                r = d < 0 ? -1 : nsbox_err_sys(&c->err, "cannot set the mode of %s", h);
        } else {
            r = get_file(c, s, pfd, name, h, e->mode);
        }
    }
    nsbox_file_list_free(&l);
    return r;
}

static int copy_out(struct cp *c, const char *src, const char *dst)
{
    struct sb_stat ss;
    struct stat st;
    char host[PATH_MAX];
    if (sandbox_stat(c, src, &ss) < 0)
        return -1;
    if (!ss.exists)
        return nsbox_err_set(&c->err, ENOENT, "%s: no such file or directory in the sandbox", src);
    /* DST's directory must exist, symlink-free; DST itself is looked at
     * without following. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", dst);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    char *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : dir;
    const char *pdir = slash == NULL ? "." : slash == dir ? "/" : (*slash = '\0', dir);
    _cleanup_close_ int pfd = nsbox_openat2(AT_FDCWD, pdir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                            HOST_RESOLVE);
    if (pfd < 0)
        return nsbox_err_set(&c->err, errno, "cannot open %s: %s", pdir,
                             errno == ELOOP ? "a symlink on the way (never followed)"
                                            : strerror(errno));
    bool exists = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && S_ISLNK(st.st_mode))
        return nsbox_err_set(&c->err, ELOOP, "%s is a symlink: refused (never written through)",
                             dst);
    if (!exists && dst[strlen(dst) - 1] == '/' && ss.type != NSBOX_FILE_DIRECTORY)
        return nsbox_err_set(&c->err, ENOENT, "directory %s does not exist", dst);
    _cleanup_close_ int into = -1;
    if (exists && S_ISDIR(st.st_mode)) {
        into = host_dir(c, pfd, name, dst);
        if (into < 0)
            return -1;
    }
    if (ss.type == NSBOX_FILE_DIRECTORY) {
        if (exists && !S_ISDIR(st.st_mode))
            return nsbox_err_set(&c->err, ENOTDIR, "cannot copy directory %s onto file %s", src,
                                 dst);
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
            if (fchmod(top, (ss.mode | 0700) & MODE_KEEP) < 0)
                return nsbox_err_sys(&c->err, "cannot set the mode of %s", host);
        return 0;
    }
    if (ss.type != NSBOX_FILE_REGULAR)
        return nsbox_err_set(&c->err, EINVAL, "%s is a %s: only files and directories are copied",
                             src, nsbox_file_type_name(ss.type));
    if (into >= 0) {
        snprintf(host, sizeof(host), "%s/%s", dst, base_name(src));
        return get_file(c, src, into, base_name(src), host, ss.mode);
    }
    return get_file(c, src, pfd, name, dst, ss.mode);
}

/* ---- the command ---- */

static int open_box(struct cli_globals *g, const char *id, struct box_ctx *ctx, struct cp *c,
                    bool *opened)
{
    struct box_ctx_opts opts = {
        .store_dir = g->store_dir, .mode = NSBOX_LIMITS_STRICT, .version = NSBOX_VERSION_STRING};
    if (box_ctx_open(ctx, &opts, &c->err) < 0)
        return -1;
    if (box_open(ctx, id, &c->box, &c->err) < 0) {
        char why[sizeof(c->err.msg)];
        snprintf(why, sizeof(why), "%s", c->err.msg);
        return nsbox_err_set(&c->err, c->err.code,
                             "no live sandbox %s (made by `nsbox create`, see `nsbox ps`): %s", id,
                             why);
    }
    *opened = true;
    c->fctx = (struct nsbox_file_ctx){
        .uid = c->box.uid, .gid = c->box.gid, .timeout_s = 600, .write_max = CP_FILE_MAX};
    return 0;
}

int cmd_cp(struct cli_globals *g, int argc, char **argv)
{
    struct box_ctx ctx;
    struct cp c = {.box.sb = {.ctl = -1, .pidfd = -1}};
    bool opened = false;

    /* No options but --help (main.c answers it); "--" ends them, for a
     * path that starts with "-". */
    const char *name, *arg;
    int r = cli_next_option(cli_find_command("cp"), argc, argv, &name, &arg);
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (r == 1) {
        cli_print_help(stdout, cli_find_command("cp"));
        return CLI_EXIT_OK;
    }
    argc -= optind - 1;
    argv += optind - 1;
    if (argc != 3)
        return cli_usage_error("cp", "usage: nsbox cp SRC ID:DST | nsbox cp ID:SRC DST");
    char *in = sandbox_part(argv[1]), *out = sandbox_part(argv[2]);
    if ((in == NULL) == (out == NULL))
        return cli_usage_error("cp", "exactly one of SRC and DST is ID:PATH");
    char *colon = in ? in : out;
    *colon = '\0';
    const char *id = in ? argv[1] : argv[2];
    const char *spath = colon + 1;
    if (spath[0] == '\0' || argv[in ? 2 : 1][0] == '\0')
        return cli_usage_error("cp", "empty path");
    r = open_box(g, id, &ctx, &c, &opened);
    if (r == 0)
        r = in ? copy_out(&c, spath, argv[2]) : copy_in(&c, argv[1], spath);
    if (opened)
        box_close(&c.box);
    box_ctx_close(&ctx);
    if (r < 0)
        return cli_fail(&c.err);
    if (c.skipped > 0)
        nsbox_warn("%lu entries skipped", c.skipped);
    return 0;
}
