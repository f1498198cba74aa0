/* tools/list and tools/call: the tool table (../tools/tools.h) over the
 * protocol.  A call runs on a thread of its own, in a slot of the
 * session's calls (../call.h) that cancellation finds it by.  A call that
 * runs as a task (../tasks/tasks.h) keeps its slot past its request; its
 * end goes to the task instead of a response. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/clock.h"
#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/log.h"
#include "../call.h"
#include "../jsonrpc.h"
#include "../resources/resources.h"
#include "../tasks/tasks.h"
#include "../tools/args.h"
#include "../tools/tools.h"
#include "request.h"

/* Each inputSchema comes from the tool's declaration of its arguments,
 * the same one its decoder checks calls against (tools/args.c).  A tool
 * without one is a mistake in mcp/ (tests/fuzz/fuzz_tools.c refuses it at
 * start-up too): tools/list fails loudly rather than list a tool the
 * client cannot call correctly. */
/* ToolAnnotations: the hints a client uses to decide what to confirm. */
static json_t *annotations(const struct mcp_server *cfg, const struct mcp_tool *t)
{
    bool read_only = t->hints & MCP_HINT_READ_ONLY;
    /* Open world: the tool can let a sandbox reach hosts outside nsbox,
     * which only a server with an allow-list can grant. */
    bool open_world = ((t->hints & MCP_HINT_NETWORK) && cfg->net_ceiling != NULL) ||
                      ((t->hints & MCP_HINT_INSTALLS) && cfg->installs != 0);
    json_t *a = json_pack("{s:s,s:b,s:b}", "title", t->title, "readOnlyHint", read_only,
                          "openWorldHint", open_world);
    /* destructiveHint and idempotentHint mean something only for a tool
     * that changes things (MCP: "if readOnlyHint == false"). */
    if (!read_only) {
        json_object_set_new(a, "destructiveHint", json_boolean(t->hints & MCP_HINT_DESTRUCTIVE));
        json_object_set_new(a, "idempotentHint", json_boolean(t->hints & MCP_HINT_IDEMPOTENT));
    }
    return a;
}

void mcp_handle_tools_list(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    _cleanup_json_ json_t *tools = json_array();
    for (size_t i = 0; i < mcp_n_tools; i++) {
        const struct mcp_tool *t = &mcp_tools[i];
        if (!mcp_tool_offered(s->cfg, t))
            continue;
        const struct mcp_tool_args *decl = mcp_tool_args_find(t->name);
        if (decl == NULL) {
            nsbox_warn("internal error: tool %s has no argument declaration (tools/args.c)",
                       t->name);
            mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR,
                            "internal error: a tool has no argument declaration");
            return;
        }
        json_t *in = mcp_schema_build(decl);
        if (rq->era == MCP_ERA_MODERN)
            mcp_schema_add_headers(decl, in);
        json_t *out = json_loads(t->output_schema, 0, NULL);
        json_t *tool = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "name", t->name, "title", t->title,
                                 "description", t->description, "inputSchema", in, "outputSchema",
                                 out, "annotations", annotations(s->cfg, t));
        mcp_task_tool_execution(rq, t->name, tool);
        json_array_append_new(tools, tool);
    }
    json_t *res = json_pack("{s:O}", "tools", tools);
    /* The list depends on the server's configuration only, the same for
     * every caller, and never changes while it runs. */
    mcp_cacheable(rq, res, MCP_LIST_TTL_MS, "public");
    mcp_reply(rq, res);
}

/* ---- tools/call, on a thread of its own ---- */

/* The TypeScript SDK (1.x; typescript-sdk issue #2580) handles a
 * notification a microtask after the response read with it, so progress
 * sent just before the response reaches a client whose handler the
 * response already removed: "Received a progress notification for an
 * unknown token", an error to onerror, on which Claude Code closes the
 * transport.  A response goes out at least PROGRESS_GAP_MS after the
 * call's last progress, so that the two arrive apart.  A run streams
 * its output as progress (tools/stream.h) and sends the rest just before
 * its response: every call that printed anything waits here. */
#define PROGRESS_GAP_MS 50

