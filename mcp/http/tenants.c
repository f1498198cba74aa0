/* Tenants: tokens, tenant sessions, caps, idle sandboxes (see tenants.h). */
#include "tenants.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../sandboxes.h"
#include "sessions.h"
#include "ticker.h"

struct http_tenants {
    struct mcp_server *cfg;
    size_t max_per_tenant; /* as configured; 0: none beyond the others */
    bool need_token;
    unsigned idle_s;
    /* Reconnect (http_tenants_reconnect): the legacy sessions' table, and
     * how long a sandbox whose session ended is kept unused; 0: off. */
    struct http_sessions *sessions;
    unsigned reconnect_idle_s;
    struct http_ticker reaper; /* stops idle sandboxes (stop_idle) */
    pthread_mutex_t lock;      /* stopping */
    bool stopping;
    size_t n;
    struct http_tenant tenants[];
};

static void sha256(const char *s, size_t n, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, s, n);
    SHA256_Final(out, &ctx);
}

/* A tenant's own repository segment for its commits (mcp/tools/commit.c),
 * when there are several: the name's lowercase letters and digits (a
 * repository path component allows no capitals), then the first 8 hex
 * digits of its SHA-256, so that "Team_A" and "team-a" stay apart. */
static void commit_scope(const char *name, char *buf, size_t size)
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    size_t k = 0;
    sha256(name, strlen(name), h);
    for (const char *p = name; *p && k < 24 && k + 1 < size; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
            buf[k++] = *p;
        else if (*p >= 'A' && *p <= 'Z')
            buf[k++] = (char)(*p - 'A' + 'a');
    snprintf(buf + k, size - k, "%st%02x%02x%02x%02x", k ? "-" : "", h[0], h[1], h[2], h[3]);
}

static void tenant_init(struct http_tenants *t, struct http_tenant *tn, const char *name,
                        size_t max)
{
    snprintf(tn->name, sizeof(tn->name), "%s", name);
    tn->table = t;
    tn->quota.max = max;
    pthread_mutex_init(&tn->quota.lock, NULL);
    pthread_mutex_init(&tn->lock, NULL);
}

struct http_tenants *http_tenants_new(struct mcp_server *cfg, const char *tokens, const char *from,
                                      size_t max_per_tenant, unsigned idle_s, struct nsbox_err *err)
{
    _cleanup_free_ struct http_token_entry *e = calloc(HTTP_MAX_TENANTS, sizeof(*e));
    int n = 0;

    if (e == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory"), NULL;
    if (tokens != NULL && *tokens != '\0' &&
        (n = http_tokens_parse(tokens, from, e, HTTP_MAX_TENANTS, err)) <= 0) {
        if (n == 0)
            nsbox_err_set(err, EINVAL, "%s holds no token", from);
        explicit_bzero(e, HTTP_MAX_TENANTS * sizeof(*e));
        return NULL;
    }
    size_t k = n > 0 ? (size_t)n : 1;
    struct http_tenants *t = calloc(1, sizeof(*t) + k * sizeof(t->tenants[0]));
    if (t == NULL) {
        explicit_bzero(e, HTTP_MAX_TENANTS * sizeof(*e));
        return nsbox_err_set(err, ENOMEM, "out of memory"), NULL;
    }
    *t = (struct http_tenants){.cfg = cfg,
                               .max_per_tenant = max_per_tenant,
                               .need_token = n > 0,
                               .idle_s = idle_s,
                               .n = k};
    pthread_mutex_init(&t->lock, NULL);
    for (size_t i = 0; i < k; i++) {
        /* Unconfigured, a tenant is bounded only as before: each session
         * by --max-sandboxes, all by --max-total-sandboxes (pool.c, whose
         * refusal names it; a tenant quota equal to it would be met first,
         * the spare not counting there, and name an option nobody set). */
        tenant_init(t, &t->tenants[i], n > 0 ? e[i].name : "default",
                    max_per_tenant ? max_per_tenant : SIZE_MAX);
        if (n > 0)
            sha256(e[i].token, strlen(e[i].token), t->tenants[i].token_hash);
        if (k > 1)
            commit_scope(t->tenants[i].name, t->tenants[i].commit_scope,
                         sizeof(t->tenants[i].commit_scope));
    }
    explicit_bzero(e, HTTP_MAX_TENANTS * sizeof(*e));
    return t;
}

bool http_tenants_need_token(const struct http_tenants *t)
{
    return t->need_token;
}

/* Every tenant's hash is compared, in constant time, whichever matches:
 * neither the token nor which tenant it is shows in the timing. */
struct http_tenant *http_tenants_find(struct http_tenants *t, const char *auth)
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    struct http_tenant *found = NULL;

    if (!t->need_token)
        return &t->tenants[0];
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    auth += 7;
    auth += strspn(auth, " ");
    sha256(auth, strlen(auth), h);
    for (size_t i = 0; i < t->n; i++)
        if (CRYPTO_memcmp(h, t->tenants[i].token_hash, sizeof(h)) == 0)
            found = &t->tenants[i];
    return found;
}

