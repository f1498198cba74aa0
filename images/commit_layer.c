/* An overlay upper directory written out as an OCI layer (see commit.h).
 *
 * The tree is a sandbox's, so hostile: it is walked from an fd, each
 * directory opened with O_DIRECTORY|O_NOFOLLOW from its parent's fd and
 * each file with O_NOFOLLOW|O_NONBLOCK, then checked with fstat to be the
 * inode lstat saw (a swap between the two skips the entry); a symlink is
 * read with readlinkat and never resolved.  Depth, entries and bytes are
 * bounded.  A small pax writer makes the tar (any bytes in names, long names,
 * large ids) that is hashed (the diff_id) and gzipped with zlib, the
 * compressed stream hashed too (the blob's digest). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/cleanup.h"
#include "commit.h"

#define MAX_DEPTH 256
#define MAX_ENTRIES (16u << 20)
#define MAX_BYTES (32ull << 30)
#define CHUNK (256u << 10)

struct gz_sink {
    int fd;
    z_stream z;
    struct oci_sha256 *tar_hash, *blob_hash;
    uint64_t blob_bytes;
    unsigned char out[CHUNK];
};

struct hardlink {
    dev_t dev;
    ino_t ino;
    char *path;
};

/* One tar entry, as tar_header writes it. */
struct tar_entry {
    const char *name;
    const char *link; /* symlink target or hardlink's first name, or NULL */
    char type;        /* '0' file, '1' hardlink, '2' symlink, '5' dir, '6' FIFO */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    uint64_t size;
    int64_t mtime;
    const char *cap; /* security.capability, or NULL */
    size_t cap_len;
};

struct walker {
    struct gz_sink *sink;
    char *buf;  /* CHUNK bytes for file data */
    char *path; /* the current entry's name in the layer */
    size_t len, cap;
    struct hardlink *links;
    size_t n_links, cap_links;
    struct images_layer_out *out;
    struct nsbox_err *err;
};

/* ---- the gzip sink ---- */

static int sink_write(struct gz_sink *s, const void *buf, size_t len, int flush)
{
    s->z.next_in = (unsigned char *)buf;
    s->z.avail_in = (uInt)len;
    do {
        s->z.next_out = s->out;
        s->z.avail_out = sizeof(s->out);
        if (deflate(&s->z, flush) == Z_STREAM_ERROR)
            return -1;
        size_t have = sizeof(s->out) - s->z.avail_out;
        oci_sha256_update(s->blob_hash, s->out, have);
        s->blob_bytes += have;
        for (size_t off = 0; off < have;) {
            ssize_t n = write(s->fd, s->out + off, have - off);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return -1;
            off += (size_t)n;
        }
    } while (s->z.avail_out == 0);
    return 0;
}

/* Tar bytes: hashed for the diff_id, then compressed. */
static int tar_out(struct walker *w, const void *buf, size_t len)
{
    oci_sha256_update(w->sink->tar_hash, buf, len);
    if (sink_write(w->sink, buf, len, Z_NO_FLUSH) < 0)
        return nsbox_err_sys(w->err, "cannot write the layer");
    return 0;
}

static int tar_pad(struct walker *w, uint64_t size)
{
    static const char zeros[512];
    size_t rest = (size_t)(size % 512);
    return rest ? tar_out(w, zeros, 512 - rest) : 0;
}

/* ---- a pax tar writer (POSIX.1-2001), only what a layer needs ----
 * libarchive's writer would do, but linked statically its format table
 * drags every format and their libraries in. */

static void octal(char *field, size_t size, uint64_t v)
{
    snprintf(field, size, "%0*llo", (int)size - 1, (unsigned long long)v);
}

/* Appends the record "LEN key=value\n" (LEN counts the whole record). */
static int pax_add(char **buf, size_t *len, const char *key, const char *val, size_t vlen)
{
    size_t body = strlen(key) + vlen + 3, n = body + 1;
    while (n != body + (size_t)snprintf(NULL, 0, "%zu", n))
        n = body + (size_t)snprintf(NULL, 0, "%zu", n);
    char *p = realloc(*buf, *len + n + 1);
    if (p == NULL)
        return -1;
    int head = snprintf(p + *len, n + 1, "%zu %s=", n, key);
    memcpy(p + *len + head, val, vlen);
    p[*len + n - 1] = '\n';
    *buf = p, *len += n;
    return 0;
}

static bool plain(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] >= 0x7f)
            return false;
    return n < max;
}

