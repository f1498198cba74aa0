/* HTTP sessions (see sessions.h). */
#include "sessions.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../../common/log.h"
#include "../pool.h"
#include "../protocol/dispatch.h"
#include "../sandboxes.h"
#include "streams.h"
#include "tenants.h"
#include "ticker.h"

/* A full table makes room by ending a session its tenant abandoned: one
 * nobody holds (no request, no open stream), with no call running and no
 * sandbox, unused for this long.  Clients that never DELETE their session
 * (the Inspector's CLI leaves one per call) would otherwise lock out new
 * ones until --session-timeout; a session with sandboxes is never taken,
 * nor another tenant's. */
#define EVICT_UNUSED_S 10

struct http_sessions {
    struct mcp_server *cfg;
    size_t max;
    unsigned timeout_s;
    struct http_ticker reaper; /* ends unused sessions (reap) */
    pthread_mutex_t lock;      /* sessions, n, stopping */
    struct http_session *sessions;
    size_t n;
    bool stopping;
};

static time_t now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec;
}

void http_session_touch(struct http_session *hs)
{
    hs->last_used = now_s();
}

void http_session_ref(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    hs->refs++;
    pthread_mutex_unlock(&hs->lock);
}

void http_session_unref(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    bool last = --hs->refs == 0;
    pthread_mutex_unlock(&hs->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&hs->s.lock);
    pthread_cond_destroy(&hs->s.idle);
    pthread_cond_destroy(&hs->s.answered);
    pthread_mutex_destroy(&hs->lock);
    pthread_cond_destroy(&hs->quiet);
    free(hs);
}

/* 128 bits from getrandom(2), as hex: not guessable, and never reused
 * while the server runs (checked against the table all the same); after
 * "NODE." with --node-id (mcp/node.h), which a router routes on. */
static bool random_id(const struct mcp_server *cfg, char out[MCP_ID_MAX + 1])
{
    unsigned char b[MCP_HEX_ID_LEN / 2];
    char hex[MCP_HEX_ID_LEN + 1];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return false;
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    mcp_id_compose(cfg->node_id, hex, out);
    return true;
}

bool http_same_session_id(const char *mine, const char *theirs)
{
    /* The length is no secret (every id of this server has the same). */
    size_t n = strlen(mine);
    return strnlen(theirs, n + 1) == n && CRYPTO_memcmp(mine, theirs, n) == 0;
}

struct http_session *http_session_get(struct http_sessions *t, const char *id)
{
    struct http_session *found = NULL;

