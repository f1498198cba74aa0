/* Pause, resume and auto-pause in the server (pause.h). */
#include "pause.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../boxes/pause.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "preview/terminal.h"
#include "sandboxes.h"
#include "tools/ports.h"

/* CPU over a look above this many µs per ms of it (0.5% of one CPU) is
 * use: a dev server waiting for requests wakes far less. */
#define BUSY_US_PER_MS 5

struct mcp_autopause {
    struct mcp_server *cfg;
    unsigned idle_s, tick_ms;
    pthread_mutex_t lock; /* the sessions, and a look in progress */
    pthread_mutex_t wait_lock;
    pthread_cond_t wake;
    bool stop, usable;
    pthread_t thread;
    struct mcp_session **sessions;
    size_t n, cap;
};

const char *mcp_sandbox_state(const struct mcp_sandbox *m)
{
    return box_paused(&m->box) ? "paused" : "running";
}

/* What keeps m from being paused now besides a call (which box_pause
 * sees): an open terminal or connection.  0, or -1 with err. */
static int open_uses(struct mcp_session *s, struct mcp_sandbox *m, struct nsbox_err *err)
{
    size_t terms = mcp_terminals_of_sandbox(s->cfg->terminals, m);
    unsigned conns = mcp_ports_open_connections(m);
    if (terms > 0)
        return nsbox_err_set(err, EBUSY,
                             "sandbox %s has %zu terminal(s) open (terminal_open): not paused; "
                             "close them first",
                             m->id, terms);
    if (conns > 0)
        return nsbox_err_set(err, EBUSY,
                             "sandbox %s has %u connection(s) open to its exposed ports: not "
                             "paused; try again when they have closed",
                             m->id, conns);
    return 0;
}

int mcp_sandbox_pause(struct mcp_session *s, const char *id, struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_hold(s, id, err);
    if (m == NULL)
        return -1;
    int r = open_uses(s, m, err);
    if (r == 0)
        r = box_pause(&m->box, err);
    mcp_sandbox_unhold(s, m, false);
    return r;
}

int mcp_sandbox_resume(struct mcp_session *s, const char *id, struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_hold(s, id, err);
    if (m == NULL)
        return -1;
    int r = box_resume(&m->box, err);
    mcp_sandbox_unhold(s, m, true); /* a resume is a use: auto-pause waits anew */
    return r;
}

/* ---- auto-pause ---- */

/* Whether m is to be paused now; updates its idle record.  last_used_s
 * is its CLOCK_MONOTONIC second of last use. */
static bool due(struct mcp_autopause *ap, struct mcp_session *s, struct mcp_sandbox *m,
                time_t last_used_s, int64_t now)
{
    uint64_t cpu;
    struct nsbox_err ignored;

    if (box_cpu_usage(&m->box, &cpu) < 0)
        return false; /* what cannot be measured is never judged idle */
    if (!m->idle.known) {
        m->idle.known = true;
        m->idle.busy_ms = now;
    } else if (cpu - m->idle.cpu_us > (uint64_t)(now - m->idle.at_ms) * BUSY_US_PER_MS) {
        m->idle.busy_ms = now;
    }
    m->idle.cpu_us = cpu;
    m->idle.at_ms = now;
    if (__atomic_load_n(&m->box.users, __ATOMIC_SEQ_CST) > 0 || open_uses(s, m, &ignored) < 0)
        m->idle.busy_ms = now;
    int64_t last = (int64_t)last_used_s * 1000;
    if (m->idle.busy_ms > last)
        last = m->idle.busy_ms;
    return now - last >= (int64_t)ap->idle_s * 1000 && !box_paused(&m->box);
}

/* One look at s (ap->lock held). */
static void look(struct mcp_autopause *ap, struct mcp_session *s)
{
    size_t n = 0, max;

    pthread_mutex_lock(&s->lock);
    max = s->n_sandboxes + 1;
    struct mcp_sandbox **held = malloc(max * sizeof(*held));
    time_t *used = malloc(max * sizeof(*used));
    for (struct mcp_sandbox *m = s->sandboxes; m != NULL && held && used && n < max; m = m->next)
        if (!m->stopping && !m->one_shot && m->refs == 0) {
            m->refs++; /* a hold: a stop waits for this look */
            used[n] = m->last_used;
            held[n++] = m;
        }
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        struct mcp_sandbox *m = held[i];
        struct nsbox_err err;
        if (due(ap, s, m, used[i], nsbox_now_ms())) {
            if (box_pause(&m->box, &err) == 0)
                nsbox_info("sandbox %s idle for %u s: paused", m->id, ap->idle_s);
            else
                nsbox_debug("sandbox %s not paused: %s", m->id, err.msg);
        }
        mcp_sandbox_unhold(s, m, false);
    }
    free(held);
    free(used);
}

