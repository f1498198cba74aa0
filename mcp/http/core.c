/* The HTTP core (see core.h): MHD, the listener, the checks every request
 * passes, dispatch to routes, the body, replies. */
#include "core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/log.h"
#include "../jsonrpc.h"

_Static_assert(HTTP_NO == (int)MHD_NO && HTTP_YES == (int)MHD_YES, "MHD_Result values");
_Static_assert(HTTP_READER_END == MHD_CONTENT_READER_END_OF_STREAM &&
                   HTTP_READER_ERROR == MHD_CONTENT_READER_END_WITH_ERROR,
               "MHD content reader values");

/* libmicrohttpd is loaded only when `serve --http` starts: linked, it
 * brings gnutls and eight more libraries that every nsbox start (run, exec)
 * would pay for, about 1.2 ms.  The twelve functions used, by dlsym. */
#include <dlfcn.h>

static struct {
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_create_response_from_callback) *create_response_from_callback;
    __typeof__(MHD_create_response_for_upgrade) *create_response_for_upgrade;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_quiesce_daemon) *quiesce_daemon;
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_upgrade_action) *upgrade_action;
} mhd;

static int mhd_load(struct nsbox_err *err)
{
    static const char *const names[] = {"MHD_add_response_header",
                                        "MHD_create_response_from_buffer",
                                        "MHD_create_response_from_callback",
                                        "MHD_create_response_for_upgrade",
                                        "MHD_destroy_response",
                                        "MHD_get_connection_info",
                                        "MHD_lookup_connection_value",
                                        "MHD_queue_response",
                                        "MHD_quiesce_daemon",
                                        "MHD_start_daemon",
                                        "MHD_stop_daemon",
                                        "MHD_upgrade_action"};
    void **slots = (void **)&mhd;

    if (mhd.start_daemon != NULL)
        return 0;
    void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return nsbox_err_set(err, ENOENT,
                             "cannot load libmicrohttpd (apt-get install "
                             "libmicrohttpd12): %s",
                             dlerror());
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
#define MHD_create_response_for_upgrade (*mhd.create_response_for_upgrade)
#define MHD_destroy_response (*mhd.destroy_response)
#define MHD_get_connection_info (*mhd.get_connection_info)
#define MHD_lookup_connection_value (*mhd.lookup_connection_value)
#define MHD_queue_response (*mhd.queue_response)
#define MHD_quiesce_daemon (*mhd.quiesce_daemon)
#define MHD_start_daemon (*mhd.start_daemon)
#define MHD_stop_daemon (*mhd.stop_daemon)
#define MHD_upgrade_action (*mhd.upgrade_action)

#define BODY_DISCARD_MAX (16u << 20) /* past the limit, bytes read before hanging up */
#define KEEPALIVE_MAX_S 25           /* something on a quiet stream at most this often */

struct http_server {
    struct MHD_Daemon *daemon;
    int listen_fd; /* ours until the daemon starts */
    uint16_t port;
    struct http_host_policy hosts; /* names point into names[] */
    char names[HTTP_MAX_HOST_NAMES][256];
    http_auth_fn authenticate; /* who a bearer token is (http_listen_options) */
    void *auth_ctx;
    bool has_token;
    unsigned max_connections, max_per_ip, idle_s, keepalive_s;
    const char *not_found;
    struct http_route routes[HTTP_MAX_ROUTES];
    size_t n_routes;
    unsigned busy; /* http_server_busy; __atomic */
};

/* ---- replies ---- */

enum http_result http_reply(struct MHD_Connection *c, unsigned status, char *body,
                            struct http_header h1, struct http_header h2)
{
    struct MHD_Response *r = body ? MHD_create_response_from_buffer(strlen(body), body,
                                                                    MHD_RESPMEM_MUST_FREE)
                                  : MHD_create_response_from_buffer(0, (void *)"",
                                                                    MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        free(body);
        return HTTP_NO;
    }
    if (body != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (h1.name)
        MHD_add_response_header(r, h1.name, h1.value);
    if (h2.name)
        MHD_add_response_header(r, h2.name, h2.value);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return (enum http_result)ret;
}

static char *dump_steal(json_t *msg)
{
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    return text;
}

enum http_result http_reply_error(struct MHD_Connection *c, unsigned status, json_t *id, int code,
                                  const char *message, struct http_header h)
{
    return http_reply(c, status, dump_steal(jsonrpc_error(id, code, message)), h, HTTP_NO_HEADER);
}

enum http_result http_refuse(struct MHD_Connection *c, unsigned status, const char *message)
{
    return http_reply_error(c, status, NULL, HTTP_ERR_TRANSPORT, message, HTTP_NO_HEADER);
}

enum http_result http_refuse_too_large(struct MHD_Connection *c, const struct http_route *r)
{
    char msg[64];
    snprintf(msg, sizeof(msg), "message too large (limit %zu MiB)", r->body_max >> 20);
    return http_refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
}

enum http_result http_reply_stream(struct MHD_Connection *c, unsigned status,
                                   const char *content_type, struct http_header h1,
                                   struct http_header h2, http_reader_fn read,
                                   void (*done)(void *cls), void *cls)
{
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read,
                                                               cls, done);
    if (r == NULL) {
        done(cls);
        return HTTP_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (h1.name)
        MHD_add_response_header(r, h1.name, h1.value);
    if (h2.name)
        MHD_add_response_header(r, h2.name, h2.value);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r); /* done runs once MHD is done with it */
    return (enum http_result)ret;
}

enum http_result http_reply_body(struct MHD_Connection *c, unsigned status, uint64_t size,
                                 size_t block, const struct http_header *headers,
                                 http_reader_fn read, void (*done)(void *cls), void *cls)
{
    struct MHD_Response *r = MHD_create_response_from_callback(
        size == HTTP_SIZE_UNKNOWN ? MHD_SIZE_UNKNOWN : size, block, read, cls, done);
    if (r == NULL) {
        done(cls);
        return HTTP_NO;
    }
    for (size_t i = 0; i < HTTP_MAX_HEADERS && headers[i].name; i++)
        MHD_add_response_header(r, headers[i].name, headers[i].value);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return (enum http_result)ret;
}

/* ---- upgrades (WebSocket) ---- */

struct upgrade {
    http_upgrade_fn fn;
    void *cls;
};

static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
                       size_t n, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    struct upgrade *u = cls;
    (void)c;
    (void)con_cls;
    u->fn(u->cls, sock, extra, n, (struct http_upgraded *)urh);
    free(u);
}