    pthread_mutex_lock(&t->lock);
    for (struct http_session *hs = t->sessions; hs && id; hs = hs->next)
        if (http_same_session_id(hs->s.id, id))
            found = hs;
    if (found) {
        pthread_mutex_lock(&found->lock);
        found->refs++;
        found->last_used = now_s();
        pthread_mutex_unlock(&found->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

/* Whether id names a session in the table (t->lock held). */
static bool id_in_use(const struct http_sessions *t, const char *id)
{
    for (const struct http_session *hs = t->sessions; hs; hs = hs->next)
        if (http_same_session_id(hs->s.id, id))
            return true;
    return false;
}

/* Whether hs may be ended to make room for a session of tenant tn (see
 * EVICT_UNUSED_S; t->lock held). */
static bool evictable(struct http_session *hs, const struct http_tenant *tn, time_t now)
{
    pthread_mutex_lock(&hs->lock);
    bool unused = hs->tenant == tn && hs->refs == 1 && !hs->ending && !hs->legacy &&
                  now - hs->last_used >= EVICT_UNUSED_S;
    pthread_mutex_unlock(&hs->lock);
    if (!unused)
        return false;
    pthread_mutex_lock(&hs->s.lock);
    bool empty = hs->s.n_running == 0 && hs->s.n_sandboxes == 0;
    pthread_mutex_unlock(&hs->s.lock);
    return empty;
}

/* The least recently used session evictable for hs's tenant, with a
 * reference, or NULL (t->lock held). */
static struct http_session *victim(struct http_sessions *t, const struct http_session *hs)
{
    struct http_session *best = NULL;
    time_t now = now_s();
    for (struct http_session *v = t->sessions; v; v = v->next)
        if (evictable(v, hs->tenant, now) && (best == NULL || v->last_used < best->last_used))
            best = v;
    if (best != NULL)
        http_session_ref(best);
    return best;
}

/* Gives hs a fresh id and puts it in the table; the reason when not.  A
 * full table gives *evict (with a reference) when a session can make
 * room: the caller ends it and tries again. */
static const char *table_add(struct http_sessions *t, struct http_session *hs,
                             struct http_session **evict)
{
    const char *why = NULL;

    *evict = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->stopping)
        why = "the server is shutting down";
    else if (mcp_node_draining(t->cfg))
        why = "this node is draining (it is shutting down): initialize again, and the router "
              "sends the new session to another node";
    else if (t->n >= t->max && (*evict = victim(t, hs)) != NULL)
        why = "a session is being ended to make room";
    else if (t->n >= t->max)
        why = "too many sessions: end one (DELETE /mcp with its Mcp-Session-Id) or try later";
    while (why == NULL) {
        if (!random_id(t->cfg, hs->s.id))
            why = "getrandom failed";
        else if (!id_in_use(t, hs->s.id))
            break;
    }
    if (why == NULL) {
        hs->next = t->sessions;
        t->sessions = hs;
        t->n++;
    }
    pthread_mutex_unlock(&t->lock);
    return why;
}

static struct http_session *session_alloc(struct mcp_server *cfg, struct http_sessions *t)
{
    struct http_session *hs = calloc(1, sizeof(*hs));
    if (hs == NULL)
        return NULL;
    mcp_session_init(&hs->s, cfg);
    hs->s.send = http_streams_send;
    hs->s.send_related = http_streams_send_related;
    hs->s.send_request = http_streams_send_request;
    hs->s.transport = hs;
    hs->table = t;
    hs->refs = 1; /* the caller's */
    hs->last_used = now_s();
    pthread_mutex_init(&hs->lock, NULL);
    pthread_cond_init(&hs->quiet, NULL);
    return hs;
}

struct http_session *http_session_new_detached(struct mcp_server *cfg, const char **why)
{
    struct http_session *hs = session_alloc(cfg, NULL);
    *why = "out of memory";
    if (hs != NULL && !random_id(cfg, hs->s.id)) {
        *why = "getrandom failed";
        http_session_unref(hs);
        hs = NULL;
    }
    return hs;
}

struct http_session *http_session_new(struct http_sessions *t, struct http_tenant *tn,
                                      const char **why)
{
    struct http_session *hs = session_alloc(t->cfg, t);
    struct http_session *evict = NULL;

    *why = "out of memory";
    if (hs == NULL)
        return NULL;
    hs->refs = 2;              /* the table's and the caller's */
    http_session_bind(hs, tn); /* before its id is known to anyone */
    /* Twice at most: once more after ending an abandoned session. */
    for (int i = 0; i < 2 && (*why = table_add(t, hs, &evict)) != NULL && evict != NULL; i++) {
        nsbox_info(
            "MCP session %.8s... unused, no sandbox: ended to make room (--max-sessions %zu)",
            evict->s.id, t->max);
        http_session_end(evict);
        http_session_unref(evict);
        evict = NULL;
    }
    if (evict != NULL)
        http_session_unref(evict);
    if (*why != NULL) {
        hs->refs = 1;
        http_session_unref(hs);
        return NULL;
    }
    nsbox_info("MCP session %.8s... started", hs->s.id);
    return hs;
}

struct mcp_sandbox *http_sessions_detach(struct http_sessions *t, struct http_tenant *tn,
                                         struct http_session *except, const char *id, bool *busy)
{
    struct mcp_sandbox *m = NULL;
    /* Lock order: the table, then a session's (as session_expired). */
    pthread_mutex_lock(&t->lock);
    for (struct http_session *hs = t->sessions; hs != NULL && m == NULL && !*busy; hs = hs->next)
        if (hs != except && hs->tenant == tn)
            m = mcp_sandbox_detach(&hs->s, id, busy);
    pthread_mutex_unlock(&t->lock);
    return m;
}

bool http_session_enter(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    bool ok = !hs->ended;
    if (ok)
        hs->handlers++;
    pthread_mutex_unlock(&hs->lock);
    return ok;
}

void http_session_leave(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    if (--hs->handlers == 0)
        pthread_cond_broadcast(&hs->quiet);
    pthread_mutex_unlock(&hs->lock);
}

void http_session_end(struct http_session *hs)
{
    struct http_sessions *t = hs->table;
    bool mine = false;

    if (t == NULL) { /* detached: the first caller ends it */
        pthread_mutex_lock(&hs->lock);
        mine = !hs->ending;
        hs->ending = true;
        pthread_mutex_unlock(&hs->lock);
    } else {
        pthread_mutex_lock(&t->lock);
        for (struct http_session **p = &t->sessions; *p; p = &(*p)->next)
            if (*p == hs) {
                *p = hs->next;
                t->n--;
                mine = true;
                break;
            }
        pthread_mutex_unlock(&t->lock);
    }
    if (!mine)
        return; /* another thread is ending it */
    pthread_mutex_lock(&hs->lock);
    hs->ended = true;
    while (hs->handlers > 0)
        pthread_cond_wait(&hs->quiet, &hs->lock);
    pthread_mutex_unlock(&hs->lock);
    /* Responses of calls that finish meanwhile still reach their streams. */
    mcp_session_shutdown(&hs->s);
    pthread_mutex_lock(&hs->lock);
    http_streams_end(hs);
    pthread_mutex_unlock(&hs->lock);
    nsbox_info("MCP session %.8s... ended", hs->s.id);
    if (t != NULL)
        http_session_unref(hs); /* the table's reference */
}

/* Whether hs has been unused for the session timeout: nobody holds it but
 * the table (no request, no open stream) and no call runs (t->lock held). */
static bool session_expired(struct http_sessions *t, struct http_session *hs, time_t now)
{
    pthread_mutex_lock(&hs->lock);
    bool unused = hs->refs == 1 && now - hs->last_used >= (time_t)t->timeout_s;
    pthread_mutex_unlock(&hs->lock);
    if (!unused)
        return false;
    pthread_mutex_lock(&hs->s.lock);
    bool idle = hs->s.n_running == 0;
    pthread_mutex_unlock(&hs->s.lock);
    return idle;
}

/* Ends abandoned sessions: most clients never send DELETE (the SDK's
 * close() does not), and their sandboxes would otherwise run, and their
 * slots stay taken, until the server stops. */
static void reap(void *arg)
{
    struct http_sessions *t = arg;

    pthread_mutex_lock(&t->lock);
    struct http_session *hs = t->sessions;
    time_t now = now_s();
    while (!t->stopping && hs && !session_expired(t, hs, now))
        hs = hs->next;
    if (t->stopping || hs == NULL) {
        pthread_mutex_unlock(&t->lock);
        return;
    }
    http_session_ref(hs);
    pthread_mutex_unlock(&t->lock);
    nsbox_info("MCP session %.8s... unused for %u s: ending it", hs->s.id, t->timeout_s);
    http_session_end(hs);
    http_session_unref(hs);
}

struct http_sessions *http_sessions_new(struct mcp_server *cfg, size_t max, unsigned timeout_s)
{
    struct http_sessions *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->cfg = cfg;
    t->max = max;
    t->timeout_s = timeout_s;
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

void http_sessions_start_reaper(struct http_sessions *t)
{
    if (!http_ticker_start(&t->reaper, t->timeout_s < 5 ? 1 : 5, reap, t))
        nsbox_warn("no thread to end unused MCP sessions: they last until the server stops");
}

void http_sessions_stop(struct http_sessions *t)
{
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    pthread_mutex_unlock(&t->lock);
    http_ticker_stop(&t->reaper);
    for (;;) {
        pthread_mutex_lock(&t->lock);
        struct http_session *hs = t->sessions;
        if (hs)
            http_session_ref(hs);
        pthread_mutex_unlock(&t->lock);
        if (hs == NULL)
            break;
        http_session_end(hs);
        http_session_unref(hs);
    }
}

/* The calls (tools/call, resources/read) running in hs. */
static size_t running_in(struct http_session *hs)
{
    pthread_mutex_lock(&hs->s.lock);
    size_t n = hs->s.n_running;
    pthread_mutex_unlock(&hs->s.lock);
    return n;
}

void http_sessions_count(struct http_sessions *t, size_t *sessions, size_t *running)
{
    size_t n = 0, r = 0;
    pthread_mutex_lock(&t->lock);
    for (struct http_session *hs = t->sessions; hs; hs = hs->next, n++)
        r += running_in(hs);
    pthread_mutex_unlock(&t->lock);
    if (sessions)
        *sessions = n;
    if (running)
        *running = r;
}

size_t http_session_running(struct http_session *hs)
{
    return running_in(hs);
}

void http_sessions_free(struct http_sessions *t)
{
    pthread_mutex_destroy(&t->lock);
    free(t);
}
