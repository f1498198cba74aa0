/* Streams and the routing of a session's messages (see streams.h). */
#include "streams.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/log.h"
#include "../call.h"
#include "../protocol/request.h"

#define SSE_QUEUE_MAX (64u << 20) /* bytes of notifications waiting on one stream */

struct http_stream *http_stream_new(struct http_session *hs, enum http_stream_kind kind, json_t *id,
                                    json_t *token, int fd, unsigned keepalive_s)
{
    struct http_stream *st = calloc(1, sizeof(*st));
    pthread_condattr_t attr;

    if (st == NULL)
        return NULL;
    *st = (struct http_stream){.hs = hs,
                               .kind = kind,
                               .fd = fd,
                               .keepalive_s = keepalive_s,
                               .request_id = id ? json_deep_copy(id) : NULL,
                               .progress_token = token ? json_deep_copy(token) : NULL};
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&st->wake, &attr);
    pthread_condattr_destroy(&attr);
    http_session_ref(hs);
    return st;
}

void http_stream_set_client(struct http_stream *st, json_t *id, json_t *token)
{
    st->client_id = json_deep_copy(id);
    st->client_token = token ? json_deep_copy(token) : NULL;
    st->cancel_on_close = true;
}

void http_stream_link(struct http_stream *st)
{
    st->next = st->hs->streams;
    st->hs->streams = st;
    st->linked = true;
    if (st->kind == HTTP_STREAM_GET)
        st->hs->has_get = true;
}

/* hs->lock held. */
static void stream_unlink(struct http_stream *st)
{
    if (!st->linked)
        return;
    http_session_touch(st->hs);
    for (struct http_stream **p = &st->hs->streams; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            break;
        }
    st->linked = false;
    if (st->kind == HTTP_STREAM_GET)
        st->hs->has_get = false;
}

void http_stream_free(struct http_stream *st)
{
    struct http_session *hs = st->hs;
    json_decref(st->request_id);
    json_decref(st->progress_token);
    json_decref(st->client_id);
    json_decref(st->client_token);
    free(st->buf);
    pthread_cond_destroy(&st->wake);
    free(st);
    http_session_unref(hs);
}

/* Whether st answers one POSTed request (it ends with that response). */
static bool per_request(const struct http_stream *st)
{
    return st->kind == HTTP_STREAM_JSON || st->kind == HTTP_STREAM_SSE;
}

/* An open POST stream still waiting for its response (hs->lock held). */
static bool waiting(const struct http_stream *st)
{
    return per_request(st) && !st->answered && !st->ended;
}

bool http_streams_waiting_for(struct http_session *hs, json_t *id)
{
    for (struct http_stream *st = hs->streams; st; st = st->next)
        if (waiting(st) && json_equal(st->request_id, id))
            return true;
    return false;
}

/* The stream a message from the session belongs on (hs->lock held). */
static struct http_stream *route(struct http_session *hs, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    struct http_stream *st;

    for (st = hs->streams; st; st = st->next)
        if (st->kind == HTTP_STREAM_LEGACY) /* a legacy session has no other */
            return st->ended ? NULL : st;
    if (method == NULL) { /* a response: to the request's own stream */
        json_t *id = json_object_get(msg, "id");
        for (st = hs->streams; st; st = st->next)
            if (waiting(st) && json_equal(st->request_id, id))
                return st;
        return NULL;
    }
    if (strcmp(method, "notifications/progress") == 0) {
        json_t *token = json_object_get(json_object_get(msg, "params"), "progressToken");
        for (st = hs->streams; st; st = st->next)
            if (st->kind == HTTP_STREAM_SSE && waiting(st) && st->progress_token &&
                json_equal(st->progress_token, token))
                return st;
        return NULL;
    }
    if (hs->stateless)
        return NULL; /* which client's? none can be told */
    /* A watched file changed: news of no request, for the standalone GET
     * stream (resources/watches.h); a request's stream only without one. */
    if (strcmp(method, "notifications/resources/updated") == 0)
        for (st = hs->streams; st; st = st->next)
            if (st->kind == HTTP_STREAM_GET && !st->ended)
                return st;
    for (st = hs->streams; st; st = st->next) /* newest first */
        if (st->kind == HTTP_STREAM_SSE && waiting(st))
            return st;
    for (st = hs->streams; st; st = st->next)
        if (st->kind == HTTP_STREAM_GET && !st->ended)
            return st;
    return NULL;
}

