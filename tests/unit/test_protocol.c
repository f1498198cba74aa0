/* Unit tests for the protocol layer's pure parts (mcp/protocol/): the era
 * and per-request _meta checks of 2026-07-28 (era.c), the shaping of
 * results by era (reply.c: resultType, serverInfo, caching hints), the
 * per-call log level (mcp/call.c) and the x-mcp-header of the tool
 * declarations (mcp/tools/schema.c).  Messages are caught by a send
 * callback instead of a transport. */
#include "check.h"
#include "suites.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <time.h>

#include "../../mcp/ask.h"
#include "../../mcp/call.h"
#include "../../mcp/jsonrpc.h"
#include "../../mcp/protocol/dispatch.h"
#include "../../mcp/protocol/request.h"
#include "../../mcp/tools/args.h"
#include "../../mcp/tools/tools.h"

static struct mcp_server cfg;
static json_t *sent; /* the messages sent, in order */

static void capture(struct mcp_session *s, json_t *msg)
{
    (void)s;
    json_array_append_new(sent, msg);
}

static void session(struct mcp_session *s)
{
    mcp_session_init(s, &cfg);
    s->send = capture;
    json_decref(sent);
    sent = json_array();
}

static json_t *meta(const char *version, bool caps, const char *level)
{
    json_t *m = json_object();
    if (version)
        json_object_set_new(m, MCP_META_PROTOCOL_VERSION, json_string(version));
    if (caps)
        json_object_set_new(m, MCP_META_CLIENT_CAPS, json_object());
    if (level)
        json_object_set_new(m, MCP_META_LOG_LEVEL, json_string(level));
    return m;
}

/* Decides the era of method with params {"_meta": m} (m stolen; NULL: no
 * params).  Returns the code; *data gets the error's data (or NULL). */
static int decide(struct mcp_session *s, const char *method, json_t *m, struct mcp_req *rq,
                  json_t **params, json_t **data)
{
    const char *why;
    *params = m ? json_pack("{s:o}", "_meta", m) : NULL;
    *rq = (struct mcp_req){.s = s,
                           .id = NULL,
                           .method = method,
                           .params = *params,
                           .meta = json_object_get(*params, "_meta")};
    int code = mcp_era_decide(rq, &why, data);
    if (code != 0)
        CHECK(why != NULL && *why != '\0');
    return code;
}

static void versions(void)
{
    CHECK(mcp_version_modern("2026-07-28"));
    CHECK(!mcp_version_modern("2025-11-25"));
    CHECK(!mcp_version_modern(NULL));
    CHECK(mcp_version_legacy("2025-11-25") && mcp_version_legacy("2024-11-05"));
    CHECK(!mcp_version_legacy("2026-07-28") && !mcp_version_legacy("1900-01-01"));
    json_t *v = mcp_versions_json();
    CHECK(json_array_size(v) == 5);
    CHECK_STR(json_string_value(json_array_get(v, 0)), "2026-07-28");
    json_decref(v);
}

static void era_legacy(void)
{
    struct mcp_session s;
    struct mcp_req rq;
    json_t *params, *data;
    session(&s);
    /* No _meta, or one with only progressToken: legacy, as before. */
    CHECK(decide(&s, "tools/list", NULL, &rq, &params, &data) == 0);
    CHECK(rq.era == MCP_ERA_LEGACY && rq.log_level == -1 && rq.client_caps == NULL);
    json_decref(params);
    CHECK(decide(&s, "tools/call", json_pack("{s:i}", "progressToken", 3), &rq, &params, &data) ==
          0);
    CHECK(rq.era == MCP_ERA_LEGACY);
    json_decref(params);
    /* initialize without _meta is the legacy handshake. */
    CHECK(decide(&s, "initialize", NULL, &rq, &params, &data) == 0 && rq.era == MCP_ERA_LEGACY);
}

/* A 2025 session keeps its era whatever else _meta carries (issue #24:
 * Mastra's MCPClient pinned to "legacy" adds logLevel to every request). */
