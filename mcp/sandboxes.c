/* A session's sandboxes: references, operations, stops (sandboxes.h). */
#include "sandboxes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../boxes/pause.h"
#include "../common/log.h"
#include "pause.h"
#include "pool.h"
#include "resources/watches.h"
#include "tools/ports.h"

static time_t now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec;
}

/* s->lock held. */
static struct mcp_sandbox *find(struct mcp_session *s, const char *id)
{
    for (struct mcp_sandbox *m = s->sandboxes; m != NULL && id != NULL; m = m->next)
        if (!m->stopping && strcmp(m->id, id) == 0)
            return m;
    return NULL;
}

static int no_sandbox(const char *id, struct nsbox_err *err)
{
    return nsbox_err_set(err, ENOENT, "no sandbox \"%.64s\" in this session (see sandbox_list)",
                         id ? id : "");
}

/* Unlinks m from s's list (s->lock held). */
static void unlink_from(struct mcp_session *s, struct mcp_sandbox *m)
{
    for (struct mcp_sandbox **p = &s->sandboxes; *p != NULL; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    m->next = NULL;
    s->n_sandboxes--;
}

struct mcp_sandbox *mcp_sandbox_detach(struct mcp_session *s, const char *id, bool *busy)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_sandbox *m = find(s, id);
    if (m != NULL && m->refs > 0) {
        *busy = true;
        m = NULL;
    } else if (m != NULL) {
        unlink_from(s, m);
    }
    pthread_mutex_unlock(&s->lock);
    return m;
}

struct mcp_sandbox *mcp_sandbox_detach_any(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_sandbox *m = s->sandboxes;
    while (m != NULL && (m->refs > 0 || m->stopping))
        m = m->next;
    if (m != NULL)
        unlink_from(s, m);
    pthread_mutex_unlock(&s->lock);
    return m;
}

void mcp_sandbox_attach(struct mcp_session *s, struct mcp_sandbox *m)
{
    pthread_mutex_lock(&s->lock);
    m->next = s->sandboxes;
    s->sandboxes = m;
    s->n_sandboxes++;
    m->last_used = now_s();
    pthread_mutex_unlock(&s->lock);
    mcp_autopause_watch(s);
}

struct mcp_sandbox *mcp_sandbox_hold(struct mcp_session *s, const char *id, struct nsbox_err *err)
{
    bool busy = false;
    pthread_mutex_lock(&s->lock);
    struct mcp_sandbox *m = find(s, id);
    if (m != NULL)
        m->refs++;
    pthread_mutex_unlock(&s->lock);
    /* Reconnect: another session of this tenant's, handed over now (it
     * follows whoever uses it; one call at a time either way). */
    if (m == NULL && id != NULL && s->adopt != NULL && (m = s->adopt(s, id, &busy)) != NULL) {
        pthread_mutex_lock(&s->lock);
        m->next = s->sandboxes;
        s->sandboxes = m;
        s->n_sandboxes++;
        m->refs++;
        pthread_mutex_unlock(&s->lock);
        mcp_autopause_watch(s);
    }
    if (m == NULL && busy)
        nsbox_err_set(err, EBUSY,
                      "sandbox \"%.64s\" is in use by another session of this client's tenant; "
                      "try again when that call has finished",
                      id);
    else if (m == NULL)
        no_sandbox(id, err);
    return m;
}

/* Transparent resume: every tool that uses a sandbox gets it here, so a
 * paused one is thawed before anything touches it (boxes/pause.h). */
struct mcp_sandbox *mcp_sandbox_get(struct mcp_session *s, const char *id, struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_hold(s, id, err);
    bool woke;
    if (m == NULL)
        return NULL;
    if (box_use_begin(&m->box, &woke, err) < 0) {
        nsbox_err_prefix(err, "sandbox \"%s\" is paused and could not be resumed", m->id);
        mcp_sandbox_unhold(s, m, false);
        return NULL;
    }
    if (woke)
        nsbox_debug("sandbox %s resumed for a call", m->id);
    return m;
}

/* A use marks it used now (auto-pause's and the idle reaper's clock); a
 * hold does not. */
