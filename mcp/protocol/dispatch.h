/* The protocol's entry for the transports (transport_stdio.c, http/): a
 * session's messages in, its end.  The session itself is ../session.h. */
#ifndef NSBOX_MCP_PROTOCOL_DISPATCH_H
#define NSBOX_MCP_PROTOCOL_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "../session.h"

/* Handles one raw message (a line over stdio, a POST body over HTTP).
 * Sends responses through s->send, possibly later from a worker thread.
 * Returns true when the message was a request (a response will follow). */
bool mcp_session_handle(struct mcp_session *s, const char *text, size_t len);

/* Cancels the running calls and waits for them, then ends the session's
 * tasks and subscriptions and stops every sandbox of the session. */
void mcp_session_shutdown(struct mcp_session *s);

#endif