static void ustar(char h[512], const char *name, char type, const struct tar_entry *e,
                  uint64_t size)
{
    memset(h, 0, 512);
    snprintf(h, 100, "%s", name);
    octal(h + 100, 8, e->mode & 07777);
    octal(h + 108, 8, e->uid <= 07777777 ? e->uid : 0);
    octal(h + 116, 8, e->gid <= 07777777 ? e->gid : 0);
    octal(h + 124, 12, size <= 077777777777ull ? size : 0);
    octal(h + 136, 12, e->mtime > 0 && e->mtime <= 077777777777ll ? (uint64_t)e->mtime : 0);
    h[156] = type;
    if (e->link != NULL && type != 'x')
        snprintf(h + 157, 100, "%s", e->link);
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned int sum = 0;
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)h[i];
    snprintf(h + 148, 8, "%06o", sum);
}

/* What ustar cannot hold goes in a pax extended header first. */
static int pax_records(const struct tar_entry *e, char **buf, size_t *len)
{
    char num[32];
    int r = 0;
    if (!plain(e->name, 100))
        r |= pax_add(buf, len, "path", e->name, strlen(e->name));
    if (e->link != NULL && !plain(e->link, 100))
        r |= pax_add(buf, len, "linkpath", e->link, strlen(e->link));
    if (e->uid > 07777777)
        r |= pax_add(buf, len, "uid", num, (size_t)snprintf(num, sizeof(num), "%u", e->uid));
    if (e->gid > 07777777)
        r |= pax_add(buf, len, "gid", num, (size_t)snprintf(num, sizeof(num), "%u", e->gid));
    if (e->size > 077777777777ull)
        r |= pax_add(buf, len, "size", num,
                     (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)e->size));
    if (e->mtime < 0 || e->mtime > 077777777777ll)
        r |= pax_add(buf, len, "mtime", num,
                     (size_t)snprintf(num, sizeof(num), "%lld", (long long)e->mtime));
    if (e->cap != NULL)
        r |= pax_add(buf, len, "SCHILY.xattr.security.capability", e->cap, e->cap_len);
    return r;
}

static int tar_header(struct walker *w, const struct tar_entry *e)
{
    char h[512];
    _cleanup_free_ char *pax = NULL;
    size_t pax_len = 0;

    if (++w->out->entries > MAX_ENTRIES)
        return nsbox_err_set(w->err, EFBIG, "more than %u entries", MAX_ENTRIES);
    if (pax_records(e, &pax, &pax_len) != 0)
        return nsbox_err_set(w->err, ENOMEM, "out of memory");
    if (pax_len > 0) {
        ustar(h, "PaxHeaders/entry", 'x', e, pax_len);
        if (tar_out(w, h, 512) < 0 || tar_out(w, pax, pax_len) < 0 || tar_pad(w, pax_len) < 0)
            return -1;
    }
    ustar(h, e->name, e->type, e, e->size);
    return tar_out(w, h, 512);
}

/* ---- entries ---- */

static int path_push(struct walker *w, const char *name, size_t *saved)
{
    size_t n = strlen(name), need = w->len + n + 3;
    if (need > w->cap) {
        size_t cap = need * 2;
        char *p = realloc(w->path, cap);
        if (p == NULL)
            return nsbox_err_set(w->err, ENOMEM, "out of memory");
        w->path = p, w->cap = cap;
    }
    *saved = w->len;
    if (w->len > 0)
        w->path[w->len++] = '/';
    memcpy(w->path + w->len, name, n + 1);
    w->len += n;
    return 0;
}

static void path_pop(struct walker *w, size_t saved)
{
    w->len = saved;
    w->path[saved] = '\0';
}

static struct tar_entry entry_of(const char *name, char type, const struct stat *st)
{
    return (struct tar_entry){.name = name,
                              .type = type,
                              .mode = st->st_mode,
                              .uid = st->st_uid,
                              .gid = st->st_gid,
                              .size = type == '0' ? (uint64_t)st->st_size : 0,
                              .mtime = st->st_mtim.tv_sec};
}

/* A deletion: ".wh.NAME" beside it, or ".wh..wh..opq" in an opaque dir. */
static int whiteout(struct walker *w, const char *dir, const char *name)
{
    struct stat st = {.st_mode = S_IFREG};
    size_t n = strlen(dir) + strlen(name) + 6;
    _cleanup_free_ char *p = malloc(n);
    if (p == NULL)
        return nsbox_err_set(w->err, ENOMEM, "out of memory");
    snprintf(p, n, "%s%s.wh.%s", dir, dir[0] ? "/" : "", name);
    struct tar_entry e = entry_of(p, '0', &st);
    return tar_header(w, &e);
}

/* The overlay marks an upper inode with user.* xattrs in a user namespace
 * (the sandbox mounts with userxattr), trusted.* outside one. */
