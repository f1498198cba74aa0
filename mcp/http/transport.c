/* `nsbox serve --http` (see transport.h): the core, the session table and
 * the endpoints, started and stopped in order.  A new endpoint (legacy
 * SSE, file transfers) is one more register call in mcp_http_start. */
#include "transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "policy.h"
#include "sessions.h"
#include "streamable.h"
#include "tenants.h"

_Static_assert(MCP_HTTP_MAX_ALLOWED_HOSTS == HTTP_MAX_ALLOWED_HOSTS, "allowed_hosts sizes");

struct mcp_http {
    struct http_server *core;
    struct http_sessions *sessions;
    struct http_tenants *tenants;
    struct http_streamable streamable;
};

int mcp_http_parse_address(const char *arg, char *buf, size_t buf_size,
                           struct mcp_http_options *opt, struct nsbox_err *err)
{
    if (http_parse_address(arg, buf, buf_size, &opt->port, err) < 0)
        return -1;
    opt->host = buf;
    return 0;
}

/* The core's share of opt. */
static struct http_listen_options listen_options(const struct mcp_http_options *opt,
                                                 struct http_tenants *tenants)
{
    struct http_listen_options l = {
        .host = opt->host,
        .port = opt->port,
        .tenants = tenants,
        .n_allowed_hosts = opt->n_allowed_hosts,
        .max_connections = opt->max_connections,
        .max_per_ip = opt->max_per_ip,
        .idle_timeout_s = opt->idle_timeout_s,
        .not_found = "not found: the MCP endpoint is " MCP_HTTP_ENDPOINT,
    };
    memcpy(l.allowed_hosts, opt->allowed_hosts, sizeof(l.allowed_hosts));
    return l;
}

static void free_parts(struct mcp_http *h)
{
    if (h->core)
        http_server_free(h->core);
    if (h->sessions)
        http_sessions_free(h->sessions);
    if (h->tenants)
        http_tenants_free(h->tenants);
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
    h->tenants = http_tenants_new(cfg, opt->token, opt->token_from ? opt->token_from : "the token",
                                  opt->max_per_tenant,
                                  opt->stateless_idle_s ? opt->stateless_idle_s : 1800, err);
    if (h->tenants == NULL)
        goto fail;
    struct http_listen_options l = listen_options(opt, h->tenants);
    if ((h->core = http_server_new(&l, err)) == NULL)
        goto fail;
    h->streamable = (struct http_streamable){.sessions = h->sessions,
                                             .keepalive_s = http_server_keepalive_s(h->core)};
    if (http_streamable_register(h->core, &h->streamable, err) < 0 ||
        http_server_start(h->core, err) < 0)
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
