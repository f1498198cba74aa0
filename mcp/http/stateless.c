/* The stateless path of /mcp (see stateless.h). */
#include "stateless.h"

#include <stdio.h>
#include <string.h>

#include "../../common/cleanup_json.h"
#include "../protocol/dispatch.h"
#include "../protocol/request.h"
#include "../tools/args.h"
#include "../tools/schema.h"
#include "policy.h"
#include "reqmeta.h"
#include "sessions.h"
#include "streams.h"
#include "tenants.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define HEADER_VALUE_MAX 8192 /* decoded bytes of one Mcp-Name or Mcp-Param-* */

static const char *meta_version(const struct jsonrpc_msg *m)
{
    return json_string_value(json_object_get(json_object_get(m->params, "_meta"), META_VERSION));
}

bool http_stateless_wanted(struct MHD_Connection *c, const struct jsonrpc_msg *m)
{
    const char *h = http_header_value(c, "MCP-Protocol-Version"), *b = meta_version(m);
    return (h && mcp_version_modern(h)) || (b && mcp_version_modern(b));
}

enum http_result http_refuse_version(struct MHD_Connection *c, json_t *id, const char *requested)
{
    /* The versions server/discover lists (protocol/era.c). */
    _cleanup_json_ json_t *msg = json_pack(
        "{s:s,s:O?,s:{s:i,s:s,s:{s:o,s:s}}}", "jsonrpc", "2.0", "id", id, "error", "code",
        MCP_ERR_UNSUPPORTED_VERSION, "message", "unsupported protocol version", "data", "supported",
        mcp_versions_json(), "requested", requested);
    if (msg && json_is_null(json_object_get(msg, "id")))
        json_object_del(msg, "id");
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    if (text == NULL)
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory");
    return http_reply(c, HTTP_BAD_REQUEST, text, HTTP_NO_HEADER, HTTP_NO_HEADER);
}

/* ---- Server Validation ---- */

/* A header against the body's value b (NULL: absent).  Returns NULL when
 * they agree, else why not (into why). */
static const char *header_vs_body(struct MHD_Connection *c, const char *name, const json_t *b,
                                  char *why, size_t size)
{
    const char *raw = http_header_value(c, name);
    char v[HEADER_VALUE_MAX];
    size_t n;

    if (b != NULL && json_is_null(b))
        b = NULL;
    if (raw == NULL && b == NULL)
        return NULL;
    if (raw == NULL)
        snprintf(why, size, "Header mismatch: the %s header is missing", name);
    else if (http_meta_decode(raw, v, sizeof(v), &n) < 0)
        snprintf(why, size, "Header mismatch: the %s header has invalid characters or bad base64",
                 name);
    else if (b == NULL)
        snprintf(why, size, "Header mismatch: %s is sent but the body has no such value", name);
    else if (!http_meta_matches(v, n, b))
        snprintf(why, size, "Header mismatch: the %s header value does not match the body", name);
    else
        return NULL;
    return why;
}

/* The Mcp-Param-* headers of the arguments whose declaration names a
 * header (x-mcp-header, tools/schema.h), against the call's arguments.
 * nsbox's tools have flat arguments, so each is a top-level property. */
static const char *tool_params(struct MHD_Connection *c, const struct jsonrpc_msg *m, char *why,
                               size_t size)
{
    const struct mcp_tool_args *decl = mcp_tool_args_find(
        json_string_value(json_object_get(m->params, "name")));
    json_t *args = json_object_get(m->params, "arguments");

    for (size_t i = 0; decl != NULL && i < decl->n_fields; i++) {
        const struct mcp_arg *f = &decl->fields[i];
        char name[160];
        if (f->header == NULL)
            continue;
        snprintf(name, sizeof(name), "Mcp-Param-%s", f->header);
        json_t *value = json_is_object(args) ? json_object_get(args, f->name) : NULL;
        if (header_vs_body(c, name, value, why, size) != NULL)
            return why;
    }
    return NULL; /* no such tool: tools/call says so */
}

/* MCP-Protocol-Version and Mcp-Method against the body: NULL, or why not. */
static const char *validate_standard(struct MHD_Connection *c, const struct jsonrpc_msg *m,
                                     char *why, size_t size)
{
    const char *h = http_header_value(c, "MCP-Protocol-Version"), *b = meta_version(m);
    const char *method = http_header_value(c, "Mcp-Method");

    if (h == NULL)
        snprintf(why, size, "Header mismatch: the MCP-Protocol-Version header is missing");
    else if (strcmp(h, b) != 0)
        snprintf(why, size, "Header mismatch: MCP-Protocol-Version %s does not match _meta's %s %s",
                 h, META_VERSION, b ? b : "(none)");
    else if (method == NULL)
        snprintf(why, size, "Header mismatch: the Mcp-Method header is missing");
    else if (strcmp(method, m->method) != 0)
        snprintf(why, size, "Header mismatch: Mcp-Method does not match the body's method");
    else
        return NULL;
    return why;
}

