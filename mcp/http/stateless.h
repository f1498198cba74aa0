/* The stateless path of /mcp (MCP 2026-07-28, "Streamable HTTP"): a POST
 * without a session that carries a modern request.  It is checked the way
 * the revision's "Server Validation" says (MCP-Protocol-Version against
 * _meta, Mcp-Method against method, Mcp-Name against params.name or
 * params.uri, each Mcp-Param-{Name} against the tool argument whose schema
 * names it with x-mcp-header, values decoded from the base64 sentinel
 * first; any mismatch, missing or malformed header: 400 HeaderMismatch,
 * -32020), an unknown method gets 404 with -32601, and then it runs in its
 * tenant's session (tenants.h) under an id and progressToken of its own,
 * which the stream (streams.h) maps back to the client's: two clients of
 * one tenant may use the same ids.  The answer is JSON or an SSE stream as
 * the client's Accept says, with no Mcp-Session-Id; closing the stream
 * cancels the call.  Notifications and responses a client POSTs get 202
 * and reach nothing (this revision defines none over HTTP; a client's
 * notifications/cancelled must not name another client's call). */
#ifndef NSBOX_MCP_HTTP_STATELESS_H
#define NSBOX_MCP_HTTP_STATELESS_H

#include <stdbool.h>

#include "../jsonrpc.h"
#include "core.h"

#define MCP_ERR_HEADER_MISMATCH (-32020)
#define MCP_ERR_UNSUPPORTED_VERSION (-32022)

/* Whether the POSTed message m is a modern one: its MCP-Protocol-Version
 * header or its _meta names 2026-07-28 (mcp_version_modern). */
bool http_stateless_wanted(struct MHD_Connection *c, const struct jsonrpc_msg *m);

/* Answers the modern POST m (rq's body) as above; sse: the client asked
 * for an SSE answer. */
enum http_result http_stateless_post(struct MHD_Connection *c, struct http_request *rq,
                                     const struct jsonrpc_msg *m, bool sse, unsigned keepalive_s);

/* 400 with UnsupportedProtocolVersionError (-32022, data: supported and
 * requested) for id (may be NULL). */
enum http_result http_refuse_version(struct MHD_Connection *c, json_t *id, const char *requested);

#endif