static void era_legacy_session_ignores_modern_keys(void)
{
    struct mcp_session s;
    struct mcp_req rq;
    json_t *params, *data;
    session(&s);
    /* initialize itself, with logLevel in _meta: the legacy handshake. */
    CHECK(decide(&s, "initialize", meta(NULL, false, "info"), &rq, &params, &data) == 0);
    CHECK(rq.era == MCP_ERA_LEGACY);
    json_decref(params);
    s.initialized = true;
    snprintf(s.protocol, sizeof(s.protocol), "2025-06-18");
    CHECK(decide(&s, "tools/list", meta(NULL, false, "info"), &rq, &params, &data) == 0);
    CHECK(rq.era == MCP_ERA_LEGACY && rq.client_caps == NULL);
    CHECK_STR(rq.version, "2025-06-18");
    json_decref(params);
    /* clientCapabilities and an unknown logLevel are unknown keys there too. */
    CHECK(decide(&s, "tools/call", meta(NULL, true, "loud"), &rq, &params, &data) == 0);
    CHECK(rq.era == MCP_ERA_LEGACY);
    json_decref(params);
    /* protocolVersion still makes a request modern inside the session. */
    CHECK(decide(&s, "tools/list", meta("2026-07-28", true, NULL), &rq, &params, &data) == 0);
    CHECK(rq.era == MCP_ERA_MODERN);
    json_decref(params);
}

static void era_modern(void)
{
    struct mcp_session s;
    struct mcp_req rq;
    json_t *params, *data;
    session(&s);
    CHECK(decide(&s, "tools/list", meta("2026-07-28", true, NULL), &rq, &params, &data) == 0);
    CHECK(rq.era == MCP_ERA_MODERN && rq.log_level == -1 && json_is_object(rq.client_caps));
    CHECK_STR(rq.version, "2026-07-28");
    json_decref(params);
    CHECK(decide(&s, "tools/call", meta("2026-07-28", true, "info"), &rq, &params, &data) == 0);
    CHECK(rq.log_level == mcp_log_level_index("info"));
    json_decref(params);
    /* Served without initialize: the session stays uninitialized. */
    CHECK(!s.initialized);
}

static void era_malformed(void)
{
    struct mcp_session s;
    struct mcp_req rq;
    json_t *params, *data;
    session(&s);
    /* A per-request key without protocolVersion: a malformed modern one. */
    CHECK(decide(&s, "tools/list", meta(NULL, true, NULL), &rq, &params, &data) ==
          JSONRPC_INVALID_PARAMS);
    CHECK(rq.era == MCP_ERA_MODERN && data == NULL);
    json_decref(params);
    CHECK(decide(&s, "tools/list", meta("2026-07-28", false, NULL), &rq, &params, &data) ==
          JSONRPC_INVALID_PARAMS);
    json_decref(params);
    CHECK(decide(&s, "tools/list", meta("2026-07-28", true, "loud"), &rq, &params, &data) ==
          JSONRPC_INVALID_PARAMS);
    json_decref(params);
    /* A version that is not a string. */
    CHECK(decide(&s, "tools/list",
                 json_pack("{s:i,s:{}}", MCP_META_PROTOCOL_VERSION, 20260728, MCP_META_CLIENT_CAPS),
                 &rq, &params, &data) == JSONRPC_INVALID_PARAMS);
    json_decref(params);
    /* Methods only the modern era has need the _meta. */
    CHECK(decide(&s, "server/discover", NULL, &rq, &params, &data) == JSONRPC_INVALID_PARAMS);
    CHECK(decide(&s, "subscriptions/listen", json_object(), &rq, &params, &data) ==
          JSONRPC_INVALID_PARAMS);
    json_decref(params);
    /* A session that serves only modern requests: no _meta is malformed. */
    s.modern_only = true;
    CHECK(decide(&s, "tools/list", NULL, &rq, &params, &data) == JSONRPC_INVALID_PARAMS);
    CHECK(decide(&s, "initialize", NULL, &rq, &params, &data) == JSONRPC_INVALID_PARAMS);
}

static void era_unsupported(void)
{
    struct mcp_session s;
    struct mcp_req rq;
    json_t *params, *data;
    session(&s);
    const char *bad[] = {"1900-01-01", "v999.0.0", "2025-11-25"};
    for (size_t i = 0; i < 3; i++) {
        CHECK(decide(&s, "server/discover", meta(bad[i], true, NULL), &rq, &params, &data) ==
              MCP_UNSUPPORTED_PROTOCOL_VERSION);
        CHECK(data != NULL);
        CHECK_STR(json_string_value(json_object_get(data, "requested")), bad[i]);
        json_t *sup = json_object_get(data, "supported");
        CHECK(json_array_size(sup) == mcp_n_versions);
        CHECK_STR(json_string_value(json_array_get(sup, 0)), "2026-07-28");
        json_decref(data);
        json_decref(params);
    }
    /* The version is checked before the rest: a client of another
     * revision learns what to retry with. */
    CHECK(decide(&s, "tools/list", meta("2099-01-01", false, NULL), &rq, &params, &data) ==
          MCP_UNSUPPORTED_PROTOCOL_VERSION);
    json_decref(data);
    json_decref(params);
}