static bool overlay_flag(int fd, const char *name, const char *value)
{
    char key[64], buf[8];
    static const char *const prefixes[] = {"user.overlay.", "trusted.overlay."};
    for (size_t i = 0; i < 2; i++) {
        snprintf(key, sizeof(key), "%s%s", prefixes[i], name);
        ssize_t n = fgetxattr(fd, key, buf, sizeof(buf));
        if (n >= 0 && (value == NULL || ((size_t)n == strlen(value) && !memcmp(buf, value, n))))
            return true;
    }
    return false;
}

static bool same_inode(int fd, const struct stat *st)
{
    struct stat now;
    return fstat(fd, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
           (now.st_mode & S_IFMT) == (st->st_mode & S_IFMT);
}

/* A second name of an inode already in the layer: *first is the first. */
static int hardlink_of(struct walker *w, const struct stat *st, const char **first)
{
    *first = NULL;
    if (st->st_nlink < 2)
        return 0;
    for (size_t i = 0; i < w->n_links; i++)
        if (w->links[i].dev == st->st_dev && w->links[i].ino == st->st_ino) {
            *first = w->links[i].path;
            return 0;
        }
    if (w->n_links == w->cap_links) {
        size_t cap = w->cap_links ? w->cap_links * 2 : 64;
        struct hardlink *v = realloc(w->links, cap * sizeof(*v));
        if (v == NULL)
            return nsbox_err_set(w->err, ENOMEM, "out of memory");
        w->links = v, w->cap_links = cap;
    }
    char *copy = strdup(w->path);
    if (copy == NULL)
        return nsbox_err_set(w->err, ENOMEM, "out of memory");
    w->links[w->n_links++] = (struct hardlink){st->st_dev, st->st_ino, copy};
    return 0;
}

/* Exactly size bytes: a file that shrank meanwhile is padded with zeros,
 * one that grew is cut (see docs/store.md on commits of running writers). */
static int copy_data(struct walker *w, int fd, uint64_t size)
{
    char *buf = w->buf;
    uint64_t left = size;
    bool eof = false;
    while (left > 0) {
        size_t want = left < CHUNK ? (size_t)left : CHUNK;
        ssize_t n = eof ? 0 : read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return nsbox_err_sys(w->err, "cannot read %s", w->path);
        if (n == 0) {
            eof = true;
            memset(buf, 0, want);
            n = (ssize_t)want;
        }
        if (tar_out(w, buf, (size_t)n) < 0)
            return -1;
        left -= (uint64_t)n;
    }
    return tar_pad(w, size);
}

static int regular(struct walker *w, int dfd, const char *name, const struct stat *st)
{
    const char *first;
    char cap[64];
    _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || !same_inode(fd, st)) {
        w->out->skipped++;
        return 0;
    }
    if (overlay_flag(fd, "metacopy", NULL))
        return nsbox_err_set(w->err, ENOTSUP, "%s holds only metadata (overlay metacopy)", w->path);
    if (hardlink_of(w, st, &first) < 0)
        return -1;
    struct tar_entry e = entry_of(w->path, first ? '1' : '0', st);
    if (first != NULL) {
        e.link = first;
        return tar_header(w, &e);
    }
    w->out->bytes += e.size;
    if (w->out->bytes > MAX_BYTES)
        return nsbox_err_set(w->err, EFBIG, "more than %llu GiB of files",
                             (unsigned long long)(MAX_BYTES >> 30));
    /* The one xattr kept: file capabilities (docker keeps them too). */
    ssize_t n = fgetxattr(fd, "security.capability", cap, sizeof(cap));
    if (n > 0)
        e.cap = cap, e.cap_len = (size_t)n;
    if (tar_header(w, &e) < 0)
        return -1;
    return copy_data(w, fd, e.size);
}

static int symlink_entry(struct walker *w, int dfd, const char *name, const struct stat *st)
{
    char target[PATH_MAX + 1];
    ssize_t n = readlinkat(dfd, name, target, sizeof(target));
    if (n < 0 || n > PATH_MAX) {
        w->out->skipped++;
        return 0;
    }
    target[n] = '\0';
    struct tar_entry e = entry_of(w->path, '2', st);
    e.link = target;
    return tar_header(w, &e);
}

static int walk_dir(struct walker *w, int dfd, int depth);

