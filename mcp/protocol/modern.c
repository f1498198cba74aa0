/* The methods only the modern era (2026-07-28) has: server/discover and
 * subscriptions/listen.
 *
 * nsbox's lists never change while it runs (the tools come from its
 * configuration), so the list-changed kinds are never honoured; the
 * files of notifications.resourceSubscriptions are (resources/watches.h:
 * the acknowledgment then names the URIs watched).  Listen acknowledges
 * with the subset it honours, then stays open, holding a slot of the session's calls, until
 * the client cancels it (notifications/cancelled on stdio, closing the
 * stream over HTTP: mcp_call_cancel frees the slot, no response) or the
 * session ends (mcp_listens_close: a completion result, the graceful
 * closure of "Subscriptions", then notifications/cancelled, which
 * "Cancellation" requires of a server that tears one down).  It needs the transport's send_related
 * (../session.h), which puts the acknowledgment on the listen's own stream;
 * without one listen is an unknown method, which "Subscriptions" allows a
 * server that declares no listChanged. */
#include <string.h>

#include "../call.h"
#include "../jsonrpc.h"
#include "../resources/watches.h"
#include "request.h"

/* Open subscriptions a session may hold: each takes a call slot. */
#define MAX_LISTENS 8

void mcp_handle_discover(const struct mcp_req *rq)
{
    json_t *res = json_pack("{s:o,s:o,s:s}", "supportedVersions", mcp_versions_json(),
                            "capabilities", mcp_server_capabilities(rq), "instructions",
                            mcp_instructions);
    mcp_cacheable(rq, res, MCP_LIST_TTL_MS, "public");
    mcp_reply(rq, res);
}

/* Takes a free call slot for the listen rq (s->lock held); -1: none, or
 * too many listens already. */
static int take_slot(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    size_t listens = 0;
    int slot = -1;
    for (size_t i = 0; i < MCP_MAX_CALLS; i++) {
        if (s->calls[i].id != NULL && s->calls[i].listen)
            listens++;
        else if (s->calls[i].id == NULL && slot < 0)
            slot = (int)i;
    }
    if (slot < 0 || listens >= MAX_LISTENS)
        return -1;
    s->calls[slot] = (struct mcp_call){
        .id = json_incref(rq->id), .cancel = {-1}, .log_level = -1, .listen = true};
    return slot;
}

void mcp_handle_listen(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    json_t *filter = json_object_get(rq->params, "notifications");

    /* The acknowledgment must reach the listen's own stream: a transport
     * that cannot say where a message belongs has no subscriptions (and
     * nsbox declares no listChanged that a client would miss). */
    if (s->send_related == NULL) {
        mcp_reply_error(rq, JSONRPC_METHOD_NOT_FOUND,
                        "subscriptions/listen is not available on this transport");
        return;
    }
    if (filter != NULL && !json_is_object(filter)) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "notifications must be an object");
        return;
    }
    pthread_mutex_lock(&s->lock);
    int slot = take_slot(rq);
    pthread_mutex_unlock(&s->lock);
    if (slot < 0) {
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR,
                        "too many subscriptions open at once; cancel one first");
        return;
    }
    /* Files to watch: a thread starts them, then acknowledges. */
    if (mcp_watches_listen(rq))
        return;
    /* Acknowledged: none of the kinds asked for (the lists never change,
     * there are no resource updates to send), which is what the filter
     * says the server agreed to honour. */
    json_t *ack = jsonrpc_notification(
        "notifications/subscriptions/acknowledged",
        json_pack("{s:{s:O},s:{}}", "_meta", MCP_META_SUBSCRIPTION_ID, rq->id, "notifications"));
    s->send_related(s, rq->id, ack);
}

void mcp_listens_close(struct mcp_session *s)
{
    for (;;) {
        json_t *id = NULL;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < MCP_MAX_CALLS && id == NULL; i++)
            if (s->calls[i].id != NULL && s->calls[i].listen) {
                id = json_incref(s->calls[i].id);
                mcp_call_release(&s->calls[i]);
            }
        pthread_mutex_unlock(&s->lock);
        if (id == NULL)
            return;
        struct mcp_req rq = {.s = s, .id = id, .era = MCP_ERA_MODERN};
        mcp_reply(&rq, json_pack("{s:{s:O}}", "_meta", MCP_META_SUBSCRIPTION_ID, id));
        /* "Cancellation": a server tearing a subscription down says so
         * with notifications/cancelled (the stdio form of closing its
         * stream); after the result, which a client takes first. */
        s->send_related(s, id,
                        jsonrpc_notification("notifications/cancelled",
                                             json_pack("{s:O,s:s}", "requestId", id, "reason",
                                                       "the server is shutting down")));
        json_decref(id);
    }
}