static void reply_shaped_by_era(void)
{
    struct mcp_session s;
    session(&s);
    json_t *id = json_integer(7);
    struct mcp_req modern = {.s = &s, .id = id, .era = MCP_ERA_MODERN};
    struct mcp_req legacy = {.s = &s, .id = id, .era = MCP_ERA_LEGACY};

    json_t *r = json_pack("{s:[]}", "tools");
    mcp_cacheable(&modern, r, 1000, "public");
    mcp_reply(&modern, r);
    r = json_pack("{s:[]}", "tools");
    mcp_cacheable(&legacy, r, 1000, "public");
    mcp_reply(&legacy, r);
    r = json_object();
    mcp_cacheable(&modern, r, -5, "bogus");
    mcp_reply(&modern, r);

    json_t *m0 = json_object_get(json_array_get(sent, 0), "result");
    CHECK_STR(json_string_value(json_object_get(m0, "resultType")), "complete");
    CHECK(json_integer_value(json_object_get(m0, "ttlMs")) == 1000);
    CHECK_STR(json_string_value(json_object_get(m0, "cacheScope")), "public");
    json_t *info = json_object_get(json_object_get(m0, "_meta"), MCP_META_SERVER_INFO);
    CHECK_STR(json_string_value(json_object_get(info, "name")), "nsbox");
    CHECK(json_is_string(json_object_get(info, "version")));
    CHECK(json_integer_value(json_object_get(json_array_get(sent, 0), "id")) == 7);

    json_t *m1 = json_object_get(json_array_get(sent, 1), "result");
    CHECK(json_object_get(m1, "resultType") == NULL && json_object_get(m1, "_meta") == NULL);
    CHECK(json_object_get(m1, "ttlMs") == NULL && json_object_get(m1, "cacheScope") == NULL);

    /* A negative ttl is 0; a scope other than public is private. */
    json_t *m2 = json_object_get(json_array_get(sent, 2), "result");
    CHECK(json_integer_value(json_object_get(m2, "ttlMs")) == 0);
    CHECK_STR(json_string_value(json_object_get(m2, "cacheScope")), "private");
    json_decref(id);
}

static void reply_keeps_result_type(void)
{
    struct mcp_session s;
    session(&s);
    json_t *id = json_string("x");
    struct mcp_req modern = {.s = &s, .id = id, .era = MCP_ERA_MODERN};
    mcp_reply(&modern, json_pack("{s:s,s:{s:i}}", "resultType", "input_required", "_meta", "k", 1));
    json_t *res = json_object_get(json_array_get(sent, 0), "result");
    CHECK_STR(json_string_value(json_object_get(res, "resultType")), "input_required");
    CHECK(json_integer_value(json_object_get(json_object_get(res, "_meta"), "k")) == 1);
    CHECK(json_object_get(json_object_get(res, "_meta"), MCP_META_SERVER_INFO) != NULL);
    json_decref(id);
}

static size_t n_logs(void)
{
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(sent); i++)
        n += strcmp(json_string_value(json_object_get(json_array_get(sent, i), "method")) ?: "",
                    "notifications/message") == 0;
    return n;
}

static void call_log_levels(void)
{
    struct mcp_session s;
    session(&s);
    struct mcp_call none = {.log_level = -1}, info = {.log_level = 1},
                    legacy = {.log_level = MCP_LOG_SESSION};
    /* A modern request without logLevel: never (MUST NOT). */
    mcp_call_log(&s, &none, "emergency", "x");
    CHECK(n_logs() == 0);
    /* With logLevel info: info and above. */
    mcp_call_log(&s, &info, "debug", "x");
    CHECK(n_logs() == 0);
    mcp_call_log(&s, &info, "info", "sandbox %s", "y");
    CHECK(n_logs() == 1);
    CHECK_STR(json_string_value(
                  json_object_get(json_object_get(json_array_get(sent, 0), "params"), "data")),
              "sandbox y");
    /* Legacy: the session's logging/setLevel, once initialized. */
    mcp_call_log(&s, &legacy, "error", "x");
    CHECK(n_logs() == 1);
    s.initialized = true;
    s.log_level = 3; /* warning */
    mcp_call_log(&s, &legacy, "info", "x");
    CHECK(n_logs() == 1);
    mcp_call_log(&s, &legacy, "error", "x");
    CHECK(n_logs() == 2);
}

