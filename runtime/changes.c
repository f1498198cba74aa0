/* Which files a run created or changed in the working directory (see
 * changes.h).
 *
 * The tree is the sandbox's, so hostile (its processes may rename entries
 * and swap them for symlinks while the host walks): the walk starts with
 * openat2(RESOLVE_NO_SYMLINKS), descends only with O_DIRECTORY|O_NOFOLLOW,
 * reads metadata only, and is bounded in entries and depth.  Contents are
 * read only for regular files under a size cap, opened again from the top
 * the same way, O_NOFOLLOW|O_NONBLOCK. */
#include "changes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/mime.h"
#include "../common/syscalls.h"

#define MAX_DEPTH 16

static void add(struct nsbox_snapshot *s, const char *path, const struct stat *st)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct nsbox_snap_entry *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL)
            return;
        s->v = v, s->cap = cap;
    }
    char *copy = strdup(path);
    if (copy == NULL)
        return;
    s->v[s->n++] = (struct nsbox_snap_entry){
        copy, (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec, (int64_t)st->st_size};
}

/* Breadth first: within the entry budget, what sits near the working
 * directory is seen before the depths of a huge subtree. */
struct pending {
    int fd;
    char *prefix;
    int depth;
};

static void walk(int root, struct nsbox_snapshot *s)
{
    struct pending *q = malloc(sizeof(*q) * 64);
    size_t head = 0, tail = 0, cap = 64;

    if (q == NULL) {
        close(root);
        return;
    }
    q[tail++] = (struct pending){root, strdup(""), 0};
    while (head < tail) {
        struct pending cur = q[head++];
        DIR *d = fdopendir(cur.fd);
        struct dirent *de;
        while (d != NULL && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if (s->n >= NSBOX_CHANGES_MAX) {
                s->truncated = true;
                break;
            }
            struct stat st;
            char path[PATH_MAX];
            if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            snprintf(path, sizeof(path), "%s%s%s", cur.prefix, cur.prefix[0] ? "/" : "",
                     de->d_name);
            if (S_ISREG(st.st_mode)) {
                add(s, path, &st);
            } else if (S_ISDIR(st.st_mode) && cur.depth < MAX_DEPTH) {
                int sub = openat(dirfd(d), de->d_name,
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                    continue;
                if (tail == cap) {
                    struct pending *nq = realloc(q, sizeof(*q) * cap * 2);
                    if (nq == NULL) {
                        close(sub);
                        continue;
                    }
                    q = nq, cap *= 2;
                }
                q[tail++] = (struct pending){sub, strdup(path), cur.depth + 1};
            }
            /* Whiteouts (char 0/0: deletions), symlinks, FIFOs: not reported. */
        }
        if (d != NULL)
            closedir(d);
        else
            close(cur.fd);
        free(cur.prefix);
    }
    free(q);
}

/* An fd of BASE/REL (no symlink followed on the way), or -1. */
static int open_root(const char *base, const char *rel)
{
    int bfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (bfd < 0)
        return -1;
    while (*rel == '/')
        rel++;
    int fd = rel[0] ? nsbox_openat2(bfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
                                    RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
                    : openat(bfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(bfd);
    return fd;
}

/* Where cwd's files live on the host: in the workspace when cwd is the
 * workdir it is mounted at or beneath it, else in the upper layer.  A cwd
 * with ".." in it keeps to the upper layer, which resolves it as the
 * sandbox would (RESOLVE_IN_ROOT there stands for the sandbox's root). */
static void locate(const struct nsbox_sandbox *sb, const char *cwd, struct nsbox_snapshot *s)
{
    size_t n = strlen(sb->workdir);
    while (n > 1 && sb->workdir[n - 1] == '/')
        n--;
    bool in_ws = sb->workspace[0] != '\0' && n > 0 && strncmp(cwd, sb->workdir, n) == 0 &&
                 (cwd[n] == '\0' || cwd[n] == '/') && strstr(cwd + n, "..") == NULL;
    if (in_ws) {
        snprintf(s->base, sizeof(s->base), "%s", sb->workspace);
        snprintf(s->rel, sizeof(s->rel), "%s", cwd + n);
    } else if (sb->disk.kind == NSBOX_DISK_TMPFS &&
               (s->fd = nsbox_sandbox_disk_open(sb, NULL)) >= 0) {
        /* A tmpfs disk, mounted only in the sandbox's namespace. */
        s->holds_fd = true;
        snprintf(s->base, sizeof(s->base), "/proc/self/fd/%d/upper", s->fd);
        snprintf(s->rel, sizeof(s->rel), "%s", cwd);
    } else {
        snprintf(s->base, sizeof(s->base), "%s/upper", sb->state_dir);
        snprintf(s->rel, sizeof(s->rel), "%s", cwd);
    }
}

void nsbox_changes_take(const struct nsbox_sandbox *sb, const char *cwd, struct nsbox_snapshot *s)
{
    memset(s, 0, sizeof(*s));
    locate(sb, cwd ? cwd : sb->workdir, s);
    int fd = open_root(s->base, s->rel);
    if (fd >= 0)
        walk(fd, s);
}

void nsbox_snapshot_free(struct nsbox_snapshot *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
    if (s->holds_fd)
        close(s->fd);
    s->holds_fd = false;
}

const char *nsbox_change_kind_name(enum nsbox_change_kind k)
{
    return k == NSBOX_CHANGE_MODIFIED ? "modified" : "created";
}

static const struct nsbox_snap_entry *find(const struct nsbox_snapshot *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].path, path) == 0)
            return &s->v[i];
    return NULL;
}

int nsbox_changes_diff(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                       struct nsbox_changes *out, struct nsbox_err *err)
{
    memset(out, 0, sizeof(*out));
    out->truncated = before->truncated || after->truncated;
    out->v = calloc(after->n ? after->n : 1, sizeof(*out->v));
    if (out->v == NULL)
        return nsbox_err_set(err, ENOMEM, "listing the changed files: out of memory");
    for (size_t i = 0; i < after->n; i++) {
        const struct nsbox_snap_entry *a = &after->v[i], *b = find(before, a->path);
        if (b != NULL && b->mtime_ns == a->mtime_ns && b->size == a->size)
            continue;
        char *path = strdup(a->path);
        if (path == NULL) {
            nsbox_changes_free(out);
            return nsbox_err_set(err, ENOMEM, "listing the changed files: out of memory");
        }
        out->v[out->n++] = (struct nsbox_change){.path = path,
                                                 .kind = b ? NSBOX_CHANGE_MODIFIED
                                                           : NSBOX_CHANGE_CREATED,
                                                 .size = a->size,
                                                 .mime = nsbox_mime_from_name(a->path)};
    }
    return 0;
}

void nsbox_changes_free(struct nsbox_changes *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].path);
    free(c->v);
    memset(c, 0, sizeof(*c));
}

unsigned char *nsbox_changes_read(const struct nsbox_snapshot *s, const char *path, size_t max,
                                  size_t *len)
{
    int root = open_root(s->base, s->rel);
    if (root < 0)
        return NULL;
    int fd = nsbox_openat2(root, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0,
                           RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    close(root);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        close(fd);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n != st.st_size) {
        free(buf);
        return NULL;
    }
    *len = (size_t)n;
    return buf;
}
