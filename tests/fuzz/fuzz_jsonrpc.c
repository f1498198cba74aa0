/* libFuzzer target: JSON-RPC framing and request validation (the bytes a
 * client sends on stdin or in a POST body), as mcp/ reads them: depth check
 * first, then parse and validate, then the era of a request and the
 * checks of its 2026-07-28 _meta (mcp/protocol/era.c), and the shaping of
 * a response for that era (reply.c). */
#include <stddef.h>
#include <stdint.h>

#include "../../mcp/jsonrpc.h"
#include "../../mcp/protocol/request.h"
#include "../../mcp/server.h"

static void drop(struct mcp_session *s, json_t *msg)
{
    (void)s;
    json_decref(msg);
}

/* The era of a parsed request, and an answer shaped for it. */
static void era(const struct jsonrpc_msg *msg)
{
    static struct mcp_server cfg;
    static struct mcp_session s;
    static int ready;
    if (!ready) {
        mcp_session_init(&s, &cfg);
        s.send = drop;
        ready = 1;
    }
    s.modern_only = msg->id != NULL && json_is_integer(msg->id) && json_integer_value(msg->id) < 0;
    struct mcp_req rq = {.s = &s,
                         .id = msg->id,
                         .method = msg->method,
                         .params = msg->params,
                         .meta = json_object_get(msg->params, "_meta")};
    const char *why;
    json_t *data;
    int code = mcp_era_decide(&rq, &why, &data);
    if (code != 0) {
        mcp_reply_error_data(&rq, code, why, data);
        return;
    }
    json_t *res = json_object();
    mcp_cacheable(&rq, res, 1000, "public");
    mcp_reply(&rq, res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    if (jsonrpc_too_deep(text, size, 64))
        return 0;
    struct jsonrpc_msg msg;
    json_t *error_id = NULL;
    const char *why = NULL;
    int rc = jsonrpc_parse(text, size, &msg, &error_id, &why);
    if (rc == 0) {
        /* Answering must work for whatever id the request carried. */
        json_t *reply = msg.id ? jsonrpc_error(msg.id, -32601, "x") : NULL;
        json_decref(reply);
        if (msg.method != NULL)
            era(&msg);
        jsonrpc_msg_free(&msg);
        json_decref(error_id);
    } else {
        json_t *reply = jsonrpc_error(error_id ? error_id : json_null(), rc,
                                      why ? why : "invalid");
        json_decref(reply);
        json_decref(error_id);
    }
    return 0;
}