static void capture_related(struct mcp_session *s, json_t *id, json_t *msg)
{
    (void)id;
    capture(s, msg);
}

/* subscriptions/listen: refused without a way to reach its stream;
 * acknowledged (nothing honoured), cancelled without a response, closed
 * with a completion result at the end. */
static void listen_lifecycle(void)
{
    struct mcp_session s;
    session(&s);
    json_t *params = json_pack("{s:{s:b}}", "notifications", "toolsListChanged", 1);
    json_t *id1 = json_string("sub-1"), *id2 = json_integer(2);
    struct mcp_req rq = {.s = &s, .id = id1, .params = params, .era = MCP_ERA_MODERN};

    mcp_handle_listen(&rq);
    CHECK(json_integer_value(json_object_get(json_object_get(json_array_get(sent, 0), "error"),
                                             "code")) == JSONRPC_METHOD_NOT_FOUND);
    s.send_related = capture_related;
    mcp_handle_listen(&rq);
    json_t *ack = json_array_get(sent, 1);
    CHECK_STR(json_string_value(json_object_get(ack, "method")),
              "notifications/subscriptions/acknowledged");
    json_t *p = json_object_get(ack, "params");
    CHECK(json_equal(json_object_get(json_object_get(p, "_meta"), MCP_META_SUBSCRIPTION_ID), id1));
    CHECK(json_object_size(json_object_get(p, "notifications")) == 0);
    rq.id = id2;
    mcp_handle_listen(&rq);
    CHECK(json_array_size(sent) == 3);
    /* The first is cancelled: its slot is free at once, no response. */
    size_t held = 0;
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        if (s.calls[i].id && json_equal(s.calls[i].id, id1))
            mcp_call_cancel(&s.calls[i]);
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        held += s.calls[i].id != NULL;
    CHECK(held == 1);
    mcp_listens_close(&s);
    CHECK(json_array_size(sent) == 5);
    json_t *end = json_array_get(sent, 3);
    json_t *bye = json_array_get(sent, 4);
    CHECK_STR(json_string_value(json_object_get(bye, "method")), "notifications/cancelled");
    CHECK(json_equal(json_object_get(json_object_get(bye, "params"), "requestId"), id2));
    CHECK(json_equal(json_object_get(end, "id"), id2));
    json_t *res = json_object_get(end, "result");
    CHECK_STR(json_string_value(json_object_get(res, "resultType")), "complete");
    CHECK(
        json_equal(json_object_get(json_object_get(res, "_meta"), MCP_META_SUBSCRIPTION_ID), id2));
    for (size_t i = 0; i < MCP_MAX_CALLS; i++)
        CHECK(s.calls[i].id == NULL);
    json_decref(params);
    json_decref(id1);
    json_decref(id2);
}

static void header_names(void)
{
    CHECK(mcp_header_name_valid("Sandbox-Id"));
    CHECK(mcp_header_name_valid("a.b_c~!#$%&'*+^`|9"));
    CHECK(!mcp_header_name_valid(""));
    CHECK(!mcp_header_name_valid(NULL));
    CHECK(!mcp_header_name_valid("Sandbox Id"));
    CHECK(!mcp_header_name_valid("Sandbox:Id"));
    CHECK(!mcp_header_name_valid("a\r\nb"));
    CHECK(!mcp_header_name_valid("caf\xc3\xa9"));
}

/* Every tool's declaration: valid headers, and sandbox_id carries one. */
static void tool_headers(void)
{
    struct nsbox_err err = {0};
    size_t with_sandbox = 0;
    for (size_t i = 0; i < mcp_n_tools; i++) {
        const struct mcp_tool_args *t = mcp_tool_args_find(mcp_tools[i].name);
        if (t == NULL)
            continue;
        if (mcp_schema_check_headers(t, &err) < 0) {
            printf("# %s\n", err.msg);
            CHECK(!"a tool's x-mcp-header breaks a constraint");
        }
        for (size_t j = 0; j < t->n_fields; j++)
            if (strcmp(t->fields[j].name, "sandbox_id") == 0) {
                CHECK_STR(t->fields[j].header, "Sandbox-Id");
                with_sandbox++;
            }
        json_t *schema = mcp_schema_build(t);
        mcp_schema_add_headers(t, schema);
        json_t *p = json_object_get(json_object_get(schema, "properties"), "sandbox_id");
        if (p != NULL)
            CHECK_STR(json_string_value(json_object_get(p, "x-mcp-header")), "Sandbox-Id");
        json_decref(schema);
    }
    CHECK(with_sandbox >= 10);
}

