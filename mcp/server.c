/* MCP protocol handling: lifecycle, version negotiation, dispatch, logging,
 * cancellation.  Protocol errors are JSON-RPC errors; tool failures are
 * isError results the model can act on. */
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/log.h"
#include "jsonrpc.h"
#include "sandboxes.h"
#include "tools/args.h"
#include "tools/tools.h"

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

static void send_result(struct mcp_session *s, json_t *id, json_t *result)
{
    s->send(s, jsonrpc_result(id, result));
}

static void send_error(struct mcp_session *s, json_t *id, int code, const char *message)
{
    s->send(s, jsonrpc_error(id, code, message));
}

static int level_index(const char *name)
{
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (name && strcmp(levels[i], name) == 0)
            return (int)i;
    return -1;
}

void mcp_session_log(struct mcp_session *s, const char *level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int idx = level_index(level);

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    nsbox_info("%s", msg);
    if (!s->initialized || idx < s->log_level)
        return;
    s->send(s, jsonrpc_notification(
                   "notifications/message",
                   json_pack("{s:s,s:s,s:s}", "level", level, "logger", "nsbox", "data", msg)));
}

/* ---- lifecycle ---- */

static void handle_initialize(struct mcp_session *s, json_t *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *chosen = versions[0];

    if (asked == NULL) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "initialize needs protocolVersion");
        return;
    }
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
        if (strcmp(asked, versions[i]) == 0)
            chosen = versions[i];
    pthread_mutex_lock(&s->lock);
    snprintf(s->protocol, sizeof(s->protocol), "%s", chosen);
    s->initialized = true;
    pthread_mutex_unlock(&s->lock);
    send_result(s, id,
                json_pack("{s:s,s:{s:{s:b},s:{}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", chosen,
                          "capabilities", "tools", "listChanged", 0, "logging", "serverInfo",
                          "name", "nsbox", "title", "nsbox sandboxes", "version", "0.1.0",
                          "instructions",
                          "Run code in isolated sandboxes. execute_code runs a program "
                          "(python by default, see list_languages) in a fresh sandbox, or "
                          "in one made with sandbox_create (files persist there between "
                          "calls, in /workspace). Results report exit status, output, "
                          "time, memory, timeouts and out-of-memory kills."));
}

static void handle_set_level(struct mcp_session *s, json_t *id, json_t *params)
{
    int idx = level_index(json_string_value(json_object_get(params, "level")));
    if (idx < 0) {
        send_error(s, id, JSONRPC_INVALID_PARAMS,
                   "level must be one of debug, info, notice, "
                   "warning, error, critical, alert, emergency");
        return;
    }
    s->log_level = idx;
    send_result(s, id, json_object());
}

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

static void handle_tools_list(struct mcp_session *s, json_t *id)
{
    _cleanup_json_ json_t *tools = json_array();
    for (size_t i = 0; i < mcp_n_tools; i++) {
        const struct mcp_tool *t = &mcp_tools[i];
        if (!mcp_tool_offered(s->cfg, t))
            continue;
        const struct mcp_tool_args *decl = mcp_tool_args_find(t->name);
        if (decl == NULL) {
            nsbox_warn("internal error: tool %s has no argument declaration (tools/args.c)",
                       t->name);
            send_error(s, id, JSONRPC_INTERNAL_ERROR,
                       "internal error: a tool has no argument declaration");
            return;
        }
        json_t *in = mcp_schema_build(decl);
        json_t *out = json_loads(t->output_schema, 0, NULL);
        json_array_append_new(tools, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "name", t->name,
                                               "title", t->title, "description", t->description,
                                               "inputSchema", in, "outputSchema", out,
                                               "annotations", annotations(s->cfg, t)));
    }
    send_result(s, id, json_pack("{s:O}", "tools", tools));
}

/* ---- tools/call, on a thread of its own ---- */

