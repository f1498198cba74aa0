/* The protocol's entry (dispatch.h): mcp_session_handle, which parses a
 * message, decides its era (era.c), and hands it to its method
 * (methods.c): a modern request to a method of the modern era at once, a
 * legacy one as its session's handshake allows; and the session's end.
 * Protocol errors are JSON-RPC errors; tool failures are isError results
 * the model can act on. */
#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

#include "../ask.h"
#include "../call.h"
#include "../jsonrpc.h"
#include "../pause.h"
#include "../resources/resources.h"
#include "../resources/watches.h"
#include "../sandboxes.h"
#include "../tasks/tasks.h"
#include "request.h"

/* A modern request: stateless, served whatever the session's handshake. */
static void dispatch_modern(struct mcp_req *rq, const struct mcp_method *m)
{
    if (m != NULL && (m->flags & MCP_M_MODERN))
        m->handle(rq);
    else /* initialize, ping, logging/setLevel and unknown ones */
        mcp_reply_error(rq, JSONRPC_METHOD_NOT_FOUND, "method not found");
}

static void dispatch_legacy(struct mcp_req *rq, const struct mcp_method *m)
{
    if (m != NULL && (m->flags & MCP_M_BEFORE_INIT))
        m->handle(rq);
    else if (!rq->s->initialized)
        mcp_reply_error(rq, MCP_NOT_INITIALIZED, "call initialize first");
    else if (m != NULL && (m->flags & MCP_M_LEGACY))
        m->handle(rq);
    else
        mcp_reply_error(rq, JSONRPC_METHOD_NOT_FOUND, "method not found");
}

static void dispatch(struct mcp_req *rq)
{
    const char *why;
    json_t *data;

    if (strcmp(rq->method, "notifications/cancelled") == 0) {
        mcp_handle_cancelled(rq);
        return;
    }
    if (rq->id == NULL)
        return; /* initialized, roots/list_changed, unknown ones: never answered */
    int code = mcp_era_decide(rq, &why, &data);
    if (code != 0)
        mcp_reply_error_data(rq, code, why, data);
    else if (rq->era == MCP_ERA_MODERN)
        dispatch_modern(rq, mcp_method_find(rq->method));
    else
        dispatch_legacy(rq, mcp_method_find(rq->method));
}

bool mcp_session_handle(struct mcp_session *s, const char *text, size_t len)
{
    struct jsonrpc_msg m;
    json_t *err_id;
    const char *why = NULL;

    int code = jsonrpc_parse(text, len, &m, &err_id, &why);
    if (code != 0) {
        s->send(s, jsonrpc_error(err_id, code, why));
        json_decref(err_id);
        return true;
    }
    json_decref(err_id);
    if (m.method == NULL) { /* a response from the client: to a request of nsbox's (ask.h) */
        mcp_ask_answer(s, m.root);
        jsonrpc_msg_free(&m);
        return false;
    }
    struct mcp_req rq = {.s = s,
                         .id = m.id,
                         .method = m.method,
                         .params = m.params,
                         .meta = json_object_get(m.params, "_meta")};
    dispatch(&rq);
    jsonrpc_msg_free(&m);
    return rq.id != NULL;
}

void mcp_session_shutdown(struct mcp_session *s)
{
    mcp_call_queue_drop(s); /* what waits for a slot never starts */
    pthread_mutex_lock(&s->lock);
    /* Cancel whatever runs, then wait for the calls to come back. */
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].id != NULL && !s->calls[i].listen)
            mcp_call_cancel(&s->calls[i]);
    while (s->n_running > 0)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    mcp_autopause_forget(s); /* before its sandboxes go (or move on) */
    mcp_tasks_free(s);
    mcp_watches_session_end(s);
    mcp_listens_close(s);
    if (s->hand_over != NULL) /* reconnect: they outlive the session */
        s->hand_over(s);
    mcp_sandboxes_stop_all(s);
    mcp_resources_forget(s);
}
