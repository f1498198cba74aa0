/* The Streamable HTTP endpoint, /mcp (see streamable.h); the stateless
 * path of 2026-07-28 is stateless.c's. */
#include "streamable.h"

#include <string.h>

#include "../jsonrpc.h"
#include "stateless.h"
#include "streams.h"
#include "tenants.h"

#define WANT_SSE 1u /* http_request.flags: the POST is answered as SSE */
/* The retry field of the priming event: how long a client whose connection
 * broke waits before it asks to resume (which nsbox answers with 405, see
 * handle_get). */
#define PRIMING_RETRY_MS 1000

/* The endpoint's checks before the body: version, Content-Type, Accept. */
static enum http_result check(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    const char *version = http_header_value(c, "MCP-Protocol-Version");
    const char *accept = http_header_value(c, "Accept");
    bool post = strcmp(rq->method, "POST") == 0;

    (void)ctx;
    /* A POST's is answered with its id once the body is in (handle_post). */
    if (!post && version != NULL && !http_version_supported(version))
        return http_refuse(c, HTTP_BAD_REQUEST,
                           "unsupported MCP-Protocol-Version (supported: "
                           "2025-11-25, 2025-06-18, 2025-03-26, "
                           "2024-11-05)");
    if (post && !http_content_type_json(http_header_value(c, "Content-Type")))
        return http_refuse(c, HTTP_UNSUPPORTED_MEDIA_TYPE,
                           "unsupported media type: POST a JSON-RPC message as application/json");
    if (post && accept) {
        /* SSE when the client names it; else JSON, which a missing Accept
         * or a wildcard admits. */
        bool sse = http_accepts(accept, "text/event-stream", false);
        if (!sse && !http_accepts(accept, "application/json", true)) {
            sse = http_accepts(accept, "text/event-stream", true);
            if (!sse)
                return http_refuse(c, HTTP_NOT_ACCEPTABLE,
                                   "not acceptable: Accept application/json or text/event-stream");
        }
        rq->flags |= sse ? WANT_SSE : 0;
    }
    if (!post && strcmp(rq->method, "GET") == 0 && accept &&
        !http_accepts(accept, "text/event-stream", true))
        return http_refuse(c, HTTP_NOT_ACCEPTABLE,
                           "not acceptable: GET opens a "
                           "text/event-stream");
    return HTTP_READ_ON;
}

/* Ids must be unique among a session's outstanding requests: a call whose
 * client hung up still runs, and its response would otherwise reach the
 * new request.  Returns why id is refused, or NULL (hs->lock not held). */
static const char *id_running(struct http_session *hs, json_t *id)
{
    const char *why = NULL;
    pthread_mutex_lock(&hs->s.lock);
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (hs->s.calls[i].id != NULL && !hs->s.calls[i].answered &&
            json_equal(hs->s.calls[i].id, id))
            why = "a request with this id is still running in this session";
    pthread_mutex_unlock(&hs->s.lock);
    return why;
}

/* Links st and counts a handler in, unless hs ended or the id is taken:
 * then returns the status of the refusal and sets *why. */
static unsigned stream_open(struct http_session *hs, struct http_stream *st, const char **why)
{
    unsigned status = 0;

    pthread_mutex_lock(&hs->lock);
    if (!hs->ended && http_streams_waiting_for(hs, st->request_id))
        *why = "a request with this id is still running in this session";
    if (hs->ended)
        *why = "session ended", status = HTTP_NOT_FOUND;
    else if (*why)
        status = HTTP_BAD_REQUEST;
    else {
        http_stream_link(st);
        hs->handlers++;
    }
    pthread_mutex_unlock(&hs->lock);
    return status;
}

/* Whether a POST's SSE stream starts with a priming event (MCP 2025-11-25,
 * "Sending Messages to the Server": an event id and empty data).  By the
 * version the session negotiated (for initialize, the one it asks for),
 * not by the request's header: a client of 2025-06-18 or older may choke
 * on an event without data. */
