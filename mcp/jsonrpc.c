#include "jsonrpc.h"

#include <string.h>

bool jsonrpc_too_deep(const char *text, size_t len, int max)
{
    int depth = 0;
    bool in_string = false, escaped = false;

    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > max)
                return true;
        } else if (c == ']' || c == '}')
            depth--;
    }
    return false;
}

static bool valid_id(json_t *id)
{
    return json_is_string(id) || json_is_integer(id) || json_is_null(id);
}

int jsonrpc_parse(const char *text, size_t len, struct jsonrpc_msg *msg, json_t **error_id,
                  const char **why)
{
    json_error_t jerr;

    memset(msg, 0, sizeof(*msg));
    *error_id = json_null();
    if (len > MCP_MESSAGE_MAX) {
        *why = "message too large";
        return JSONRPC_INVALID_REQUEST;
    }
    if (jsonrpc_too_deep(text, len, MCP_DEPTH_MAX)) {
        *why = "JSON nested too deeply";
        return JSONRPC_INVALID_REQUEST;
    }
    /* DECODE_ANY: a bare number is valid JSON but not a request (-32600). */
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (root == NULL) {
        *why = "parse error: not valid JSON";
        return JSONRPC_PARSE_ERROR;
    }
    if (json_is_array(root)) {
        json_decref(root);
        *why = "batches are not supported (removed in MCP 2025-06-18)";
        return JSONRPC_INVALID_REQUEST;
    }
    json_t *id = json_object_get(root, "id");
    if (id != NULL && valid_id(id)) {
        json_decref(*error_id);
        *error_id = json_incref(id);
    }
    json_t *version = json_object_get(root, "jsonrpc");
    json_t *method = json_object_get(root, "method");
    json_t *params = json_object_get(root, "params");
    bool is_response = method == NULL && (json_object_get(root, "result") != NULL ||
                                          json_object_get(root, "error") != NULL);
    if (!json_is_object(root) || !json_is_string(version) ||
        strcmp(json_string_value(version), "2.0") != 0 || (id != NULL && !valid_id(id)) ||
        (!is_response && !json_is_string(method)) ||
        (params != NULL && !json_is_object(params) && !json_is_array(params))) {
        json_decref(root);
        *why = "invalid request: needs jsonrpc \"2.0\", a string method and object params";
        return JSONRPC_INVALID_REQUEST;
    }
    msg->root = root;
    msg->id = id;
    msg->method = is_response ? NULL : json_string_value(method);
    msg->params = params;
    return 0;
}

void jsonrpc_msg_free(struct jsonrpc_msg *msg)
{
    json_decref(msg->root);
    memset(msg, 0, sizeof(*msg));
}

json_t *jsonrpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
                     result ? result : json_object());
}

json_t *jsonrpc_error(json_t *id, int code, const char *message)
{
    return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                     "error", "code", code, "message", message);
}

json_t *jsonrpc_notification(const char *method, json_t *params)
{
    return json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params",
                     params ? params : json_object());
}