struct http_session *http_tenant_session(struct http_tenant *tn, const char **why)
{
    struct http_tenants *t = tn->table;
    struct http_session *hs = NULL;

    *why = "the server is shutting down";
    pthread_mutex_lock(&tn->lock);
    /* Read under tn->lock: http_tenants_stop sets it before it takes the
     * tenants' sessions, so none is made after that. */
    pthread_mutex_lock(&t->lock);
    bool stopping = t->stopping;
    pthread_mutex_unlock(&t->lock);
    if (!stopping && tn->session == NULL &&
        (tn->session = http_session_new_detached(t->cfg, why)) != NULL) {
        http_session_bind(tn->session, tn);
        /* Like any session's, or the tenant's whole cap when there is one. */
        tn->session->s.max_sandboxes = t->max_per_tenant;
        tn->session->stateless = true;
        tn->session->s.modern_only = true; /* no initialize, no legacy request */
        nsbox_info("MCP tenant %s: tenant session %.8s... started", tn->name, tn->session->s.id);
    }
    if ((hs = tn->session) != NULL)
        http_session_ref(hs);
    pthread_mutex_unlock(&tn->lock);
    return hs;
}

json_t *http_tenant_internal_id(struct http_tenant *tn, bool progress)
{
    char buf[48];
    pthread_mutex_lock(&tn->lock);
    uint64_t n = ++tn->next_id;
    pthread_mutex_unlock(&tn->lock);
    snprintf(buf, sizeof(buf), "nsbox-%s%llu", progress ? "p" : "r", (unsigned long long)n);
    return json_string(buf);
}

/* ---- reconnect ---- */

static struct http_session *existing_session(struct http_tenant *tn);

/* session.h's adopt: the sandbox id from the tenant session, else from
 * another legacy session of the same tenant. */
static struct mcp_sandbox *adopt(struct mcp_session *s, const char *id, bool *busy)
{
    struct http_session *hs = (struct http_session *)s->transport;
    struct http_tenant *tn = hs->tenant;
    struct mcp_sandbox *m = NULL;
    struct http_session *ts = existing_session(tn);

    if (ts != NULL && ts != hs)
        m = mcp_sandbox_detach(&ts->s, id, busy);
    if (ts != NULL)
        http_session_unref(ts);
    if (m == NULL && !*busy)
        m = http_sessions_detach(tn->table->sessions, tn, hs, id, busy);
    if (m != NULL) {
        m->idle_limit_s = 0; /* a session's again */
        nsbox_info("MCP session %.8s...: sandbox %s handed over (same tenant)", s->id, m->id);
    }
    return m;
}

/* session.h's hand_over: an ending legacy session's sandboxes go to its
 * tenant session, whose reaper stops them once unused reconnect_idle_s
 * (none made when the server stops: they are stopped with the session). */
static void hand_over(struct mcp_session *s)
{
    struct http_session *hs = (struct http_session *)s->transport;
    const char *why;
    struct http_session *ts = http_tenant_session(hs->tenant, &why);
    struct mcp_sandbox *m;
    size_t n = 0;

    if (ts == NULL || ts == hs) {
        if (ts != NULL)
            http_session_unref(ts);
        return;
    }
    while ((m = mcp_sandbox_detach_any(s)) != NULL) {
        m->idle_limit_s = hs->tenant->table->reconnect_idle_s;
        mcp_sandbox_attach(&ts->s, m);
        n++;
    }
    if (n > 0)
        nsbox_info("MCP session %.8s... ended: %zu sandboxes kept for its tenant (%u s unused)",
                   s->id, n, hs->tenant->table->reconnect_idle_s);
    http_session_unref(ts);
}

