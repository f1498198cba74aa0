/* A session: one client (over stdio the process's, over HTTP one per
 * Mcp-Session-Id) and what it holds: its protocol state, its sandboxes
 * (sandboxes.h), the slots of its running calls (struct mcp_call; what a
 * call does with its slot is call.h), its tasks (tasks/tasks.h) and what
 * its results linked (resources/).  Every field that changes after the
 * first request changes under lock.
 *
 * Here are the records and the two functions that need nothing but them;
 * a message's way in and the session's end are the protocol's
 * (protocol/dispatch.h). */
#ifndef NSBOX_MCP_SESSION_H
#define NSBOX_MCP_SESSION_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/cancel.h"
#include "node.h"

#define MCP_MAX_CALLS 64

struct mcp_server;      /* server.h */
struct mcp_sandbox;     /* sandbox.h */
struct mcp_task;        /* tasks/tasks.h */
struct mcp_reported;    /* resources/listing.c */
struct mcp_queued_call; /* protocol/tools_call.c */
struct mcp_ask;         /* ask.c */

/* mcp_call.log_level of a legacy call: the session's logging/setLevel. */
#define MCP_LOG_SESSION (-2)

/* A tools/call in progress (or an open subscriptions/listen, or a
 * resources/read), for notifications/cancelled: a slot of its session's
 * calls, claimed and released through call.h. */
struct mcp_call {
    json_t *id;                  /* the request id; NULL: a free slot */
    json_t *progress_token;      /* _meta.progressToken, or NULL */
    struct mcp_sandbox *sandbox; /* the sandbox an operation of it runs in */
    struct nsbox_cancel cancel;  /* every exec of the call takes it */
    bool cancelled;
    bool taskable;         /* it may run as a task: progress is watched */
    struct mcp_task *task; /* the task it runs as, or NULL */
    /* The lowest level of notifications/message for this call (an index
     * into the syslog levels): a modern request's _meta logLevel, -1 for
     * none (a modern request without one), MCP_LOG_SESSION for a legacy
     * call. */
    int log_level;
    bool listen;              /* a subscriptions/listen, not a call: no thread, no cancel fd */
    bool answered;            /* its response is on its way: the id is the client's again */
    int64_t last_progress_ms; /* CLOCK_MONOTONIC of its last notifications/progress, or 0 */
    bool progress_sending;    /* a notifications/progress is being written (tasks/store.c) */
    bool modern; /* a 2026-07-28 request: no session to ask its client through (ask.h) */
};

/* A cap shared by several sessions (an HTTP tenant's: mcp/http/tenants.h):
 * the kept sandboxes of all of them together. */
struct mcp_quota {
    pthread_mutex_t lock;
    size_t n, max;
};

struct mcp_session;
typedef void (*mcp_send_fn)(struct mcp_session *s, json_t *msg);

struct mcp_session {
    struct mcp_server *cfg;
    char id[MCP_ID_MAX + 1]; /* HTTP: the Mcp-Session-Id ("NODE.<hex>", node.h); stdio: "" */

    /* Transport: how messages reach this session's client. */
    mcp_send_fn send;
    /* Optional: sends msg, a notification that belongs to the request
     * request_id (notifications/message of a call, the acknowledgment of a
     * subscriptions/listen, which carries request_id in its _meta
     * io.modelcontextprotocol/subscriptionId), where that request's
     * response goes (HTTP: on its own stream).  NULL: log messages go
     * through send, and subscriptions/listen is an unknown method. */
    void (*send_related)(struct mcp_session *s, json_t *request_id, json_t *msg);
    /* Optional: sends msg, a request of the server's own (ask.h), where
     * the client reads what belongs to the call request_id (HTTP: that
     * call's SSE stream, else the session's GET stream).  Returns false
     * when no stream can carry it.  NULL: through send (stdio). */
    bool (*send_request)(struct mcp_session *s, json_t *request_id, json_t *msg);
    void *transport;
    /* Serves 2026-07-28 requests only (HTTP's sessionless tenant
     * sessions): a request without the per-request _meta is malformed
     * (-32602), initialize is an unknown method.  Stdio serves both. */
    bool modern_only;

    /* HTTP with several tenants: the tenant's own segment below
     * localhost/nsbox-commit/ (mcp/tools/commit.c: its commits are its
     * own); "" otherwise (stdio, one tenant).  Set before the first
     * request. */
    char commit_scope[48];

    pthread_mutex_t lock;
    bool initialized;
    char protocol[16];
    int log_level; /* index into the syslog-style levels (call.h) */
    /* initialize's capabilities.elicitation: the client can show its user
     * a form (an empty object or one with "form"; ask.h). */
    bool client_elicit_form;
    /* The server's own requests waiting for their answers (ask.c), and
     * the number the next one's id carries. */
    struct mcp_ask *asks;
    uint64_t ask_seq;
    pthread_cond_t answered; /* an answer came in (ask.c) */
    struct mcp_sandbox *sandboxes;
    size_t n_sandboxes;
    /* Set by the transport before the first request: the session's own
     * cap (0: cfg->max_sandboxes) and a cap it shares (NULL: none). */
    size_t max_sandboxes;
    struct mcp_quota *quota;
    /* Reconnect (HTTP's --reconnect, tenants.c): adopt finds the kept
     * sandbox id among the other sessions of s's tenant and hands it over
     * (mcp_sandbox_detach; NULL: not there, or busy with *busy set);
     * hand_over takes every sandbox of a session that ends, so that it
     * outlives it.  NULL both: a sandbox is its session's alone (stdio). */
    struct mcp_sandbox *(*adopt)(struct mcp_session *s, const char *id, bool *busy);
    void (*hand_over)(struct mcp_session *s);
    struct mcp_call calls[MCP_MAX_CALLS];
    size_t n_running;
    /* tools/calls waiting for a slot, oldest first (protocol/tools_call.c,
     * bounded by cfg->call_queue); each counts in n_running. */
    struct mcp_queued_call *queued, *queued_tail;
    size_t n_queued;
    struct mcp_task *tasks; /* tasks/tasks.h */
    size_t n_tasks;
    pthread_cond_t idle;     /* n_running fell */
    pthread_cond_t released; /* a sandbox's refs reached 0 */

    /* What results linked, for resources/list (resources/listing.c). */
    struct mcp_reported *reported;
};

/* Initializes a session for cfg (locks, defaults, free call slots).
 * send/transport are the caller's to set. */
void mcp_session_init(struct mcp_session *s, struct mcp_server *cfg);

/* Waits at most grace_ms for the running calls to finish on their own. */
void mcp_session_drain(struct mcp_session *s, unsigned grace_ms);

#endif
