/* The legacy HTTP+SSE transport, /sse and /messages (see sse_legacy.h). */
#include "sse_legacy.h"

#include <stdio.h>
#include <string.h>

#include "../jsonrpc.h"
#include "../protocol/dispatch.h"
#include "streams.h"
#include "tenants.h"

/* The legacy session ?sessionId= names, with a reference, when this
 * request may use it: a legacy session still running, opened by the
 * request's tenant (tenants.h: the one place that ties a session to whose
 * token opened it).  Another client's session looks like no session at
 * all. */
static struct http_session *legacy_session(struct http_sse_legacy *ep, struct MHD_Connection *c,
                                           struct http_request *rq)
{
    struct http_session *hs = http_session_get(ep->sessions, http_query_value(c, "sessionId"));
    if (hs == NULL)
        return NULL;
    pthread_mutex_lock(&hs->lock);
    bool ok = hs->legacy && !hs->ended;
    pthread_mutex_unlock(&hs->lock);
    if (!ok || !http_session_tenant_ok(hs, rq->tenant)) {
        http_session_unref(hs);
        return NULL;
    }
    return hs;
}

/* ---- GET /sse ---- */

static enum http_result check_sse(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    const char *accept = http_header_value(c, "Accept");

    (void)ctx, (void)rq;
    if (accept != NULL && !http_accepts(accept, "text/event-stream", true))
        return http_refuse(c, HTTP_NOT_ACCEPTABLE,
                           "not acceptable: GET " MCP_HTTP_SSE_ENDPOINT
                           " opens a text/event-stream");
    return HTTP_READ_ON;
}

/* The session's stream, its "endpoint" event queued, linked unless hs
 * ended meanwhile (the server stopping).  NULL when not. */
static struct http_stream *open_stream(struct http_sse_legacy *ep, struct MHD_Connection *c,
                                       struct http_session *hs)
{
    char endpoint[sizeof(MCP_HTTP_MESSAGES_ENDPOINT) + sizeof("?sessionId=") + MCP_ID_MAX];
    struct http_stream *st = http_stream_new(hs, HTTP_STREAM_LEGACY, NULL, NULL, http_conn_fd(c),
                                             ep->keepalive_s);

    snprintf(endpoint, sizeof(endpoint), "%s?sessionId=%s", MCP_HTTP_MESSAGES_ENDPOINT, hs->s.id);
    if (st != NULL && !http_stream_event(st, "endpoint", endpoint)) {
        http_stream_free(st);
        return NULL;
    }
    pthread_mutex_lock(&hs->lock);
    bool ended = hs->ended;
    if (st != NULL && !ended)
        http_stream_link(st);
    pthread_mutex_unlock(&hs->lock);
    if (st != NULL && ended) {
        http_stream_free(st);
        return NULL;
    }
    return st;
}

static enum http_result handle_sse(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    struct http_sse_legacy *ep = ctx;
    const char *why = NULL;
    struct http_session *hs = http_session_new(ep->sessions, rq->tenant, &why);

    if (hs == NULL)
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, why);
    pthread_mutex_lock(&hs->lock);
    hs->legacy = true;
    pthread_mutex_unlock(&hs->lock);
    struct http_stream *st = open_stream(ep, c, hs);
    if (st == NULL) {
        http_session_end(hs);
        http_session_unref(hs);
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory, or shutting down");
    }
    http_session_unref(hs); /* the stream holds its own */
    /* From here the stream owns the session: its end ends it (streams.c). */
    return http_stream_reply_sse(c, st, NULL);
}

/* ---- POST /messages ---- */

static enum http_result check_messages(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    const char *version = http_header_value(c, "MCP-Protocol-Version");

    (void)ctx, (void)rq;
    if (http_query_value(c, "sessionId") == NULL)
        return http_refuse(c, HTTP_BAD_REQUEST,
                           "bad request: no sessionId: POST to the endpoint the "
                           "\"endpoint\" event of GET " MCP_HTTP_SSE_ENDPOINT " names");
    if (version != NULL && !http_version_supported(version))
        return http_refuse(c, HTTP_BAD_REQUEST, "unsupported MCP-Protocol-Version");
    if (!http_content_type_json(http_header_value(c, "Content-Type")))
        return http_refuse(c, HTTP_UNSUPPORTED_MEDIA_TYPE,
                           "unsupported media type: POST a JSON-RPC message as application/json");
    return HTTP_READ_ON;
}

/* Refuses a body that is not one JSON-RPC message, with its JSON-RPC
 * code; returns true when it did. */
static bool refused_body(struct MHD_Connection *c, struct http_request *rq, enum http_result *ret)
{
    struct jsonrpc_msg m;
    json_t *eid = NULL;
    const char *why = NULL;
    int code = jsonrpc_parse(rq->body.data ? rq->body.data : "", rq->body.len, &m, &eid, &why);

    if (code == 0)
        jsonrpc_msg_free(&m);
    else
        *ret = http_reply_error(c, HTTP_BAD_REQUEST, eid, code, why, HTTP_NO_HEADER);
    json_decref(eid);
    return code != 0;
}

/* One message for the session; whatever it answers goes out on the
 * session's stream, so the POST itself is done with a 202. */
static enum http_result handle_messages(void *ctx, struct MHD_Connection *c,
                                        struct http_request *rq)
{
    struct http_sse_legacy *ep = ctx;
    enum http_result ret = HTTP_NO;

    if (rq->body.too_large)
        return http_refuse_too_large(c, rq->route);
    struct http_session *hs = legacy_session(ep, c, rq);
    if (hs == NULL)
        return http_refuse(c, HTTP_NOT_FOUND,
                           "session not found (it ended or never existed): open one "
                           "with GET " MCP_HTTP_SSE_ENDPOINT);
    if (refused_body(c, rq, &ret)) {
        http_session_unref(hs);
        return ret;
    }
    if (!http_session_enter(hs)) {
        http_session_unref(hs);
        return http_refuse(c, HTTP_NOT_FOUND, "session ended");
    }
    mcp_session_handle(&hs->s, rq->body.data, rq->body.len);
    http_session_leave(hs);
    http_session_unref(hs);
    return http_reply(c, HTTP_ACCEPTED, NULL, HTTP_NO_HEADER, HTTP_NO_HEADER);
}

int http_sse_legacy_register(struct http_server *srv, struct http_sse_legacy *ep,
                             struct nsbox_err *err)
{
    struct http_route sse = {
        .path = MCP_HTTP_SSE_ENDPOINT,
        .methods = "GET",
        .method_hint = "method not allowed: GET " MCP_HTTP_SSE_ENDPOINT
                       " opens a session; POST its messages to " MCP_HTTP_MESSAGES_ENDPOINT,
        .body_max = 0,
        .check = check_sse,
        .handle = handle_sse,
        .ctx = ep,
    };
    struct http_route messages = {
        .path = MCP_HTTP_MESSAGES_ENDPOINT,
        .methods = "POST",
        .method_hint =
            "method not allowed: POST one JSON-RPC message to " MCP_HTTP_MESSAGES_ENDPOINT
            "?sessionId=...",
        .body_max = MCP_MESSAGE_MAX,
        .check = check_messages,
        .handle = handle_messages,
        .ctx = ep,
    };
    if (http_server_route(srv, &sse, err) < 0)
        return -1;
    return http_server_route(srv, &messages, err);
}
