/* The space a directory tree takes (du.h): an iterative, symlink-free,
 * bounded walk, in a user namespace for a rootless sandbox's files. */
#include "du.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"

/* ---- the set of hard-linked inodes already counted ---- */

struct inoset {
    struct {
        dev_t dev;
        ino_t ino;
        bool used;
    } * v;
    size_t cap, n;
};

static size_t slot_of(const struct inoset *s, dev_t dev, ino_t ino)
{
    uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev;
    size_t i = (size_t)(h % s->cap);
    while (s->v[i].used && !(s->v[i].dev == dev && s->v[i].ino == ino))
        i = (i + 1) % s->cap;
    return i;
}

static int grow(struct inoset *s)
{
    struct inoset bigger = {.cap = s->cap ? s->cap * 2 : 256};
    bigger.v = calloc(bigger.cap, sizeof(*bigger.v));
    if (bigger.v == NULL)
        return -1;
    for (size_t i = 0; i < s->cap; i++)
        if (s->v[i].used) {
            size_t k = slot_of(&bigger, s->v[i].dev, s->v[i].ino);
            bigger.v[k] = s->v[i];
            bigger.n++;
        }
    free(s->v);
    *s = bigger;
    return 0;
}

/* 1: first seen (now recorded), 0: seen before, -1: out of memory. */
static int inoset_add(struct inoset *s, dev_t dev, ino_t ino)
{
    if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
        return -1;
    size_t i = slot_of(s, dev, ino);
    if (s->v[i].used)
        return 0;
    s->v[i].dev = dev;
    s->v[i].ino = ino;
    s->v[i].used = true;
    s->n++;
    return 1;
}

/* ---- the walk ---- */

struct walk {
    dev_t dev; /* the top's filesystem: nothing else is entered */
    uint64_t max, seen;
    struct nsbox_du *out;
    struct inoset links;
    DIR *stack[NSBOX_DU_MAX_DEPTH + 1];
    int depth; /* index of the innermost open directory, -1: none */
};

static int count(struct walk *w, const struct stat *st)
{
    /* Directories cannot be hard-linked: their nlink counts subdirectories. */
    if (st->st_nlink > 1 && !S_ISDIR(st->st_mode)) {
        int r = inoset_add(&w->links, st->st_dev, st->st_ino);
        if (r <= 0)
            return r;
    }
    w->out->bytes += (uint64_t)st->st_blocks * 512;
    w->out->inodes++;
    return 0;
}

/* Opens the directory name (just lstat'ed as st) below the innermost one
 * and pushes it.  A swap to a symlink or to another directory since the
 * lstat fails the open or the inode check: that entry is not descended. */
static void descend(struct walk *w, const char *name, const struct stat *st)
{
    if (w->depth + 1 > NSBOX_DU_MAX_DEPTH) {
        w->out->truncated = true;
        return;
    }
    int fd = openat(dirfd(w->stack[w->depth]), name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat now;
    if (fd < 0) {
        /* Out of fds is lost information; vanished or swapped is not. */
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
            w->out->truncated = true;
        return;
    }
    DIR *d = fstat(fd, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev
                 ? fdopendir(fd)
                 : NULL;
    if (d == NULL) {
        close(fd);
        return;
    }
    w->stack[++w->depth] = d;
}

/* One step: the next entry of the innermost directory.  Returns 1 to go
 * on, 0 when the walk is over, -1 out of memory. */
static int step(struct walk *w)
{
    struct stat st;
    struct dirent *e = readdir(w->stack[w->depth]);
    if (e == NULL) {
        /* The end, or an error reading it (it vanished): done with it. */
        closedir(w->stack[w->depth--]);
        return w->depth >= 0;
    }
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        return 1;
    if (++w->seen > w->max) {
        w->out->truncated = true;
        return 0;
    }
    if (fstatat(dirfd(w->stack[w->depth]), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        st.st_dev != w->dev)
        return 1; /* vanished, or another filesystem's mount point */
    if (count(w, &st) < 0)
        return -1;
    if (S_ISDIR(st.st_mode))
        descend(w, e->d_name, &st);
    return 1;
}

int nsbox_du_at(int dirfd, uint64_t max_entries, struct nsbox_du *out, struct nsbox_err *err)
{
    struct stat st;
    struct walk w = {.max = max_entries, .out = out, .depth = -1};
    int r = 1;

    *out = (struct nsbox_du){0};
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        nsbox_err_sys(err, "cannot measure the directory");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    w.dev = st.st_dev;
    if ((w.stack[0] = fdopendir(fd)) == NULL) {
        close(fd);
        return nsbox_err_sys(err, "cannot measure the directory");
    }
    w.depth = 0;
    if (count(&w, &st) < 0)
        r = -1;
    while (r > 0)
        r = step(&w);
    while (w.depth >= 0)
        closedir(w.stack[w.depth--]);
    free(w.links.v);
    return r < 0 ? nsbox_err_set(err, ENOMEM, "out of memory measuring a directory") : 0;
}

struct du_job {
    const char *dir;
    struct nsbox_du *out; /* shared with the parent (MAP_SHARED) */
};

static int du_job_run(void *arg, struct nsbox_err *err)
{
    struct du_job *job = arg;
    _cleanup_close_ int fd = open(job->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", job->dir);
    return nsbox_du_at(fd, NSBOX_DU_MAX_ENTRIES, job->out, err) < 0
               ? nsbox_err_prefix(err, "measuring %s", job->dir)
               : 0;
}

int nsbox_du(const char *dir, const struct nsbox_idmap *rootless_map, struct nsbox_du *out,
             struct nsbox_err *err)
{
    if (rootless_map == NULL || rootless_map->n_uid == 0) {
        struct du_job job = {dir, out};
        return du_job_run(&job, err);
    }
    /* The walk runs in a forked child (nsbox_userns_run): its numbers come
     * back through a shared page. */
    struct nsbox_du *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return nsbox_err_sys(err, "mmap");
    *shared = (struct nsbox_du){0};
    struct du_job job = {dir, shared};
    int r = nsbox_userns_run(rootless_map, du_job_run, &job, err);
    *out = *shared;
    munmap(shared, sizeof(*shared));
    return r;
}
