/* The pure part of the HTTP transport: checks on header values and on
 * the address to listen on.  No allocation, no state, no libmicrohttpd;
 * core.c (Host, Origin, the listen address) and the endpoints (Accept,
 * Content-Type, MCP-Protocol-Version) apply them to every request;
 * tests/fuzz/fuzz_http.c drives them. */
#ifndef NSBOX_MCP_HTTP_POLICY_H
#define NSBOX_MCP_HTTP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../../common/err.h"

#define HTTP_MAX_HOST_NAMES 9

/* Who we are, for the Host header: our port, and the names besides the
 * loopback ones (the bind host, --allow-host; IPv6 without brackets). */
struct http_host_policy {
    uint16_t port;
    const char *names[HTTP_MAX_HOST_NAMES];
    size_t n_names;
};

/* True when Host names us: localhost, 127.0.0.1, [::1] or one of p's
 * names, with p's port (or without a port when that is 80). */
bool http_host_allowed(const struct http_host_policy *p, const char *host);

/* True for an Origin of a loopback page: http(s)://localhost, 127.0.0.1
 * or [::1], any port.  "null" and every other scheme are false. */
bool http_origin_allowed(const char *origin);

/* True when an Accept header admits type (e.g. "text/event-stream"): by
 * name, or with wildcards also as "* /" "*" or "text/" "*"; q=0 refuses. */
bool http_accepts(const char *accept, const char *type, bool wildcards);

/* True for "application/json" with or without parameters. */
bool http_content_type_json(const char *content_type);

/* True for an MCP-Protocol-Version nsbox speaks. */
bool http_version_supported(const char *version);

/* True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool http_is_loopback(const struct sockaddr *sa);

/* Parses "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT" (host 127.0.0.1):
 * the host (brackets removed) into buf, the port into *port.  Returns 0 or
 * -1 with err set. */
int http_parse_address(const char *arg, char *buf, size_t buf_size, uint16_t *port,
                       struct nsbox_err *err);

#endif
