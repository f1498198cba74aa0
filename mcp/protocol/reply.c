/* Answering a request (request.h): responses shaped for the request's
 * era (resultType, serverInfo, caching hints), held copies of requests
 * for worker threads, the server's identity. */
#include <stdlib.h>
#include <string.h>

#include "../jsonrpc.h"
#include "request.h"

json_t *mcp_server_info(void)
{
    return json_pack("{s:s,s:s,s:s}", "name", "nsbox", "title", "nsbox sandboxes", "version",
                     "0.1.0");
}

int mcp_req_call_log_level(const struct mcp_req *rq)
{
    return rq->era == MCP_ERA_MODERN ? rq->log_level : MCP_LOG_SESSION;
}

/* A modern result: resultType (MCP 2026-07-28 "ResultType") and the
 * server's identity in _meta (a SHOULD on every result). */
static void shape_modern(json_t *result)
{
    if (json_object_get(result, "resultType") == NULL)
        json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    if (json_object_get(meta, MCP_META_SERVER_INFO) == NULL)
        json_object_set_new(meta, MCP_META_SERVER_INFO, mcp_server_info());
}

void mcp_reply(const struct mcp_req *rq, json_t *result)
{
    if (rq->era == MCP_ERA_MODERN && json_is_object(result))
        shape_modern(result);
    rq->s->send(rq->s, jsonrpc_result(rq->id, result));
}

void mcp_cacheable(const struct mcp_req *rq, json_t *result, long ttl_ms, const char *scope)
{
    if (rq->era != MCP_ERA_MODERN || !json_is_object(result))
        return;
    json_object_set_new(result, "ttlMs", json_integer(ttl_ms > 0 ? ttl_ms : 0));
    json_object_set_new(result, "cacheScope",
                        json_string(scope && strcmp(scope, "public") == 0 ? "public" : "private"));
}

void mcp_reply_error_data(const struct mcp_req *rq, int code, const char *message, json_t *data)
{
    json_t *msg = jsonrpc_error(rq->id, code, message);
    if (data != NULL)
        json_object_set_new(json_object_get(msg, "error"), "data", data);
    rq->s->send(rq->s, msg);
}

void mcp_reply_error(const struct mcp_req *rq, int code, const char *message)
{
    mcp_reply_error_data(rq, code, message, NULL);
}

struct mcp_req *mcp_req_hold(const struct mcp_req *rq)
{
    struct mcp_req *h = malloc(sizeof(*h));
    if (h == NULL)
        return NULL;
    *h = *rq;
    h->method = NULL; /* the message's; a held request is answered, not dispatched */
    h->id = json_incref(rq->id);
    h->params = json_incref(rq->params);
    h->meta = json_incref(rq->meta);
    h->held = true;
    return h;
}

void mcp_req_release(struct mcp_req *rq)
{
    if (rq == NULL)
        return;
    json_decref(rq->id);
    json_decref(rq->params);
    json_decref(rq->meta);
    free(rq);
}
