/* The splice relay (see relay.h).
 *
 * Edge-triggered epoll on both sockets of each connection; any event on
 * either pumps both directions until neither moves a byte: socket ->
 * pipe while the pipe has room, pipe -> socket while it holds bytes.  A
 * pipe full stops the reads of its source until its destination takes
 * bytes (its EPOLLOUT edge), so a connection never holds more than its two
 * pipes.  Every change to the connection list happens under r->lock; a
 * connection closed by another thread (relay_close_tag) is only unlinked
 * and freed by the relay's thread after a batch of events, so an event
 * fetched before the close never points to freed memory. */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SPLICE_CHUNK (1u << 20)

struct conn {
    struct conn *next, *prev;
    int fd[2];        /* a, b */
    int pipe[2][2];   /* direction d (0: a->b, 1: b->a): its read, write end */
    size_t inpipe[2]; /* bytes in direction d's pipe */
    size_t cap[2];    /* its size */
    bool eof[2];      /* direction d's source said EOF */
    bool shut[2];     /* direction d's destination was shut for writing */
    bool dead;
    uint64_t tag;
    time_t last; /* monotonic seconds of the last byte moved */
};

struct relay {
    struct relay_opts o;
    int ep, wake;
    pthread_t thread;
    pthread_mutex_t lock;
    struct conn *live; /* list */
    struct conn *dead; /* closed, to be freed by the thread (next) */
    bool stopping;
    time_t last_sweep;
    struct relay_stats st;
};