static void release(struct mcp_session *s, struct mcp_sandbox *m, bool used)
{
    pthread_mutex_lock(&s->lock);
    if (used)
        m->last_used = now_s();
    if (--m->refs == 0)
        pthread_cond_broadcast(&s->released);
    pthread_mutex_unlock(&s->lock);
}

void mcp_sandbox_put(struct mcp_session *s, struct mcp_sandbox *m)
{
    box_use_end(&m->box);
    release(s, m, true);
}

void mcp_sandbox_unhold(struct mcp_session *s, struct mcp_sandbox *m, bool used)
{
    release(s, m, used);
}

int mcp_op_begin(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                 struct nsbox_err *err)
{
    pthread_mutex_lock(&m->exec_lock);
    pthread_mutex_lock(&s->lock);
    /* Checked and registered under the lock a stop takes to mark the
     * sandbox and fire the calls registered on it: either this call sees
     * the stop, or the stop sees this call. */
    bool stopping = m->stopping, cancelled = call->cancelled;
    if (!stopping && !cancelled)
        call->sandbox = m;
    pthread_mutex_unlock(&s->lock);
    if (!stopping && !cancelled)
        return 0;
    pthread_mutex_unlock(&m->exec_lock);
    return stopping ? nsbox_err_set(err, ESRCH, "sandbox \"%s\" was stopped", m->id)
                    : nsbox_err_set(err, ECANCELED, "cancelled");
}

void mcp_op_end(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m)
{
    m->box.touched = true; /* under exec_lock: its layer is no pure install now */
    pthread_mutex_lock(&s->lock);
    call->sandbox = NULL;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&m->exec_lock);
}

/* Takes a slot of q for a new kept sandbox; false when q is full. */
static bool quota_take(struct mcp_quota *q)
{
    if (q == NULL)
        return true;
    pthread_mutex_lock(&q->lock);
    bool ok = q->n < q->max;
    if (ok)
        q->n++;
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static void quota_give(struct mcp_quota *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    q->n--;
    pthread_mutex_unlock(&q->lock);
}

/* Reserves a slot for a kept sandbox: in the session's cap, then in the
 * cap it shares with its tenant's other sessions.  0, or -1 with err. */
static int reserve(struct mcp_session *s, struct nsbox_err *err)
{
    size_t cap = s->max_sandboxes ? s->max_sandboxes : s->cfg->max_sandboxes;
    pthread_mutex_lock(&s->lock);
    bool full = s->n_sandboxes >= cap;
    if (!full)
        s->n_sandboxes++;
    pthread_mutex_unlock(&s->lock);
    if (full)
        return nsbox_err_set(err, EAGAIN,
                             "this session already has %zu sandboxes (the limit); "
                             "stop one with sandbox_stop",
                             cap);
    if (quota_take(s->quota))
        return 0;
    pthread_mutex_lock(&s->lock);
    s->n_sandboxes--;
    pthread_mutex_unlock(&s->lock);
    return nsbox_err_set(err, EAGAIN,
                         "this client's tenant (its token) already has %zu sandboxes, the "
                         "per-tenant limit (--max-sandboxes-per-tenant); stop one with "
                         "sandbox_stop",
                         s->quota->max);
}

static void unreserve(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    s->n_sandboxes--;
    pthread_mutex_unlock(&s->lock);
    quota_give(s->quota);
}

struct mcp_sandbox *mcp_sandbox_new(struct mcp_session *s, const char *image,
                                    const struct mcp_limits *limits, char **env,
                                    const char *workdir, const char *workspace, bool one_shot,
                                    struct nsbox_err *err)
{
    return mcp_sandbox_new_nested(s, image, limits, env, workdir, workspace, one_shot, NULL, err);
}

struct mcp_sandbox *mcp_sandbox_new_nested(struct mcp_session *s, const char *image,
                                           const struct mcp_limits *limits, char **env,
                                           const char *workdir, const char *workspace,
                                           bool one_shot, const struct mcp_nested *nested,
                                           struct nsbox_err *err)
{
    /* A draining node answers for the sandboxes it has, and makes none:
     * the client's next try goes to another node. */
    if (mcp_node_draining(s->cfg)) {
        nsbox_err_set(err, ESHUTDOWN, MCP_NODE_DRAINING_MSG);
        return NULL;
    }
    /* One-shot sandboxes are bounded by the calls running at once; the
     * caps are for the ones a session keeps. */
    if (!one_shot && reserve(s, err) < 0)
        return NULL;
    struct mcp_sandbox *m = mcp_sandbox_build(s->cfg, image, limits, env, workdir, workspace,
                                              one_shot, nested, err);
    if (m == NULL && !one_shot)
        unreserve(s);
    if (m != NULL && !one_shot) {
        pthread_mutex_lock(&s->lock);
        m->refs = 1; /* the caller's: a use, ended by mcp_sandbox_put */
        __atomic_add_fetch(&m->box.users, 1, __ATOMIC_SEQ_CST);
        m->last_used = now_s();
        m->next = s->sandboxes;
        s->sandboxes = m;
        pthread_mutex_unlock(&s->lock);
        mcp_autopause_watch(s);
    }
    return m;
}

/* s->lock held: m leaves the list (its slot stays counted until freed) and
 * every call working in it is cancelled. */
static void mark_stopping(struct mcp_session *s, struct mcp_sandbox *m)
{
    m->stopping = true;
    for (struct mcp_sandbox **p = &s->sandboxes; *p != NULL; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].id != NULL && s->calls[i].sandbox == m)
            nsbox_cancel_fire(&s->calls[i].cancel);
}

