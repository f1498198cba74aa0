/* MCP over HTTP, as `nsbox serve --http` starts it: the HTTP core
 * (core.h: libmicrohttpd with a thread per connection, the listener, the
 * checks on every request), the session table (sessions.h) and the
 * endpoints registered on the core: Streamable HTTP (MCP 2025-03-26
 * .. 2026-07-28, "Transports": streamable.h, /mcp), the legacy HTTP+SSE
 * transport (2024-11-05: sse_legacy.h, /sse and /messages) and files by
 * signed URL (files.h, /files/).  Every session id is
 * an mcp_session of its own, so sandboxes stay with the client that made
 * them; clients without a session (2026-07-28) share their tenant's
 * (tenants.h).  The one header cli/ includes. */
#ifndef NSBOX_MCP_HTTP_TRANSPORT_H
#define NSBOX_MCP_HTTP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"
#include "../server.h"

#define MCP_HTTP_MAX_ALLOWED_HOSTS 8

struct mcp_http_options {
    const char *host; /* bind address: numeric IPv4/IPv6 or a name */
    uint16_t port;    /* 0: any free port (see mcp_http_port) */
    /* The bearer tokens: a token file's text (one tenant per line, see
     * http/reqmeta.h) or one token; NULL: none (loopback binds only).
     * token_from names where they came from, for messages. */
    const char *token;
    const char *token_from;
    size_t max_per_tenant;     /* kept sandboxes per tenant; 0: the per-session cap */
    unsigned stateless_idle_s; /* 0: 1800 (a stateless client's unused sandbox stops) */
    unsigned reconnect_idle_s; /* 0: off; else reconnect (tenants.h), sandboxes kept that long */
    /* Extra names accepted in the Host header (besides localhost,
     * 127.0.0.1, [::1] and host itself), e.g. the machine's name when
     * bound to 0.0.0.0. */
    const char *allowed_hosts[MCP_HTTP_MAX_ALLOWED_HOSTS];
    size_t n_allowed_hosts;
    size_t max_sessions;        /* 0: 64 */
    unsigned max_connections;   /* 0: 256 */
    unsigned max_per_ip;        /* 0: 64 */
    unsigned idle_timeout_s;    /* 0: 60 (a connection silent while a request is read) */
    unsigned session_timeout_s; /* 0: 3600 (a session with no request, no open
                                 * stream and no running call is ended) */
    /* File URLs (GET/PUT /files/TOKEN, mcp/files/urls.h). */
    const char *public_url;  /* NULL: http://HOST:PORT of the bound address */
    unsigned file_url_ttl_s; /* 0: 900 */
    uint64_t max_upload_mb;  /* 0: 1024 */
    /* Terminals (terminal_open, mcp/preview/terminal.h). */
    unsigned terminal_ttl_s; /* 0: file_url_ttl_s */
    unsigned max_terminals;  /* per session; 0: 4 */
};

struct mcp_http;

/* Parses "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT" (host 127.0.0.1)
 * into opt->host (points into buf) and opt->port.  Returns 0 or -1. */
int mcp_http_parse_address(const char *arg, char *buf, size_t buf_size,
                           struct mcp_http_options *opt, struct nsbox_err *err);

/* Starts serving cfg (which must outlive the server) in threads of its
 * own.  Refuses a non-loopback address without a token.  Returns the
 * server (stop it with mcp_http_stop) or NULL with err set. */
struct mcp_http *mcp_http_start(struct mcp_server *cfg, const struct mcp_http_options *opt,
                                struct nsbox_err *err);

/* The port actually bound (useful with port 0). */
uint16_t mcp_http_port(const struct mcp_http *h);

/* The base of the file URLs handed out ("http://127.0.0.1:8080"). */
const char *mcp_http_public_url(const struct mcp_http *h);

/* Drains h (serve's first SIGTERM; docs/tools.md "Fleet"): from now on
 * /readyz answers 503, initialize 503, and calls that would make a
 * sandbox get a tool error saying the node drains; everything else is
 * served.  Returns once no call runs and every answer went out (false), or
 * once grace_s passed with some still under way (true).  Then call
 * mcp_http_stop. */
bool mcp_http_drain(struct mcp_http *h, unsigned grace_s);

/* Stops accepting, ends every session (running calls are cancelled, the
 * sessions' sandboxes stop), closes every connection and frees h. */
void mcp_http_stop(struct mcp_http *h);

#endif
