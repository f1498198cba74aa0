/* MCP over Streamable HTTP, served by libmicrohttpd (MHD).
 *
 * Threads.  MHD runs one thread per connection, so a connection thread may
 * block: a POST answered with application/json waits in the access handler
 * for its response, an SSE stream waits in its content reader for the next
 * event (MHD allows both in this mode only).  A slow or idle client holds
 * its own thread and nothing else; the connection limits (total, per IP)
 * bound how many threads a client can hold, and MHD drops a connection that
 * sends nothing for idle_timeout_s while a request is being read.  A thread
 * waiting for a response looks at its socket every second and gives up once
 * the peer has gone (the call itself runs on: MCP says a disconnect is not
 * a cancellation).
 *
 * Routing.  The session code answers through http_send(), from the
 * connection's thread or from a tool's worker thread.  Each POSTed request
 * is a stream registered in its session under the request's JSON-RPC id
 * and progressToken:
 *   - a response goes to the stream waiting for that id;
 *   - notifications/progress to the SSE stream whose request carried that
 *     token;
 *   - other notifications (notifications/message) to the newest open SSE
 *     stream of the session, else to its GET stream, else nowhere.
 * A message goes to one stream only (MCP: never broadcast).
 *
 * Lifetimes.  A session is reference counted: the table holds one
 * reference, each request using it one, each stream one.  A stream belongs
 * to its connection and sits in its session's list while open.  Lock
 * order: srv->lock, then hs->lock; nothing calls into the session code
 * with either held. */
#include "transport_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
/* The low-level SHA-256 (see oci/digest.c): the one-shot SHA256() of
 * OpenSSL 3 goes through EVP and links the provider machinery into every
 * nsbox start (17,000 relocations, 0.3 ms per `nsbox exec`). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "http_body.h"
#include "http_policy.h"
#include "jsonrpc.h"

/* libmicrohttpd is loaded only when `serve --http` starts: linked, it
 * brings gnutls and eight more libraries that every nsbox start (run, exec)
 * would pay for, about 1.2 ms.  The ten functions used, by dlsym. */
#include <dlfcn.h>

static struct {
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_create_response_from_callback) *create_response_from_callback;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_quiesce_daemon) *quiesce_daemon;
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
} mhd;

static int mhd_load(struct nsbox_err *err)
{
    static const char *const names[] = {
        "MHD_add_response_header", "MHD_create_response_from_buffer",
        "MHD_create_response_from_callback", "MHD_destroy_response",
        "MHD_get_connection_info", "MHD_lookup_connection_value", "MHD_queue_response",
        "MHD_quiesce_daemon", "MHD_start_daemon", "MHD_stop_daemon"};
    void **slots = (void **)&mhd;

    if (mhd.start_daemon != NULL)
        return 0;
    void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return nsbox_err_set(err, ENOENT, "cannot load libmicrohttpd (apt-get install "
                                          "libmicrohttpd12): %s", dlerror());
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        slots[i] = dlsym(h, names[i]);
        if (slots[i] == NULL)
            return nsbox_err_set(err, ENOENT, "libmicrohttpd lacks %s", names[i]);
    }
    return 0;
}

#define MHD_add_response_header (*mhd.add_response_header)
#define MHD_create_response_from_buffer (*mhd.create_response_from_buffer)
#define MHD_create_response_from_callback (*mhd.create_response_from_callback)
#define MHD_destroy_response (*mhd.destroy_response)
#define MHD_get_connection_info (*mhd.get_connection_info)
#define MHD_lookup_connection_value (*mhd.lookup_connection_value)
#define MHD_queue_response (*mhd.queue_response)
#define MHD_quiesce_daemon (*mhd.quiesce_daemon)
#define MHD_start_daemon (*mhd.start_daemon)
#define MHD_stop_daemon (*mhd.stop_daemon)

#define ENDPOINT "/mcp"
#define SSE_QUEUE_MAX (64u << 20) /* bytes of notifications waiting on one stream */
#define BODY_DISCARD_MAX (16u << 20) /* past the limit, bytes read before hanging up */
#define SSE_KEEPALIVE_S 25        /* a comment on a quiet SSE stream at most this often */
#define ERR_TRANSPORT (-32000)    /* JSON-RPC "server error" for HTTP-level refusals */

enum stream_kind { STREAM_JSON, STREAM_SSE, STREAM_GET };

struct http_session;

struct http_stream {
    struct http_session *hs; /* holds a reference */
    enum stream_kind kind;
    json_t *request_id;      /* POST: the request's id */
    json_t *progress_token;  /* POST: params._meta.progressToken, or NULL */
    int fd;                  /* the connection's socket (MHD's) */
    pthread_cond_t wake;
    char *buf;               /* SSE: bytes not yet handed out; JSON: the response */
    size_t len, off;
    bool answered;           /* the response is in buf */
    bool answer_is_error;
    bool ended;              /* cancelled, or the session ended: finish now */
    bool linked;             /* in hs->streams */
    struct http_stream *next;
};