static void header_constraints(void)
{
    struct nsbox_err err = {0};
    const struct mcp_arg twice[] = {{.name = "a", .type = MCP_ARG_STRING, .header = "X-Id"},
                                    {.name = "b", .type = MCP_ARG_INTEGER, .header = "x-id"}};
    const struct mcp_arg number[] = {{.name = "n", .type = MCP_ARG_NUMBER, .header = "N"}};
    const struct mcp_arg space[] = {{.name = "s", .type = MCP_ARG_STRING, .header = "A B"}};
    const struct mcp_arg fine[] = {{.name = "s", .type = MCP_ARG_STRING, .header = "S"},
                                   {.name = "b", .type = MCP_ARG_BOOLEAN, .header = "B"}};
    CHECK(mcp_schema_check_headers(&(struct mcp_tool_args){"t", twice, 2}, &err) < 0);
    CHECK(strstr(err.msg, "twice") != NULL);
    CHECK(mcp_schema_check_headers(&(struct mcp_tool_args){"t", number, 1}, &err) < 0);
    CHECK(mcp_schema_check_headers(&(struct mcp_tool_args){"t", space, 1}, &err) < 0);
    CHECK(mcp_schema_check_headers(&(struct mcp_tool_args){"t", fine, 2}, &err) == 0);
}

/* ---- a request of the server's own (mcp/ask.c) ---- */

/* The asking thread's messages (its send runs on that thread). */
static pthread_mutex_t ask_lock = PTHREAD_MUTEX_INITIALIZER;

static void capture_locked(struct mcp_session *s, json_t *msg)
{
    pthread_mutex_lock(&ask_lock);
    capture(s, msg);
    pthread_mutex_unlock(&ask_lock);
}

struct asker {
    struct mcp_session *s;
    struct mcp_call *call;
    unsigned timeout_ms;
    int end;
    json_t *answer;
};

static void *ask_thread(void *arg)
{
    struct asker *a = arg;
    struct nsbox_err err;
    a->end = mcp_ask(a->s, a->call, "elicitation/create", json_pack("{s:s}", "message", "m"),
                     a->timeout_ms, &a->answer, &err);
    return NULL;
}

/* The n-th message sent (a new reference), waiting up to 2 s for it. */
static json_t *sent_nth(size_t n)
{
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&ask_lock);
        json_t *m = json_incref(json_array_get(sent, n));
        pthread_mutex_unlock(&ask_lock);
        if (m != NULL)
            return m;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return NULL;
}

/* Hands the session the text before, id, after as a client's message. */
static void handle(struct mcp_session *s, const char *before, const char *id, const char *after)
{
    char text[512];
    snprintf(text, sizeof(text), "%s%s%s", before, id, after);
    mcp_session_handle(s, text, strlen(text));
}

static struct mcp_call *ask_session(struct mcp_session *s)
{
    session(s);
    s->send = capture_locked;
    json_t *id = json_integer(7);
    pthread_mutex_lock(&s->lock);
    int slot = mcp_call_claim(s, id, NULL, MCP_LOG_SESSION);
    pthread_mutex_unlock(&s->lock);
    json_decref(id);
    CHECK(slot >= 0);
    return &s->calls[slot < 0 ? 0 : slot];
}

/* The answer with the question's id ends the wait; stray, malformed and
 * second answers change nothing. */