static bool wants_priming(struct http_session *hs, struct jsonrpc_msg *m, bool initialize)
{
    const char *asked = json_string_value(json_object_get(m->params, "protocolVersion"));
    if (initialize)
        return asked != NULL && strcmp(asked, "2025-11-25") >= 0;
    pthread_mutex_lock(&hs->s.lock);
    bool yes = hs->s.initialized && strcmp(hs->s.protocol, "2025-11-25") >= 0;
    pthread_mutex_unlock(&hs->s.lock);
    return yes;
}

/* A request: registered as a stream under its id before the session sees
 * it, so that even an immediate answer finds its way. */
static enum http_result post_request(struct http_streamable *ep, struct MHD_Connection *c,
                                     struct http_session *hs, struct http_request *rq,
                                     struct jsonrpc_msg *m, bool initialize)
{
    json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
    enum http_stream_kind kind = rq->flags & WANT_SSE ? HTTP_STREAM_SSE : HTTP_STREAM_JSON;
    struct http_stream *st = http_stream_new(hs, kind, m->id, token, http_conn_fd(c),
                                             ep->keepalive_s);

    if (st != NULL && kind == HTTP_STREAM_SSE && wants_priming(hs, m, initialize) &&
        !http_stream_prime(st, PRIMING_RETRY_MS)) {
        http_stream_free(st);
        st = NULL;
    }
    if (st == NULL)
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory");
    const char *why = id_running(hs, m->id);
    unsigned status = stream_open(hs, st, &why);
    if (status != 0) {
        http_stream_free(st);
        int code = status == HTTP_NOT_FOUND ? HTTP_ERR_TRANSPORT : JSONRPC_INVALID_REQUEST;
        return http_reply_error(c, status, m->id, code, why, HTTP_NO_HEADER);
    }
    mcp_session_handle(&hs->s, rq->body.data, rq->body.len);
    http_session_leave(hs);
    const char *session_id = NULL;
    if (initialize) {
        /* initialize is answered on the spot: a failed one leaves no
         * session behind. */
        pthread_mutex_lock(&hs->lock);
        bool failed = st->answered && st->answer_is_error;
        pthread_mutex_unlock(&hs->lock);
        if (failed)
            http_session_end(hs);
        else
            session_id = hs->s.id;
    }
    return kind == HTTP_STREAM_SSE ? http_stream_reply_sse(c, st, session_id)
                                   : http_stream_reply_json(c, st, session_id);
}

/* A notification or a response from the client: 202, no body. */
static enum http_result post_message(struct MHD_Connection *c, struct http_session *hs,
                                     struct http_request *rq, struct jsonrpc_msg *m)
{
    if (!http_session_enter(hs))
        return http_refuse(c, HTTP_NOT_FOUND, "session ended");
    mcp_session_handle(&hs->s, rq->body.data, rq->body.len);
    http_session_leave(hs);
    if (m->method && strcmp(m->method, "notifications/cancelled") == 0)
        http_streams_cancel(hs, json_object_get(m->params, "requestId"));
    return http_reply(c, HTTP_ACCEPTED, NULL, HTTP_NO_HEADER, HTTP_NO_HEADER);
}

/* The Streamable HTTP session named sid (with a reference), or NULL: a
 * legacy session's id (sse_legacy.h) is not one here, since its messages
 * all go to its own SSE stream; and another tenant's session is answered
 * as one that does not exist. */
static struct http_session *streamable_session(struct http_streamable *ep, struct http_request *rq,
                                               const char *sid)
{
    struct http_session *hs = http_session_get(ep->sessions, sid);
    bool refuse = false;
    if (hs != NULL) {
        pthread_mutex_lock(&hs->lock);
        refuse = hs->legacy;
        pthread_mutex_unlock(&hs->lock);
        refuse = refuse || !http_session_tenant_ok(hs, rq->tenant);
    }
    if (refuse) {
        http_session_unref(hs);
        hs = NULL;
    }
    return hs;
}

