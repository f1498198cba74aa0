/* The tasks methods (tasks/get, tasks/result, tasks/list, tasks/cancel,
 * tasks/update), the capability and per-tool declarations, and which
 * calls run as tasks (tasks.h). */
#include <stdlib.h>
#include <string.h>

#include "../call.h"
#include "../jsonrpc.h"
#include "../server.h"
#include "internal.h"

static const char *const task_tools[] = {"execute_code", "run_command", "install_packages"};

bool mcp_task_tool_supported(const char *tool)
{
    for (size_t i = 0; tool && i < sizeof(task_tools) / sizeof(task_tools[0]); i++)
        if (strcmp(task_tools[i], tool) == 0)
            return true;
    return false;
}

bool mcp_task_client_declared(const struct mcp_req *rq)
{
    json_t *caps = json_object_get(rq->meta, "io.modelcontextprotocol/clientCapabilities");
    return json_is_object(
        json_object_get(json_object_get(caps, "extensions"), MCP_TASKS_EXTENSION));
}

/* The experimental tasks exist in 2025-11-25 only (older versions have
 * none; 2026-07-28 replaced them with the extension). */
static bool legacy_tasks(const struct mcp_req *rq)
{
    return rq->era == MCP_ERA_LEGACY && strcmp(rq->version, "2025-11-25") == 0;
}

enum mcp_task_mode mcp_task_mode(const struct mcp_req *rq, const char *tool)
{
    /* A modern request's params.task is unknown to the extension: ignored
     * (SEP-2663, "Backward Compatibility"); the server decides. */
    if (rq->era == MCP_ERA_MODERN)
        return mcp_task_client_declared(rq) && mcp_task_tool_supported(tool) &&
                       rq->s->cfg->max_task_ttl_s > 0
                   ? MCP_TASK_LATER
                   : MCP_TASK_NONE;
    if (json_object_get(rq->params, "task") == NULL || !legacy_tasks(rq))
        return MCP_TASK_NONE;
    return mcp_task_tool_supported(tool) && rq->s->cfg->max_task_ttl_s > 0 ? MCP_TASK_NOW
                                                                           : MCP_TASK_REFUSED;
}

void mcp_tasks_capabilities(enum mcp_era era, const char *version, json_t *caps)
{
    if (era == MCP_ERA_MODERN) {
        json_t *ext = json_object_get(caps, "extensions");
        if (ext == NULL)
            json_object_set_new(caps, "extensions", ext = json_object());
        json_object_set_new(ext, MCP_TASKS_EXTENSION, json_object());
    } else if (strcmp(version, "2025-11-25") == 0) {
        json_object_set_new(
            caps, "tasks",
            json_pack("{s:{},s:{},s:{s:{s:{}}}}", "list", "cancel", "requests", "tools", "call"));
    }
}

void mcp_task_tool_execution(const struct mcp_req *rq, const char *name, json_t *tool)
{
    if (legacy_tasks(rq) && mcp_task_tool_supported(name) && rq->s->cfg->max_task_ttl_s > 0)
        json_object_set_new(tool, "execution", json_pack("{s:s}", "taskSupport", "optional"));
}

/* A modern request to a tasks method must declare the extension
 * (SEP-2663, "Protocol Errors"): false, answered, when it did not. */
static bool gate(const struct mcp_req *rq)
{
    if (rq->era != MCP_ERA_MODERN || mcp_task_client_declared(rq))
        return true;
    mcp_reply_error_data(
        rq, MCP_MISSING_CLIENT_CAPABILITY, "Missing required client capability",
        json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", MCP_TASKS_EXTENSION));
    return false;
}

/* The task rq names, with the session's lock held; NULL (answered, lock
 * released) when there is none: unknown, expired, another session's. */
static struct mcp_task *lookup(const struct mcp_req *rq)
{
    if (!gate(rq))
        return NULL;
    const char *id = json_string_value(json_object_get(rq->params, "taskId"));
    pthread_mutex_lock(&rq->s->lock);
    struct mcp_task *t = mcp_task_find(rq->s, id);
    if (t == NULL) {
        pthread_mutex_unlock(&rq->s->lock);
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS,
                        id ? "Failed to retrieve task: Task not found (or expired)"
                           : "tasks methods need a taskId");
    }
    return t;
}

