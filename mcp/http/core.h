/* The HTTP core every nsbox HTTP endpoint shares: libmicrohttpd (MHD,
 * dlopen'ed when a server starts), the listening socket, the connection
 * limits, the checks every request passes before anything else (Host,
 * Origin, bearer token resolved to its tenant), dispatch by path and method to registered routes,
 * the request body read up to the route's limit, and replies.
 *
 * Only core.c includes microhttpd.h: an endpoint (streamable.c, and later
 * legacy SSE, file transfers, ...) is a file that fills a struct
 * http_route and answers through the http_reply*() functions below.
 * struct MHD_Connection stays opaque to it.
 *
 * Threads.  MHD runs one thread per connection, so a route's handler and
 * a stream's reader may block (a handler waiting for a response, a reader
 * waiting for the next event; MHD allows both in this mode only).  A slow
 * or idle client holds its own thread and nothing else: the connection
 * limits (total, per IP) bound how many threads one client can hold, and
 * MHD drops a connection that sends nothing for idle_timeout_s while a
 * request is being read. */
#ifndef NSBOX_MCP_HTTP_CORE_H
#define NSBOX_MCP_HTTP_CORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../common/err.h"
#include "body.h"
#include "policy.h"

struct MHD_Connection; /* MHD's; opaque outside core.c */
struct http_server;
struct http_tenant; /* tenants.h */

/* What a route's callbacks return to MHD (HTTP_NO: hang up). */
enum http_result { HTTP_NO = 0, HTTP_YES = 1, HTTP_READ_ON = 2 };

enum {
    HTTP_OK = 200,
    HTTP_ACCEPTED = 202,
    HTTP_BAD_REQUEST = 400,
    HTTP_UNAUTHORIZED = 401,
    HTTP_FORBIDDEN = 403,
    HTTP_NOT_FOUND = 404,
    HTTP_METHOD_NOT_ALLOWED = 405,
    HTTP_NOT_ACCEPTABLE = 406,
    HTTP_CONFLICT = 409,
    HTTP_CONTENT_TOO_LARGE = 413,
    HTTP_UNSUPPORTED_MEDIA_TYPE = 415,
    HTTP_SERVICE_UNAVAILABLE = 503,
};

#define HTTP_ERR_TRANSPORT (-32000) /* JSON-RPC "server error" for HTTP-level refusals */
#define HTTP_MAX_ROUTES 12

/* A header for a reply; name NULL: none. */
struct http_header {
    const char *name, *value;
};
#define HTTP_NO_HEADER ((struct http_header){0})

/* One request, from its headers to its end (MHD's per-request closure). */
struct http_request {
    const struct http_route *route;
    const char *method;         /* MHD's, valid until the request ends */
    const char *url;            /* MHD's (the path, unescaped), likewise */
    struct http_body body;      /* what came, up to route->body_max */
    bool replied;               /* a reply is queued (or the handler ran) */
    unsigned flags;             /* the route's own, e.g. set by its check */
    void *state;                /* the route's own; its end callback frees it */
    struct http_tenant *tenant; /* whose bearer token it carries (tenants.h) */
    bool busy;                  /* counted in http_server_busy */
};

/* Called once the headers are in and the core's checks passed, before the
 * body: returns HTTP_READ_ON to read it, else the result of the refusal it
 * queued. */
typedef enum http_result (*http_check_fn)(void *ctx, struct MHD_Connection *c,
                                          struct http_request *rq);
/* Called once the whole body is in: queues the reply (or blocks first). */
typedef enum http_result (*http_handle_fn)(void *ctx, struct MHD_Connection *c,
                                           struct http_request *rq);

/* A streaming route's body: called with each piece as it comes instead
 * of keeping it (body_max then unused).  HTTP_YES to go on, HTTP_NO to
 * hang up. */
typedef enum http_result (*http_piece_fn)(void *ctx, struct http_request *rq, const char *data,
                                          size_t len);
/* Called once when the request is over, answered or cut off (completed
 * false: the client went away or MHD gave up), to release rq->state. */
typedef void (*http_end_fn)(void *ctx, struct http_request *rq, bool completed);

struct http_route {
    const char *path;        /* the URL's path (no query) */
    bool prefix;             /* path is a prefix ("/files/") rather than exact */
    bool no_bearer;          /* no bearer token: the URL itself is the credential
                              * (Host and Origin are still checked) */
    bool probe;              /* a health probe (health.h): no bearer token and
                              * any Host (a kubelet sends the pod's IP) */
    bool any_origin;         /* any Origin (a terminal's URL is its own single-use
                              * credential; no cookie is ever read) */
    const char *methods;     /* allowed, as the Allow header says: "GET, POST" */
    const char *method_hint; /* the 405's message: "method not allowed: use ..." */
    size_t body_max;         /* body bytes kept; more is drained then refused */
    http_check_fn check;     /* may be NULL */
    http_handle_fn handle;
    http_piece_fn piece; /* NULL: the body is kept, up to body_max */
    http_end_fn end;     /* NULL: nothing to release */
    void *ctx;           /* the route's, passed to its callbacks */
};

#define HTTP_MAX_ALLOWED_HOSTS 8

/* The tenant a request's Authorization header (NULL when it has none)
 * names, or NULL when it names none. */
typedef struct http_tenant *(*http_auth_fn)(void *ctx, const char *authorization);