enum http_result http_reply_upgrade(struct MHD_Connection *c, const struct http_header *headers,
                                    http_upgrade_fn fn, void *cls)
{
    struct upgrade *u = malloc(sizeof(*u));
    struct MHD_Response *r = u ? MHD_create_response_for_upgrade(on_upgrade, u) : NULL;
    if (r == NULL) {
        free(u);
        return HTTP_NO;
    }
    *u = (struct upgrade){fn, cls};
    for (size_t i = 0; i < HTTP_MAX_HEADERS && headers[i].name; i++)
        MHD_add_response_header(r, headers[i].name, headers[i].value);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
    MHD_destroy_response(r);
    if (ret != MHD_YES)
        free(u);
    return (enum http_result)ret;
}

void http_upgraded_close(struct http_upgraded *u)
{
    MHD_upgrade_action((struct MHD_UpgradeResponseHandle *)u, MHD_UPGRADE_ACTION_CLOSE);
}

/* ---- the connection ---- */

const char *http_header_value(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

const char *http_query_value(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

int http_conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

bool http_peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) > 0 &&
           (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* ---- the checks every request passes ---- */

static const struct http_route *find_route(const struct http_server *srv, const char *url)
{
    for (size_t i = 0; i < srv->n_routes; i++) {
        const struct http_route *r = &srv->routes[i];
        if (r->prefix ? strncmp(url, r->path, strlen(r->path)) == 0 : strcmp(url, r->path) == 0)
            return r;
    }
    return NULL;
}

/* Whether method is in a list written as the Allow header: "GET, POST". */
static bool method_allowed(const char *list, const char *method)
{
    size_t n = strlen(method);

    for (const char *p = list; *p;) {
        p += strspn(p, ", ");
        size_t len = strcspn(p, ", ");
        if (len > 0 && len == n && strncmp(p, method, n) == 0)
            return true;
        p += len;
    }
    return false;
}

/* A Content-Length over the route's limit is refused now when the body is
 * not on its way yet (Expect: 100-continue) or too big to drain; else
 * drained first (http_body_take), so that the client, still sending, does
 * not get a reset instead of the 413. */
static enum http_result check_length(struct MHD_Connection *c, struct http_request *rq)
{
    const char *length = http_header_value(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    size_t max = rq->route->body_max;

    if (rq->route->piece != NULL) { /* streamed: the route bounds it */
        rq->replied = false;
        return HTTP_YES;
    }
    if (length && strtoull(length, NULL, 10) > max) {
        if (http_header_value(c, MHD_HTTP_HEADER_EXPECT) ||
            strtoull(length, NULL, 10) > max + BODY_DISCARD_MAX)
            return http_refuse_too_large(c, rq->route);
        rq->body.too_large = true;
    }
    rq->replied = false;
    return HTTP_YES;
}

/* The checks every request passes before its body is read, in the order
 * that leaks least: who may ask (Host, Origin, token), then where and
 * how (path, method, the route's own checks), then how much. */
static enum http_result check_request(struct http_server *srv, struct MHD_Connection *c,
                                      const char *url, struct http_request *rq)
{
    const char *origin = http_header_value(c, "Origin");

    const struct http_route *r = find_route(srv, url);
    bool probe = r != NULL && r->probe;

    rq->replied = true; /* unless every check passes */
    if (!probe && !http_host_allowed(&srv->hosts, http_header_value(c, MHD_HTTP_HEADER_HOST)))
        return http_refuse(c, MHD_HTTP_FORBIDDEN,
                           "forbidden: Host is not this server "
                           "(DNS rebinding protection)");
    if (origin != NULL && !(r != NULL && r->any_origin) && !http_origin_allowed(origin))
        return http_refuse(c, MHD_HTTP_FORBIDDEN, "forbidden: Origin is not a loopback page");
    rq->tenant = srv->authenticate(srv->auth_ctx,
                                   http_header_value(c, MHD_HTTP_HEADER_AUTHORIZATION));
    /* A route without bearer (a signed file URL is its own credential)
     * serves a request whose tenant is unknown (NULL). */
    if (rq->tenant == NULL && !(r && (r->no_bearer || r->probe)))
        return http_reply_error(
            c, MHD_HTTP_UNAUTHORIZED, NULL, HTTP_ERR_TRANSPORT,
            "unauthorized: send Authorization: Bearer <token>",
            (struct http_header){MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"nsbox\""});
    if (r == NULL)
        return http_refuse(c, MHD_HTTP_NOT_FOUND, srv->not_found);
    if (!method_allowed(r->methods, rq->method))
        return http_reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, HTTP_ERR_TRANSPORT,
                                r->method_hint,
                                (struct http_header){MHD_HTTP_HEADER_ALLOW, r->methods});
    rq->route = r;
    enum http_result res = r->check ? r->check(r->ctx, c, rq) : HTTP_READ_ON;
    return res == HTTP_READ_ON ? check_length(c, rq) : res;
}

/* ---- requests ---- */

/* MHD calls this first when the headers are in (*con_cls NULL), then with
 * each piece of the body, then once more with *upload_size 0. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_request *rq = *con_cls;

    (void)version;
    if (rq == NULL) {
        rq = calloc(1, sizeof(*rq));
        if (rq == NULL)
            return MHD_NO;
        rq->method = method;
        rq->url = url;
        rq->busy = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0;
        if (rq->busy)
            __atomic_add_fetch(&srv->busy, 1, __ATOMIC_SEQ_CST);
        *con_cls = rq;
        return check_request(srv, c, url, rq) == HTTP_NO ? MHD_NO : MHD_YES;
    }
    if (rq->replied) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        /* Keeps at most body_max bytes; past that, reads on (so the client
         * sees the 413) up to BODY_DISCARD_MAX more, then hangs up. */
        size_t n = *upload_size;
        *upload_size = 0;
        if (rq->route->piece != NULL)
            return rq->route->piece(rq->route->ctx, rq, upload, n) == HTTP_NO ? MHD_NO : MHD_YES;
        return http_body_take(&rq->body, upload, n, rq->route->body_max, BODY_DISCARD_MAX) < 0
                   ? MHD_NO
                   : MHD_YES;
    }
    rq->replied = true;
    return rq->route->handle(rq->route->ctx, c, rq) == HTTP_NO ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct http_request *rq = *con_cls;
    (void)c;
    if (rq && rq->busy)
        __atomic_sub_fetch(&srv->busy, 1, __ATOMIC_SEQ_CST);
    if (rq && rq->route && rq->route->end)
        rq->route->end(rq->route->ctx, rq, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
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

/* ---- the server ---- */

/* Binds the listening socket ourselves, for exact errors and port 0. */
static int listen_on(struct http_server *srv, const struct http_listen_options *opt,
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
        srv->port = srv->hosts.port = ntohs(ss.ss_family == AF_INET
                                                ? ((struct sockaddr_in *)&ss)->sin_port
                                                : ((struct sockaddr_in6 *)&ss)->sin6_port);
    srv->listen_fd = fd;
    return 0;
}

/* The limits, the Host names and the authentication hook of opt, into srv. */
static void configure(struct http_server *srv, const struct http_listen_options *opt)
{
    srv->listen_fd = -1;
    srv->not_found = opt->not_found;
    srv->max_connections = opt->max_connections ? opt->max_connections : 256u;
    srv->max_per_ip = opt->max_per_ip ? opt->max_per_ip : 64u;
    srv->idle_s = opt->idle_timeout_s ? opt->idle_timeout_s : 60;
    /* Half MHD's connection timeout, at most KEEPALIVE_MAX_S (see streams.c). */
    srv->keepalive_s = srv->idle_s / 2 > KEEPALIVE_MAX_S ? KEEPALIVE_MAX_S : srv->idle_s / 2;
    if (srv->keepalive_s == 0)
        srv->keepalive_s = 1;
    for (size_t i = 0; i <= opt->n_allowed_hosts && i < HTTP_MAX_HOST_NAMES; i++) {
        snprintf(srv->names[i], sizeof(srv->names[i]), "%s",
                 i == 0 ? opt->host : opt->allowed_hosts[i - 1]);
        srv->hosts.names[srv->hosts.n_names++] = srv->names[i];
    }
    srv->authenticate = opt->authenticate;
    srv->auth_ctx = opt->auth_ctx;
    srv->has_token = opt->need_token;
}

struct http_server *http_server_new(const struct http_listen_options *opt, struct nsbox_err *err)
{
    struct http_server *srv = calloc(1, sizeof(*srv));

    if (srv == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    configure(srv, opt);
    if (mhd_load(err) < 0 || listen_on(srv, opt, err) < 0) {
        free(srv);
        return NULL;
    }
    return srv;
}

int http_server_route(struct http_server *srv, const struct http_route *r, struct nsbox_err *err)
{
    if (srv->n_routes == HTTP_MAX_ROUTES)
        return nsbox_err_set(err, ENOSPC, "too many HTTP routes (%d)", HTTP_MAX_ROUTES);
    srv->routes[srv->n_routes++] = *r;
    return 0;
}

int http_server_start(struct http_server *srv, struct nsbox_err *err)
{
    /* A thread per connection (see core.h); poll(), not select(), so
     * descriptors above FD_SETSIZE work; ITC for quiesce. */
    srv->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC |
            MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE,
        0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, srv->listen_fd, MHD_OPTION_CONNECTION_LIMIT, srv->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->max_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
        srv->idle_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
    if (srv->daemon == NULL)
        return nsbox_err_set(err, EIO, "libmicrohttpd could not start on %s port %u", srv->names[0],
                             srv->port);
    srv->listen_fd = -1; /* MHD's now */
    return 0;
}

uint16_t http_server_port(const struct http_server *srv)
{
    return srv->port;
}

unsigned http_server_keepalive_s(const struct http_server *srv)
{
    return srv->keepalive_s;
}

void http_server_quiesce(struct http_server *srv)
{
    /* Connections already open get 404/503 from their endpoints. */
    int fd = srv->daemon ? MHD_quiesce_daemon(srv->daemon) : -1;
    if (fd >= 0)
        close(fd);
}

unsigned http_server_busy(const struct http_server *srv)
{
    return __atomic_load_n(&srv->busy, __ATOMIC_SEQ_CST);
}

void http_server_free(struct http_server *srv)
{
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    free(srv);
}
