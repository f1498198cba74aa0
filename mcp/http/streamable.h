/* The Streamable HTTP endpoint of MCP (2025-03-26 .. 2025-11-25,
 * "Transports"): /mcp, where POST carries one JSON-RPC message (a request
 * is answered as application/json or as an SSE stream, anything else with
 * 202), GET opens the session's standing SSE stream, and DELETE ends the
 * session.  initialize without Mcp-Session-Id starts a session; every
 * other legacy request names one, of its own tenant (tenants.h).  A
 * 2026-07-28 request needs no session (stateless.h). */
#ifndef NSBOX_MCP_HTTP_STREAMABLE_H
#define NSBOX_MCP_HTTP_STREAMABLE_H

#include "core.h"
#include "sessions.h"

#define MCP_HTTP_ENDPOINT "/mcp"

struct http_streamable {
    struct http_sessions *sessions;
    unsigned keepalive_s; /* http_server_keepalive_s() of the server */
};

/* Registers /mcp on srv, served from ep (which must outlive srv).
 * Returns 0 or -1 with err set. */
int http_streamable_register(struct http_server *srv, struct http_streamable *ep,
                             struct nsbox_err *err);

#endif