struct http_listen_options {
    const char *host; /* bind address: numeric IPv4/IPv6 or a name */
    uint16_t port;    /* 0: any free port */
    /* Who a request is: authenticate(auth_ctx, its Authorization header
     * or NULL) returns the tenant its bearer token names, or NULL for none
     * (the transport's tenant table: tenants.h; the core knows no tokens).
     * Without need_token (no tokens configured) only loopback binds are
     * served.  auth_ctx must outlive the server. */
    http_auth_fn authenticate;
    void *auth_ctx;
    bool need_token;
    const char *allowed_hosts[HTTP_MAX_ALLOWED_HOSTS]; /* more Host names */
    size_t n_allowed_hosts;
    unsigned max_connections; /* 0: 256 */
    unsigned max_per_ip;      /* 0: 64 */
    unsigned idle_timeout_s;  /* 0: 60 */
    const char *not_found;    /* the 404's message for a path no route has */
};

/* Loads MHD and binds the listening socket (so errors are exact and the
 * port is known); refuses a non-loopback address without a token.  Returns
 * the server, not yet serving, or NULL with err set.  opt->not_found must
 * outlive the server. */
struct http_server *http_server_new(const struct http_listen_options *opt, struct nsbox_err *err);

/* Adds a route (copied; r->ctx and the strings must outlive srv), before
 * http_server_start.  Returns 0, or -1 when the table is full. */
int http_server_route(struct http_server *srv, const struct http_route *r, struct nsbox_err *err);

/* Starts serving in MHD's threads.  Returns 0 or -1 with err set. */
int http_server_start(struct http_server *srv, struct nsbox_err *err);

/* The port actually bound (useful with port 0). */
uint16_t http_server_port(const struct http_server *srv);

/* How often a quiet stream should send something: half the idle timeout,
 * at most 25 s, at least 1 (see streams.c). */
unsigned http_server_keepalive_s(const struct http_server *srv);

/* Stops accepting connections; those already open are still served. */
void http_server_quiesce(struct http_server *srv);

/* Closes every connection (none may still block in a route's callbacks),
 * joins MHD's threads and frees srv. */
void http_server_free(struct http_server *srv);

/* Requests with a body (POST, PUT) that are not over yet: their answers
 * are still on the way to the client (a drain waits for them). */
unsigned http_server_busy(const struct http_server *srv);

/* ---- for routes, on the connection's thread ---- */

/* A request header's value, or NULL (case-insensitive name). */
const char *http_header_value(struct MHD_Connection *c, const char *name);

/* A query argument's value ("?sessionId=..."), or NULL. */
const char *http_query_value(struct MHD_Connection *c, const char *name);

/* The connection's socket (MHD's; do not close), or -1. */
int http_conn_fd(struct MHD_Connection *c);

/* True once the peer on fd has hung up (checked without blocking). */
bool http_peer_gone(int fd);

/* Queues status with body (owned JSON text, or NULL for none) and up to two
 * headers. */
enum http_result http_reply(struct MHD_Connection *c, unsigned status, char *body,
                            struct http_header h1, struct http_header h2);

/* An HTTP error with a JSON-RPC error body (MCP: "MAY comprise a JSON-RPC
 * error response that has no id"); id is borrowed, may be NULL. */
enum http_result http_reply_error(struct MHD_Connection *c, unsigned status, json_t *id, int code,
                                  const char *message, struct http_header h);

/* http_reply_error with no id, HTTP_ERR_TRANSPORT and no header. */
enum http_result http_refuse(struct MHD_Connection *c, unsigned status, const char *message);

/* 413 for a body over r->body_max. */
enum http_result http_refuse_too_large(struct MHD_Connection *c, const struct http_route *r);

/* MHD's content reader: bytes into out (at most max), HTTP_READER_END, or
 * HTTP_READER_ERROR (the connection is dropped); may block. */
typedef ssize_t (*http_reader_fn)(void *cls, uint64_t pos, char *out, size_t max);
#define HTTP_READER_END ((ssize_t)-1)
#define HTTP_READER_ERROR ((ssize_t)-2)

/* Queues status with a body of unknown length that read produces, with
 * content_type and up to two headers.  done(cls) runs once MHD is done with
 * it, also when queueing fails: cls belongs to the reply from here on. */
enum http_result http_reply_stream(struct MHD_Connection *c, unsigned status,
                                   const char *content_type, struct http_header h1,
                                   struct http_header h2, http_reader_fn read,
                                   void (*done)(void *cls), void *cls);

#define HTTP_SIZE_UNKNOWN UINT64_MAX
#define HTTP_MAX_HEADERS 8

/* Queues status with a body of size bytes (Content-Length; or
 * HTTP_SIZE_UNKNOWN) that read produces in pieces of up to block bytes,
 * with the headers (an array ended by a NULL name, at most
 * HTTP_MAX_HEADERS).  done(cls) as for http_reply_stream. */
enum http_result http_reply_body(struct MHD_Connection *c, unsigned status, uint64_t size,
                                 size_t block, const struct http_header *headers,
                                 http_reader_fn read, void (*done)(void *cls), void *cls);

/* A protocol upgrade (WebSocket): the connection's socket, handed to
 * the route once the 101 is sent; the route must call
 * http_upgraded_close(u) exactly once when done with it (never close()). */
struct http_upgraded;
typedef void (*http_upgrade_fn)(void *cls, int sock, const char *extra, size_t n,
                                struct http_upgraded *u);

/* Queues 101 Switching Protocols with headers (ended by a NULL name, at
 * most HTTP_MAX_HEADERS); once it is sent, fn(cls, ...) runs on the
 * connection's thread with the socket and the bytes MHD read past the
 * request.  If the 101 is never sent, fn never runs. */
enum http_result http_reply_upgrade(struct MHD_Connection *c, const struct http_header *headers,
                                    http_upgrade_fn fn, void *cls);
void http_upgraded_close(struct http_upgraded *u);

#endif