/* Appends one SSE event (hs->lock held, or st not linked yet): an
 * "event:" line when event is not NULL, "id:" when id is not NULL,
 * "retry:" when retry_ms is not 0, and one "data:" line.  data must hold
 * no line break: jansson escapes every control character inside strings,
 * so compact JSON has none, and nothing a sandbox printed can end the data
 * line or forge an event.  capped: refused past SSE_QUEUE_MAX bytes. */
static bool sse_append(struct http_stream *st, const char *event, const char *id, unsigned retry_ms,
                       const char *data, bool capped)
{
    char head[128];
    size_t k = 0;

    /* Bounded parts: at most 96 bytes of head. */
    if (event)
        k += (size_t)snprintf(head + k, sizeof(head) - k, "event: %.32s\n", event);
    if (id)
        k += (size_t)snprintf(head + k, sizeof(head) - k, "id: %.32s\n", id);
    if (retry_ms)
        k += (size_t)snprintf(head + k, sizeof(head) - k, "retry: %u\n", retry_ms);
    size_t n = strlen(data), need = k + strlen("data: ") + n + 2;

    if (st->off > 0) {
        memmove(st->buf, st->buf + st->off, st->len - st->off);
        st->len -= st->off;
        st->off = 0;
    }
    if (capped && st->len + need > SSE_QUEUE_MAX)
        return false;
    char *nb = realloc(st->buf, st->len + need + 1);
    if (nb == NULL)
        return false;
    st->buf = nb;
    memcpy(st->buf + st->len, head, k);
    memcpy(st->buf + st->len + k, "data: ", 6);
    memcpy(st->buf + st->len + k + 6, data, n);
    memcpy(st->buf + st->len + need - 2, "\n\n", 2);
    st->len += need;
    st->buf[st->len] = '\0';
    return true;
}

bool http_stream_event(struct http_stream *st, const char *event, const char *data)
{
    return sse_append(st, event, NULL, 0, data, false);
}

bool http_stream_prime(struct http_stream *st, unsigned retry_ms)
{
    char id[24];

    pthread_mutex_lock(&st->hs->lock);
    snprintf(id, sizeof(id), "%llu", (unsigned long long)++st->hs->sse_event_ids);
    bool ok = sse_append(st, NULL, id, retry_ms, "", false);
    pthread_mutex_unlock(&st->hs->lock);
    return ok;
}

/* A legacy stream whose client let SSE_QUEUE_MAX bytes pile up is not
 * read: it ends (and its session with it) rather than grow, since every
 * response of the session would otherwise wait in memory (hs->lock held). */
static void legacy_overflow(struct http_stream *st)
{
    nsbox_warn("MCP session %.8s...: the SSE client reads nothing; ending the session",
               st->hs->s.id);
    st->off = st->len = 0;
    st->ended = true;
    pthread_cond_broadcast(&st->wake);
}

/* Puts text on st (hs->lock held); takes text when it keeps it as is. */
static bool deliver(struct http_stream *st, char **text, bool is_response)
{
    if (st->kind == HTTP_STREAM_LEGACY) {
        bool ok = sse_append(st, "message", NULL, 0, *text, true);
        if (!ok)
            legacy_overflow(st);
        return ok;
    }
    if (st->kind != HTTP_STREAM_JSON) /* a client that does not read loses notifications */
        return sse_append(st, "message", NULL, 0, *text, !is_response);
    if (!is_response) /* notifications cannot ride a JSON answer */
        return false;
    st->buf = *text;
    st->len = strlen(*text);
    *text = NULL;
    return true;
}

/* msg as st's client sees it: its own id and progressToken in place of
 * the internal ones (hs->lock held); NULL when out of memory. */
static char *client_text(const struct http_stream *st, json_t *msg)
{
    if (json_object_get(msg, "id") != NULL)
        json_object_set(msg, "id", st->client_id);
    json_t *params = json_object_get(msg, "params");
    if (st->client_token && json_object_get(params, "progressToken") != NULL)
        json_object_set(params, "progressToken", st->client_token);
    /* A subscription is named by its listen request's id. */
    json_t *meta = json_object_get(params, "_meta");
    if (json_equal(json_object_get(meta, MCP_META_SUBSCRIPTION_ID), st->request_id))
        json_object_set(meta, MCP_META_SUBSCRIPTION_ID, st->client_id);
    return json_dumps(msg, JSON_COMPACT);
}

