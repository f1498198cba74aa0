/* Which files a run created or changed in the working directory.
 *
 * Everything a sandbox writes lands in its overlay's upper layer, a host
 * directory (STATE/upper), or in its persistent workspace.  Before and
 * after a run we walk upper/WORKDIR (or the workspace) and compare sizes
 * and mtimes.  The tree is the sandbox's, so hostile:
 * the walk starts with openat2(RESOLVE_NO_SYMLINKS), descends only with
 * O_DIRECTORY|O_NOFOLLOW, reads metadata only, and is bounded in entries
 * and depth.  Image contents are read only for regular files under a size
 * cap, opened O_NOFOLLOW|O_NONBLOCK. */
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

#include "../common/syscalls.h"

#define MAX_ENTRIES 5000
#define MAX_DEPTH 16
#define IMAGE_MAX (4u << 20)
#define IMAGES_TOTAL (8u << 20)

static void add(struct mcp_snapshot *s, const char *path, const struct stat *st)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct mcp_snap_entry *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL)
            return;
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = (struct mcp_snap_entry){
        strdup(path), (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
        (int64_t)st->st_size};
}

/* Breadth first: within the entry budget, what sits near the working
 * directory is seen before the depths of a huge subtree. */
struct pending {
    int fd;
    char *prefix;
    int depth;
};

static void walk(int root, struct mcp_snapshot *s)
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
            if (s->n >= MAX_ENTRIES) {
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

int mcp_snapshot_open_root(const char *base, const char *workdir)
{
    int ufd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ufd < 0)
        return -1;
    const char *rel = workdir[0] == '/' ? workdir + 1 : workdir;
    int fd = rel[0] ? nsbox_openat2(ufd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
                                    RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
                    : openat(ufd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(ufd);
    return fd;
}

void mcp_snapshot_take(const char *state_dir, const char *workdir, struct mcp_snapshot *s)
{
    memset(s, 0, sizeof(*s));
    int fd = mcp_snapshot_open_root(state_dir, workdir);
    if (fd >= 0)
        walk(fd, s);
}

void mcp_snapshot_free(struct mcp_snapshot *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static const struct mcp_snap_entry *find(const struct mcp_snapshot *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].path, path) == 0)
            return &s->v[i];
    return NULL;
}

static const char *image_type(const char *path)
{
    static const char *const ext[][2] = {{".png", "image/png"}, {".jpg", "image/jpeg"},
                                         {".jpeg", "image/jpeg"}, {".gif", "image/gif"},
                                         {".webp", "image/webp"}, {".svg", "image/svg+xml"}};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        size_t e = strlen(ext[i][0]);
        if (n > e && strcasecmp(path + n - e, ext[i][0]) == 0)
            return ext[i][1];
    }
    return NULL;
}

/* Reads a small regular image file of the upper layer, or NULL. */
static unsigned char *read_image(int root, const char *path, size_t *len)
{
    int fd = nsbox_openat2(root, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0,
                           RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > IMAGE_MAX) {
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

json_t *mcp_snapshot_diff(const struct mcp_snapshot *before, const struct mcp_snapshot *after,
                          const char *state_dir, const char *workdir, json_t **images,
                          char *(*encode)(const unsigned char *, size_t))
{
    json_t *files = json_array();
    size_t image_bytes = 0;
    int root = -1;

    *images = json_array();
    for (size_t i = 0; i < after->n; i++) {
        const struct mcp_snap_entry *a = &after->v[i], *b = find(before, a->path);
        if (b != NULL && b->mtime_ns == a->mtime_ns && b->size == a->size)
            continue;
        const char *mime = image_type(a->path);
        json_t *f = json_pack("{s:s,s:s,s:I,s:s?}", "path", a->path, "change",
                              b ? "modified" : "created", "size", (json_int_t)a->size,
                              "mime_type", mime);
        /* A name that is not UTF-8 cannot be a JSON string: listed
         * base64-encoded instead. */
        if (f == NULL) {
            char *enc = encode((const unsigned char *)a->path, strlen(a->path));
            f = json_pack("{s:s?,s:s,s:I}", "path_base64", enc, "change",
                          b ? "modified" : "created", "size", (json_int_t)a->size);
            free(enc);
            mime = NULL;
        }
        json_array_append_new(files, f);
        if (mime == NULL || a->size > IMAGE_MAX || image_bytes + (size_t)a->size > IMAGES_TOTAL)
            continue;
        if (root < 0)
            root = mcp_snapshot_open_root(state_dir, workdir);
        size_t len;
        unsigned char *data = root >= 0 ? read_image(root, a->path, &len) : NULL;
        char *b64 = data ? encode(data, len) : NULL;
        if (b64 != NULL) {
            json_array_append_new(*images, json_pack("{s:s,s:s,s:s}", "data", b64, "mimeType",
                                                     mime, "path", a->path));
            image_bytes += len;
        }
        free(b64);
        free(data);
    }
    if (root >= 0)
        close(root);
    return files;
}
