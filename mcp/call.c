/* A call's slot, its cancellation and its log messages (call.h). */
#include "call.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "jsonrpc.h"
#include "resources/watches.h"

const char *const mcp_log_levels[] = {"debug", "info",     "notice", "warning",
                                      "error", "critical", "alert",  "emergency"};
const size_t mcp_n_log_levels = sizeof(mcp_log_levels) / sizeof(mcp_log_levels[0]);

int mcp_log_level_index(const char *name)
{
    for (size_t i = 0; name && i < mcp_n_log_levels; i++)
        if (strcmp(mcp_log_levels[i], name) == 0)
            return (int)i;
    return -1;
}

int mcp_call_claim(struct mcp_session *s, json_t *id, json_t *meta, int log_level)
{
    struct nsbox_err err;
    struct nsbox_cancel cancel;
    size_t slot = MCP_MAX_CALLS;

    for (size_t i = 0; i < MCP_MAX_CALLS && slot == MCP_MAX_CALLS; i++)
        if (s->calls[i].id == NULL)
            slot = i;
    if (slot == MCP_MAX_CALLS)
        return -1;
    if (nsbox_cancel_init(&cancel, &err) < 0)
        return -2;
    s->calls[slot] = (struct mcp_call){
        .id = json_incref(id),
        .progress_token = json_incref(json_object_get(meta, "progressToken")),
        .cancel = cancel,
        .log_level = log_level};
    return (int)slot;
}

void mcp_call_release(struct mcp_call *c)
{
    json_decref(c->id);
    json_decref(c->progress_token);
    nsbox_cancel_close(&c->cancel);
    *c = (struct mcp_call){.cancel = {-1}};
}

void mcp_call_finish(struct mcp_session *s, struct mcp_call *c)
{
    pthread_mutex_lock(&s->lock);
    mcp_call_release(c);
    s->n_running--;
    /* In the same hold of the lock: n_running never falls to 0 while a
     * call waits, nor does a new call take the slot before it. */
    struct mcp_queued_call *next = mcp_call_queue_take(s);
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    if (next != NULL)
        mcp_call_queue_start(s, next);
}

void mcp_call_cancel(struct mcp_call *c)
{
    if (c->listen) { /* no thread to come back: the subscription just ends */
        mcp_watches_listen_end(c->id);
        mcp_call_release(c);
        return;
    }
    c->cancelled = true;
    nsbox_cancel_fire(&c->cancel);
}

/* Sends notifications/message (via send_related when the request is
 * known, so HTTP puts it on that request's stream). */
static void send_log(struct mcp_session *s, json_t *request_id, const char *level, const char *msg)
{
    json_t *n = jsonrpc_notification(
        "notifications/message",
        json_pack("{s:s,s:s,s:s}", "level", level, "logger", "nsbox", "data", msg));
    if (request_id != NULL && s->send_related != NULL)
        s->send_related(s, request_id, n);
    else
        s->send(s, n);
}

void mcp_call_log(struct mcp_session *s, const struct mcp_call *call, const char *level,
                  const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int idx = mcp_log_level_index(level);

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    nsbox_info("%s", msg);
    /* A modern request without logLevel gets none (2026-07-28 "Logging":
     * MUST NOT); a legacy call follows its session's logging/setLevel. */
    bool wanted = call->log_level == MCP_LOG_SESSION
                      ? s->initialized && idx >= s->log_level
                      : call->log_level >= 0 && idx >= call->log_level;
    if (wanted)
        send_log(s, call->id, level, msg);
}
