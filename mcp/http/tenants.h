/* Tenants of `nsbox serve --http`: who a bearer token is, and where a
 * client without a session keeps its sandboxes.
 *
 * The table.  Every token of --token-file (one per line, see reqmeta.h)
 * is a tenant; with a single token, or none (a loopback server without
 * one), there is one tenant.  The core (core.c) resolves the bearer token
 * of every request to its tenant (http_tenants_find: constant time in
 * the token) and hands it to the route in http_request.tenant.
 *
 * Isolation.  A legacy session (initialize, Streamable HTTP or the legacy
 * SSE transport) is bound to the tenant whose token opened it
 * (http_session_bind); a request with another tenant's token is answered
 * as if the session did not exist (http_session_tenant_ok).  A stateless
 * (2026-07-28) request is served in its tenant's *tenant session*: one
 * struct http_session per tenant, made on first use, in no session table
 * (no Mcp-Session-Id reaches it; its s.id is internal, 128 random bits),
 * ended only by http_tenants_stop.  Sandboxes are found through the
 * session that made them, so one tenant never reaches another's.
 *
 * Caps.  A tenant's sandboxes (its tenant session's and those of all its
 * legacy sessions) count against one struct mcp_quota (session.h) of
 * --max-sandboxes-per-tenant, checked by mcp_sandbox_new under the
 * quota's lock; the tenant session's own cap is the same number.  Without
 * that option nothing changes for legacy sessions (each has
 * --max-sandboxes, all together --max-total-sandboxes) and the tenant
 * session is capped like one session (--max-sandboxes).
 *
 * Idle sandboxes.  Nobody ends a stateless client's "session", so a
 * thread (http_tenants_start_reaper) stops the tenant sessions' sandboxes
 * that no call used for --stateless-idle-timeout seconds.
 *
 * Lock order: tenant->lock, then the session's locks. */
#ifndef NSBOX_MCP_HTTP_TENANTS_H
#define NSBOX_MCP_HTTP_TENANTS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../common/err.h"
#include "../server.h"
#include "../session.h"
#include "reqmeta.h"

struct http_session;
struct http_sessions;
struct http_tenants;

struct http_tenant {
    char name[HTTP_TENANT_NAME_MAX + 1];
    unsigned char token_hash[32]; /* SHA-256 of the token */
    char commit_scope[48];        /* several tenants: "NAME-HEX8" (tenants.c), else "" */
    struct http_tenants *table;
    struct mcp_quota quota;       /* kept sandboxes of all its sessions */
    pthread_mutex_t lock;         /* session, next_id */
    struct http_session *session; /* the tenant session, or NULL (not yet) */
    uint64_t next_id;             /* for http_tenant_internal_id */
};

/* The tenants of tokens (a token file's text, or one token; NULL or
 * empty: no token, one tenant for everybody), from naming where they came
 * from; each may keep max_per_tenant sandboxes (0: see "Caps"), and its tenant session's
 * sandboxes stop after idle_s unused.  NULL with err set. */
struct http_tenants *http_tenants_new(struct mcp_server *cfg, const char *tokens, const char *from,
                                      size_t max_per_tenant, unsigned idle_s,
                                      struct nsbox_err *err);

/* Whether requests must carry a bearer token. */
bool http_tenants_need_token(const struct http_tenants *t);

/* The tenant an Authorization header value (may be NULL) names, or NULL
 * when it names none (401). */
struct http_tenant *http_tenants_find(struct http_tenants *t, const char *authorization);

/* The tenant session of tn, made now if need be, with a reference for the
 * caller (http_session_unref); NULL with *why (static) when out of memory
 * or the server is stopping. */
struct http_session *http_tenant_session(struct http_tenant *tn, const char **why);

/* The tenant session whose (internal) s.id is id, with a reference for
 * the caller, or NULL: for what names a session by its id without a
 * request of the tenant at hand (a file URL's owner, files.c). */
struct http_session *http_tenants_session_by_id(struct http_tenants *t, const char *id);

/* A request id (or progress token, progress true) unique in tn's tenant
 * session: what a stateless request is handled under (new reference). */
json_t *http_tenant_internal_id(struct http_tenant *tn, bool progress);

/* Binds a new legacy session to tn (may be NULL: none), before its first
 * request: later requests must come with tn's token, and its sandboxes
 * count against tn's cap. */
void http_session_bind(struct http_session *hs, struct http_tenant *tn);

/* Whether a request of tenant tn may use hs (a session it opened). */
bool http_session_tenant_ok(const struct http_session *hs, const struct http_tenant *tn);

/* Reconnect (serve --reconnect-idle S; 0: off), set before any session:
 * a legacy session's kept sandboxes outlive it, handed to its tenant's
 * session when it ends and stopped there once unused S seconds; and every
 * session of a tenant (legacy or stateless) reaches any sandbox of that
 * tenant by id: the sandbox is handed over to the session that asks
 * (sessions.h's table, the tenant session), when no call of another holds
 * it (else "in use": EBUSY).  Sandboxes never cross tenants. */
void http_tenants_reconnect(struct http_tenants *t, struct http_sessions *sessions,
                            unsigned idle_s);

/* Starts the thread that stops idle sandboxes of tenant sessions. */
void http_tenants_start_reaper(struct http_tenants *t);

/* The calls running in the tenant sessions now. */
size_t http_tenants_running(struct http_tenants *t);

/* Stops the reaper, then ends every tenant session (calls cancelled,
 * sandboxes stopped, streams finished); later requests get none. */
void http_tenants_stop(struct http_tenants *t);

/* Frees t, stopped. */
void http_tenants_free(struct http_tenants *t);

#endif