struct http_session {
    struct mcp_session s;    /* s.transport points here */
    struct mcp_http *srv;
    pthread_mutex_t lock;    /* everything below */
    pthread_cond_t quiet;    /* handlers went down to 0 */
    struct http_stream *streams; /* newest first */
    bool has_get;
    int refs;
    int handlers;            /* threads inside mcp_session_handle() */
    time_t last_used;        /* CLOCK_MONOTONIC seconds: last request or stream end */
    bool ended;
    struct http_session *next; /* in srv->sessions */
};

struct mcp_http {
    struct mcp_server *cfg;
    struct MHD_Daemon *daemon;
    int listen_fd;
    uint16_t port;
    struct http_host_policy hosts; /* names point into names[] */
    char names[HTTP_MAX_HOST_NAMES][256];
    bool has_token;
    unsigned char token_hash[SHA256_DIGEST_LENGTH];
    size_t max_sessions;
    unsigned session_timeout_s;
    unsigned keepalive_s;    /* a comment on a quiet SSE stream this often */
    pthread_t reaper;
    bool has_reaper;
    pthread_mutex_t lock;    /* sessions, n_sessions, stopping */
    pthread_cond_t stop;     /* wakes the reaper */
    struct http_session *sessions;
    size_t n_sessions;
    bool stopping;
};

/* One HTTP request (MHD's per-request closure). */
struct http_request {
    struct http_body body;
    bool replied;            /* an error went out before the body was read */
    bool want_sse;
};

/* ---- replies ---- */

struct header {
    const char *name, *value;
};

/* Queues status with body (owned; NULL for none) and up to two headers. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body,
                             struct header h1, struct header h2)
{
    struct MHD_Response *r =
        body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    if (body != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (h1.name)
        MHD_add_response_header(r, h1.name, h1.value);
    if (h2.name)
        MHD_add_response_header(r, h2.name, h2.value);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static char *dump_steal(json_t *msg)
{
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    return text;
}

/* An HTTP error with a JSON-RPC error body (MCP: "MAY comprise a JSON-RPC
 * error response that has no id"). */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, json_t *id,
                                   int code, const char *message, struct header h)
{
    return reply(c, status, dump_steal(jsonrpc_error(id, code, message)), h,
                 (struct header){0});
}

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *message)
{
    return reply_error(c, status, NULL, ERR_TRANSPORT, message, (struct header){0});
}

/* ---- header checks ---- */

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static void sha256(const char *s, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, s, strlen(s));
    SHA256_Final(out, &ctx);
}

/* Compares hashes so that neither the content nor the length of the token
 * shows in the timing (CRYPTO_memcmp is constant-time). */
static bool token_ok(const struct mcp_http *srv, const char *auth)
{
    unsigned char h[SHA256_DIGEST_LENGTH];

    if (!srv->has_token)
        return true;
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    auth += 7;
    auth += strspn(auth, " ");
    sha256(auth, h);
    return CRYPTO_memcmp(h, srv->token_hash, sizeof(h)) == 0;
}

/* The checks every request passes before its body is read, in the order
 * that leaks least: who may ask (Host, Origin, token), then what. */
static enum MHD_Result check_headers(struct mcp_http *srv, struct MHD_Connection *c,
                                     const char *url, const char *method,
                                     struct http_request *rq)
{
    const char *origin = header(c, "Origin");
    const char *version = header(c, "MCP-Protocol-Version");
    const char *accept = header(c, MHD_HTTP_HEADER_ACCEPT);
    const char *length = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    bool post = strcmp(method, "POST") == 0;

