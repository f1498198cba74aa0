/* HTTP sessions: one struct mcp_session per session id (Mcp-Session-Id in
 * Streamable HTTP, ?sessionId= in the legacy SSE transport), so sandboxes
 * stay with the client that made them.  The table hands out ids (128
 * random bits), finds sessions by id in constant time, counts references,
 * ends sessions once (their calls cancelled, their sandboxes stopped,
 * their streams finished) and ends those left unused (the reaper).  No
 * MHD here: an endpoint looks the session up and attaches its streams
 * (streams.h).
 *
 * Lifetimes.  A session is reference counted: the table holds one
 * reference, each request using it one, each stream one.  Lock order:
 * the table's lock, then hs->lock; nothing calls into mcp_session_*()
 * with either held. */
#ifndef NSBOX_MCP_HTTP_SESSIONS_H
#define NSBOX_MCP_HTTP_SESSIONS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../server.h"
#include "../session.h"

struct http_stream;
struct http_sessions;

struct http_session {
    struct mcp_session s; /* s.transport points here; s.id is the session id */
    struct http_sessions *table;
    pthread_mutex_t lock;        /* everything below, and the streams' state */
    pthread_cond_t quiet;        /* handlers went down to 0 */
    struct http_stream *streams; /* open streams, newest first (streams.c) */
    bool has_get;                /* one of them is a GET stream */
    int refs;
    int handlers;                     /* threads inside mcp_session_handle() */
    time_t last_used;                 /* CLOCK_MONOTONIC seconds: last request or stream end */
    unsigned long long sse_event_ids; /* SSE event ids handed out (streams.c) */
    /* Opened by GET /sse (sse_legacy.h): reached through /messages only,
     * by requests of its tenant. */
    bool legacy;
    bool ended;
    bool ending;                /* http_session_end has begun (detached ones) */
    struct http_tenant *tenant; /* whose token opened it (tenants.h), or NULL */
    bool stateless;             /* a tenant session: requests of many clients */
    struct http_session *next;  /* in the table */
};

/* An empty table for sessions of cfg (which must outlive it): at most max
 * sessions, each ended after timeout_s unused.  NULL when out of memory. */
struct http_sessions *http_sessions_new(struct mcp_server *cfg, size_t max, unsigned timeout_s);

/* Starts the thread that ends unused sessions (warns when it cannot). */
void http_sessions_start_reaper(struct http_sessions *t);

/* Refuses new sessions, stops the reaper and ends every session. */
void http_sessions_stop(struct http_sessions *t);

/* How many sessions t holds and how many calls run in them (either may
 * be NULL). */
void http_sessions_count(struct http_sessions *t, size_t *sessions, size_t *running);

/* The calls (tools/call, resources/read) running in hs now. */
size_t http_session_running(struct http_session *hs);

/* Frees t, stopped and with no thread left using it. */
void http_sessions_free(struct http_sessions *t);

/* A new session of tenant tn (NULL: none) in the table, with a reference
 * for the caller; NULL with *why set (a static message) when the table is
 * full or stopping.  A full table first ends the least recently used
 * session of the same tenant that nobody uses and that has no call and no
 * sandbox, unused for 10 s (sessions.c, EVICT_UNUSED_S). */
struct http_tenant;
struct http_session *http_session_new(struct http_sessions *t, struct http_tenant *tn,
                                      const char **why);

/* A session in no table (table NULL; no id reaches it, no reaper ends
 * it): a tenant session (tenants.h), with the caller's reference.  NULL
 * with *why set when out of memory. */
struct http_session *http_session_new_detached(struct mcp_server *cfg, const char **why);

/* The session named id (may be NULL), with a reference for the caller and
 * marked used now; or NULL. */
struct http_session *http_session_get(struct http_sessions *t, const char *id);

/* Whether theirs (a client's) is the session id mine, compared in
 * constant time: a session id is the only secret a client without a token
 * holds.  An id with another node's prefix is simply not mine. */
bool http_same_session_id(const char *mine, const char *theirs);

/* Takes and drops a reference; the last one frees hs. */
void http_session_ref(struct http_session *hs);
void http_session_unref(struct http_session *hs);

/* Counts a thread into mcp_session_handle(); false once hs ended.  Every
 * true is paired with http_session_leave. */
bool http_session_enter(struct http_session *hs);
void http_session_leave(struct http_session *hs);

/* Reconnect (tenants.h): the kept sandbox id taken out of whichever
 * session of tn in t (but except) has it and no call holds it; NULL when
 * none has it, or with *busy when a call of that session holds it. */
struct mcp_sandbox;
struct mcp_sandbox *http_sessions_detach(struct http_sessions *t, struct http_tenant *tn,
                                         struct http_session *except, const char *id, bool *busy);

/* Ends hs, once (later calls return at once): out of the table (later
 * requests get 404), no new messages in, running calls cancelled and
 * waited for, sandboxes stopped, then every open stream finished. */
void http_session_end(struct http_session *hs);

/* Marks hs used now (hs->lock held). */
void http_session_touch(struct http_session *hs);

#endif
