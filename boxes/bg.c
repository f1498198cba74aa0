/* Background processes: the server's keeper (bg.h).
 *
 * One thread, one epoll: each process registers its stdout, stderr and
 * control connection, tagged with the process and which fd it is.  The
 * keeper reads output into the process's rings and its exit from the
 * control connection, all under the keeper's one lock, which readers
 * (logs, list, wait) take too.  A process leaves epoll before its fds
 * close; its record is freed by the keeper thread only, between two
 * epoll_wait batches, so an event fetched before the removal never
 * points at freed memory (a removed record is marked dead and skipped). */
#include "bg.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/ring.h"
#include "proc.h"
#include "spec.h"

enum { FD_OUT, FD_ERR, FD_CTL };

struct bg_proc;

struct bg_tag {
    struct bg_proc *proc;
    int which; /* FD_* */
};

struct bg_proc {
    struct box_bg_info info;
    struct nsbox_proc p;
    struct nsbox_ring ring[2];
    void *mem[2];
    size_t mem_len;
    bool watched[3]; /* in the epoll set */
    bool dead;       /* forgotten: freed by the keeper */
    struct bg_tag tags[3];
    struct box_bg_set *set;
    struct bg_proc *next;
};

struct box_bg_set {
    struct box_bg_keeper *k;
    unsigned max_running;
    size_t ring_bytes;
    unsigned seq;
    struct bg_proc *procs; /* oldest first */
};

struct box_bg_keeper {
    pthread_t thread;
    int epfd, wake;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a process ended */
    bool stop;
    struct bg_proc *graveyard; /* dead, for the thread to free */
};

void box_bg_chunk_free(struct box_bg_chunk *c)
{
    free(c->data);
    c->data = NULL;
    c->len = 0;
}

void box_bg_set_status(struct box_bg_info *info, int st)
{
    info->running = false;
    info->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    info->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

void box_bg_split(size_t max_bytes, uint64_t avail_out, uint64_t avail_err, size_t *out_max,
                  size_t *err_max)
{
    size_t half = max_bytes / 2;
    size_t err_use = avail_err < half ? (size_t)avail_err : half;
    *out_max = max_bytes - err_use;
    size_t out_use = avail_out < *out_max ? (size_t)avail_out : *out_max;
    *err_max = max_bytes - out_use;
}

/* ---- the thread ---- */

static void unwatch(struct box_bg_keeper *k, struct bg_proc *b, int which)
{
    int fd = which == FD_OUT ? b->p.out : which == FD_ERR ? b->p.err : b->p.ctl;
    if (b->watched[which] && fd >= 0)
        epoll_ctl(k->epfd, EPOLL_CTL_DEL, fd, NULL);
    b->watched[which] = false;
}

/* Reads what fd has into the stream's ring (lock held); at EOF or an
 * error stops watching it.  With all, until EAGAIN. */
static void drain(struct box_bg_keeper *k, struct bg_proc *b, int which)
{
    char buf[65536];
    int fd = which == FD_OUT ? b->p.out : b->p.err;
    for (int i = 0; b->watched[which] && i < 16; i++) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            nsbox_ring_write(&b->ring[which], buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || errno != EAGAIN)
            unwatch(k, b, which);
        return;
    }
}