    rq->replied = true; /* unless every check passes */
    if (!http_host_allowed(&srv->hosts, header(c, MHD_HTTP_HEADER_HOST)))
        return refuse(c, MHD_HTTP_FORBIDDEN, "forbidden: Host is not this server "
                                              "(DNS rebinding protection)");
    if (origin != NULL && !http_origin_allowed(origin))
        return refuse(c, MHD_HTTP_FORBIDDEN, "forbidden: Origin is not a loopback page");
    if (!token_ok(srv, header(c, MHD_HTTP_HEADER_AUTHORIZATION)))
        return reply_error(c, MHD_HTTP_UNAUTHORIZED, NULL, ERR_TRANSPORT,
                           "unauthorized: send Authorization: Bearer <token>",
                           (struct header){MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                           "Bearer realm=\"nsbox\""});
    if (strcmp(url, ENDPOINT) != 0)
        return refuse(c, MHD_HTTP_NOT_FOUND, "not found: the MCP endpoint is " ENDPOINT);
    if (!post && strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
        return reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, ERR_TRANSPORT,
                           "method not allowed: use POST, GET or DELETE",
                           (struct header){MHD_HTTP_HEADER_ALLOW, "GET, POST, DELETE"});
    if (version != NULL && !http_version_supported(version))
        return refuse(c, MHD_HTTP_BAD_REQUEST, "unsupported MCP-Protocol-Version (supported: "
                                               "2025-11-25, 2025-06-18, 2025-03-26, "
                                               "2024-11-05)");
    if (post && !http_content_type_json(header(c, MHD_HTTP_HEADER_CONTENT_TYPE)))
        return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                      "unsupported media type: POST a JSON-RPC message as application/json");
    if (post && accept) {
        /* SSE when the client names it; else JSON, which a missing Accept
         * or a wildcard admits. */
        rq->want_sse = http_accepts(accept, "text/event-stream", false);
        if (!rq->want_sse && !http_accepts(accept, "application/json", true)) {
            rq->want_sse = http_accepts(accept, "text/event-stream", true);
            if (!rq->want_sse)
                return refuse(c, MHD_HTTP_NOT_ACCEPTABLE,
                              "not acceptable: Accept application/json or text/event-stream");
        }
    }
    if (!post && strcmp(method, "GET") == 0 && accept &&
        !http_accepts(accept, "text/event-stream", true))
        return refuse(c, MHD_HTTP_NOT_ACCEPTABLE, "not acceptable: GET opens a "
                                                  "text/event-stream");
    if (length && strtoull(length, NULL, 10) > MCP_MESSAGE_MAX) {
        /* Refused now when the body is not on its way yet (Expect:
         * 100-continue) or too big to drain; else drained first (take_body),
         * so that the client, still sending, does not get a reset instead
         * of the 413. */
        if (header(c, MHD_HTTP_HEADER_EXPECT) ||
            strtoull(length, NULL, 10) > MCP_MESSAGE_MAX + BODY_DISCARD_MAX)
            return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "message too large (limit 16 MiB)");
        rq->body.too_large = true;
    }
    rq->replied = false;
    return MHD_YES;
}

/* Keeps at most MCP_MESSAGE_MAX bytes; past that, reads on (so the client
 * sees the 413) up to BODY_DISCARD_MAX more, then hangs up. */
static enum MHD_Result take_body(struct http_request *rq, const char *data, size_t *size)
{
    size_t n = *size;

    *size = 0;
    return http_body_take(&rq->body, data, n, MCP_MESSAGE_MAX, BODY_DISCARD_MAX) < 0 ? MHD_NO
                                                                                     : MHD_YES;
}

/* ---- sessions ---- */

static time_t now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec;
}

static void session_unref(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    bool last = --hs->refs == 0;
    pthread_mutex_unlock(&hs->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&hs->s.lock);
    pthread_cond_destroy(&hs->s.idle);
    pthread_mutex_destroy(&hs->lock);
    pthread_cond_destroy(&hs->quiet);
    free(hs);
}

static void http_send(struct mcp_session *s, json_t *msg);

/* 128 bits from getrandom(2), as hex: not guessable, and never reused
 * while the server runs (checked against the table all the same). */
static bool random_id(char out[33])
{
    unsigned char b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return false;
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return true;
}

/* Compares session ids in constant time: they are the only secret a
 * client without a token holds. */
static bool same_session_id(const char *a, const char *b)
{
    return strlen(b) == 32 && CRYPTO_memcmp(a, b, 32) == 0;
}

/* Finds id in the table and takes a reference, or NULL. */
static struct http_session *session_get(struct mcp_http *srv, const char *id)
{
    struct http_session *found = NULL;

    pthread_mutex_lock(&srv->lock);
    for (struct http_session *hs = srv->sessions; hs && id; hs = hs->next)
        if (same_session_id(hs->s.id, id))
            found = hs;
    if (found) {
        pthread_mutex_lock(&found->lock);
        found->refs++;
        found->last_used = now_s();
        pthread_mutex_unlock(&found->lock);
    }
    pthread_mutex_unlock(&srv->lock);
    return found;
}


/* Whether id names a session in the table (srv->lock held). */
static bool id_in_use(const struct mcp_http *srv, const char *id)
{
    for (const struct http_session *hs = srv->sessions; hs; hs = hs->next)
        if (same_session_id(hs->s.id, id))
            return true;
    return false;
}

/* A new session in the table, with a reference for the caller; NULL with
 * *why set when the server is full or stopping. */
static struct http_session *session_new(struct mcp_http *srv, const char **why)
{
    struct http_session *hs = calloc(1, sizeof(*hs));