/* The open SSE stream of the request whose id is related (hs->lock held):
 * where that request's notifications go. */
static struct http_stream *related_stream(struct http_session *hs, json_t *related)
{
    for (struct http_stream *st = hs->streams; st; st = st->next)
        if (st->kind == HTTP_STREAM_SSE && waiting(st) && json_equal(st->request_id, related))
            return st;
    return NULL;
}

/* Sends msg (stolen) to its stream: the one of the request related names
 * in a tenant session (stateless), else where route() says. */
static void send_msg(struct http_session *hs, json_t *msg, json_t *related)
{
    bool is_response = msg && json_object_get(msg, "method") == NULL;
    bool is_error = msg && json_object_get(msg, "error") != NULL;
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

    if (text == NULL) {
        json_decref(msg);
        return;
    }
    pthread_mutex_lock(&hs->lock);
    /* Legacy sessions keep routing as they always did (route()). */
    struct http_stream *st = related != NULL && hs->stateless ? related_stream(hs, related)
                                                              : route(hs, msg);
    if (st != NULL && st->client_id != NULL) {
        free(text);
        text = client_text(st, msg);
    }
    bool delivered = st != NULL && text != NULL && deliver(st, &text, is_response);
    if (delivered && is_response && per_request(st)) {
        st->answered = true;
        st->answer_is_error = is_error;
    }
    if (delivered)
        pthread_cond_broadcast(&st->wake);
    pthread_mutex_unlock(&hs->lock);
    if (!delivered)
        nsbox_debug("MCP session %.8s...: no open stream for a %s", hs->s.id,
                    is_response ? "response" : "notification");
    free(text);
    json_decref(msg);
}

void http_streams_send(struct mcp_session *s, json_t *msg)
{
    send_msg(s->transport, msg, NULL);
}

void http_streams_send_related(struct mcp_session *s, json_t *request_id, json_t *msg)
{
    send_msg(s->transport, msg, request_id);
}

bool http_streams_send_request(struct mcp_session *s, json_t *request_id, json_t *msg)
{
    struct http_session *hs = s->transport;
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    struct http_stream *st, *to = NULL;

    json_decref(msg);
    if (text == NULL)
        return false;
    pthread_mutex_lock(&hs->lock);
    for (st = hs->streams; st && to == NULL; st = st->next)
        if (st->kind == HTTP_STREAM_LEGACY && !st->ended)
            to = st;
    /* A stateless tenant session's calls are modern: never asked (ask.h). */
    if (to == NULL && !hs->stateless && request_id != NULL)
        to = related_stream(hs, request_id);
    for (st = hs->streams; st && to == NULL && !hs->stateless; st = st->next)
        if (st->kind == HTTP_STREAM_GET && !st->ended)
            to = st;
    bool delivered = to != NULL && deliver(to, &text, false);
    if (delivered)
        pthread_cond_broadcast(&to->wake);
    pthread_mutex_unlock(&hs->lock);
    free(text);
    return delivered;
}

void http_streams_cancel(struct http_session *hs, json_t *request_id)
{
    pthread_mutex_lock(&hs->lock);
    for (struct http_stream *st = hs->streams; st && request_id; st = st->next)
        if (waiting(st) && json_equal(st->request_id, request_id)) {
            st->ended = true;
            pthread_cond_broadcast(&st->wake);
        }
    pthread_mutex_unlock(&hs->lock);
}

void http_streams_end(struct http_session *hs)
{
    for (struct http_stream *st = hs->streams; st; st = st->next) {
        st->ended = true;
        pthread_cond_broadcast(&st->wake);
    }
}

/* Waits for news on st up to a second (hs->lock held).  Returns 1 when
 * woken, 0 after a quiet second, -1 when the client has hung up. */
static int wait_tick(struct http_stream *st)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += 1;
    if (pthread_cond_timedwait(&st->wake, &st->hs->lock, &t) != ETIMEDOUT)
        return 1;
    return http_peer_gone(st->fd) ? -1 : 0;
}