/* The control connection spoke (lock held): its exit, or init gone. */
static void control(struct box_bg_keeper *k, struct bg_proc *b)
{
    struct nsbox_err why = {0};
    int r = box_proc_wait(&b->p, 0, &why);
    if (r == 0)
        return;
    if (r < 0 && b->p.exited) { /* it never ran (a workdir missing): why, on its stderr */
        char line[sizeof(why.msg) + 16];
        int n = snprintf(line, sizeof(line), "nsbox: %s\n", why.msg);
        nsbox_ring_write(&b->ring[FD_ERR], line,
                         (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
        r = 1;
    }
    /* The process has exited: everything it wrote is in the pipes now. */
    drain(k, b, FD_OUT);
    drain(k, b, FD_ERR);
    unwatch(k, b, FD_CTL);
    if (r == 1) {
        box_bg_set_status(&b->info, b->p.wait_status);
    } else {
        b->info.running = false, b->info.gone = true;
        b->info.exit_code = -1, b->info.signal = SIGKILL;
    }
    pthread_cond_broadcast(&k->changed);
}

static void free_proc(struct bg_proc *b)
{
    box_proc_close(&b->p);
    for (int i = 0; i < 2; i++)
        if (b->mem[i] != NULL)
            munmap(b->mem[i], b->mem_len);
    free(b);
}

static void *keeper_main(void *arg)
{
    struct box_bg_keeper *k = arg;
    struct epoll_event ev[64];
    for (;;) {
        pthread_mutex_lock(&k->lock);
        while (k->graveyard != NULL) {
            struct bg_proc *b = k->graveyard;
            k->graveyard = b->next;
            free_proc(b);
        }
        bool stop = k->stop;
        pthread_mutex_unlock(&k->lock);
        if (stop)
            return NULL;
        int n = epoll_wait(k->epfd, ev, 64, -1);
        pthread_mutex_lock(&k->lock);
        for (int i = 0; i < n; i++) {
            struct bg_tag *t = ev[i].data.ptr;
            if (t == NULL) {
                uint64_t v;
                if (read(k->wake, &v, sizeof(v)) < 0) {
                    /* nothing: the wake is level-triggered until read */
                }
                continue;
            }
            if (t->proc->dead || !t->proc->watched[t->which])
                continue;
            if (t->which == FD_CTL)
                control(k, t->proc);
            else
                drain(k, t->proc, t->which);
        }
        pthread_mutex_unlock(&k->lock);
    }
}

static void wake(struct box_bg_keeper *k)
{
    uint64_t one = 1;
    if (write(k->wake, &one, sizeof(one)) < 0) {
        /* the counter is full: the keeper is awake anyway */
    }
}

struct box_bg_keeper *box_bg_keeper_new(struct nsbox_err *err)
{
    struct box_bg_keeper *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    k->epfd = epoll_create1(EPOLL_CLOEXEC);
    k->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (k->epfd < 0 || k->wake < 0 || epoll_ctl(k->epfd, EPOLL_CTL_ADD, k->wake, &ev) < 0) {
        nsbox_err_sys(err, "cannot make the background processes' keeper");
        goto fail;
    }
    pthread_mutex_init(&k->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->changed, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&k->thread, NULL, keeper_main, k);
    if (e == 0)
        return k;
    pthread_cond_destroy(&k->changed);
    pthread_mutex_destroy(&k->lock);
    nsbox_err_set(err, e, "cannot start the background processes' keeper");
fail:
    if (k->epfd >= 0)
        close(k->epfd);
    if (k->wake >= 0)
        close(k->wake);
    free(k);
    return NULL;
}

void box_bg_keeper_free(struct box_bg_keeper *k)
{
    if (k == NULL)
        return;
    pthread_mutex_lock(&k->lock);
    k->stop = true;
    pthread_mutex_unlock(&k->lock);
    wake(k);
    pthread_join(k->thread, NULL);
    while (k->graveyard != NULL) {
        struct bg_proc *b = k->graveyard;
        k->graveyard = b->next;
        free_proc(b);
    }
    close(k->epfd);
    close(k->wake);
    pthread_cond_destroy(&k->changed);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

/* ---- sets ---- */

struct box_bg_set *box_bg_set_new(struct box_bg_keeper *k, unsigned max_running, size_t ring_bytes)
{
    struct box_bg_set *set = calloc(1, sizeof(*set));
    if (set == NULL)
        return NULL;
    set->k = k;
    set->max_running = max_running ? max_running : 1;
    set->ring_bytes = ring_bytes < BOX_BG_RING_MIN   ? BOX_BG_RING_MIN
                      : ring_bytes > BOX_BG_RING_MAX ? BOX_BG_RING_MAX
                                                     : ring_bytes;
    return set;
}

/* Takes b out of its set's list and out of epoll, kills it, and hands it
 * to the keeper to free (lock held). */
static void forget(struct box_bg_set *set, struct bg_proc *b)
{
    for (struct bg_proc **p = &set->procs; *p != NULL; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    for (int i = 0; i < 3; i++)
        unwatch(set->k, b, i);
    box_proc_close(&b->p);
    b->dead = true;
    b->next = set->k->graveyard;
    set->k->graveyard = b;
}

void box_bg_set_free(struct box_bg_set *set)
{
    if (set == NULL)
        return;
    struct box_bg_keeper *k = set->k;
    pthread_mutex_lock(&k->lock);
    while (set->procs != NULL)
        forget(set, set->procs);
    pthread_mutex_unlock(&k->lock);
    wake(k);
    free(set);
}

/* Running ones and records in set (lock held). */
static void count(struct box_bg_set *set, unsigned *running, unsigned *ended)
{
    *running = *ended = 0;
    for (struct bg_proc *b = set->procs; b != NULL; b = b->next)
        (*(b->info.running ? running : ended))++;
}

static struct bg_proc *find(struct box_bg_set *set, const char *id, struct nsbox_err *err)
{
    for (struct bg_proc *b = set->procs; b != NULL; b = b->next)
        if (strcmp(b->info.id, id) == 0)
            return b;
    nsbox_err_set(err, ENOENT, "no background process \"%.32s\" in this sandbox", id);
    return NULL;
}

/* The info of a live record: totals from its rings. */
static void snapshot(const struct bg_proc *b, struct box_bg_info *info)
{
    *info = b->info;
    info->out_total = nsbox_ring_total(&b->ring[FD_OUT]);
    info->err_total = nsbox_ring_total(&b->ring[FD_ERR]);
}

static int make_rings(struct bg_proc *b, size_t bytes, struct nsbox_err *err)
{
    b->mem_len = nsbox_ring_mem(bytes);
    for (int i = 0; i < 2; i++) {
        /* Pages are touched only as output arrives. */
        b->mem[i] = mmap(NULL, b->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                         0);
        if (b->mem[i] == MAP_FAILED) {
            b->mem[i] = NULL;
            return nsbox_err_sys(err, "cannot map a log ring");
        }
        nsbox_ring_format(&b->ring[i], b->mem[i], b->mem_len);
    }
    return 0;
}

/* Starts the process itself: /bin/sh -c command, stdin at EOF. */
static int spawn(struct box *box, const struct box_bg_opts *o, struct nsbox_proc *p,
                 struct nsbox_err *err)
{
    char *argv[] = {"/bin/sh", "-c", (char *)o->command, NULL};
    struct nsbox_exec_opts eo;
    char **merged = NULL;
    box_exec_defaults(box, &eo);
    eo.argv = o->argv != NULL ? o->argv : argv;
    if (o->as_user)
        eo.uid = o->uid, eo.gid = o->gid;
    if (o->workdir != NULL)
        eo.cwd = o->workdir;
    if (o->env != NULL) {
        merged = box_merge_env(box->env, (char **)o->env);
        if (merged == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        eo.env = merged;
    }
    int r = box_proc_start(box, &eo, p, err);
    free(merged); /* the strings are box's and o's */
    if (r < 0)
        return -1;
    /* Its stdin is one end of a socketpair: closing ours is EOF there. */
    if (p->chan >= 0)
        close(p->chan);
    p->chan = -1;
    return 0;
}

static void fill_info(struct box_bg_info *info, unsigned seq, const struct box_bg_opts *o)
{
    memset(info, 0, sizeof(*info));
    snprintf(info->id, sizeof(info->id), "p%u", seq);
    snprintf(info->name, sizeof(info->name), "%.*s", BOX_BG_NAME_MAX, o->name ? o->name : "");
    snprintf(info->command, sizeof(info->command), "%.*s", BOX_BG_CMD_SHOWN, o->command);
    info->started_at = time(NULL);
    info->running = true;
}

/* Registers b's three fds with the keeper (lock held). */
static int watch(struct box_bg_keeper *k, struct bg_proc *b, struct nsbox_err *err)
{
    int fds[3] = {b->p.out, b->p.err, b->p.ctl};
    for (int i = 0; i < 3; i++) {
        b->tags[i] = (struct bg_tag){b, i};
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &b->tags[i]};
        if (epoll_ctl(k->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
            return nsbox_err_sys(err, "cannot watch a background process");
        b->watched[i] = true;
    }
    return 0;
}

/* Forgets the oldest ended record when there are max_running of them. */
static void trim(struct box_bg_set *set)
{
    unsigned running, ended;
    count(set, &running, &ended);
    for (struct bg_proc *b = set->procs; b != NULL && ended >= set->max_running; b = b->next)
        if (!b->info.running) {
            forget(set, b);
            return;
        }
}

int box_bg_start(struct box_bg_set *set, struct box *box, const struct box_bg_opts *o,
                 struct box_bg_info *info, struct nsbox_err *err)
{
    struct box_bg_keeper *k = set->k;
    unsigned running, ended;
    pthread_mutex_lock(&k->lock);
    count(set, &running, &ended);
    unsigned seq = ++set->seq;
    pthread_mutex_unlock(&k->lock);
    if (running >= set->max_running)
        return nsbox_err_set(err, EAGAIN,
                             "this sandbox already runs %u background processes, the most it "
                             "may (the operator's --max-processes); end one with process_signal",
                             set->max_running);
    struct bg_proc *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    b->p.ctl = b->p.out = b->p.err = b->p.chan = b->p.pty = -1;
    b->set = set;
    fill_info(&b->info, seq, o);
    if (make_rings(b, set->ring_bytes, err) < 0 || spawn(box, o, &b->p, err) < 0) {
        free_proc(b);
        return -1;
    }
    pthread_mutex_lock(&k->lock);
    if (watch(k, b, err) < 0) {
        for (int i = 0; i < 3; i++)
            unwatch(k, b, i);
        pthread_mutex_unlock(&k->lock);
        free_proc(b);
        return -1;
    }
    trim(set);
    struct bg_proc **tail = &set->procs;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = b;
    snapshot(b, info);
    pthread_mutex_unlock(&k->lock);
    return 0;
}

int box_bg_list(struct box_bg_set *set, struct box_bg_info **out, size_t *n, struct nsbox_err *err)
{
    pthread_mutex_lock(&set->k->lock);
    size_t count_all = 0;
    for (struct bg_proc *b = set->procs; b != NULL; b = b->next)
        count_all++;
    *out = calloc(count_all ? count_all : 1, sizeof(**out));
    *n = 0;
    for (struct bg_proc *b = set->procs; *out != NULL && b != NULL; b = b->next)
        snapshot(b, &(*out)[(*n)++]);
    pthread_mutex_unlock(&set->k->lock);
    return *out == NULL ? nsbox_err_set(err, ENOMEM, "out of memory") : 0;
}

/* Reads one stream into c (lock held). */
static int read_stream(const struct nsbox_ring *r, bool running, size_t max, struct box_bg_chunk *c,
                       struct nsbox_err *err)
{
    c->data = malloc(max ? max : 1);
    if (c->data == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    c->len = nsbox_ring_read(r, &c->cursor, c->data, max, &c->dropped);
    c->eof = !running && c->cursor >= nsbox_ring_total(r);
    return 0;
}

int box_bg_logs(struct box_bg_set *set, const char *id, unsigned streams, size_t max_bytes,
                struct box_bg_chunk *out, struct box_bg_chunk *err_chunk, struct box_bg_info *info,
                struct nsbox_err *err)
{
    pthread_mutex_lock(&set->k->lock);
    struct bg_proc *b = find(set, id, err);
    int r = b == NULL ? -1 : 0;
    if (b != NULL) {
        uint64_t to = nsbox_ring_total(&b->ring[FD_OUT]), te = nsbox_ring_total(&b->ring[FD_ERR]);
        size_t out_max = max_bytes, err_max = max_bytes;
        if (streams == BOX_BG_BOTH)
            box_bg_split(max_bytes, to - (out->cursor < to ? out->cursor : to),
                         te - (err_chunk->cursor < te ? err_chunk->cursor : te), &out_max,
                         &err_max);
        if (streams & BOX_BG_STDOUT)
            r = read_stream(&b->ring[FD_OUT], b->info.running, out_max, out, err);
        if (r == 0 && (streams & BOX_BG_STDERR))
            r = read_stream(&b->ring[FD_ERR], b->info.running, err_max, err_chunk, err);
        if (info != NULL)
            snapshot(b, info);
    }
    pthread_mutex_unlock(&set->k->lock);
    return r;
}

int box_bg_signal(struct box_bg_set *set, const char *id, int sig, struct nsbox_err *err)
{
    pthread_mutex_lock(&set->k->lock);
    struct bg_proc *b = find(set, id, err);
    int r = -1;
    if (b != NULL && !b->info.running)
        nsbox_err_set(err, ESRCH, "background process %s has already ended", id);
    else if (b != NULL)
        r = box_proc_signal(&b->p, sig, err);
    pthread_mutex_unlock(&set->k->lock);
    return r;
}

int box_bg_wait(struct box_bg_set *set, const char *id, int timeout_ms,
                const struct nsbox_cancel *cancel, struct box_bg_info *info, struct nsbox_err *err)
{
    struct timespec end, now;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += timeout_ms / 1000;
    end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L)
        end.tv_sec++, end.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&set->k->lock);
    int r;
    for (;;) {
        struct bg_proc *b = find(set, id, err);
        if (b == NULL) {
            r = -1;
            break;
        }
        if (!b->info.running || timeout_ms <= 0) {
            snapshot(b, info);
            r = !b->info.running;
            break;
        }
        if (cancel != NULL && nsbox_cancel_fired(cancel)) {
            r = nsbox_err_set(err, ECANCELED, "cancelled");
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) {
            snapshot(b, info);
            r = 0;
            break;
        }
        /* A slice at a time: the cancel is an eventfd, not this cond. */
        struct timespec slice = now;
        slice.tv_nsec += 100000000L;
        if (slice.tv_nsec >= 1000000000L)
            slice.tv_sec++, slice.tv_nsec -= 1000000000L;
        if (slice.tv_sec > end.tv_sec ||
            (slice.tv_sec == end.tv_sec && slice.tv_nsec > end.tv_nsec))
            slice = end;
        pthread_cond_timedwait(&set->k->changed, &set->k->lock, &slice);
    }
    pthread_mutex_unlock(&set->k->lock);
    return r;
}