static void apart_from_progress(int64_t last_progress_ms)
{
    int64_t since = nsbox_now_ms() - last_progress_ms;
    if (last_progress_ms == 0 || since >= PROGRESS_GAP_MS)
        return;
    struct timespec ts = {0, (long)(PROGRESS_GAP_MS - since) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

struct mcp_queued_call {
    struct mcp_req *rq; /* held */
    const struct mcp_tool *tool;
    json_t *args;
    size_t slot;
    enum mcp_task_mode mode;
    /* The call queue (docs/burst.md): the next queued call; the slot
     * could not be claimed when it left the queue (out of fds). */
    struct mcp_queued_call *next;
    bool no_slot;
};

static json_t *tool_error(const char *msg)
{
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", msg, "isError", 1);
}

/* The CallToolResult of a tool that succeeded: the structured JSON as a
 * text block (for clients that read only content) and as
 * structuredContent, then its images and resource links (as rq's
 * version knows them).  Takes r's structured result (not NULL); the rest
 * stays r's. */
static json_t *tool_result(const struct mcp_req *rq, struct mcp_result *r)
{
    json_t *structured = r->structured;
    r->structured = NULL;
    _cleanup_free_ char *text = json_dumps(structured, JSON_COMPACT);
    json_t *res = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
                            text ? text : "", "structuredContent", structured, "isError", 0);
    mcp_result_content(r, rq->version, json_object_get(res, "content"));
    return res;
}

static void job_free(struct mcp_queued_call *job)
{
    mcp_req_release(job->rq);
    json_decref(job->args);
    free(job);
}

static void *call_thread(void *arg)
{
    struct mcp_queued_call *job = arg;
    struct mcp_session *s = job->rq->s;
    struct mcp_call *c = &s->calls[job->slot];
    struct nsbox_err err = {0};
    _cleanup_(mcp_result_free) struct mcp_result out = {0};
    struct mcp_task_defer *defer = job->mode == MCP_TASK_LATER
                                       ? mcp_task_defer_start(s, job->rq, job->slot)
                                       : NULL;

    int r = job->tool->call(s, c, job->args, &out, &err);
    if (r == 0 && out.structured == NULL) /* a json_pack that ran out of memory */
        r = nsbox_err_set(&err, ENOMEM, "out of memory");
    mcp_task_defer_end(defer); /* from here c->task is settled */
    pthread_mutex_lock(&s->lock);
    bool cancelled = c->cancelled;
    struct mcp_task *task = c->task;
    pthread_mutex_unlock(&s->lock);
    /* A cancelled request gets no response (MCP, "Cancellation"); a
     * task's end goes to the task.  Either goes out while the call still
     * counts as running: once mcp_session_shutdown() has seen n_running
     * reach 0, an HTTP session and its send callback are freed. */
    if ((task != NULL || !cancelled) && r == 0)
        mcp_resources_note(s, &out); /* resources/list lists what results linked */
    json_t *res = r == 0 ? tool_result(job->rq, &out) : tool_error(err.msg);
    if (task != NULL)
        mcp_task_end(s, task, res, NULL);
    else if (!cancelled) {
        /* The id is free for the client's next request as soon as it can
         * see this response (http/streamable.c, id_running): the slot
         * stays taken until the release below. */
        pthread_mutex_lock(&s->lock);
        c->answered = true;           /* no progress starts after this */
        while (c->progress_sending) { /* one already being written ends first */
            pthread_mutex_unlock(&s->lock);
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
            pthread_mutex_lock(&s->lock);
        }
        int64_t last_progress = c->last_progress_ms;
        pthread_mutex_unlock(&s->lock);
        apart_from_progress(last_progress);
        mcp_reply(job->rq, res);
    } else
        json_decref(res);
    mcp_call_finish(s, c);
    job_free(job);
    return NULL;
}

static const struct mcp_tool *find_tool(struct mcp_session *s, const char *name)
{
    for (size_t i = 0; name && i < mcp_n_tools; i++)
        if (strcmp(mcp_tools[i].name, name) == 0)
            return mcp_tool_offered(s->cfg, &mcp_tools[i]) ? &mcp_tools[i] : NULL;
    return NULL;
}

/* ---- the call queue ----
 * A session runs at most MCP_MAX_CALLS calls at once; tools/calls beyond
 * that wait here, oldest first, up to cfg->call_queue of them, instead of
 * being refused.  A queued call counts in n_running from the moment it is
 * queued (the session's end and stdio's drain wait for it), has no slot
 * (no progress, no sandbox work) until a finishing call hands it its own
 * in mcp_call_finish, and is dropped without a response when its request
 * is cancelled or the session ends.  Task calls (2025-11-25 task mode) are
 * never queued: their task must exist before the response. */

/* s->lock held: claims a slot for job (mcp_call_claim's result). */
static int claim_for(struct mcp_session *s, struct mcp_queued_call *job)
{
    int claimed = mcp_call_claim(s, job->rq->id, job->rq->meta, mcp_req_call_log_level(job->rq));
    if (claimed >= 0) {
        job->slot = (size_t)claimed;
        s->calls[claimed].taskable = job->mode != MCP_TASK_NONE;
        s->calls[claimed].modern = job->rq->era == MCP_ERA_MODERN;
    }
    return claimed;
}

static void unlink_queued(struct mcp_session *s, struct mcp_queued_call *prev,
                          struct mcp_queued_call *q)
{
    if (prev == NULL)
        s->queued = q->next;
    else
        prev->next = q->next;
    if (s->queued_tail == q)
        s->queued_tail = prev;
    q->next = NULL;
    s->n_queued--;
}

struct mcp_queued_call *mcp_call_queue_take(struct mcp_session *s)
{
    struct mcp_queued_call *q = s->queued;
    if (q == NULL)
        return NULL;
    int claimed = claim_for(s, q);
    if (claimed == -1)
        return NULL; /* no slot after all: a later finish hands one */
    unlink_queued(s, NULL, q);
    q->no_slot = claimed < 0;
    return q;
}

static void start_thread(struct mcp_session *s, struct mcp_queued_call *job, struct mcp_task *task);

void mcp_call_queue_start(struct mcp_session *s, struct mcp_queued_call *q)
{
    if (q->no_slot) {
        pthread_mutex_lock(&s->lock);
        s->n_running--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
        mcp_reply(q->rq, tool_error("the server is out of file descriptors; try again"));
        job_free(q);
        return;
    }
    start_thread(s, q, NULL);
}

/* Takes out of s's queue (s->lock held) every call whose request id is id
 * (NULL: every call), counting them out of n_running; returns them. */
static struct mcp_queued_call *queue_remove(struct mcp_session *s, json_t *id)
{
    struct mcp_queued_call *out = NULL, *prev = NULL, *q = s->queued;
    while (q != NULL) {
        struct mcp_queued_call *next = q->next;
        if (id == NULL || json_equal(q->rq->id, id)) {
            unlink_queued(s, prev, q);
            s->n_running--;
            q->next = out;
            out = q;
        } else {
            prev = q;
        }
        q = next;
    }
    if (out != NULL)
        pthread_cond_broadcast(&s->idle);
    return out;
}

/* Frees calls queue_remove took: no response (a cancelled request gets
 * none; an ended session has no client). */
static void drop_queued(struct mcp_queued_call *q)
{
    while (q != NULL) {
        struct mcp_queued_call *next = q->next;
        job_free(q);
        q = next;
    }
}

void mcp_call_queue_drop(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_queued_call *q = queue_remove(s, NULL);
    pthread_mutex_unlock(&s->lock);
    drop_queued(q);
}

/* job's thread, its slot claimed and counted in n_running. */
static void start_thread(struct mcp_session *s, struct mcp_queued_call *job, struct mcp_task *task)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, call_thread, job) != 0) {
        if (task != NULL)
            mcp_task_end(s, task, tool_error("the server is out of threads; try again"), NULL);
        pthread_mutex_lock(&s->lock);
        mcp_call_release(&s->calls[job->slot]);
        s->n_running--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
        if (task == NULL)
            mcp_reply(job->rq, tool_error("the server is out of threads; try again"));
        job_free(job);
    }
    pthread_attr_destroy(&attr);
}

