/* Streams: where a session's messages go out.  A stream is one open HTTP
 * response of a session: a POSTed request waiting for its JSON answer, or
 * an SSE stream (a POSTed request's, or the session's standing GET
 * stream).  This file routes each message the session sends to one stream
 * (MCP: never broadcast), frames SSE events, keeps quiet SSE streams alive
 * with comments, notices a peer that has gone, and finishes streams on
 * cancellation or when the session ends.  Endpoints create streams and
 * hand them to http_stream_reply_sse/json; MHD is reached through core.h.
 *
 * Routing (route() in streams.c):
 *   - in a legacy session, everything goes to its one stream;
 *   - a response goes to the stream waiting for that request id;
 *   - notifications/progress to the SSE stream whose request carried that
 *     progressToken;
 *   - other notifications (notifications/message) to the newest open SSE
 *     stream of the session, else to its GET stream, else nowhere.
 * A new kind of stream is a new enum value and a line in route().
 *
 * A thread waiting for a response looks at its socket every second and
 * gives up once the peer has gone.  Up to 2025-11-25 the call itself runs
 * on (MCP then: a disconnect is not a cancellation); a 2026-07-28 request
 * (cancel_on_close) is cancelled as by notifications/cancelled (MCP
 * 2026-07-28, "Cancellation": closing the stream is the signal).
 *
 * Stateless requests of many clients share their tenant's session
 * (tenants.h) under internal ids; a stream maps a message back to its
 * client's id, progressToken and subscriptionId on the way out; a
 * notification reaches a stream there only when it names its request
 * (progress by token, send_related by id: a call's log lines, a listen's
 * acknowledgment), never another client's.
 * All stream state is under the session's lock (hs->lock). */
#ifndef NSBOX_MCP_HTTP_STREAMS_H
#define NSBOX_MCP_HTTP_STREAMS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "core.h"
#include "sessions.h"

enum http_stream_kind {
    HTTP_STREAM_JSON,   /* a POSTed request, answered with one application/json body */
    HTTP_STREAM_SSE,    /* a POSTed request, answered as text/event-stream */
    HTTP_STREAM_GET,    /* the session's stream for messages that belong to no request */
    HTTP_STREAM_LEGACY, /* GET /sse (2024-11-05): every message; its end ends the session */
};

struct http_stream {
    struct http_session *hs; /* holds a reference */
    enum http_stream_kind kind;
    json_t *request_id;     /* POST: the request's id */
    json_t *progress_token; /* POST: params._meta.progressToken, or NULL */
    int fd;                 /* the connection's socket (MHD's) */
    unsigned keepalive_s;   /* SSE: a comment after this many quiet seconds */
    pthread_cond_t wake;
    char *buf; /* SSE: bytes not yet handed out; JSON: the response */
    size_t len, off;
    bool answered; /* the response is in buf */
    bool answer_is_error;
    bool ended;  /* cancelled, or the session ended: finish now */
    bool linked; /* in hs->streams */
    /* A stateless request (http_stream_set_client): request_id and
     * progress_token are the internal ones it runs under in the tenant
     * session; these are the client's, put back into what goes out. */
    json_t *client_id, *client_token;
    bool cancel_on_close; /* the client closing the stream cancels the call */
    struct http_stream *next;
};

/* A stream of hs (takes a session reference), not yet linked; id and token
 * are copied (may be NULL); fd is the connection's (http_conn_fd).  NULL
 * when out of memory. */
struct http_stream *http_stream_new(struct http_session *hs, enum http_stream_kind kind, json_t *id,
                                    json_t *token, int fd, unsigned keepalive_s);

/* Queues an SSE event named event with data (one line, no line break) on
 * st, not yet linked: the legacy transport's "endpoint" event.  False
 * when out of memory. */
bool http_stream_event(struct http_stream *st, const char *event, const char *data);

/* Queues the priming event of MCP 2025-11-25 on st, not yet linked: an
 * event id unique in the session, a retry field of retry_ms and empty
 * data.  False when out of memory. */
bool http_stream_prime(struct http_stream *st, unsigned retry_ms);

/* Makes st a stateless request's stream: what goes out on it carries id
 * and token (copied; token may be NULL) instead of the internal ones, and
 * the client closing it cancels the call.  Before http_stream_link. */
void http_stream_set_client(struct http_stream *st, json_t *id, json_t *token);

/* Puts st in its session's list, where messages find it (hs->lock held). */
void http_stream_link(struct http_stream *st);

/* Frees a stream that is not linked and drops its session reference. */
void http_stream_free(struct http_stream *st);

/* Whether an open POST stream of hs still waits for the response to id
 * (hs->lock held). */
bool http_streams_waiting_for(struct http_session *hs, json_t *id);

/* The sessions' send function (mcp_session.send): routes msg (stolen) to
 * one stream, from connection threads and tool worker threads alike. */
void http_streams_send(struct mcp_session *s, json_t *msg);

/* The sessions' send_related (mcp_session.send_related): in a tenant
 * session, msg (stolen) goes to the SSE stream of the request request_id
 * names (or nowhere); in a legacy session as http_streams_send. */
void http_streams_send_related(struct mcp_session *s, json_t *request_id, json_t *msg);

/* The sessions' send_request (mcp_session.send_request, ../ask.h): msg
 * (stolen), a request of the server's own or a notification about one,
 * goes to the SSE stream of the call request_id names (a legacy session's
 * one stream, else that call's POST stream answered as SSE, else the
 * session's GET stream).  False when none is open (msg dropped). */
bool http_streams_send_request(struct mcp_session *s, json_t *request_id, json_t *msg);

/* notifications/cancelled: the stream waiting for request_id ends without
 * a response (MCP, "Cancellation": none is sent). */
void http_streams_cancel(struct http_session *hs, json_t *request_id);

/* Finishes every open stream of hs, which is ending (hs->lock held). */
void http_streams_end(struct http_session *hs);

/* Answers with st (linked) as an SSE stream, with Mcp-Session-Id when
 * session_id is not NULL; st belongs to the reply from here on. */
enum http_result http_stream_reply_sse(struct MHD_Connection *c, struct http_stream *st,
                                       const char *session_id);

/* Waits, on the connection's thread, for the response st (linked) is for,
 * then answers it as application/json (202 when it was cancelled, 404 when
 * the session ended first, a hang-up when the client went); frees st. */
enum http_result http_stream_reply_json(struct MHD_Connection *c, struct http_stream *st,
                                        const char *session_id);

#endif