/* m marked stopping: waits for the calls holding it, then frees it. */
static void finish_stop(struct mcp_session *s, struct mcp_sandbox *m)
{
    pthread_mutex_lock(&s->lock);
    while (m->refs > 0)
        pthread_cond_wait(&s->released, &s->lock);
    pthread_mutex_unlock(&s->lock);
    /* Paused: thawed first, so that what ends its services finds it
     * running (a frozen v1 task would not even take its SIGKILL). */
    struct nsbox_err ignored;
    if (box_paused(&m->box) && box_resume(&m->box, &ignored) < 0)
        nsbox_warn("sandbox %s: %s", m->id, ignored.msg);
    box_bg_set_free(m->bg); /* its background processes end with it */
    m->bg = NULL;
    mcp_watches_sandbox_gone(m);
    mcp_ports_sandbox_gone(m); /* its URLs and listeners, before the box goes */
    mcp_sandbox_free(s->cfg, m);
    unreserve(s); /* after the free: the slot counts until it is gone */
}

int mcp_sandbox_stop(struct mcp_session *s, const char *id, struct nsbox_err *err)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_sandbox *m = find(s, id);
    if (m != NULL)
        mark_stopping(s, m);
    pthread_mutex_unlock(&s->lock);
    if (m == NULL)
        return no_sandbox(id, err);
    finish_stop(s, m);
    return 0;
}

void mcp_sandboxes_stop_all(struct mcp_session *s)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        struct mcp_sandbox *m = s->sandboxes;
        if (m != NULL)
            mark_stopping(s, m);
        pthread_mutex_unlock(&s->lock);
        if (m == NULL)
            return;
        finish_stop(s, m);
    }
}

size_t mcp_sandboxes_stop_idle(struct mcp_session *s, unsigned idle_s)
{
    size_t n = 0;
    for (;;) {
        time_t now = now_s();
        pthread_mutex_lock(&s->lock);
        struct mcp_sandbox *m = s->sandboxes;
        while (m != NULL &&
               (m->refs > 0 ||
                now - m->last_used < (time_t)(m->idle_limit_s ? m->idle_limit_s : idle_s)))
            m = m->next;
        if (m != NULL)
            mark_stopping(s, m);
        pthread_mutex_unlock(&s->lock);
        if (m == NULL)
            return n;
        nsbox_info("sandbox %s unused for %u s: stopping it", m->id,
                   m->idle_limit_s ? m->idle_limit_s : idle_s);
        finish_stop(s, m);
        n++;
    }
}