/* The session a parsed POST is for: a new one for initialize, else the
 * one it names.  NULL with the refusal queued in *ret. */
static struct http_session *post_session(struct http_streamable *ep, struct MHD_Connection *c,
                                         struct http_request *rq, bool init, enum http_result *ret)
{
    const char *sid = http_header_value(c, "Mcp-Session-Id");
    const char *why = NULL;
    struct http_session *hs = NULL;

    if (init && sid)
        *ret = http_refuse(c, HTTP_BAD_REQUEST,
                           "initialize starts a new session: send it without Mcp-Session-Id");
    else if (init && (hs = http_session_new(ep->sessions, rq->tenant, &why)) == NULL)
        *ret = http_refuse(c, HTTP_SERVICE_UNAVAILABLE, why);
    else if (init)
        ; /* bound to its tenant by http_session_new */
    else if (!init && sid == NULL)
        *ret = http_refuse(c, HTTP_BAD_REQUEST,
                           "bad request: no Mcp-Session-Id header (send initialize first)");
    else if (!init && (hs = streamable_session(ep, rq, sid)) == NULL)
        *ret = http_refuse(c, HTTP_NOT_FOUND,
                           "session not found (it ended or never existed): send initialize");
    return hs;
}

/* An unsupported MCP-Protocol-Version, or a 2026-07-28 request (the
 * stateless path, stateless.h): answered into *ret, true.  False: a
 * legacy message, for a session. */
static bool post_modern(struct http_streamable *ep, struct MHD_Connection *c,
                        struct http_request *rq, const struct jsonrpc_msg *m, enum http_result *ret)
{
    const char *version = http_header_value(c, "MCP-Protocol-Version");
    const char *meta = json_string_value(json_object_get(
        json_object_get(m->params, "_meta"), "io.modelcontextprotocol/protocolVersion"));

    if (version != NULL && !http_version_supported(version)) {
        /* A header that disagrees with _meta is that first (MCP
         * 2026-07-28, "Server Validation"). */
        if (meta != NULL && strcmp(meta, version) != 0)
            *ret = http_reply_error(c, HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH,
                                    "Header mismatch: MCP-Protocol-Version does not match _meta",
                                    HTTP_NO_HEADER);
        else
            *ret = http_refuse_version(c, m->id, version);
        return true;
    }
    if (!http_stateless_wanted(c, m))
        return false;
    *ret = http_stateless_post(c, rq, m, rq->flags & WANT_SSE, ep->keepalive_s);
    return true;
}

static enum http_result handle_post(struct http_streamable *ep, struct MHD_Connection *c,
                                    struct http_request *rq)
{
    struct jsonrpc_msg m;
    json_t *eid;
    const char *why = NULL;

    if (rq->body.too_large)
        return http_refuse_too_large(c, rq->route);
    int code = jsonrpc_parse(rq->body.data ? rq->body.data : "", rq->body.len, &m, &eid, &why);
    if (code != 0) { /* not JSON, a batch, too deep, not JSON-RPC */
        enum http_result r = http_reply_error(c, HTTP_BAD_REQUEST, eid, code, why, HTTP_NO_HEADER);
        json_decref(eid);
        return r;
    }
    json_decref(eid);
    enum http_result ret = HTTP_NO;
    if (post_modern(ep, c, rq, &m, &ret)) {
        jsonrpc_msg_free(&m);
        return ret;
    }
    bool request = m.method != NULL && m.id != NULL;
    bool init = request && strcmp(m.method, "initialize") == 0;
    struct http_session *hs = post_session(ep, c, rq, init, &ret);
    if (hs && request)
        ret = post_request(ep, c, hs, rq, &m, init);
    else if (hs)
        ret = post_message(c, hs, rq, &m);
    if (hs)
        http_session_unref(hs);
    jsonrpc_msg_free(&m);
    return ret;
}

