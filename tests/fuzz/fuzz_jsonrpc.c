/* libFuzzer target: JSON-RPC framing and request validation (the bytes a
 * client sends on stdin or in a POST body), as mcp/ reads them: depth check
 * first, then parse and validate. */
#include <stddef.h>
#include <stdint.h>

#include "../../mcp/jsonrpc.h"

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