static int directory(struct walker *w, int dfd, const char *name, const struct stat *st, int depth)
{
    _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || !same_inode(fd, st)) {
        w->out->skipped++;
        return 0;
    }
    if (depth >= MAX_DEPTH)
        return nsbox_err_set(w->err, ELOOP, "directories nested deeper than %d", MAX_DEPTH);
    /* A renamed directory would need the lower layer's contents. */
    if (overlay_flag(fd, "redirect", NULL))
        return nsbox_err_set(w->err, ENOTSUP, "%s was renamed (overlay redirect)", w->path);
    /* Directories end in '/' in a tar; path_push left room for it. */
    size_t len = w->len;
    memcpy(w->path + len, "/", 2);
    struct tar_entry e = entry_of(w->path, '5', st);
    int r = tar_header(w, &e);
    w->path[len] = '\0';
    if (r < 0)
        return -1;
    if (overlay_flag(fd, "opaque", "y")) {
        _cleanup_free_ char *dir = strdup(w->path);
        if (dir == NULL)
            return nsbox_err_set(w->err, ENOMEM, "out of memory");
        if (whiteout(w, dir, ".wh..opq") < 0)
            return -1;
    }
    return walk_dir(w, fd, depth + 1);
}

static int entry(struct walker *w, int dfd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0; /* gone meanwhile */
    switch (st.st_mode & S_IFMT) {
    case S_IFDIR:
        return directory(w, dfd, name, &st, depth);
    case S_IFREG:
        return regular(w, dfd, name, &st);
    case S_IFLNK:
        return symlink_entry(w, dfd, name, &st);
    case S_IFIFO: {
        struct tar_entry e = entry_of(w->path, '6', &st);
        return tar_header(w, &e);
    }
    case S_IFCHR:
        if (major(st.st_rdev) == 0 && minor(st.st_rdev) == 0) {
            /* The parent's name: the path without its last component. */
            size_t keep = w->len - strlen(name);
            _cleanup_free_ char *parent = strndup(w->path, keep ? keep - 1 : 0);
            if (parent == NULL)
                return nsbox_err_set(w->err, ENOMEM, "out of memory");
            return whiteout(w, parent, name);
        }
        __attribute__((fallthrough)); /* no device nodes in a layer */
    default:
        w->out->skipped++; /* sockets, devices */
        return 0;
    }
}

static int walk_dir(struct walker *w, int dfd, int depth)
{
    int copy = dup(dfd);
    DIR *d = copy < 0 ? NULL : fdopendir(copy);
    if (d == NULL) {
        if (copy >= 0)
            close(copy);
        return nsbox_err_sys(w->err, "cannot read directory /%s", w->path);
    }
    _cleanup_closedir_ DIR *dir = d;
    struct dirent *de;
    while ((errno = 0, de = readdir(dir)) != NULL) {
        size_t saved = w->len;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (path_push(w, de->d_name, &saved) < 0)
            return -1;
        int r = entry(w, dirfd(dir), de->d_name, depth);
        path_pop(w, saved);
        if (r < 0)
            return -1;
    }
    if (errno != 0)
        return nsbox_err_sys(w->err, "cannot read directory /%s", w->path);
    return 0;
}

/* ---- putting it together ---- */

static void walker_free(struct walker *w)
{
    for (size_t i = 0; i < w->n_links; i++)
        free(w->links[i].path);
    free(w->links);
    free(w->path);
    free(w->buf);
}

static int write_tar(struct walker *w, int upper_fd)
{
    static const char end[1024]; /* two zero blocks end the archive */
    w->path = calloc(1, 256);
    w->cap = 256;
    w->buf = malloc(CHUNK);
    if (w->path == NULL || w->buf == NULL)
        return nsbox_err_set(w->err, ENOMEM, "out of memory");
    if (walk_dir(w, upper_fd, 0) < 0)
        return -1;
    return tar_out(w, end, sizeof(end));
}

int images_layer_from_upper(int upper_fd, int out_fd, struct images_layer_out *out,
                            struct nsbox_err *err)
{
    _cleanup_free_ struct gz_sink *sink = calloc(1, sizeof(*sink));
    struct walker w = {.sink = sink, .out = out, .err = err};

    memset(out, 0, sizeof(*out));
    if (sink == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    sink->fd = out_fd;
    sink->tar_hash = oci_sha256_new();
    sink->blob_hash = oci_sha256_new();
    /* windowBits 16+15: a gzip stream, its header's mtime 0. */
    if (sink->tar_hash == NULL || sink->blob_hash == NULL ||
        deflateInit2(&sink->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK) {
        oci_sha256_free(sink->tar_hash), oci_sha256_free(sink->blob_hash);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    int r = write_tar(&w, upper_fd);
    if (r == 0 && sink_write(sink, NULL, 0, Z_FINISH) < 0)
        r = nsbox_err_sys(err, "cannot write the layer");
    deflateEnd(&sink->z);
    walker_free(&w);
    oci_sha256_finish(sink->tar_hash, out->diff_id);
    oci_sha256_finish(sink->blob_hash, out->digest);
    out->size = sink->blob_bytes;
    return r;
}