    *why = "out of memory";
    if (hs == NULL)
        return NULL;
    mcp_session_init(&hs->s, srv->cfg);
    hs->s.send = http_send;
    hs->s.transport = hs;
    hs->srv = srv;
    hs->refs = 2; /* the table's and the caller's */
    hs->last_used = now_s();
    pthread_mutex_init(&hs->lock, NULL);
    pthread_cond_init(&hs->quiet, NULL);
    pthread_mutex_lock(&srv->lock);
    *why = NULL;
    if (srv->stopping)
        *why = "the server is shutting down";
    else if (srv->n_sessions >= srv->max_sessions)
        *why = "too many sessions: end one (DELETE /mcp with its Mcp-Session-Id) or try later";
    while (*why == NULL) {
        if (!random_id(hs->s.id))
            *why = "getrandom failed";
        else if (!id_in_use(srv, hs->s.id))
            break;
    }
    if (*why == NULL) {
        hs->next = srv->sessions;
        srv->sessions = hs;
        srv->n_sessions++;
    }
    pthread_mutex_unlock(&srv->lock);
    if (*why != NULL) {
        hs->refs = 1;
        session_unref(hs);
        return NULL;
    }
    nsbox_info("MCP session %.8s... started", hs->s.id);
    return hs;
}

/* Counts a thread into mcp_session_handle(); false once the session ended. */
static bool session_enter(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    bool ok = !hs->ended;
    if (ok)
        hs->handlers++;
    pthread_mutex_unlock(&hs->lock);
    return ok;
}

static void session_leave(struct http_session *hs)
{
    pthread_mutex_lock(&hs->lock);
    if (--hs->handlers == 0)
        pthread_cond_broadcast(&hs->quiet);
    pthread_mutex_unlock(&hs->lock);
}

/* Ends hs, once: out of the table (later requests get 404), no new
 * messages in, running calls cancelled and waited for, sandboxes stopped,
 * then every open stream finished. */
static void session_end(struct mcp_http *srv, struct http_session *hs)
{
    bool mine = false;

    pthread_mutex_lock(&srv->lock);
    for (struct http_session **p = &srv->sessions; *p; p = &(*p)->next)
        if (*p == hs) {
            *p = hs->next;
            srv->n_sessions--;
            mine = true;
            break;
        }
    pthread_mutex_unlock(&srv->lock);
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
    for (struct http_stream *st = hs->streams; st; st = st->next) {
        st->ended = true;
        pthread_cond_broadcast(&st->wake);
    }
    pthread_mutex_unlock(&hs->lock);
    nsbox_info("MCP session %.8s... ended", hs->s.id);
    session_unref(hs); /* the table's reference */
}

/* Whether hs has been unused for the session timeout: nobody holds it but
 * the table (no request, no open stream) and no call runs (srv->lock held). */
