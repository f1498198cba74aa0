/* Volumes: `-v HOST:SANDBOX[:OPTS]` parsed, its host path opened once and
 * refused where it would show nsbox's own store or state to the sandbox.
 *
 * Contract: the host path is walked one component at a time without
 * following a symlink (nsbox_bind_open), and every check below is made on
 * the fds that walk returned; the runtime mounts that same fd (root:
 * open_tree on it; rootless: the path found again must be the same
 * inode).  Containment is decided by (st_dev, st_ino) walking ".." up to
 * "/", never by comparing strings, so a bind-mount alias, "//" or a
 * trailing slash changes nothing.  The host's kernel filesystems (/proc,
 * /sys, cgroups ...) are refused whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "internal.h"

#define CHAIN_MAX 512 /* directories between a path and "/" */

struct ident {
    dev_t dev;
    ino_t ino;
};

/* fd's directory and its ancestors up to "/" (fd itself first).  Returns
 * how many, or -1 with err. */
static int ancestors(int fd, struct ident *out, const char *what, struct nsbox_err *err)
{
    struct stat st;
    int cur = dup(fd);
    int n = 0;
    while (cur >= 0 && n < CHAIN_MAX && fstat(cur, &st) == 0) {
        out[n++] = (struct ident){st.st_dev, st.st_ino};
        int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        close(cur);
        cur = up;
        struct stat ust;
        if (cur >= 0 && fstat(cur, &ust) == 0 && ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
            break; /* ".." of "/" is "/" */
    }
    if (cur < 0 || n == CHAIN_MAX) {
        if (cur >= 0)
            close(cur);
        return nsbox_err_sys(err, "cannot walk up from %s", what);
    }
    close(cur);
    return n;
}

static bool in_chain(const struct ident *v, int n, struct ident x)
{
    for (int i = 0; i < n; i++)
        if (v[i].dev == x.dev && v[i].ino == x.ino)
            return true;
    return false;
}

/* A directory nsbox keeps to itself: the store (images, sandboxes' state,
 * workspaces, caches) and, should it live elsewhere, the state root. */
struct guarded {
    const char *what, *path;
    int fd; /* O_PATH, or -1: does not exist */
};

/* Refuses the volume (fd; parent: the directory holding it) when it is a
 * guarded directory, inside one, or holds one. */
static int check_guarded(const char *host, int fd, int parent, const struct guarded *g,
                         struct nsbox_err *err)
{
    struct ident up[CHAIN_MAX], gchain[CHAIN_MAX];
    struct stat st, gst;
    if (g->fd < 0)
        return 0;
    if (fstat(fd, &st) < 0 || fstat(g->fd, &gst) < 0)
        return nsbox_err_sys(err, "cannot stat %s", host);
    /* A file's place is its directory's. */
    int n = ancestors(S_ISDIR(st.st_mode) ? fd : parent, up, host, err);
    if (n < 0)
        return -1;
    if (in_chain(up, n, (struct ident){gst.st_dev, gst.st_ino}))
        return nsbox_err_set(err, EPERM,
                             "volume %s refused: it is %snsbox's %s %s, which a sandbox must "
                             "never see",
                             host,
                             up[0].dev == gst.st_dev && up[0].ino == gst.st_ino ? "" : "inside ",
                             g->what, g->path);
    if (!S_ISDIR(st.st_mode))
        return 0;
    int gn = ancestors(g->fd, gchain, g->path, err);
    if (gn < 0)
        return -1;
    if (in_chain(gchain, gn, (struct ident){st.st_dev, st.st_ino}))
        return nsbox_err_set(err, EPERM,
                             "volume %s refused: it contains nsbox's %s %s, which a sandbox "
                             "must never see; mount a subdirectory that does not contain it",
                             host, g->what, g->path);
    return 0;
}

/* The host's kernel filesystems: /proc (its /proc/PID/root links lead out
 * of any mount namespace), /sys, cgroups (the sandbox's own limits), bpf,
 * debugfs, tracefs, securityfs.  A volume of one would hand the sandbox
 * the host's kernel state. */
static int check_kernel_fs(const char *host, int fd, struct nsbox_err *err)
{
    static const struct {
        long magic;
        const char *name;
    } kernel[] = {{PROC_SUPER_MAGIC, "proc"},     {SYSFS_MAGIC, "sysfs"},
                  {CGROUP_SUPER_MAGIC, "cgroup"}, {CGROUP2_SUPER_MAGIC, "cgroup2"},
                  {BPF_FS_MAGIC, "bpf"},          {DEBUGFS_MAGIC, "debugfs"},
                  {TRACEFS_MAGIC, "tracefs"},     {SECURITYFS_MAGIC, "securityfs"},
                  {DEVPTS_SUPER_MAGIC, "devpts"}};
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return nsbox_err_sys(err, "cannot statfs %s", host);
    for (size_t i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++)
        if ((long)sf.f_type == kernel[i].magic)
            return nsbox_err_set(err, EPERM,
                                 "volume %s refused: it is on the host's %s, kernel state a "
                                 "sandbox must never see",
                                 host, kernel[i].name);
    return 0;
}

static int open_volume(struct box_ctx *ctx, const struct nsbox_bind *v, struct nsbox_bind *out,
                       struct nsbox_err *err)
{
    _cleanup_close_ int parent = -1;
    _cleanup_close_ int fd = nsbox_bind_open(v->source, &parent, err);
    if (fd < 0)
        return nsbox_err_prefix(err, "volume");
    if (check_kernel_fs(v->source, fd, err) < 0)
        return -1;
    _cleanup_close_ int state = open(ctx->state_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    const struct guarded guarded[] = {
        {"image store", ctx->store.root, ctx->store.root_fd},
        {"sandbox state directory", ctx->state_root, state},
    };
    for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++)
        if (check_guarded(v->source, fd, parent, &guarded[i], err) < 0)
            return -1;
    *out = *v;
    out->opened = true;
    out->fd = TAKE_FD(fd);
    return 0;
}

int box_volumes_open(struct box_ctx *ctx, const struct box_spec *spec, struct nsbox_bind *all,
                     size_t *n, struct nsbox_err *err)
{
    *n = 0;
    if (spec->n_binds + spec->n_volumes > NSBOX_MAX_BINDS)
        return nsbox_err_set(err, EINVAL, "at most %d volumes",
                             NSBOX_MAX_BINDS - (int)spec->n_binds);
    for (size_t i = 0; i < spec->n_binds; i++)
        all[(*n)++] = spec->binds[i];
    for (size_t i = 0; i < spec->n_volumes; i++) {
        if (open_volume(ctx, &spec->volumes[i], &all[*n], err) < 0) {
            box_volumes_close(all, *n);
            return -1;
        }
        (*n)++;
    }
    return 0;
}

void box_volumes_close(struct nsbox_bind *all, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (all[i].opened && all[i].fd >= 0) {
            close(all[i].fd);
            all[i].fd = -1;
        }
}

/* An absolute target without "." or ".." (empty components and a trailing
 * slash are dropped in place), not "/" and not where the sandbox's own
 * /proc, /sys and /dev are. */
static const char *check_target(char *t)
{
    if (t[0] != '/')
        return "the sandbox path must be absolute";
    size_t len = strlen(t);
    while (len > 1 && t[len - 1] == '/')
        t[--len] = '\0';
    for (const char *p = t; *p != '\0';) {
        while (*p == '/')
            p++;
        size_t c = strcspn(p, "/");
        if ((c == 1 && p[0] == '.') || (c == 2 && p[0] == '.' && p[1] == '.'))
            return "the sandbox path may not contain \".\" or \"..\"";
        p += c;
    }
    static const char *const kernel[] = {"proc", "sys", "dev"};
    const char *rel = t + strspn(t, "/");
    if (*rel == '\0')
        return "the sandbox path may not be /";
    for (size_t i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++) {
        size_t k = strlen(kernel[i]);
        if (strncmp(rel, kernel[i], k) == 0 && (rel[k] == '\0' || rel[k] == '/'))
            return "the sandbox path may not be in /proc, /sys or /dev";
    }
    return NULL;
}

static const char *parse_opts(char *opts, struct nsbox_bind *out)
{
    bool ro = false;
    for (char *save = NULL, *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        if (strcmp(o, "ro") == 0)
            ro = true;
        else if (strcmp(o, "rw") == 0)
            out->rw = true;
        else if (strcmp(o, "noexec") == 0)
            out->noexec = true;
        else
            return "unknown volume option (ro, rw, noexec)";
    }
    return ro && out->rw ? "a volume is ro or rw, not both" : NULL;
}

int box_volume_parse(char *spec, struct nsbox_bind *out, struct nsbox_err *err)
{
    *out = (struct nsbox_bind){.fd = -1};
    char *target = strchr(spec, ':');
    char *opts = target ? strchr(target + 1, ':') : NULL;
    const char *why = NULL;
    if (target == NULL)
        why = "a volume is HOST:SANDBOX[:OPTS]";
    if (target != NULL)
        *target++ = '\0';
    if (opts != NULL)
        *opts++ = '\0';
    if (why == NULL && spec[0] != '/')
        why = "the host path must be absolute (a named volume is not supported)";
    if (why == NULL)
        why = check_target(target);
    if (why == NULL && opts != NULL)
        why = opts[0] == '\0' ? "empty volume options" : parse_opts(opts, out);
    if (why != NULL)
        return nsbox_err_set(err, EINVAL, "%s", why);
    out->source = spec;
    out->target = target;
    return 0;
}