void http_tenants_reconnect(struct http_tenants *t, struct http_sessions *sessions, unsigned idle_s)
{
    t->sessions = sessions;
    t->reconnect_idle_s = idle_s;
}

void http_session_bind(struct http_session *hs, struct http_tenant *tn)
{
    hs->tenant = tn;
    hs->s.quota = tn ? &tn->quota : NULL;
    snprintf(hs->s.commit_scope, sizeof(hs->s.commit_scope), "%s", tn ? tn->commit_scope : "");
    if (tn != NULL && tn->table->reconnect_idle_s > 0 && tn->table->sessions != NULL) {
        hs->s.adopt = adopt;
        hs->s.hand_over = hand_over; /* the tenant session's own end: none to hand to */
    }
}

bool http_session_tenant_ok(const struct http_session *hs, const struct http_tenant *tn)
{
    return hs->tenant == tn;
}

/* The tenant session of tn with a reference, if it exists. */
static struct http_session *existing_session(struct http_tenant *tn)
{
    pthread_mutex_lock(&tn->lock);
    struct http_session *hs = tn->session;
    if (hs)
        http_session_ref(hs);
    pthread_mutex_unlock(&tn->lock);
    return hs;
}

struct http_session *http_tenants_session_by_id(struct http_tenants *t, const char *id)
{
    struct http_session *found = NULL;
    for (size_t i = 0; i < t->n && id != NULL; i++) {
        struct http_session *hs = existing_session(&t->tenants[i]);
        if (hs != NULL && found == NULL && http_same_session_id(hs->s.id, id))
            found = hs;
        else if (hs != NULL)
            http_session_unref(hs);
    }
    return found;
}

size_t http_tenants_running(struct http_tenants *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct http_session *hs = existing_session(&t->tenants[i]);
        if (hs == NULL)
            continue;
        n += http_session_running(hs);
        http_session_unref(hs);
    }
    return n;
}

static void stop_idle(void *arg)
{
    struct http_tenants *t = arg;
    pthread_mutex_lock(&t->lock);
    bool stopping = t->stopping; /* http_tenants_stop ends them all */
    pthread_mutex_unlock(&t->lock);
    if (stopping)
        return;
    for (size_t i = 0; i < t->n; i++) {
        struct http_session *hs = existing_session(&t->tenants[i]);
        if (hs == NULL)
            continue;
        mcp_sandboxes_stop_idle(&hs->s, t->idle_s);
        http_session_unref(hs);
    }
}

void http_tenants_start_reaper(struct http_tenants *t)
{
    unsigned shortest = t->reconnect_idle_s && t->reconnect_idle_s < t->idle_s ? t->reconnect_idle_s
                                                                               : t->idle_s;
    if (!http_ticker_start(&t->reaper, shortest < 10 ? 1 : 5, stop_idle, t))
        nsbox_warn("no thread to stop idle stateless sandboxes: they last until the server "
                   "stops");
}

void http_tenants_stop(struct http_tenants *t)
{
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    pthread_mutex_unlock(&t->lock);
    http_ticker_stop(&t->reaper);
    for (size_t i = 0; i < t->n; i++) {
        struct http_tenant *tn = &t->tenants[i];
        pthread_mutex_lock(&tn->lock);
        struct http_session *hs = tn->session;
        tn->session = NULL;
        pthread_mutex_unlock(&tn->lock);
        if (hs == NULL)
            continue;
        http_session_end(hs);
        http_session_unref(hs); /* the tenant's */
    }
}

void http_tenants_free(struct http_tenants *t)
{
    for (size_t i = 0; i < t->n; i++) {
        pthread_mutex_destroy(&t->tenants[i].lock);
        pthread_mutex_destroy(&t->tenants[i].quota.lock);
    }
    pthread_mutex_destroy(&t->lock);
    explicit_bzero(t->tenants, t->n * sizeof(t->tenants[0]));
    free(t);
}