static void ask_answered(void)
{
    struct mcp_session s;
    struct asker a = {.s = &s, .call = ask_session(&s), .timeout_ms = 10000};
    pthread_t t;
    pthread_create(&t, NULL, ask_thread, &a);
    json_t *q = sent_nth(0);
    CHECK(q != NULL);
    const char *qid = json_string_value(json_object_get(q, "id"));
    CHECK(qid != NULL && strncmp(qid, "nsbox-ask-", 10) == 0);
    CHECK_STR(json_string_value(json_object_get(q, "method")), "elicitation/create");
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"", qid, "-x\",\"result\":{\"action\":\"accept\"}}");
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"action\":\"accept\"}}", "", "");
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"", qid, "\",\"result\":\"accept\"}");
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"", qid, "\",\"result\":{},\"error\":{}}");
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"", qid, "\",\"result\":{\"action\":\"decline\"}}");
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"", qid, "\",\"result\":{\"action\":\"accept\"}}");
    pthread_join(t, NULL);
    CHECK(a.end == MCP_ASK_ANSWERED);
    CHECK_STR(json_string_value(json_object_get(a.answer, "action")), "decline");
    CHECK(s.asks == NULL);
    CHECK(json_array_size(sent) == 1); /* no answer of its own to any of them */
    json_decref(a.answer);
    json_decref(q);
    mcp_call_release(a.call);
}

/* No answer: a timeout, and the client is told the question is
 * withdrawn; an error answer ends the wait as an error. */
static void ask_timeout_and_error(void)
{
    struct mcp_session s;
    struct asker a = {.s = &s, .call = ask_session(&s), .timeout_ms = 100};
    ask_thread(&a);
    CHECK(a.end == MCP_ASK_TIMEOUT && a.answer == NULL);
    json_t *q = json_array_get(sent, 0), *bye = json_array_get(sent, 1);
    CHECK_STR(json_string_value(json_object_get(bye, "method")), "notifications/cancelled");
    CHECK(json_equal(json_object_get(json_object_get(bye, "params"), "requestId"),
                     json_object_get(q, "id")));
    pthread_t t;
    a.timeout_ms = 10000;
    pthread_create(&t, NULL, ask_thread, &a);
    json_t *q2 = sent_nth(2);
    CHECK(q2 != NULL);
    handle(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"", json_string_value(json_object_get(q2, "id")),
           "\",\"error\":{\"code\":-1,\"message\":\"no\"}}");
    pthread_join(t, NULL);
    CHECK(a.end == MCP_ASK_ERROR);
    CHECK_STR(json_string_value(json_object_get(a.answer, "message")), "no");
    CHECK(!json_equal(json_object_get(q, "id"), json_object_get(q2, "id")));
    json_decref(a.answer);
    json_decref(q2);
    mcp_call_release(a.call);
}

/* The call's cancellation ends the wait at once; form elicitation is read
 * from initialize's capabilities. */
static void ask_cancelled(void)
{
    struct mcp_session s;
    struct asker a = {.s = &s, .call = ask_session(&s), .timeout_ms = 30000};
    pthread_t t;
    pthread_create(&t, NULL, ask_thread, &a);
    json_t *q = sent_nth(0);
    CHECK(q != NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&s.lock);
    mcp_call_cancel(a.call);
    pthread_mutex_unlock(&s.lock);
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(a.end == MCP_ASK_CANCELLED);
    CHECK(t1.tv_sec - t0.tv_sec < 3);
    json_decref(q);
    mcp_call_release(a.call);

    json_t *caps = json_loads("{\"elicitation\":{}}", 0, NULL);
    CHECK(mcp_ask_client_has_form(caps));
    json_object_set_new(caps, "elicitation", json_pack("{s:{}}", "form"));
    CHECK(mcp_ask_client_has_form(caps));
    json_object_set_new(caps, "elicitation", json_pack("{s:{}}", "url"));
    CHECK(!mcp_ask_client_has_form(caps));
    json_object_set_new(caps, "elicitation", json_true());
    CHECK(!mcp_ask_client_has_form(caps));
    CHECK(!mcp_ask_client_has_form(NULL));
    json_decref(caps);
}

void suite_protocol(void)
{
    RUN_TEST(versions);
    RUN_TEST(era_legacy);
    RUN_TEST(era_legacy_session_ignores_modern_keys);
    RUN_TEST(era_modern);
    RUN_TEST(era_malformed);
    RUN_TEST(era_unsupported);
    RUN_TEST(reply_shaped_by_era);
    RUN_TEST(reply_keeps_result_type);
    RUN_TEST(call_log_levels);
    RUN_TEST(listen_lifecycle);
    RUN_TEST(header_names);
    RUN_TEST(tool_headers);
    RUN_TEST(header_constraints);
    RUN_TEST(ask_answered);
    RUN_TEST(ask_timeout_and_error);
    RUN_TEST(ask_cancelled);
    json_decref(sent);
    sent = NULL;
}
