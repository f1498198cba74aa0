/* Background processes of a detached sandbox: the CLI's keeper (bg.h).
 *
 * Under STATE/bg/, for process pN:
 *   pN.json  what it is (id, name, command, started_at); its keeper holds
 *            an exclusive flock on it for as long as it lives
 *   pN.out, pN.err  the rings (common/ring.h) over the whole file, mapped
 *            MAP_SHARED: the keeper writes, `nsbox logs` reads
 *   pN.exit  its wait status in decimal, written (by rename) once it ended
 * A record without pN.exit whose flock is free lost its keeper: the
 * process died with the keeper's connection (init kills what a closed
 * connection started), the sandbox with it or before.  The keeper is a
 * grandchild of `nsbox exec -d` (setsid, stdio /dev/null, every other fd
 * closed); it writes nothing when the sandbox dies: the state directory
 * is being removed then. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/ring.h"
#include "bg.h"
#include "proc.h"
#include "spec.h"

#define BG_DIR "bg"

static int open_dir(const struct box *box, bool create, struct nsbox_err *err)
{
    _cleanup_close_ int sfd = open(box->sb.state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return nsbox_err_sys(err, "cannot open %s", box->sb.state_dir);
    if (create && mkdirat(sfd, BG_DIR, 0700) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot make %s/%s", box->sb.state_dir, BG_DIR);
    int dfd = openat(sfd, BG_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0 && errno == ENOENT && !create)
        return -2; /* no background process ever */
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s/%s", box->sb.state_dir, BG_DIR);
    return dfd;
}

/* "pN.json" → N, else 0. */
static unsigned record_number(const char *name)
{
    char *end;
    if (name[0] != 'p' || name[1] < '1' || name[1] > '9')
        return 0;
    unsigned long n = strtoul(name + 1, &end, 10);
    return strcmp(end, ".json") == 0 && n < 1000000 ? (unsigned)n : 0;
}

/* Reads record n's info, its end from pN.exit or its keeper's lock. */
static int read_record(int dfd, unsigned n, struct box_bg_info *info)
{
    char name[32], buf[64];
    memset(info, 0, sizeof(*info));
    snprintf(name, sizeof(name), "p%u.json", n);
    _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    json_error_t je;
    _cleanup_json_ json_t *j = json_loadfd(fd, 0, &je);
    if (j == NULL)
        return -1;
    snprintf(info->id, sizeof(info->id), "p%u", n);
    snprintf(info->name, sizeof(info->name), "%s",
             json_string_value(json_object_get(j, "name")) ?: "");
    snprintf(info->command, sizeof(info->command), "%s",
             json_string_value(json_object_get(j, "command")) ?: "");
    info->started_at = (time_t)json_integer_value(json_object_get(j, "started_at"));
    info->running = true;
    snprintf(name, sizeof(name), "p%u.exit", n);
    _cleanup_close_ int efd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t len = efd >= 0 ? read(efd, buf, sizeof(buf) - 1) : -1;
    if (len > 0) {
        buf[len] = '\0';
        box_bg_set_status(info, atoi(buf));
    } else if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        info->running = false, info->gone = true;
        info->exit_code = -1, info->signal = SIGKILL;
    }
    return 0;
}

static int by_number(const void *a, const void *b)
{
    const struct box_bg_info *x = a, *y = b;
    return atoi(x->id + 1) - atoi(y->id + 1);
}