struct call_job {
    struct mcp_session *s;
    const struct mcp_tool *tool;
    json_t *id;
    json_t *args;
    json_t *progress_token;
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

/* s->lock held. */
static void release_slot(struct mcp_call *c)
{
    json_decref(c->id);
    json_decref(c->progress_token);
    nsbox_cancel_close(&c->cancel);
    *c = (struct mcp_call){.cancel = {-1}};
}

static void *call_thread(void *arg)
{
    struct call_job *job = arg;
    struct mcp_session *s = job->s;
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
        send_result(s, job->id, r == 0 ? tool_result(&out) : tool_error(err.msg));
    pthread_mutex_lock(&s->lock);
    release_slot(&s->calls[job->slot]);
    s->n_running--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    json_decref(job->id);
    json_decref(job->args);
    json_decref(job->progress_token);
    free(job);
    return NULL;
}

static const struct mcp_tool *find_tool(struct mcp_session *s, const char *name)
{
    for (size_t i = 0; name && i < mcp_n_tools; i++)
        if (strcmp(mcp_tools[i].name, name) == 0)
            return mcp_tool_offered(s->cfg, &mcp_tools[i]) ? &mcp_tools[i] : NULL;
    return NULL;
}

static void handle_tools_call(struct mcp_session *s, json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    const struct mcp_tool *tool = find_tool(s, name);

    if (tool == NULL) {
        send_error(s, id, JSONRPC_INVALID_PARAMS,
                   name ? "unknown tool" : "tools/call needs a name");
        return;
    }
    if (args != NULL && !json_is_object(args)) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "arguments must be an object");
        return;
    }
    struct call_job *job = calloc(1, sizeof(*job));
    pthread_mutex_lock(&s->lock);
    size_t slot = MCP_MAX_CALLS;
    for (size_t i = 0; i < MCP_MAX_CALLS && job; i++)
        if (s->calls[i].id == NULL) {
            slot = i;
            break;
        }
    if (slot == MCP_MAX_CALLS) {
        pthread_mutex_unlock(&s->lock);
        free(job);
        send_result(s, id,
                    tool_error("too many calls running at once; wait for one "
                               "to finish"));
        return;
    }
    struct nsbox_err err;
    struct nsbox_cancel cancel;
    if (nsbox_cancel_init(&cancel, &err) < 0) {
        pthread_mutex_unlock(&s->lock);
        free(job);
        send_result(s, id, tool_error("the server is out of file descriptors; try again"));
        return;
    }
    s->calls[slot] = (struct mcp_call){.id = json_incref(id),
                                       .progress_token = json_incref(json_object_get(
                                           json_object_get(params, "_meta"), "progressToken")),
                                       .cancel = cancel};
    s->n_running++;
    pthread_mutex_unlock(&s->lock);
    *job = (struct call_job){
        s,
        tool,
        json_incref(id),
        args ? json_incref(args) : json_object(),
        json_incref(json_object_get(json_object_get(params, "_meta"), "progressToken")),
        slot};
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, call_thread, job) != 0) {
        pthread_mutex_lock(&s->lock);
        release_slot(&s->calls[slot]);
        s->n_running--;
        pthread_mutex_unlock(&s->lock);
        send_result(s, id, tool_error("the server is out of threads; try again"));
        json_decref(job->id), json_decref(job->args), json_decref(job->progress_token);
        free(job);
    }
    pthread_attr_destroy(&attr);
}

static bool same_id(json_t *a, json_t *b)
{
    return a != NULL && b != NULL && json_equal(a, b);
}

/* s->lock held.  Whatever the call runs is killed (its exec polls the
 * cancel), and whatever it would start next is refused (mcp_op_begin). */
static void cancel_call(struct mcp_call *c)
{
    c->cancelled = true;
    nsbox_cancel_fire(&c->cancel);
}

/* notifications/cancelled: the run is killed; its sandbox survives unless
 * it was a one-shot one. */
static void handle_cancelled(struct mcp_session *s, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (same_id(s->calls[i].id, rid))
            cancel_call(&s->calls[i]);
    pthread_mutex_unlock(&s->lock);
}

void mcp_session_init(struct mcp_session *s, struct mcp_server *cfg)
{
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->log_level = 3; /* warning */
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        s->calls[i].cancel.fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_cond_init(&s->released, NULL);
}

bool mcp_session_handle(struct mcp_session *s, const char *text, size_t len)
{
    struct jsonrpc_msg m;
    json_t *err_id;
    const char *why = NULL;

    int code = jsonrpc_parse(text, len, &m, &err_id, &why);
    if (code != 0) {
        send_error(s, err_id, code, why);
        json_decref(err_id);
        return true;
    }
    json_decref(err_id);
    if (m.method == NULL) { /* a response from the client: nothing asked */
        jsonrpc_msg_free(&m);
        return false;
    }
    bool notification = m.id == NULL;
    if (strcmp(m.method, "initialize") == 0 && !notification)
        handle_initialize(s, m.id, m.params);
    else if (strcmp(m.method, "ping") == 0 && !notification)
        send_result(s, m.id, json_object());
    else if (strcmp(m.method, "notifications/cancelled") == 0)
        handle_cancelled(s, m.params);
    else if (strncmp(m.method, "notifications/", 14) == 0)
        ; /* initialized, roots/list_changed, ...: nothing to do */
    else if (notification)
        ; /* unknown notifications are ignored (JSON-RPC: never answered) */
    else if (!s->initialized)
        send_error(s, m.id, MCP_NOT_INITIALIZED, "call initialize first");
    else if (strcmp(m.method, "tools/list") == 0)
        handle_tools_list(s, m.id);
    else if (strcmp(m.method, "tools/call") == 0)
        handle_tools_call(s, m.id, m.params);
    else if (strcmp(m.method, "logging/setLevel") == 0)
        handle_set_level(s, m.id, m.params);
    else
        send_error(s, m.id, JSONRPC_METHOD_NOT_FOUND, "method not found");
    jsonrpc_msg_free(&m);
    return !notification;
}

void mcp_session_drain(struct mcp_session *s, unsigned grace_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += grace_ms / 1000;
    until.tv_nsec += (long)(grace_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&s->lock);
    while (s->n_running > 0 && pthread_cond_timedwait(&s->idle, &s->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&s->lock);
}

void mcp_session_shutdown(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    /* Cancel whatever runs, then wait for the calls to come back. */
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s->calls[i].id != NULL)
            cancel_call(&s->calls[i]);
    while (s->n_running > 0)
        pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    mcp_sandboxes_stop_all(s);
}
