/* `nsbox serve --http` (see transport.h): the core, the session table and
 * the endpoints (Streamable HTTP, legacy SSE), started and stopped in
 * order.  A new endpoint (file transfers) is one more register call in
 * mcp_http_start. */
#include "transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../../common/log.h"
#include "../pool.h"
#include "../preview/terminal.h"

#include "core.h"
#include "files.h"
#include "health.h"
#include "policy.h"
#include "sessions.h"
#include "sse_legacy.h"
#include "streamable.h"
#include "tenants.h"
#include "terminal.h"

_Static_assert(MCP_HTTP_MAX_ALLOWED_HOSTS == HTTP_MAX_ALLOWED_HOSTS, "allowed_hosts sizes");

struct mcp_http {
    struct mcp_server *cfg;
    struct http_server *core;
    struct http_sessions *sessions;
    struct http_tenants *tenants;
    struct http_streamable streamable;
    struct http_sse_legacy sse_legacy;
    struct mcp_file_urls urls;
    struct http_files files;
    struct http_health health;
    struct mcp_terminals *terminals; /* terminal_open's (mcp/preview/terminal.h) */
};

int mcp_http_parse_address(const char *arg, char *buf, size_t buf_size,
                           struct mcp_http_options *opt, struct nsbox_err *err)
{
    if (http_parse_address(arg, buf, buf_size, &opt->port, err) < 0)
        return -1;
    opt->host = buf;
    return 0;
}

/* The core's authentication hook: the tenant table's lookup. */
static struct http_tenant *authenticate(void *ctx, const char *authorization)
{
    return http_tenants_find(ctx, authorization);
}

/* The core's share of opt. */
static struct http_listen_options listen_options(const struct mcp_http_options *opt,
                                                 struct http_tenants *tenants)
{
    struct http_listen_options l = {
        .host = opt->host,
        .port = opt->port,
        .authenticate = authenticate,
        .auth_ctx = tenants,
        .need_token = http_tenants_need_token(tenants),
        .n_allowed_hosts = opt->n_allowed_hosts,
        .max_connections = opt->max_connections,
        .max_per_ip = opt->max_per_ip,
        .idle_timeout_s = opt->idle_timeout_s,
        .not_found = "not found: the MCP endpoint is " MCP_HTTP_ENDPOINT
                     " (legacy HTTP+SSE clients: " MCP_HTTP_SSE_ENDPOINT ")",
    };
    memcpy(l.allowed_hosts, opt->allowed_hosts, sizeof(l.allowed_hosts));
    return l;
}

/* The file URLs' key, base, lifetime and ceiling.  The key is random and
 * in memory only: the URLs of a server die with it.  Returns 0 or -1. */
static int file_urls(struct mcp_http *h, const struct mcp_http_options *opt, struct nsbox_err *err)
{
    struct mcp_file_urls *u = &h->urls;
    bool v6 = strchr(opt->host, ':') != NULL;

    if (getrandom(u->key, sizeof(u->key), 0) != (ssize_t)sizeof(u->key))
        return nsbox_err_sys(err, "getrandom (the file URLs' key)");
    if (opt->public_url)
        snprintf(u->base, sizeof(u->base), "%s", opt->public_url);
    else
        snprintf(u->base, sizeof(u->base), "http://%s%s%s:%u", v6 ? "[" : "", opt->host,
                 v6 ? "]" : "", http_server_port(h->core));
    size_t n = strlen(u->base);
    while (n > 0 && u->base[n - 1] == '/')
        u->base[--n] = '\0';
    u->ttl_s = opt->file_url_ttl_s ? opt->file_url_ttl_s : MCP_FILE_TTL_DEFAULT;
    u->max_upload = (opt->max_upload_mb ? opt->max_upload_mb : MCP_UPLOAD_MB_DEFAULT) << 20;
    h->files = (struct http_files){.sessions = h->sessions, .tenants = h->tenants, .urls = u};
    return http_files_register(h->core, &h->files, err);
}