static int list_dir(int dfd, struct box_bg_info **out, size_t *n, struct nsbox_err *err)
{
    int dup_fd = dup(dfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (d == NULL) {
        if (dup_fd >= 0)
            close(dup_fd);
        return nsbox_err_sys(err, "cannot list background processes");
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        unsigned num = record_number(e->d_name);
        if (num == 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct box_bg_info *grown = realloc(*out, cap * sizeof(**out));
            if (grown == NULL) {
                closedir(d);
                free(*out);
                *out = NULL;
                return nsbox_err_set(err, ENOMEM, "out of memory");
            }
            *out = grown;
        }
        if (read_record(dfd, num, &(*out)[*n]) == 0)
            (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(*out, *n, sizeof(**out), by_number);
    return 0;
}

int box_bg_file_list(const struct box *box, struct box_bg_info **out, size_t *n,
                     struct nsbox_err *err)
{
    *out = NULL;
    *n = 0;
    _cleanup_close_ int dfd = open_dir(box, false, err);
    if (dfd == -2)
        return 0;
    return dfd < 0 ? -1 : list_dir(dfd, out, n, err);
}

/* Maps pN.SUFFIX's ring (the writer: read-write). */
static void *map_ring(int dfd, const char *id, const char *suffix, bool create, size_t bytes,
                      size_t *len, struct nsbox_ring *r, struct nsbox_err *err)
{
    char name[48];
    struct stat st;
    snprintf(name, sizeof(name), "%s.%s", id, suffix);
    _cleanup_close_ int fd = openat(
        dfd, name, (create ? O_RDWR | O_CREAT | O_EXCL : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || (create && ftruncate(fd, (off_t)nsbox_ring_mem(bytes)) < 0) ||
        fstat(fd, &st) < 0) {
        nsbox_err_sys(err, "cannot open the log %s", name);
        return NULL;
    }
    *len = (size_t)st.st_size;
    void *mem = *len > NSBOX_RING_HDR
                    ? mmap(NULL, *len, create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
                           0)
                    : MAP_FAILED;
    if (mem == MAP_FAILED) {
        nsbox_err_set(err, EINVAL, "the log %s is damaged", name);
        return NULL;
    }
    if ((create ? nsbox_ring_format(r, mem, *len) : nsbox_ring_attach(r, mem, *len)) < 0) {
        munmap(mem, *len);
        nsbox_err_set(err, EINVAL, "the log %s is damaged", name);
        return NULL;
    }
    return mem;
}

static int read_stream(int dfd, const char *id, const char *suffix, bool running, size_t max,
                       struct box_bg_chunk *c, struct nsbox_err *err)
{
    struct nsbox_ring r;
    size_t len;
    void *mem = map_ring(dfd, id, suffix, false, 0, &len, &r, err);
    if (mem == NULL)
        return -1;
    c->data = malloc(max ? max : 1);
    if (c->data != NULL) {
        c->len = nsbox_ring_read(&r, &c->cursor, c->data, max, &c->dropped);
        c->eof = !running && c->cursor >= nsbox_ring_total(&r);
    }
    munmap(mem, len);
    return c->data == NULL ? nsbox_err_set(err, ENOMEM, "out of memory") : 0;
}

static uint64_t avail(int dfd, const char *id, const char *suffix, uint64_t cursor)
{
    struct nsbox_ring r;
    struct nsbox_err ignored;
    size_t len;
    void *mem = map_ring(dfd, id, suffix, false, 0, &len, &r, &ignored);
    if (mem == NULL)
        return 0;
    uint64_t t = nsbox_ring_total(&r);
    munmap(mem, len);
    return t > cursor ? t - cursor : 0;
}

int box_bg_file_logs(const struct box *box, const char *id, unsigned streams, size_t max_bytes,
                     struct box_bg_chunk *out, struct box_bg_chunk *err_chunk,
                     struct box_bg_info *info, struct nsbox_err *err)
{
    struct box_bg_info mine;
    char probe[40];
    snprintf(probe, sizeof(probe), "%.24s.json", id);
    unsigned n = record_number(probe);
    _cleanup_close_ int dfd = open_dir(box, false, err);
    if (dfd == -2 || (dfd >= 0 && (n == 0 || read_record(dfd, n, &mine) < 0)))
        return nsbox_err_set(err, ENOENT, "no background process \"%.32s\" in sandbox %s", id,
                             box->sb.id);
    if (dfd < 0)
        return -1;
    /* The end first: bytes read after it was seen are all there are. */
    size_t out_max = max_bytes, err_max = max_bytes;
    if (streams == BOX_BG_BOTH)
        box_bg_split(max_bytes, avail(dfd, mine.id, "out", out->cursor),
                     avail(dfd, mine.id, "err", err_chunk->cursor), &out_max, &err_max);
    if ((streams & BOX_BG_STDOUT) &&
        read_stream(dfd, mine.id, "out", mine.running, out_max, out, err) < 0)
        return -1;
    if ((streams & BOX_BG_STDERR) &&
        read_stream(dfd, mine.id, "err", mine.running, err_max, err_chunk, err) < 0)
        return -1;
    if (info != NULL)
        *info = mine;
    return 0;
}

/* ---- the keeper ---- */

/* A new record pN.json, locked, numbered past every one there.  Returns
 * its fd (N in *num), or -1. */
static int new_record(int dfd, const struct box_bg_opts *o, unsigned max_running,
                      struct box_bg_info *info, struct nsbox_err *err)
{
    struct box_bg_info *all;
    size_t n;
    unsigned next = 1, running = 0;
    if (list_dir(dfd, &all, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        running += all[i].running;
        unsigned num = (unsigned)atoi(all[i].id + 1);
        next = num >= next ? num + 1 : next;
    }
    free(all);
    if (running >= max_running)
        return nsbox_err_set(err, EAGAIN,
                             "this sandbox already runs %u background processes, the most it may",
                             max_running);
    memset(info, 0, sizeof(*info));
    snprintf(info->name, sizeof(info->name), "%.*s", BOX_BG_NAME_MAX, o->name ? o->name : "");
    snprintf(info->command, sizeof(info->command), "%.*s", BOX_BG_CMD_SHOWN, o->command);
    info->started_at = time(NULL);
    info->running = true;
    for (int tries = 0; tries < 100; tries++, next++) {
        char name[32];
        snprintf(name, sizeof(name), "p%u.json", next);
        int fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return nsbox_err_sys(err, "cannot write %s", name);
        snprintf(info->id, sizeof(info->id), "p%u", next);
        _cleanup_json_ json_t *j = json_pack("{s:s,s:s,s:s,s:I}", "id", info->id, "name",
                                             info->name, "command", info->command, "started_at",
                                             (json_int_t)info->started_at);
        /* Locked before anyone can read it as a record without a keeper. */
        if (flock(fd, LOCK_EX) < 0 || j == NULL || json_dumpfd(j, fd, 0) < 0) {
            close(fd);
            unlinkat(dfd, name, 0);
            return nsbox_err_sys(err, "cannot write %s", name);
        }
        return fd;
    }
    return nsbox_err_set(err, EEXIST, "cannot number a background process");
}

/* Writes pN.exit (by rename: readers see all of it or nothing). */
static void write_exit(int dfd, const char *id, int status)
{
    char tmp[48], name[48], text[32];
    snprintf(tmp, sizeof(tmp), "%s.exit.tmp", id);
    snprintf(name, sizeof(name), "%s.exit", id);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    int len = snprintf(text, sizeof(text), "%d\n", status);
    bool ok = write(fd, text, (size_t)len) == len;
    close(fd);
    if (ok)
        renameat(dfd, tmp, dfd, name);
}

static void drain_fd(int *fd, struct nsbox_ring *r)
{
    char buf[65536];
    for (int i = 0; *fd >= 0 && i < 16; i++) {
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n > 0) {
            nsbox_ring_write(r, buf, (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EINTR))
            continue;
        if (n == 0 || errno != EAGAIN) {
            close(*fd);
            *fd = -1;
        }
        return;
    }
}

/* The keeper's life: output into the rings until the process exits (its
 * status into pN.exit) or the sandbox dies (nothing written). */
static void keep(struct nsbox_proc *p, struct nsbox_ring *ring, int dfd, const char *id)
{
    struct nsbox_err ignored;
    for (;;) {
        struct pollfd pfd[3] = {{.fd = p->out, .events = POLLIN},
                                {.fd = p->err, .events = POLLIN},
                                {.fd = p->ctl, .events = POLLIN}};
        if (poll(pfd, 3, -1) < 0 && errno != EINTR)
            return;
        if (pfd[0].revents)
            drain_fd(&p->out, &ring[0]);
        if (pfd[1].revents)
            drain_fd(&p->err, &ring[1]);
        if (!pfd[2].revents)
            continue;
        int r = box_proc_wait(p, 0, &ignored);
        if (r == 0)
            continue;
        if (r < 0 && p->exited) { /* it never ran: why, on its stderr */
            char line[sizeof(ignored.msg) + 16];
            int n = snprintf(line, sizeof(line), "nsbox: %s\n", ignored.msg);
            nsbox_ring_write(&ring[1], line,
                             (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
        } else if (r < 0) {
            return;
        }
        drain_fd(&p->out, &ring[0]);
        drain_fd(&p->err, &ring[1]);
        write_exit(dfd, id, p->wait_status);
        return;
    }
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* In the keeper: every fd but stdio and keep[] closed. */
static void close_others(int *keep_fds, int n)
{
    qsort(keep_fds, (size_t)n, sizeof(int), cmp_int);
    unsigned from = 3;
    for (int i = 0; i < n; i++) {
        if ((unsigned)keep_fds[i] > from)
            close_range(from, (unsigned)keep_fds[i] - 1, 0);
        from = (unsigned)keep_fds[i] + 1;
    }
    close_range(from, ~0u, 0);
}

/* The grandchild: detached, it keeps the process until it ends. */
static void keeper_main(struct nsbox_proc *p, struct nsbox_ring *ring, int dfd, int lock_fd,
                        const char *id)
{
    setsid();
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        if (null > 2)
            close(null);
    }
    int keep_fds[] = {p->ctl, p->out, p->err, dfd, lock_fd};
    close_others(keep_fds, 5);
    keep(p, ring, dfd, id);
    _exit(0);
}

/* Forks the keeper (twice: nobody waits for it) and returns in the
 * parent once the middle child is reaped. */
static int fork_keeper(struct nsbox_proc *p, struct nsbox_ring *ring, int dfd, int lock_fd,
                       const char *id, struct nsbox_err *err)
{
    pid_t pid = fork();
    if (pid < 0)
        return nsbox_err_sys(err, "fork");
    if (pid == 0) {
        pid_t gc = fork();
        if (gc == 0)
            keeper_main(p, ring, dfd, lock_fd, id);
        _exit(gc < 0 ? 1 : 0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return nsbox_err_set(err, ECHILD, "cannot start the keeper of a background process");
    return 0;
}

/* Closes the parent's copies of p's fds without ending it: the keeper
 * holds the same connection, and init kills only when the last copy goes. */
static void let_go(struct nsbox_proc *p)
{
    int *fds[] = {&p->ctl, &p->out, &p->err, &p->chan, &p->pty};
    for (size_t i = 0; i < 5; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

static int spawn_proc(struct box *box, const struct box_bg_opts *o, struct nsbox_proc *p,
                      struct nsbox_err *err)
{
    char *argv[] = {"/bin/sh", "-c", (char *)o->command, NULL};
    struct nsbox_exec_opts eo;
    box_exec_defaults(box, &eo);
    eo.argv = o->argv != NULL ? o->argv : argv;
    if (o->as_user)
        eo.uid = o->uid, eo.gid = o->gid;
    if (o->workdir != NULL)
        eo.cwd = o->workdir;
    _cleanup_free_ char **merged = NULL;
    if (o->env != NULL) {
        merged = box_merge_env(box->env, (char **)o->env);
        if (merged == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        eo.env = merged;
    }
    if (box_proc_start(box, &eo, p, err) < 0)
        return -1;
    close(p->chan); /* stdin at EOF */
    p->chan = -1;
    return 0;
}

int box_bg_detach(struct box *box, const struct box_bg_opts *o, size_t ring_bytes,
                  unsigned max_running, struct box_bg_info *info, struct nsbox_err *err)
{
    struct nsbox_ring ring[2];
    void *mem[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    struct nsbox_proc p = {.ctl = -1, .out = -1, .err = -1, .chan = -1, .pty = -1};
    ring_bytes = ring_bytes < BOX_BG_RING_MIN   ? BOX_BG_RING_MIN
                 : ring_bytes > BOX_BG_RING_MAX ? BOX_BG_RING_MAX
                                                : ring_bytes;
    _cleanup_close_ int dfd = open_dir(box, true, err);
    if (dfd < 0)
        return -1;
    _cleanup_close_ int lock_fd = new_record(dfd, o, max_running, info, err);
    if (lock_fd < 0)
        return -1;
    int r = -1;
    if ((mem[0] = map_ring(dfd, info->id, "out", true, ring_bytes, &len[0], &ring[0], err)) &&
        (mem[1] = map_ring(dfd, info->id, "err", true, ring_bytes, &len[1], &ring[1], err)) &&
        spawn_proc(box, o, &p, err) == 0)
        r = fork_keeper(&p, ring, dfd, lock_fd, info->id, err);
    if (r < 0)
        box_proc_close(&p); /* kills it: no keeper */
    else
        let_go(&p);
    for (int i = 0; i < 2; i++)
        if (mem[i] != NULL)
            munmap(mem[i], len[i]);
    if (r < 0) {
        char name[48];
        const char *suffix[] = {"json", "out", "err"};
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof(name), "%s.%s", info->id, suffix[i]);
            unlinkat(dfd, name, 0);
        }
    }
    return r;
}