static bool session_expired(struct mcp_http *srv, struct http_session *hs, time_t now)
{
    pthread_mutex_lock(&hs->lock);
    bool unused = hs->refs == 1 && now - hs->last_used >= (time_t)srv->session_timeout_s;
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
static void *reaper_thread(void *arg)
{
    struct mcp_http *srv = arg;
    unsigned tick = srv->session_timeout_s < 5 ? 1 : 5;

    pthread_mutex_lock(&srv->lock);
    while (!srv->stopping) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += tick;
        pthread_cond_timedwait(&srv->stop, &srv->lock, &t);
        struct http_session *hs = srv->sessions;
        time_t now = now_s();
        while (!srv->stopping && hs && !session_expired(srv, hs, now))
            hs = hs->next;
        if (srv->stopping || hs == NULL)
            continue;
        pthread_mutex_lock(&hs->lock);
        hs->refs++;
        pthread_mutex_unlock(&hs->lock);
        pthread_mutex_unlock(&srv->lock);
        nsbox_info("MCP session %.8s... unused for %u s: ending it", hs->s.id,
                   srv->session_timeout_s);
        session_end(srv, hs);
        session_unref(hs);
        pthread_mutex_lock(&srv->lock);
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

/* ---- streams ---- */

static int connection_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* A stream for hs (takes a session reference), not yet linked. */
static struct http_stream *stream_new(struct http_session *hs, enum stream_kind kind,
                                      json_t *id, json_t *token, int fd)
{
    struct http_stream *st = calloc(1, sizeof(*st));
    pthread_condattr_t attr;

    if (st == NULL)
        return NULL;
    *st = (struct http_stream){.hs = hs, .kind = kind, .fd = fd,
                               .request_id = id ? json_deep_copy(id) : NULL,
                               .progress_token = token ? json_deep_copy(token) : NULL};
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&st->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_lock(&hs->lock);
    hs->refs++;
    pthread_mutex_unlock(&hs->lock);
    return st;
}

/* hs->lock held. */
static void stream_link(struct http_stream *st)
{
    st->next = st->hs->streams;
    st->hs->streams = st;
    st->linked = true;
    if (st->kind == STREAM_GET)
        st->hs->has_get = true;
}

/* hs->lock held. */
static void stream_unlink(struct http_stream *st)
{
    if (!st->linked)
        return;
    st->hs->last_used = now_s();
    for (struct http_stream **p = &st->hs->streams; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            break;
        }
    st->linked = false;
    if (st->kind == STREAM_GET)
        st->hs->has_get = false;
}

static void stream_free(struct http_stream *st)
{
    struct http_session *hs = st->hs;
    json_decref(st->request_id);
    json_decref(st->progress_token);
    free(st->buf);
    pthread_cond_destroy(&st->wake);
    free(st);
    session_unref(hs);
}

/* An open POST stream still waiting for its response (hs->lock held). */
static bool waiting(const struct http_stream *st)
{
    return st->kind != STREAM_GET && !st->answered && !st->ended;
}

/* The stream a message from the session belongs on (hs->lock held). */
static struct http_stream *route(struct http_session *hs, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    struct http_stream *st;

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
            if (st->kind == STREAM_SSE && waiting(st) && st->progress_token &&
                json_equal(st->progress_token, token))
                return st;
        return NULL;
    }
    for (st = hs->streams; st; st = st->next) /* newest first */
        if (st->kind == STREAM_SSE && waiting(st))
            return st;
    for (st = hs->streams; st; st = st->next)
        if (st->kind == STREAM_GET && !st->ended)
            return st;
    return NULL;
}

/* Appends one SSE event.  jansson escapes every control character inside
 * strings, so the compact text has no newline and nothing a sandbox
 * printed can end the data line or forge an event. */
static bool sse_append(struct http_stream *st, const char *text, bool is_response)
{
    static const char head[] = "event: message\ndata: ";
    size_t n = strlen(text), need = sizeof(head) - 1 + n + 2;

    if (st->off > 0) {
        memmove(st->buf, st->buf + st->off, st->len - st->off);
        st->len -= st->off;
        st->off = 0;
    }
    if (!is_response && st->len + need > SSE_QUEUE_MAX)
        return false; /* a client that does not read loses notifications */
    char *nb = realloc(st->buf, st->len + need);
    if (nb == NULL)
        return false;
    st->buf = nb;
    memcpy(st->buf + st->len, head, sizeof(head) - 1);
    memcpy(st->buf + st->len + sizeof(head) - 1, text, n);
    memcpy(st->buf + st->len + need - 2, "\n\n", 2);
    st->len += need;
    return true;
}

/* The session's way out: called from connection threads and from tool
 * worker threads alike.  Steals msg. */
static void http_send(struct mcp_session *s, json_t *msg)
{
    struct http_session *hs = s->transport;
    bool is_response = msg && json_object_get(msg, "method") == NULL;
    bool is_error = msg && json_object_get(msg, "error") != NULL;
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

    if (text == NULL) {
        json_decref(msg);
        return;
    }
    pthread_mutex_lock(&hs->lock);
    struct http_stream *st = route(hs, msg);
    bool delivered = false;
    if (st != NULL && st->kind == STREAM_JSON) {
        if (is_response) { /* notifications cannot ride a JSON answer */
            st->buf = text;
            st->len = strlen(text);
            text = NULL;
            delivered = true;
        }
    } else if (st != NULL) {
        delivered = sse_append(st, text, is_response);
    }
    if (delivered && is_response) {
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

/* notifications/cancelled: the request's stream ends without a response
 * (MCP, "Cancellation": none is sent). */
static void streams_cancel(struct http_session *hs, json_t *request_id)
{
    pthread_mutex_lock(&hs->lock);
    for (struct http_stream *st = hs->streams; st && request_id; st = st->next)
        if (waiting(st) && json_equal(st->request_id, request_id)) {
            st->ended = true;
            pthread_cond_broadcast(&st->wake);
        }
    pthread_mutex_unlock(&hs->lock);
}

static bool peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) > 0 &&
           (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
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
    return peer_gone(st->fd) ? -1 : 0;
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
            n = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if ((w = wait_tick(st)) < 0) {
            n = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        /* A GET stream may stay silent for hours: a comment now and then
         * finds a peer that vanished without a FIN, and keeps proxies
         * from timing the stream out.  A POST stream needs one too: MHD
         * closes a connection that sent nothing for its timeout as soon
         * as this reader returns, so a call running longer than that (60
         * s; calls may run 600) lost its response after the headers. */
        quiet = w ? 0 : quiet + 1;
        if (quiet >= (int)st->hs->srv->keepalive_s && max >= sizeof(keepalive)) {
            memcpy(out, keepalive, sizeof(keepalive) - 1);
            n = (ssize_t)sizeof(keepalive) - 1;
            break;
        }
    }
    pthread_mutex_unlock(&st->hs->lock);
    return n;
}

static void sse_done(void *cls)
{
    struct http_stream *st = cls;
    pthread_mutex_lock(&st->hs->lock);
    stream_unlink(st);
    pthread_mutex_unlock(&st->hs->lock);
    stream_free(st);
}

/* Answers with st as an SSE stream; st now belongs to MHD. */
static enum MHD_Result reply_sse(struct MHD_Connection *c, struct http_stream *st,
                                 const char *session_id)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_read, st, sse_done);
    if (r == NULL) {
        sse_done(st);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r); /* sse_done runs once MHD is done with it */
    return ret;
}