static void *autopause_main(void *arg)
{
    struct mcp_autopause *ap = arg;
    pthread_mutex_lock(&ap->wait_lock);
    while (!ap->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)ap->tick_ms * 1000000;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&ap->wake, &ap->wait_lock, &ts);
        if (ap->stop)
            break;
        pthread_mutex_unlock(&ap->wait_lock);
        pthread_mutex_lock(&ap->lock);
        for (size_t i = 0; i < ap->n; i++)
            look(ap, ap->sessions[i]);
        pthread_mutex_unlock(&ap->lock);
        pthread_mutex_lock(&ap->wait_lock);
    }
    pthread_mutex_unlock(&ap->wait_lock);
    return NULL;
}

int mcp_autopause_start(struct mcp_server *cfg, struct nsbox_err *err)
{
    char why[768];

    if (cfg->auto_pause_s == 0)
        return 0;
    if (box_pause_host(why, sizeof(why)) < 0) {
        /* Said, not pretended: the sandboxes keep running. */
        nsbox_warn("--auto-pause %u: sandboxes cannot be paused here, so none will be: %s",
                   cfg->auto_pause_s, why);
        return 0;
    }
    struct mcp_autopause *ap = calloc(1, sizeof(*ap));
    if (ap == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    ap->cfg = cfg;
    ap->idle_s = cfg->auto_pause_s;
    /* A look every quarter of the window, between 250 ms and 1 s. */
    ap->tick_ms = ap->idle_s * 250 < 1000 ? 250 : 1000;
    pthread_mutex_init(&ap->lock, NULL);
    pthread_mutex_init(&ap->wait_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ap->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&ap->thread, NULL, autopause_main, ap) != 0) {
        pthread_cond_destroy(&ap->wake);
        pthread_mutex_destroy(&ap->wait_lock);
        pthread_mutex_destroy(&ap->lock);
        free(ap);
        return nsbox_err_set(err, EAGAIN, "cannot start the auto-pause thread");
    }
    cfg->autopause = ap;
    return 0;
}

void mcp_autopause_stop(struct mcp_server *cfg)
{
    struct mcp_autopause *ap = cfg->autopause;
    if (ap == NULL)
        return;
    pthread_mutex_lock(&ap->wait_lock);
    ap->stop = true;
    pthread_cond_broadcast(&ap->wake);
    pthread_mutex_unlock(&ap->wait_lock);
    pthread_join(ap->thread, NULL);
    pthread_cond_destroy(&ap->wake);
    pthread_mutex_destroy(&ap->wait_lock);
    pthread_mutex_destroy(&ap->lock);
    free(ap->sessions);
    free(ap);
    cfg->autopause = NULL;
}

void mcp_autopause_watch(struct mcp_session *s)
{
    struct mcp_autopause *ap = s->cfg->autopause;
    if (ap == NULL)
        return;
    pthread_mutex_lock(&ap->lock);
    bool have = false;
    for (size_t i = 0; i < ap->n && !have; i++)
        have = ap->sessions[i] == s;
    if (!have && ap->n == ap->cap) {
        size_t cap = ap->cap ? ap->cap * 2 : 8;
        struct mcp_session **v = realloc(ap->sessions, cap * sizeof(*v));
        if (v != NULL) {
            ap->sessions = v;
            ap->cap = cap;
        }
    }
    if (!have && ap->n < ap->cap)
        ap->sessions[ap->n++] = s;
    pthread_mutex_unlock(&ap->lock);
}

void mcp_autopause_forget(struct mcp_session *s)
{
    struct mcp_autopause *ap = s->cfg->autopause;
    if (ap == NULL)
        return;
    pthread_mutex_lock(&ap->lock);
    for (size_t i = 0; i < ap->n; i++)
        if (ap->sessions[i] == s) {
            ap->sessions[i] = ap->sessions[--ap->n];
            break;
        }
    pthread_mutex_unlock(&ap->lock);
}