static time_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static void close_if(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Closes c's sockets and pipes, unlinks it from live onto dead.  Under the
 * lock. */
static void kill_conn(struct relay *r, struct conn *c, bool idle, bool notify)
{
    if (c->dead)
        return;
    c->dead = true;
    for (int i = 0; i < 2; i++) {
        if (c->fd[i] >= 0)
            epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd[i], NULL);
        close_if(&c->fd[i]);
        close_if(&c->pipe[i][0]);
        close_if(&c->pipe[i][1]);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        r->live = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = NULL;
    c->next = r->dead;
    r->dead = c;
    r->st.closed++;
    r->st.active--;
    if (idle)
        r->st.idle_closed++;
    if (notify && r->o.on_close)
        r->o.on_close(r->o.ctx, c->tag);
}

/* Moves what direction d can; -1 when the connection failed. */
static int pump_dir(struct relay *r, struct conn *c, int d)
{
    int src = c->fd[d], dst = c->fd[1 - d];
    for (;;) {
        bool moved = false;
        if (!c->eof[d] && c->inpipe[d] < c->cap[d]) {
            size_t want = c->cap[d] - c->inpipe[d];
            ssize_t n = splice(src, NULL, c->pipe[d][1], NULL,
                               want < SPLICE_CHUNK ? want : SPLICE_CHUNK,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                c->inpipe[d] += (size_t)n;
                moved = true;
            } else if (n == 0) {
                c->eof[d] = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        if (c->inpipe[d] > 0) {
            size_t want = c->inpipe[d];
            ssize_t n = splice(c->pipe[d][0], NULL, dst, NULL,
                               want < SPLICE_CHUNK ? want : SPLICE_CHUNK,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                c->inpipe[d] -= (size_t)n;
                if (d == 0)
                    r->st.bytes_ab += (uint64_t)n;
                else
                    r->st.bytes_ba += (uint64_t)n;
                moved = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                return -1;
            }
        }
        if (c->eof[d] && c->inpipe[d] == 0 && !c->shut[d]) {
            shutdown(dst, SHUT_WR);
            c->shut[d] = true;
        }
        if (!moved)
            return 0;
        c->last = mono_s();
    }
}

static void pump(struct relay *r, struct conn *c)
{
    if (c->dead)
        return;
    if (pump_dir(r, c, 0) < 0 || pump_dir(r, c, 1) < 0 || (c->shut[0] && c->shut[1]))
        kill_conn(r, c, false, true);
}

static void free_dead(struct relay *r)
{
    while (r->dead) {
        struct conn *c = r->dead;
        r->dead = c->next;
        free(c);
    }
}

static void sweep_idle(struct relay *r)
{
    time_t now = mono_s();
    if (r->o.idle_s == 0 || now == r->last_sweep)
        return;
    r->last_sweep = now;
    for (struct conn *c = r->live, *next; c != NULL; c = next) {
        next = c->next;
        if (now - c->last >= (time_t)r->o.idle_s)
            kill_conn(r, c, true, true);
    }
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    struct epoll_event ev[64];

    for (;;) {
        int n = epoll_wait(r->ep, ev, 64, r->o.idle_s ? 1000 : -1);
        pthread_mutex_lock(&r->lock);
        if (r->stopping) {
            pthread_mutex_unlock(&r->lock);
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == NULL) {
                uint64_t v;
                if (read(r->wake, &v, sizeof(v)) < 0) {
                    /* nothing to read: another wake took it */
                }
                continue;
            }
            pump(r, ev[i].data.ptr);
        }
        sweep_idle(r);
        free_dead(r);
        pthread_mutex_unlock(&r->lock);
    }
}

static void poke(struct relay *r)
{
    uint64_t one = 1;
    if (write(r->wake, &one, sizeof(one)) < 0) {
        /* the counter is full: the thread wakes anyway */
    }
}

struct relay *relay_start(const struct relay_opts *o, struct nsbox_err *err)
{
    struct relay *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    r->o = *o;
    if (r->o.max_conns == 0)
        r->o.max_conns = 1024;
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (r->ep < 0 || r->wake < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, r->wake, &ev) < 0) {
        nsbox_err_sys(err, "relay: epoll");
        goto fail;
    }
    pthread_mutex_init(&r->lock, NULL);
    int e = pthread_create(&r->thread, NULL, relay_main, r);
    if (e != 0) {
        pthread_mutex_destroy(&r->lock);
        nsbox_err_set(err, e, "relay: cannot start a thread: %s", strerror(e));
        goto fail;
    }
    return r;
fail:
    if (r->ep >= 0)
        close(r->ep);
    if (r->wake >= 0)
        close(r->wake);
    free(r);
    return NULL;
}

static int make_pipe(struct conn *c, int d, size_t size)
{
    if (pipe2(c->pipe[d], O_NONBLOCK | O_CLOEXEC) < 0)
        return -1;
    if (size)
        fcntl(c->pipe[d][1], F_SETPIPE_SZ, (int)size); /* best effort: rootless caps it */
    int got = fcntl(c->pipe[d][1], F_GETPIPE_SZ);
    c->cap[d] = got > 0 ? (size_t)got : 65536;
    return 0;
}

int relay_add(struct relay *r, int a, int b, uint64_t tag, struct nsbox_err *err)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(a), close(b);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    c->fd[0] = a, c->fd[1] = b;
    c->pipe[0][0] = c->pipe[0][1] = c->pipe[1][0] = c->pipe[1][1] = -1;
    c->tag = tag;
    c->last = mono_s();
    fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
    fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);

    pthread_mutex_lock(&r->lock);
    if (r->st.active >= r->o.max_conns || r->stopping) {
        pthread_mutex_unlock(&r->lock);
        nsbox_err_set(err, EAGAIN, "relay: %u connections already", r->o.max_conns);
        goto fail;
    }
    if (make_pipe(c, 0, r->o.pipe_size) < 0 || make_pipe(c, 1, r->o.pipe_size) < 0) {
        pthread_mutex_unlock(&r->lock);
        nsbox_err_sys(err, "relay: pipe");
        goto fail;
    }
    c->next = r->live;
    if (r->live)
        r->live->prev = c;
    r->live = c;
    r->st.added++;
    r->st.active++;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (epoll_ctl(r->ep, EPOLL_CTL_ADD, a, &ev) < 0 ||
        epoll_ctl(r->ep, EPOLL_CTL_ADD, b, &ev) < 0) {
        int e = errno;
        kill_conn(r, c, false, false); /* a failed add: no on_close */
        pthread_mutex_unlock(&r->lock);
        poke(r);
        return nsbox_err_set(err, e, "relay: epoll_ctl: %s", strerror(e));
    }
    pthread_mutex_unlock(&r->lock);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        close_if(&c->pipe[i][0]);
        close_if(&c->pipe[i][1]);
    }
    close(a), close(b);
    free(c);
    return -1;
}

void relay_close_tag(struct relay *r, uint64_t tag)
{
    pthread_mutex_lock(&r->lock);
    for (struct conn *c = r->live, *next; c != NULL; c = next) {
        next = c->next;
        if (c->tag == tag)
            kill_conn(r, c, false, true);
    }
    pthread_mutex_unlock(&r->lock);
    poke(r); /* the thread frees them */
}

size_t relay_count(struct relay *r, uint64_t tag)
{
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    for (struct conn *c = r->live; c != NULL; c = c->next)
        n += c->tag == tag;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void relay_get_stats(struct relay *r, struct relay_stats *s)
{
    pthread_mutex_lock(&r->lock);
    *s = r->st;
    pthread_mutex_unlock(&r->lock);
}

void relay_stop(struct relay *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    while (r->live)
        kill_conn(r, r->live, false, true);
    pthread_mutex_unlock(&r->lock);
    poke(r);
    pthread_join(r->thread, NULL);
    free_dead(r);
    pthread_mutex_destroy(&r->lock);
    close(r->ep);
    close(r->wake);
    free(r);
}
