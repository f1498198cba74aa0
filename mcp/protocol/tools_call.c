/* tools/list and tools/call: the tool table (../tools/tools.h) over the
 * protocol.  A call runs on a thread of its own, in a slot of the
 * session's calls (server.h) that cancellation finds it by. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/log.h"
#include "../jsonrpc.h"
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
        json_array_append_new(tools, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "name", t->name,
                                               "title", t->title, "description", t->description,
                                               "inputSchema", in, "outputSchema", out,
                                               "annotations", annotations(s->cfg, t)));
    }
    json_t *res = json_pack("{s:O}", "tools", tools);
    /* The list depends on the server's configuration only, the same for
     * every caller, and never changes while it runs. */
    mcp_cacheable(rq, res, MCP_LIST_TTL_MS, "public");
    mcp_reply(rq, res);
}

/* ---- tools/call, on a thread of its own ---- */

struct call_job {
    struct mcp_req *rq; /* held */
    const struct mcp_tool *tool;
    json_t *args;
    size_t slot;
};

static json_t *tool_error(const char *msg)
{
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", msg, "isError", 1);
}

/* The CallToolResult of a tool that succeeded: the structured JSON as a
 * text block (for clients that read only content) and as
 * structuredContent, then its images as image blocks.  Takes r's
 * structured result (not NULL); the rest stays r's. */
static json_t *tool_result(struct mcp_result *r)
{
    json_t *structured = r->structured;
    r->structured = NULL;
    _cleanup_free_ char *text = json_dumps(structured, JSON_COMPACT);
    json_t *res = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
                            text ? text : "", "structuredContent", structured, "isError", 0);
    json_t *content = json_object_get(res, "content");
    for (size_t i = 0; i < r->n_content; i++) {
        const struct mcp_content *c = &r->content[i];
        if (c->kind == MCP_CONTENT_IMAGE)
            json_array_append_new(content, json_pack("{s:s,s:s,s:s}", "type", "image", "data",
                                                     c->data, "mimeType", c->mime_type));
    }
    return res;
}

void mcp_call_release(struct mcp_call *c)
{
    json_decref(c->id);
    json_decref(c->progress_token);
    nsbox_cancel_close(&c->cancel);
    *c = (struct mcp_call){.cancel = {-1}};
}

static void job_free(struct call_job *job)
{
    mcp_req_release(job->rq);
    json_decref(job->args);
    free(job);
}

static void *call_thread(void *arg)
{
    struct call_job *job = arg;
    struct mcp_session *s = job->rq->s;
    struct nsbox_err err = {0};
    _cleanup_(mcp_result_free) struct mcp_result out = {0};

    int r = job->tool->call(s, &s->calls[job->slot], job->args, &out, &err);
    if (r == 0 && out.structured == NULL) /* a json_pack that ran out of memory */
        r = nsbox_err_set(&err, ENOMEM, "out of memory");
    pthread_mutex_lock(&s->lock);
    bool cancelled = s->calls[job->slot].cancelled;
    pthread_mutex_unlock(&s->lock);
    /* A cancelled request gets no response (MCP, "Cancellation").  The
     * response goes out while the call still counts as running: once
     * mcp_session_shutdown() has seen n_running reach 0, an HTTP session
     * and its send callback are freed. */
    if (!cancelled)
        mcp_reply(job->rq, r == 0 ? tool_result(&out) : tool_error(err.msg));
    pthread_mutex_lock(&s->lock);
    mcp_call_release(&s->calls[job->slot]);
    s->n_running--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
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
    struct call_job *job = calloc(1, sizeof(*job));
    struct mcp_req *held = job ? mcp_req_hold(rq) : NULL;
    if (held == NULL) {
        free(job);
        mcp_reply(rq, tool_error("the server is out of memory; try again"));
        return;
    }
    *job = (struct call_job){held, tool, args ? json_incref(args) : json_object(), 0};
    pthread_mutex_lock(&s->lock);
    size_t slot = MCP_MAX_CALLS;
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].id == NULL) {
            slot = i;
            break;
        }
    if (slot == MCP_MAX_CALLS) {
        pthread_mutex_unlock(&s->lock);
        job_free(job);
        mcp_reply(rq, tool_error("too many calls running at once; wait for one "
                                 "to finish"));
        return;
    }
    struct nsbox_err err;
    struct nsbox_cancel cancel;
    if (nsbox_cancel_init(&cancel, &err) < 0) {
        pthread_mutex_unlock(&s->lock);
        job_free(job);
        mcp_reply(rq, tool_error("the server is out of file descriptors; try again"));
        return;
    }
    s->calls[slot] = (struct mcp_call){
        .id = json_incref(rq->id),
        .progress_token = json_incref(json_object_get(rq->meta, "progressToken")),
        .cancel = cancel,
        .log_level = rq->era == MCP_ERA_MODERN ? rq->log_level : MCP_LOG_SESSION};
    s->n_running++;
    pthread_mutex_unlock(&s->lock);
    job->slot = slot;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, call_thread, job) != 0) {
        pthread_mutex_lock(&s->lock);
        mcp_call_release(&s->calls[slot]);
        s->n_running--;
        pthread_mutex_unlock(&s->lock);
        mcp_reply(rq, tool_error("the server is out of threads; try again"));
        job_free(job);
    }
    pthread_attr_destroy(&attr);
}

static bool same_id(json_t *a, json_t *b)
{
    return a != NULL && b != NULL && json_equal(a, b);
}

void mcp_call_cancel(struct mcp_call *c)
{
    if (c->listen) { /* no thread to come back: the subscription just ends */
        mcp_call_release(c);
        return;
    }
    c->cancelled = true;
    nsbox_cancel_fire(&c->cancel);
}

void mcp_handle_cancelled(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    json_t *rid = json_object_get(rq->params, "requestId");
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (same_id(s->calls[i].id, rid))
            mcp_call_cancel(&s->calls[i]);
    pthread_mutex_unlock(&s->lock);
}