/* Waits in the access handler (the connection's own thread) for the
 * response to an application/json POST. */
static enum MHD_Result reply_json(struct MHD_Connection *c, struct http_stream *st,
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
    stream_unlink(st);
    pthread_mutex_unlock(&hs->lock);
    stream_free(st);
    if (body)
        return reply(c, MHD_HTTP_OK, body, (struct header){session_id ? "Mcp-Session-Id" : NULL,
                                                           session_id},
                     (struct header){0});
    if (!here)
        return MHD_NO;
    if (session_gone)
        return refuse(c, MHD_HTTP_NOT_FOUND, "the session ended before the response");
    return reply(c, MHD_HTTP_ACCEPTED, NULL, (struct header){0}, (struct header){0});
}

/* ---- methods ---- */

/* A request: registered as a stream under its id before the session sees
 * it, so that even an immediate answer finds its way. */
static enum MHD_Result post_request(struct MHD_Connection *c, struct http_session *hs,
                                    struct http_request *rq, struct jsonrpc_msg *m,
                                    bool initialize)
{
    json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
    struct http_stream *st = stream_new(hs, rq->want_sse ? STREAM_SSE : STREAM_JSON, m->id,
                                        token, connection_fd(c));
    const char *why = NULL;
    unsigned status = MHD_HTTP_OK;

    if (st == NULL)
        return refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
    /* Ids must be unique among a session's outstanding requests: a call
     * whose client hung up still runs, and its response would otherwise
     * reach the new request. */
    pthread_mutex_lock(&hs->s.lock);
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (hs->s.calls[i].id != NULL && json_equal(hs->s.calls[i].id, m->id))
            why = "a request with this id is still running in this session";
    pthread_mutex_unlock(&hs->s.lock);
    pthread_mutex_lock(&hs->lock);
    for (struct http_stream *o = hs->streams; o && !hs->ended; o = o->next)
        if (waiting(o) && json_equal(o->request_id, m->id))
            why = "a request with this id is still running in this session";
    if (hs->ended)
        why = "session ended", status = MHD_HTTP_NOT_FOUND;
    else if (why)
        status = MHD_HTTP_BAD_REQUEST;
    else {
        stream_link(st);
        hs->handlers++;
    }
    pthread_mutex_unlock(&hs->lock);
    if (why) {
        stream_free(st);
        int code = status == MHD_HTTP_NOT_FOUND ? ERR_TRANSPORT : JSONRPC_INVALID_REQUEST;
        return reply_error(c, status, m->id, code, why, (struct header){0});
    }
    mcp_session_handle(&hs->s, rq->body.data, rq->body.len);
    session_leave(hs);
    const char *session_id = NULL;
    if (initialize) {
        /* initialize is answered on the spot: a failed one leaves no
         * session behind. */
        pthread_mutex_lock(&hs->lock);
        bool failed = st->answered && st->answer_is_error;
        pthread_mutex_unlock(&hs->lock);
        if (failed)
            session_end(hs->srv, hs);
        else
            session_id = hs->s.id;
    }
    return st->kind == STREAM_SSE ? reply_sse(c, st, session_id) : reply_json(c, st, session_id);
}

/* A notification or a response from the client: 202, no body. */
static enum MHD_Result post_message(struct MHD_Connection *c, struct http_session *hs,
                                    struct http_request *rq, struct jsonrpc_msg *m)
{
    if (!session_enter(hs))
        return refuse(c, MHD_HTTP_NOT_FOUND, "session ended");
    mcp_session_handle(&hs->s, rq->body.data, rq->body.len);
    session_leave(hs);
    if (m->method && strcmp(m->method, "notifications/cancelled") == 0)
        streams_cancel(hs, json_object_get(m->params, "requestId"));
    return reply(c, MHD_HTTP_ACCEPTED, NULL, (struct header){0}, (struct header){0});
}

static enum MHD_Result handle_post(struct mcp_http *srv, struct MHD_Connection *c,
                                   struct http_request *rq)
{
    struct jsonrpc_msg m;
    json_t *eid;
    const char *why = NULL;

