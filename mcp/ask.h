/* Requests of the server's own to its client (MCP "elicitation/create"):
 * a call's thread asks the client of its session and waits for the answer.
 *
 * Who calls: a tool (tools/request_network.c) on its call's thread; the
 * protocol (protocol/dispatch.c) hands every JSON-RPC response that comes
 * from the client to mcp_ask_answer.
 *
 * Rules:
 *   - only in a session that began with initialize (legacy era): a
 *     2026-07-28 request has no session to be asked through, and its own
 *     input-required flow is not nsbox's yet (the tool refuses first);
 *   - ids are the server's own ("nsbox-ask-N", a counter per session), in
 *     JSON-RPC's other direction: they never meet the client's;
 *   - a response with an unknown id, a second one for the same id, one
 *     whose result is not an object, or one that is neither result nor
 *     error, is logged and ignored; an error response ends the wait
 *     (MCP_ASK_ERROR); nothing a client sends can crash or hang the server;
 *   - the wait ends on the answer, on the timeout, on the call's
 *     cancellation (notifications/cancelled, its sandbox's stop) and on the
 *     session's end (which cancels every call); a wait that ends without an
 *     answer tells the client with notifications/cancelled, so that its
 *     form goes away;
 *   - stdio writes the request on the session's output; Streamable HTTP
 *     puts it on the call's own SSE stream (the tools/call must have been
 *     answered as text/event-stream), else on the session's GET stream,
 *     else it cannot be sent (-1).  The client's response comes back as a
 *     POST, answered 202. */
#ifndef NSBOX_MCP_ASK_H
#define NSBOX_MCP_ASK_H

#include <jansson.h>

#include "../common/err.h"
#include "session.h"

enum mcp_ask_end {
    MCP_ASK_ANSWERED,  /* *answer: the client's result (an object) */
    MCP_ASK_ERROR,     /* *answer: the client's error ({code, message}) */
    MCP_ASK_TIMEOUT,   /* no answer within timeout_ms */
    MCP_ASK_CANCELLED, /* the call was cancelled, or the session ended */
};

/* Sends the request method with params (stolen) to call's client and
 * waits at most timeout_ms for its answer.  Returns an enum mcp_ask_end
 * (*answer a new reference for ANSWERED and ERROR, else NULL), or -1 with
 * err when the request could not be sent.  Takes s->lock itself. */
int mcp_ask(struct mcp_session *s, struct mcp_call *call, const char *method, json_t *params,
            unsigned timeout_ms, json_t **answer, struct nsbox_err *err);

/* msg is a JSON-RPC response from s's client (no method): ends the wait
 * of the request it answers, or is logged and dropped. */
void mcp_ask_answer(struct mcp_session *s, json_t *msg);

/* initialize's params.capabilities: whether the client declared form-mode
 * elicitation (capabilities.elicitation an object, empty or with "form":
 * MCP 2025-11-25 keeps an empty one meaning form). */
bool mcp_ask_client_has_form(json_t *capabilities);

#endif
