/* The legacy HTTP+SSE transport of MCP 2024-11-05 ("Transports", "HTTP
 * with SSE"), which n8n and many agent frameworks still speak, beside
 * Streamable HTTP on the same server.  The contract:
 *
 *   GET  /sse                   opens a session and its one SSE stream; the
 *                               first event is "endpoint", its data
 *                               /messages?sessionId=ID; every message of
 *                               the session (responses, notifications)
 *                               follows as a "message" event, with a
 *                               keep-alive comment on a quiet stream.
 *   POST /messages?sessionId=ID one JSON-RPC message (application/json):
 *                               202 with no body once the session has it;
 *                               the response goes out on the stream.
 *
 * Everything else is as on /mcp: the core's Host, Origin and bearer
 * token checks and connection limits, the body limit, the session table
 * (and its cap), sandboxes owned by the session.  A legacy session is
 * reached only through /messages (Mcp-Session-Id on /mcp does not find
 * it), and only by requests that speak for the token that opened it
 * (owner_ok in sse_legacy.c, the one place to extend for tenants).  It
 * ends when its stream closes (calls cancelled, sandboxes stopped; the
 * keep-alives find a peer that vanished) or the server stops.  The
 * table's reaper treats it as a Streamable HTTP session with an open GET
 * stream: in use while its stream is open, so an idle but connected
 * client keeps its sandboxes.
 *
 * Refusals, each a JSON-RPC error body with no id: 400 no sessionId, 400
 * a body that is not one JSON-RPC message (with the JSON-RPC code), 404 an
 * unknown, ended or other client's session, 405 a wrong method, 406 an
 * Accept without text/event-stream on GET, 413 a body over the limit, 415
 * a body that is not application/json, 503 too many sessions; 401 and 403
 * come from the core. */
#ifndef NSBOX_MCP_HTTP_SSE_LEGACY_H
#define NSBOX_MCP_HTTP_SSE_LEGACY_H

#include <stdbool.h>

#include "core.h"
#include "sessions.h"

#define MCP_HTTP_SSE_ENDPOINT "/sse"
#define MCP_HTTP_MESSAGES_ENDPOINT "/messages"

struct http_sse_legacy {
    struct http_sessions *sessions;
    unsigned keepalive_s; /* http_server_keepalive_s() of the server */
};

/* Registers /sse and /messages on srv, served from ep (which must outlive
 * srv).  Returns 0 or -1 with err set. */
int http_sse_legacy_register(struct http_server *srv, struct http_sse_legacy *ep,
                             struct nsbox_err *err);

#endif