/* Looks up the request's session; on failure queues the error in *ret. */
static struct http_session *request_session(struct http_streamable *ep, struct MHD_Connection *c,
                                            struct http_request *rq, enum http_result *ret)
{
    const char *sid = http_header_value(c, "Mcp-Session-Id");
    struct http_session *hs = sid ? streamable_session(ep, rq, sid) : NULL;
    if (sid == NULL)
        *ret = http_refuse(c, HTTP_BAD_REQUEST, "bad request: no Mcp-Session-Id header");
    else if (hs == NULL)
        *ret = http_refuse(c, HTTP_NOT_FOUND, "session not found (it ended or never existed)");
    return hs;
}

/* GET: the session's stream for messages that belong to no request.  A
 * GET with Last-Event-ID asks to resume a stream: nsbox never closes a
 * stream before its response and keeps no events to replay, so it says
 * so with the 405 MCP names for "no such stream here" (a client then stops
 * trying, where a 409 or a fresh stream would have it retry). */
static enum http_result handle_get(struct http_streamable *ep, struct MHD_Connection *c,
                                   struct http_request *rq)
{
    enum http_result ret = HTTP_NO;
    if (http_header_value(c, "Last-Event-ID") != NULL)
        return http_reply_error(c, HTTP_METHOD_NOT_ALLOWED, NULL, HTTP_ERR_TRANSPORT,
                                "resuming a stream (Last-Event-ID) is not supported: "
                                "nsbox keeps no events to replay",
                                (struct http_header){"Allow", "POST, DELETE"});
    struct http_session *hs = request_session(ep, c, rq, &ret);
    if (hs == NULL)
        return ret;
    struct http_stream *st = http_stream_new(hs, HTTP_STREAM_GET, NULL, NULL, http_conn_fd(c),
                                             ep->keepalive_s);
    unsigned status = 0;
    if (st == NULL)
        status = HTTP_SERVICE_UNAVAILABLE;
    else {
        pthread_mutex_lock(&hs->lock);
        if (hs->ended)
            status = HTTP_NOT_FOUND;
        else if (hs->has_get)
            status = HTTP_CONFLICT;
        else
            http_stream_link(st);
        pthread_mutex_unlock(&hs->lock);
    }
    if (status == 0)
        ret = http_stream_reply_sse(c, st, NULL);
    else {
        if (st)
            http_stream_free(st);
        ret = http_refuse(c, status,
                          status == HTTP_CONFLICT
                              ? "conflict: this session already has a GET stream"
                              : "session ended");
    }
    http_session_unref(hs);
    return ret;
}

/* DELETE: ends the session; its sandboxes are gone when the 200 goes out. */
static enum http_result handle_delete(struct http_streamable *ep, struct MHD_Connection *c,
                                      struct http_request *rq)
{
    enum http_result ret = HTTP_NO;
    struct http_session *hs = request_session(ep, c, rq, &ret);
    if (hs == NULL)
        return ret;
    http_session_end(hs);
    http_session_unref(hs);
    return http_reply(c, HTTP_OK, NULL, HTTP_NO_HEADER, HTTP_NO_HEADER);
}

static enum http_result handle(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    if (strcmp(rq->method, "POST") == 0)
        return handle_post(ctx, c, rq);
    if (strcmp(rq->method, "GET") == 0)
        return handle_get(ctx, c, rq);
    return handle_delete(ctx, c, rq);
}

int http_streamable_register(struct http_server *srv, struct http_streamable *ep,
                             struct nsbox_err *err)
{
    static const struct http_route route = {
        .path = MCP_HTTP_ENDPOINT,
        .methods = "GET, POST, DELETE",
        .method_hint = "method not allowed: use POST, GET or DELETE",
        .body_max = MCP_MESSAGE_MAX,
        .check = check,
        .handle = handle,
    };
    struct http_route r = route;
    r.ctx = ep;
    return http_server_route(srv, &r, err);
}