void mcp_handle_tools_call(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    const char *name = json_string_value(json_object_get(rq->params, "name"));
    json_t *args = json_object_get(rq->params, "arguments");
    const struct mcp_tool *tool = find_tool(s, name);

    if (tool == NULL) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS,
                        name ? "unknown tool" : "tools/call needs a name");
        return;
    }
    if (args != NULL && !json_is_object(args)) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "arguments must be an object");
        return;
    }
    /* 2025-11-25: a task asked of a tool that lists no taskSupport. */
    enum mcp_task_mode mode = mcp_task_mode(rq, name);
    if (mode == MCP_TASK_REFUSED) {
        mcp_reply_error(rq, JSONRPC_METHOD_NOT_FOUND, "this tool does not run as a task");
        return;
    }
    struct mcp_queued_call *job = calloc(1, sizeof(*job));
    struct mcp_req *held = job ? mcp_req_hold(rq) : NULL;
    if (held == NULL) {
        free(job);
        mcp_reply(rq, tool_error("the server is out of memory; try again"));
        return;
    }
    *job = (struct mcp_queued_call){
        .rq = held, .tool = tool, .args = args ? json_incref(args) : json_object(), .mode = mode};
    pthread_mutex_lock(&s->lock);
    /* Behind calls already waiting (first come, first served), unless it
     * is a task call, which is never queued. */
    int claimed = s->queued != NULL && mode != MCP_TASK_NOW ? -1 : claim_for(s, job);
    if (claimed == -1 && mode != MCP_TASK_NOW && s->n_queued < s->cfg->call_queue) {
        if (s->queued_tail != NULL)
            s->queued_tail->next = job;
        else
            s->queued = job;
        s->queued_tail = job;
        s->n_queued++;
        s->n_running++;
        /* A slot freed some other way (a subscription's end) while calls
         * waited: they take it now; else mcp_call_finish starts them. */
        struct mcp_queued_call *ready = NULL, *q;
        while ((q = mcp_call_queue_take(s)) != NULL) {
            q->next = ready;
            ready = q;
        }
        pthread_mutex_unlock(&s->lock);
        while (ready != NULL) {
            q = ready;
            ready = q->next;
            q->next = NULL;
            mcp_call_queue_start(s, q);
        }
        return;
    }
    if (claimed < 0) {
        size_t bound = s->cfg->call_queue;
        pthread_mutex_unlock(&s->lock);
        job_free(job);
        if (claimed == -2)
            mcp_reply(rq, tool_error("the server is out of file descriptors; try again"));
        else if (bound > 0 && mode != MCP_TASK_NOW)
            mcp_reply(rq, tool_error("too many calls running at once and waiting; wait for one "
                                     "to finish (serve --call-queue)"));
        else
            mcp_reply(rq, tool_error("too many calls running at once; wait for one to finish"));
        return;
    }
    size_t slot = job->slot;
    /* 2025-11-25's task exists before its handle goes out. */
    struct mcp_task *task = NULL;
    json_t *created = NULL;
    if (mode == MCP_TASK_NOW) {
        json_t *ttl = json_object_get(json_object_get(rq->params, "task"), "ttl");
        task = mcp_task_create(s, slot, MCP_ERA_LEGACY, (int64_t)json_number_value(ttl));
        if (task == NULL) {
            mcp_call_release(&s->calls[slot]);
            pthread_mutex_unlock(&s->lock);
            job_free(job);
            mcp_reply_error(rq, JSONRPC_INVALID_REQUEST,
                            "this session has too many tasks; wait for one to expire");
            return;
        }
        created = mcp_task_create_result(task, MCP_ERA_LEGACY);
    }
    s->n_running++;
    pthread_mutex_unlock(&s->lock);
    if (created != NULL)
        mcp_reply(rq, created);
    start_thread(s, job, task);
}

static bool same_id(json_t *a, json_t *b)
{
    return a != NULL && b != NULL && json_equal(a, b);
}

void mcp_handle_cancelled(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    json_t *rid = json_object_get(rq->params, "requestId");
    pthread_mutex_lock(&s->lock);
    /* A task's request has been answered: tasks/cancel ends a task
     * (SEP-2663: notifications/cancelled MUST NOT), and its id may be
     * the client's again. */
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].task == NULL && same_id(s->calls[i].id, rid))
            mcp_call_cancel(&s->calls[i]);
    /* One still waiting in the queue just leaves it, unanswered. */
    struct mcp_queued_call *dropped = rid != NULL ? queue_remove(s, rid) : NULL;
    pthread_mutex_unlock(&s->lock);
    drop_queued(dropped);
}
