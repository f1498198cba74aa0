/* A session's tasks (tasks.h): made, looked up, ended, expired, and
 * shown in either era's wire form. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../../common/clock.h"
#include "../call.h"
#include "../jsonrpc.h"
#include "../server.h"
#include "internal.h"

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mcp_task_now_mono(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

int64_t mcp_task_now_wall(void)
{
    return clock_ms(CLOCK_REALTIME);
}

static void iso8601(int64_t ms, char out[32])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

/* 2025-11-25 counts a tool result with isError as a failed task;
 * 2026-07-28 keeps "failed" for JSON-RPC errors (SEP-2663, "Task
 * Execution Errors"). */
const char *mcp_task_status_name(const struct mcp_task *t, enum mcp_era era)
{
    switch (t->status) {
    case MCP_TASK_WORKING:
        return "working";
    case MCP_TASK_CANCELLED:
        return "cancelled";
    case MCP_TASK_FAILED:
        return "failed";
    case MCP_TASK_COMPLETED:
        break;
    }
    if (era == MCP_ERA_LEGACY && json_is_true(json_object_get(t->result, "isError")))
        return "failed";
    return "completed";
}

json_t *mcp_task_json(const struct mcp_task *t, enum mcp_era era, bool detailed)
{
    char created[32], updated[32];
    iso8601(t->created_ms, created);
    iso8601(t->updated_ms, updated);
    bool modern = era == MCP_ERA_MODERN;
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "taskId", t->id, "status",
                          mcp_task_status_name(t, era), "createdAt", created, "lastUpdatedAt",
                          updated, modern ? "ttlMs" : "ttl", (json_int_t)t->ttl_ms,
                          modern ? "pollIntervalMs" : "pollInterval", (json_int_t)MCP_TASK_POLL_MS);
    if (j != NULL && t->message[0] != '\0')
        json_object_set_new(j, "statusMessage", json_string(t->message));
    /* The extension's DetailedTask inlines the end (2025-11-25 has
     * tasks/result for it). */
    if (j != NULL && detailed && modern && t->status == MCP_TASK_COMPLETED && t->result)
        json_object_set(j, "result", t->result);
    if (j != NULL && detailed && modern && t->status == MCP_TASK_FAILED && t->error)
        json_object_set(j, "error", t->error);
    return j;
}

json_t *mcp_task_create_result(const struct mcp_task *t, enum mcp_era era)
{
    json_t *task = mcp_task_json(t, era, false);
    if (era == MCP_ERA_LEGACY)
        return json_pack("{s:o}", "task", task);
    /* Flat (Result & Task), told apart from a CallToolResult by resultType. */
    if (task != NULL)
        json_object_set_new(task, "resultType", json_string("task"));
    return task;
}

/* 128 random bits as hex, after "NODE." with --node-id (mcp/node.h): a
 * router may route tasks/get on it as on session and sandbox ids. */
static int random_id(const struct mcp_server *cfg, char out[MCP_ID_MAX + 1])
{
    unsigned char b[MCP_HEX_ID_LEN / 2];
    char hex[MCP_HEX_ID_LEN + 1];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        return -1;
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    mcp_id_compose(cfg->node_id, hex, out);
    return 0;
}

static void task_free(struct mcp_task *t)
{
    json_decref(t->result);
    json_decref(t->error);
    free(t);
}

/* Unlinks the tasks past their TTL: a finished one is freed, a running
 * one's run is killed and the task freed when its call ends. */
static void purge(struct mcp_session *s)
{
    int64_t now = mcp_task_now_mono();
    for (struct mcp_task **p = &s->tasks; *p != NULL;) {
        struct mcp_task *t = *p;
        if (t->expires_mono > now) {
            p = &t->next;
            continue;
        }
        *p = t->next;
        s->n_tasks--;
        if (t->running) {
            t->dropped = true;
            mcp_call_cancel(&s->calls[t->slot]);
        } else {
            task_free(t);
        }
    }
}

struct mcp_task *mcp_task_create(struct mcp_session *s, size_t slot, enum mcp_era era,
                                 int64_t ttl_ms)
{
    purge(s);
    if (s->n_tasks >= MCP_MAX_TASKS)
        return NULL;
    struct mcp_task *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    if (random_id(s->cfg, t->id) < 0) {
        free(t);
        return NULL;
    }
    int64_t cap = (int64_t)s->cfg->max_task_ttl_s * 1000;
    if (ttl_ms <= 0 || ttl_ms > cap)
        ttl_ms = cap;
    if (ttl_ms < MCP_TASK_MIN_TTL_MS)
        ttl_ms = MCP_TASK_MIN_TTL_MS;
    t->era = era;
    t->status = MCP_TASK_WORKING;
    t->created_ms = t->updated_ms = mcp_task_now_wall();
    t->ttl_ms = ttl_ms;
    t->expires_mono = mcp_task_now_mono() + ttl_ms;
    t->running = true;
    t->slot = slot;
    t->next = s->tasks;
    s->tasks = t;
    s->n_tasks++;
    s->calls[slot].task = t;
    return t;
}

