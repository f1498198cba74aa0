/* JSON-RPC 2.0 for MCP: parsing one message under fixed bounds, and
 * building responses.  Size and nesting depth are checked on the raw bytes
 * before jansson sees them (jansson has no depth limit of its own). */
#ifndef NSBOX_MCP_JSONRPC_H
#define NSBOX_MCP_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_MESSAGE_MAX (16u << 20) /* bytes in one message */
#define MCP_DEPTH_MAX 64            /* nested arrays/objects */

enum {
    JSONRPC_PARSE_ERROR = -32700,
    JSONRPC_INVALID_REQUEST = -32600,
    JSONRPC_METHOD_NOT_FOUND = -32601,
    JSONRPC_INVALID_PARAMS = -32602,
    JSONRPC_INTERNAL_ERROR = -32603,
    MCP_NOT_INITIALIZED = -32002,
};

struct jsonrpc_msg {
    json_t *root;       /* owned */
    json_t *id;         /* borrowed; NULL for notifications */
    const char *method; /* NULL for responses */
    json_t *params;     /* borrowed; may be NULL */
};

/* Parses len bytes.  On success fills msg (free with jsonrpc_msg_free) and
 * returns 0.  On failure returns a JSON-RPC error code.  Either way
 * *error_id is a new reference the caller releases: the request's id when
 * it could be read, else null. */
int jsonrpc_parse(const char *text, size_t len, struct jsonrpc_msg *msg, json_t **error_id,
                  const char **why);

void jsonrpc_msg_free(struct jsonrpc_msg *msg);

/* True when the bytes nest deeper than max (strings are skipped). */
bool jsonrpc_too_deep(const char *text, size_t len, int max);

/* New references to complete messages. */
json_t *jsonrpc_result(json_t *id, json_t *result); /* steals result */
json_t *jsonrpc_error(json_t *id, int code, const char *message);
json_t *jsonrpc_notification(const char *method, json_t *params); /* steals params */

#endif