static void free_parts(struct mcp_http *h)
{
    if (h->cfg && h->cfg->file_urls == &h->urls)
        h->cfg->file_urls = NULL;
    /* Every terminal ends (its socket closed) before MHD stops. */
    mcp_terminals_stop(h->terminals);
    if (h->cfg && h->cfg->terminals == h->terminals)
        h->cfg->terminals = NULL;
    explicit_bzero(h->urls.key, sizeof(h->urls.key));
    if (h->core)
        http_server_free(h->core);
    if (h->sessions)
        http_sessions_free(h->sessions);
    if (h->tenants)
        http_tenants_free(h->tenants);
    http_health_destroy(&h->health);
    mcp_terminals_free(h->terminals);
    free(h);
}

struct mcp_http *mcp_http_start(struct mcp_server *cfg, const struct mcp_http_options *opt,
                                struct nsbox_err *err)
{
    struct mcp_http *h = calloc(1, sizeof(*h));

    if (h != NULL)
        h->sessions = http_sessions_new(cfg, opt->max_sessions ? opt->max_sessions : 64,
                                        opt->session_timeout_s ? opt->session_timeout_s : 3600);
    if (h == NULL || h->sessions == NULL) {
        free(h);
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    h->cfg = cfg;
    h->tenants = http_tenants_new(cfg, opt->token, opt->token_from ? opt->token_from : "the token",
                                  opt->max_per_tenant,
                                  opt->stateless_idle_s ? opt->stateless_idle_s : 1800, err);
    if (h->tenants == NULL)
        goto fail;
    http_tenants_reconnect(h->tenants, h->sessions, opt->reconnect_idle_s);
    struct http_listen_options l = listen_options(opt, h->tenants);
    if ((h->core = http_server_new(&l, err)) == NULL)
        goto fail;
    unsigned keepalive_s = http_server_keepalive_s(h->core);
    h->streamable = (struct http_streamable){.sessions = h->sessions, .keepalive_s = keepalive_s};
    h->sse_legacy = (struct http_sse_legacy){.sessions = h->sessions, .keepalive_s = keepalive_s};
    if (http_streamable_register(h->core, &h->streamable, err) < 0 ||
        http_sse_legacy_register(h->core, &h->sse_legacy, err) < 0 || file_urls(h, opt, err) < 0 ||
        http_health_register(h->core, &h->health, cfg, h->sessions, err) < 0 ||
        (h->terminals = mcp_terminals_new(opt->terminal_ttl_s ? opt->terminal_ttl_s : h->urls.ttl_s,
                                          opt->max_terminals, err)) == NULL ||
        http_terminal_register(h->core, &h->terminals, err) < 0)
        goto fail;
    cfg->file_urls = &h->urls; /* before the first request can ask for one */
    cfg->terminals = h->terminals;
    if (http_server_start(h->core, err) < 0)
        goto fail;
    http_sessions_start_reaper(h->sessions);
    http_tenants_start_reaper(h->tenants);
    return h;
fail:
    free_parts(h);
    return NULL;
}

uint16_t mcp_http_port(const struct mcp_http *h)
{
    return http_server_port(h->core);
}

const char *mcp_http_public_url(const struct mcp_http *h)
{
    return h->urls.base;
}

/* Calls running anywhere, and answers still on their way. */
static size_t busy(struct mcp_http *h)
{
    size_t running = 0;
    http_sessions_count(h->sessions, NULL, &running);
    return running + http_tenants_running(h->tenants) + http_server_busy(h->core);
}

bool mcp_http_drain(struct mcp_http *h, unsigned grace_s)
{
    struct timespec now, until;
    mcp_node_drain_begin(h->cfg);
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += grace_s;
    for (;;) {
        size_t n = busy(h);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (n == 0)
            return false;
        if (now.tv_sec > until.tv_sec ||
            (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec)) {
            nsbox_info("draining: %zu calls or answers still under way after %u s", n, grace_s);
            return true;
        }
        /* Polled: calls end in many sessions, and nothing here is urgent. */
        struct timespec tick = {0, 50 * 1000000};
        nanosleep(&tick, NULL);
    }
}

void mcp_http_stop(struct mcp_http *h)
{
    /* Stop accepting first; connections already open get 404/503. */
    http_server_quiesce(h->core);
    http_sessions_stop(h->sessions);
    http_tenants_stop(h->tenants);
    /* Every stream has ended, so no connection thread stays blocked in
     * our callbacks: the core can close the connections and join the
     * threads. */
    free_parts(h);
}