/* Constant time: a task id is a bearer handle. */
static bool same_id(const char *a, const char *b)
{
    size_t n = strlen(a); /* the same for every id of this server */
    if (strnlen(b, n + 1) != n)
        return false;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

struct mcp_task *mcp_task_find(struct mcp_session *s, const char *id)
{
    purge(s);
    for (struct mcp_task *t = s->tasks; id != NULL && t != NULL; t = t->next)
        if (same_id(t->id, id))
            return t;
    return NULL;
}

void mcp_task_answer(const struct mcp_task *t, struct mcp_task_waiter *w)
{
    if (t->result != NULL) {
        w->result = json_deep_copy(t->result);
        json_t *meta = json_pack("{s:{s:s}}", "io.modelcontextprotocol/related-task", "taskId",
                                 t->id);
        if (w->result != NULL)
            json_object_set_new(w->result, "_meta", meta);
        else
            json_decref(meta);
        return;
    }
    w->code = (int)json_integer_value(json_object_get(t->error, "code"));
    snprintf(w->message, sizeof(w->message), "%s",
             json_string_value(json_object_get(t->error, "message"))
                 ? json_string_value(json_object_get(t->error, "message"))
                 : "the task failed");
}

void mcp_task_waiter_send(struct mcp_task_waiter *w)
{
    if (w->result != NULL)
        mcp_reply(w->rq, w->result);
    else
        mcp_reply_error(w->rq, w->code ? w->code : JSONRPC_INTERNAL_ERROR, w->message);
    w->result = NULL;
}

void mcp_task_end(struct mcp_session *s, struct mcp_task *t, json_t *result, json_t *error)
{
    pthread_mutex_lock(&s->lock);
    t->running = false;
    t->result = result;
    t->error = result ? (json_decref(error), NULL) : error;
    if (t->error == NULL && t->result == NULL)
        t->error = json_pack("{s:i,s:s}", "code", JSONRPC_INTERNAL_ERROR, "message",
                             "the server is out of memory");
    /* A cancelled task stays cancelled (2025-11-25, "Task Cancellation"). */
    if (t->status == MCP_TASK_WORKING) {
        t->status = t->result ? MCP_TASK_COMPLETED : MCP_TASK_FAILED;
        t->updated_ms = mcp_task_now_wall();
    }
    struct mcp_task_waiter *waiters = t->waiters;
    t->waiters = NULL;
    for (struct mcp_task_waiter *w = waiters; w != NULL; w = w->next)
        mcp_task_answer(t, w);
    json_t *note = NULL;
    if (!t->dropped && t->era == MCP_ERA_LEGACY)
        note = jsonrpc_notification("notifications/tasks/status",
                                    mcp_task_json(t, MCP_ERA_LEGACY, false));
    bool dropped = t->dropped;
    pthread_mutex_unlock(&s->lock);
    if (dropped)
        task_free(t);
    /* The status first: a client that has the result has seen it too. */
    if (note != NULL)
        s->send(s, note);
    while (waiters != NULL) {
        struct mcp_task_waiter *w = waiters;
        waiters = w->next;
        mcp_task_waiter_send(w);
        mcp_req_release(w->rq);
        free(w);
    }
}

/* The _meta of a progress notification, or NULL for none. */
static json_t *progress_meta(const struct mcp_progress *p, const char *task_id)
{
    json_t *meta = json_object();
    if (task_id != NULL)
        json_object_set_new(meta, "io.modelcontextprotocol/related-task",
                            json_pack("{s:s}", "taskId", task_id));
    if (p->stream != NULL) {
        json_object_set_new(meta, "io.nsbox/stream", json_string(p->stream));
        json_object_set_new(meta, "io.nsbox/offset", json_integer((json_int_t)p->offset));
    }
    if (meta != NULL && json_object_size(meta) == 0) {
        json_decref(meta);
        meta = NULL;
    }
    return meta;
}

void mcp_call_progress(struct mcp_session *s, struct mcp_call *c, const struct mcp_progress *p)
{
    json_t *token = NULL, *meta = NULL;
    pthread_mutex_lock(&s->lock);
    struct mcp_task *t = c->task;
    if (t != NULL && t->status == MCP_TASK_WORKING && p->status != NULL)
        snprintf(t->message, sizeof(t->message), "%s", p->status);
    /* 2025-11-25: "The progressToken provided in the initial request
     * remains valid throughout the task lifetime"; the extension has no
     * progress on tasks (SEP-2663): tasks/get's statusMessage carries it.
     * A cancelled call's client has forgotten its token. */
    /* None once the response is on its way (tools_call.c): a progress
     * after it is for a token the client has forgotten. */
    if (c->progress_token != NULL && (t == NULL || t->era == MCP_ERA_LEGACY) &&
        (t != NULL || (!c->cancelled && !c->answered))) {
        token = json_incref(c->progress_token);
        meta = progress_meta(p, t != NULL ? t->id : NULL);
        c->progress_sending = true;
    }
    pthread_mutex_unlock(&s->lock);
    if (token == NULL)
        return;
    json_t *params = json_pack("{s:o,s:I,s:s%}", "progressToken", token, "progress",
                               (json_int_t)p->progress, "message", p->message, p->message_len);
    if (params != NULL && meta != NULL)
        json_object_set_new(params, "_meta", meta);
    else
        json_decref(meta);
    s->send(s, jsonrpc_notification("notifications/progress", params));
    /* Once written (a large one takes a while): the response's gap
     * counts from here (tools_call.c). */
    pthread_mutex_lock(&s->lock);
    c->last_progress_ms = nsbox_now_ms();
    c->progress_sending = false;
    pthread_mutex_unlock(&s->lock);
}

void mcp_tasks_free(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_task *t = s->tasks;
    s->tasks = NULL;
    s->n_tasks = 0;
    while (t != NULL) {
        struct mcp_task *next = t->next;
        if (t->running)
            t->dropped = true; /* its call frees it (mcp_task_end) */
        else
            task_free(t);
        t = next;
    }
    pthread_mutex_unlock(&s->lock);
}