/* MHD's content reader for SSE: blocks (its connection's own thread) until
 * there are bytes, the response went out, or the stream ends. */
static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    static const char keepalive[] = ":\n\n"; /* an SSE comment */
    struct http_stream *st = cls;
    ssize_t n = 0;
    int quiet = 0, w;

    (void)pos;
    pthread_mutex_lock(&st->hs->lock);
    for (;;) {
        if (st->off < st->len) {
            size_t k = st->len - st->off < max ? st->len - st->off : max;
            memcpy(out, st->buf + st->off, k);
            st->off += k;
            n = (ssize_t)k;
            break;
        }
        if (st->answered || st->ended) {
            n = HTTP_READER_END;
            break;
        }
        if ((w = wait_tick(st)) < 0) {
            n = HTTP_READER_ERROR;
            break;
        }
        /* A GET stream may stay silent for hours: a comment now and then
         * finds a peer that vanished without a FIN, and keeps proxies
         * from timing the stream out.  A POST stream needs one too: MHD
         * closes a connection that sent nothing for its timeout as soon
         * as this reader returns, so a call running longer than that (60
         * s; calls may run 600) lost its response after the headers. */
        quiet = w ? 0 : quiet + 1;
        if (quiet >= (int)st->keepalive_s && max >= sizeof(keepalive)) {
            memcpy(out, keepalive, sizeof(keepalive) - 1);
            n = (ssize_t)sizeof(keepalive) - 1;
            break;
        }
    }
    pthread_mutex_unlock(&st->hs->lock);
    return n;
}

/* The client closed st before its response (MCP 2026-07-28: that cancels
 * the request): cancels the call running under st's id, as
 * notifications/cancelled would.  Neither lock held. */
static void cancel_call(struct http_stream *st)
{
    struct mcp_session *s = &st->hs->s;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].id != NULL && !s->calls[i].answered &&
            json_equal(s->calls[i].id, st->request_id)) {
            nsbox_info("MCP: the client closed the stream of a running call: cancelling it");
            mcp_call_cancel(&s->calls[i]);
        }
    pthread_mutex_unlock(&s->lock);
}

static void sse_done(void *cls)
{
    struct http_stream *st = cls;
    pthread_mutex_lock(&st->hs->lock);
    bool gone = st->cancel_on_close && !st->answered && !st->ended;
    stream_unlink(st);
    pthread_mutex_unlock(&st->hs->lock);
    if (gone)
        cancel_call(st);
    /* The legacy transport has no DELETE: its session is its stream, and
     * ends with it (calls cancelled, sandboxes stopped).  Blocking here
     * holds only this connection's thread (core.h). */
    if (st->kind == HTTP_STREAM_LEGACY)
        http_session_end(st->hs);
    http_stream_free(st);
}

enum http_result http_stream_reply_sse(struct MHD_Connection *c, struct http_stream *st,
                                       const char *session_id)
{
    return http_reply_stream(c, HTTP_OK, "text/event-stream",
                             (struct http_header){"Cache-Control", "no-cache"},
                             (struct http_header){session_id ? "Mcp-Session-Id" : NULL, session_id},
                             sse_read, sse_done, st);
}

enum http_result http_stream_reply_json(struct MHD_Connection *c, struct http_stream *st,
                                        const char *session_id)
{
    struct http_session *hs = st->hs;
    bool here = true;

    pthread_mutex_lock(&hs->lock);
    while (!st->answered && !st->ended && here)
        here = wait_tick(st) >= 0;
    char *body = st->answered ? st->buf : NULL;
    if (body)
        st->buf = NULL;
    bool session_gone = hs->ended;
    bool cancel = !here && st->cancel_on_close;
    stream_unlink(st);
    pthread_mutex_unlock(&hs->lock);
    if (cancel)
        cancel_call(st);
    http_stream_free(st);
    if (body)
        return http_reply(c, HTTP_OK, body,
                          (struct http_header){session_id ? "Mcp-Session-Id" : NULL, session_id},
                          HTTP_NO_HEADER);
    if (!here)
        return HTTP_NO;
    if (session_gone)
        return http_refuse(c, HTTP_NOT_FOUND, "the session ended before the response");
    return http_reply(c, HTTP_ACCEPTED, NULL, HTTP_NO_HEADER, HTTP_NO_HEADER);
}