    if (rq->body.too_large)
        return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "message too large (limit 16 MiB)");
    int code = jsonrpc_parse(rq->body.data ? rq->body.data : "", rq->body.len, &m, &eid, &why);
    if (code != 0) { /* not JSON, a batch, too deep, not JSON-RPC */
        enum MHD_Result r = reply_error(c, MHD_HTTP_BAD_REQUEST, eid, code, why,
                                        (struct header){0});
        json_decref(eid);
        return r;
    }
    json_decref(eid);
    const char *sid = header(c, "Mcp-Session-Id");
    bool request = m.method != NULL && m.id != NULL;
    bool init = request && strcmp(m.method, "initialize") == 0;
    struct http_session *hs = NULL;
    enum MHD_Result ret;
    if (init && sid)
        ret = refuse(c, MHD_HTTP_BAD_REQUEST,
                     "initialize starts a new session: send it without Mcp-Session-Id");
    else if (init && (hs = session_new(srv, &why)) == NULL)
        ret = refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, why);
    else if (!init && sid == NULL)
        ret = refuse(c, MHD_HTTP_BAD_REQUEST,
                     "bad request: no Mcp-Session-Id header (send initialize first)");
    else if (!init && (hs = session_get(srv, sid)) == NULL)
        ret = refuse(c, MHD_HTTP_NOT_FOUND,
                     "session not found (it ended or never existed): send initialize");
    else if (request)
        ret = post_request(c, hs, rq, &m, init);
    else
        ret = post_message(c, hs, rq, &m);
    if (hs)
        session_unref(hs);
    jsonrpc_msg_free(&m);
    return ret;
}

/* Looks up the request's session; on failure queues the error in *ret. */
static struct http_session *request_session(struct mcp_http *srv, struct MHD_Connection *c,
                                            enum MHD_Result *ret)
{
    const char *sid = header(c, "Mcp-Session-Id");
    struct http_session *hs = sid ? session_get(srv, sid) : NULL;
    if (sid == NULL)
        *ret = refuse(c, MHD_HTTP_BAD_REQUEST, "bad request: no Mcp-Session-Id header");
    else if (hs == NULL)
        *ret = refuse(c, MHD_HTTP_NOT_FOUND, "session not found (it ended or never existed)");
    return hs;
}

/* GET: the session's stream for messages that belong to no request. */
static enum MHD_Result handle_get(struct mcp_http *srv, struct MHD_Connection *c)
{
    enum MHD_Result ret = MHD_NO;
    struct http_session *hs = request_session(srv, c, &ret);
    if (hs == NULL)
        return ret;
    struct http_stream *st = stream_new(hs, STREAM_GET, NULL, NULL, connection_fd(c));
    unsigned status = 0;
    if (st == NULL)
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    else {
        pthread_mutex_lock(&hs->lock);
        if (hs->ended)
            status = MHD_HTTP_NOT_FOUND;
        else if (hs->has_get)
            status = MHD_HTTP_CONFLICT;
        else
            stream_link(st);
        pthread_mutex_unlock(&hs->lock);
    }
    if (status == 0)
        ret = reply_sse(c, st, NULL);
    else {
        if (st)
            stream_free(st);
        ret = refuse(c, status, status == MHD_HTTP_CONFLICT
                                    ? "conflict: this session already has a GET stream"
                                    : "session ended");
    }
    session_unref(hs);
    return ret;
}

/* DELETE: ends the session; its sandboxes are gone when the 200 goes out. */
static enum MHD_Result handle_delete(struct mcp_http *srv, struct MHD_Connection *c)
{
    enum MHD_Result ret = MHD_NO;
    struct http_session *hs = request_session(srv, c, &ret);
    if (hs == NULL)
        return ret;
    session_end(srv, hs);
    session_unref(hs);
    return reply(c, MHD_HTTP_OK, NULL, (struct header){0}, (struct header){0});
}

/* MHD calls this first when the headers are in (*con_cls NULL), then with
 * each piece of the body, then once more with *upload_size 0. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    struct mcp_http *srv = cls;
    struct http_request *rq = *con_cls;

    (void)version;
    if (rq == NULL) {
        rq = calloc(1, sizeof(*rq));
        if (rq == NULL)
            return MHD_NO;
        *con_cls = rq;
        return check_headers(srv, c, url, method, rq);
    }
    if (rq->replied) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size > 0)
        return take_body(rq, upload, upload_size);
    rq->replied = true;
    if (strcmp(method, "POST") == 0)
        return handle_post(srv, c, rq);
    if (strcmp(method, "GET") == 0)
        return handle_get(srv, c);
    return handle_delete(srv, c);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_request *rq = *con_cls;
    (void)cls, (void)c, (void)toe;
    if (rq) {
        http_body_free(&rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    nsbox_debug("http: %s", msg);
}

/* Binds the listening socket ourselves, for exact errors and port 0. */
static int listen_on(struct mcp_http *srv, const struct mcp_http_options *opt,
                     struct nsbox_err *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res, *ai;
    char port[8];
    int one = 1, r;

    snprintf(port, sizeof(port), "%u", opt->port);
    if ((r = getaddrinfo(opt->host, port, &hints, &res)) != 0)
        return nsbox_err_set(err, EINVAL, "cannot resolve %s: %s", opt->host, gai_strerror(r));
    for (ai = res; ai->ai_next && ai->ai_family != AF_INET; ai = ai->ai_next)
        ; /* "localhost": prefer 127.0.0.1 */
    if (!http_is_loopback(ai->ai_addr) && !srv->has_token) {
        freeaddrinfo(res);
        return nsbox_err_set(err, EPERM,
                             "refusing to serve HTTP on %s, which is not a loopback address, "
                             "without a token: anyone who reaches the port could run code; "
                             "set --token-file FILE or NSBOX_TOKEN",
                             opt->host);
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
        nsbox_err_sys(err, "cannot listen on %s port %u", opt->host, opt->port);
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        srv->port = srv->hosts.port =
            ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                          : ((struct sockaddr_in6 *)&ss)->sin6_port);
    srv->listen_fd = fd;
    return 0;
}