void mcp_handle_tasks_get(const struct mcp_req *rq)
{
    struct mcp_task *t = lookup(rq);
    if (t == NULL)
        return;
    json_t *j = mcp_task_json(t, rq->era, true);
    pthread_mutex_unlock(&rq->s->lock);
    mcp_reply(rq, j);
}

/* 2025-11-25: the call's own answer, once the task has ended; until then
 * the request waits (answered by mcp_task_end). */
void mcp_handle_tasks_result(const struct mcp_req *rq)
{
    struct mcp_task *t = lookup(rq);
    if (t == NULL)
        return;
    struct mcp_task_waiter *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        pthread_mutex_unlock(&rq->s->lock);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (!t->running) {
        mcp_task_answer(t, w);
        pthread_mutex_unlock(&rq->s->lock);
        w->rq = (struct mcp_req *)rq;
        mcp_task_waiter_send(w);
        free(w);
        return;
    }
    size_t n = 0;
    for (struct mcp_task_waiter *x = t->waiters; x != NULL; x = x->next)
        n++;
    w->rq = n < MCP_TASK_MAX_WAITERS ? mcp_req_hold(rq) : NULL;
    if (w->rq == NULL) {
        pthread_mutex_unlock(&rq->s->lock);
        free(w);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR,
                        "too many tasks/result requests wait on this task; poll tasks/get");
        return;
    }
    w->next = t->waiters;
    t->waiters = w;
    pthread_mutex_unlock(&rq->s->lock);
}

/* 2025-11-25: every task of the session, in one page (there are at most
 * MCP_MAX_TASKS), so no cursor is ever valid. */
void mcp_handle_tasks_list(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    if (json_object_get(rq->params, "cursor") != NULL) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "invalid cursor");
        return;
    }
    json_t *list = json_array();
    pthread_mutex_lock(&s->lock);
    (void)mcp_task_find(s, NULL); /* purges the expired */
    for (struct mcp_task *t = s->tasks; t != NULL; t = t->next)
        json_array_append_new(list, mcp_task_json(t, rq->era, false));
    pthread_mutex_unlock(&s->lock);
    mcp_reply(rq, json_pack("{s:o}", "tasks", list));
}

/* Kills the task's run as notifications/cancelled would: its processes
 * die, and what it would start next is refused.  Lock held. */
static void cancel(struct mcp_session *s, struct mcp_task *t)
{
    t->status = MCP_TASK_CANCELLED;
    t->updated_ms = mcp_task_now_wall();
    snprintf(t->message, sizeof(t->message), "The task was cancelled by request.");
    if (t->running)
        mcp_call_cancel(&s->calls[t->slot]);
}

void mcp_handle_tasks_cancel(const struct mcp_req *rq)
{
    struct mcp_task *t = lookup(rq);
    if (t == NULL)
        return;
    bool working = t->status == MCP_TASK_WORKING;
    /* 2026-07-28: an empty ack, also for a task that has ended. */
    if (rq->era == MCP_ERA_MODERN) {
        if (working)
            cancel(rq->s, t);
        pthread_mutex_unlock(&rq->s->lock);
        mcp_reply(rq, json_object());
        return;
    }
    /* 2025-11-25: the cancelled task, or -32602 for one that has ended. */
    if (!working) {
        char msg[128];
        snprintf(msg, sizeof(msg), "Cannot cancel task: already in terminal status '%s'",
                 mcp_task_status_name(t, rq->era));
        pthread_mutex_unlock(&rq->s->lock);
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, msg);
        return;
    }
    cancel(rq->s, t);
    json_t *j = mcp_task_json(t, rq->era, false);
    pthread_mutex_unlock(&rq->s->lock);
    mcp_reply(rq, j);
}

/* 2026-07-28: nsbox's tasks never ask for input (no input_required), so
 * an update has nothing outstanding to answer: acknowledged, ignored. */
void mcp_handle_tasks_update(const struct mcp_req *rq)
{
    struct mcp_task *t = lookup(rq);
    if (t == NULL)
        return;
    pthread_mutex_unlock(&rq->s->lock);
    mcp_reply(rq, json_object());
}