/* Mcp-Name and the Mcp-Param-* headers against the body: NULL, or why. */
static const char *validate_names(struct MHD_Connection *c, const struct jsonrpc_msg *m, char *why,
                                  size_t size)
{
    if (strcmp(m->method, "tools/call") == 0)
        return header_vs_body(c, "Mcp-Name", json_object_get(m->params, "name"), why, size)
                   ?: tool_params(c, m, why, size);
    if (strcmp(m->method, "prompts/get") == 0)
        return header_vs_body(c, "Mcp-Name", json_object_get(m->params, "name"), why, size);
    if (strcmp(m->method, "resources/read") == 0)
        return header_vs_body(c, "Mcp-Name", json_object_get(m->params, "uri"), why, size);
    return NULL;
}

/* ---- running it in the tenant session ---- */

/* The body with the internal id and progress token in place of the
 * client's (NULL when out of memory). */
static char *rewrite(const struct jsonrpc_msg *m, json_t *id, json_t *token)
{
    _cleanup_json_ json_t *copy = json_deep_copy(m->root);
    json_t *meta = json_object_get(json_object_get(copy, "params"), "_meta");
    if (copy == NULL)
        return NULL;
    json_object_set(copy, "id", id);
    if (token != NULL)
        json_object_set(meta, "progressToken", token);
    return json_dumps(copy, JSON_COMPACT);
}

/* Links st into hs and counts a handler in, unless hs ended. */
static bool stream_open(struct http_session *hs, struct http_stream *st)
{
    pthread_mutex_lock(&hs->lock);
    bool ok = !hs->ended;
    if (ok) {
        http_stream_link(st);
        hs->handlers++;
    }
    pthread_mutex_unlock(&hs->lock);
    return ok;
}

static enum http_result run(struct MHD_Connection *c, struct http_tenant *tn,
                            struct http_session *hs, const struct jsonrpc_msg *m, bool sse,
                            unsigned keepalive_s)
{
    json_t *client_token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
    _cleanup_json_ json_t *id = http_tenant_internal_id(tn, false);
    _cleanup_json_ json_t *token = client_token ? http_tenant_internal_id(tn, true) : NULL;
    char *text = id ? rewrite(m, id, token) : NULL;
    struct http_stream *st = text ? http_stream_new(hs, sse ? HTTP_STREAM_SSE : HTTP_STREAM_JSON,
                                                    id, token, http_conn_fd(c), keepalive_s)
                                  : NULL;

    if (st == NULL) {
        free(text);
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory");
    }
    http_stream_set_client(st, m->id, client_token);
    if (!stream_open(hs, st)) {
        free(text);
        http_stream_free(st);
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, "the server is shutting down");
    }
    mcp_session_handle(&hs->s, text, strlen(text));
    free(text);
    http_session_leave(hs);
    return sse ? http_stream_reply_sse(c, st, NULL) : http_stream_reply_json(c, st, NULL);
}

enum http_result http_stateless_post(struct MHD_Connection *c, struct http_request *rq,
                                     const struct jsonrpc_msg *m, bool sse, unsigned keepalive_s)
{
    char why[512];
    const struct mcp_method *method = m->method ? mcp_method_find(m->method) : NULL;

    if (m->method == NULL || m->id == NULL) /* see stateless.h */
        return http_reply(c, HTTP_ACCEPTED, NULL, HTTP_NO_HEADER, HTTP_NO_HEADER);
    json_t *meta = json_object_get(m->params, "_meta");
    if (meta_version(m) == NULL || !json_is_object(json_object_get(meta, META_CAPS)))
        return http_reply_error(c, HTTP_BAD_REQUEST, m->id, JSONRPC_INVALID_PARAMS,
                                "invalid params: a 2026-07-28 request carries params._meta with "
                                "io.modelcontextprotocol/protocolVersion and clientCapabilities",
                                HTTP_NO_HEADER);
    if (validate_standard(c, m, why, sizeof(why)) != NULL)
        return http_reply_error(c, HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH, why,
                                HTTP_NO_HEADER);
    if (method == NULL || !(method->flags & MCP_M_MODERN))
        return http_reply_error(c, HTTP_NOT_FOUND, m->id, JSONRPC_METHOD_NOT_FOUND,
                                "method not found", HTTP_NO_HEADER);
    if (validate_names(c, m, why, sizeof(why)) != NULL)
        return http_reply_error(c, HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH, why,
                                HTTP_NO_HEADER);
    const char *no = NULL;
    struct http_session *hs = http_tenant_session(rq->tenant, &no);
    if (hs == NULL)
        return http_refuse(c, HTTP_SERVICE_UNAVAILABLE, no);
    enum http_result r = run(c, rq->tenant, hs, m, sse, keepalive_s);
    http_session_unref(hs);
    return r;
}