/* ---- starting and stopping ---- */

int mcp_http_parse_address(const char *arg, char *buf, size_t buf_size,
                           struct mcp_http_options *opt, struct nsbox_err *err)
{
    if (http_parse_address(arg, buf, buf_size, &opt->port, err) < 0)
        return -1;
    opt->host = buf;
    return 0;
}

static void server_free(struct mcp_http *srv)
{
    pthread_cond_destroy(&srv->stop);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}

struct mcp_http *mcp_http_start(struct mcp_server *cfg, const struct mcp_http_options *opt,
                                struct nsbox_err *err)
{
    struct mcp_http *srv = calloc(1, sizeof(*srv));

    if (srv == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    srv->cfg = cfg;
    srv->listen_fd = -1;
    srv->max_sessions = opt->max_sessions ? opt->max_sessions : 64;
    srv->session_timeout_s = opt->session_timeout_s ? opt->session_timeout_s : 3600;
    unsigned idle_s = opt->idle_timeout_s ? opt->idle_timeout_s : 60;
    /* Half MHD's connection timeout, at most SSE_KEEPALIVE_S (see sse_read). */
    srv->keepalive_s = idle_s / 2 > SSE_KEEPALIVE_S ? SSE_KEEPALIVE_S : idle_s / 2;
    if (srv->keepalive_s == 0)
        srv->keepalive_s = 1;
    for (size_t i = 0; i <= opt->n_allowed_hosts && i < HTTP_MAX_HOST_NAMES; i++) {
        snprintf(srv->names[i], sizeof(srv->names[i]), "%s",
                 i == 0 ? opt->host : opt->allowed_hosts[i - 1]);
        srv->hosts.names[srv->hosts.n_names++] = srv->names[i];
    }
    if (opt->token && *opt->token) {
        srv->has_token = true;
        sha256(opt->token, srv->token_hash);
    }
    pthread_mutex_init(&srv->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&srv->stop, &attr);
    pthread_condattr_destroy(&attr);
    if (mhd_load(err) < 0 || listen_on(srv, opt, err) < 0) {
        server_free(srv);
        return NULL;
    }
    /* A thread per connection (see the top of this file); poll(), not
     * select(), so descriptors above FD_SETSIZE work; ITC for quiesce. */
    srv->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC |
            MHD_USE_ERROR_LOG,
        0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, srv->listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, opt->max_connections ? opt->max_connections : 256u,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, opt->max_per_ip ? opt->max_per_ip : 64u,
        MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (srv->daemon == NULL) {
        nsbox_err_set(err, EIO, "libmicrohttpd could not start on %s port %u", opt->host,
                      srv->port);
        close(srv->listen_fd);
        server_free(srv);
        return NULL;
    }
    srv->has_reaper = pthread_create(&srv->reaper, NULL, reaper_thread, srv) == 0;
    if (!srv->has_reaper)
        nsbox_warn("no thread to end unused MCP sessions: they last until the server stops");
    return srv;
}

uint16_t mcp_http_port(const struct mcp_http *h)
{
    return h->port;
}

void mcp_http_stop(struct mcp_http *srv)
{
    /* Stop accepting first; connections already open get 404/503. */
    int fd = MHD_quiesce_daemon(srv->daemon);
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&srv->lock);
    srv->stopping = true;
    pthread_cond_broadcast(&srv->stop);
    pthread_mutex_unlock(&srv->lock);
    if (srv->has_reaper)
        pthread_join(srv->reaper, NULL);
    for (;;) {
        pthread_mutex_lock(&srv->lock);
        struct http_session *hs = srv->sessions;
        if (hs) {
            pthread_mutex_lock(&hs->lock);
            hs->refs++;
            pthread_mutex_unlock(&hs->lock);
        }
        pthread_mutex_unlock(&srv->lock);
        if (hs == NULL)
            break;
        session_end(srv, hs);
        session_unref(hs);
    }
    /* Every stream has ended, so no connection thread stays blocked in
     * our callbacks: MHD can close the connections and join the threads. */
    MHD_stop_daemon(srv->daemon);
    server_free(srv);
}
