/* A tool's result, typed: the structured JSON plus the content blocks that
 * travel beside it (images, and resource links to files in a sandbox:
 * resources/read answers for them, mcp/resources/).  protocol/tools_call.c turns it into the CallToolResult: the
 * structured JSON as a text block and as structuredContent, then one
 * block per entry of `content`, in order.
 *
 * Contract: a tool starts from a zeroed struct (tools_call.c hands it one),
 * fills `structured` (owned: a new reference) and adds blocks with the
 * mcp_result_add_* functions; on failure it may leave it half-filled, the
 * caller frees it with mcp_result_free either way. */
#ifndef NSBOX_MCP_RESULT_H
#define NSBOX_MCP_RESULT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

enum mcp_content_kind {
    MCP_CONTENT_IMAGE,         /* MCP "image": base64 data and mimeType */
    MCP_CONTENT_RESOURCE_LINK, /* MCP "resource_link": uri, name, mimeType, size, description? */
};

struct mcp_content {
    enum mcp_content_kind kind;
    char *data;        /* IMAGE: base64 (owned) */
    char *mime_type;   /* owned */
    char *uri;         /* RESOURCE_LINK: owned; NULL for an image */
    char *name;        /* RESOURCE_LINK: owned; NULL for an image */
    char *description; /* RESOURCE_LINK: owned, or NULL */
    int64_t size;      /* RESOURCE_LINK: bytes, or -1 when unknown */
};

struct mcp_result {
    json_t *structured;          /* owned; NULL until the tool sets it */
    struct mcp_content *content; /* owned, n_content entries */
    size_t n_content;
};

/* Appends an image block: takes ownership of base64 (malloc'ed) whatever
 * happens; mime_type is copied.  Returns 0, or -1 with err set (out of
 * memory). */
int mcp_result_add_image(struct mcp_result *r, char *base64, const char *mime_type,
                         struct nsbox_err *err);

/* Appends a resource_link block (all strings copied; description may be
 * NULL, size -1 for unknown).  Returns 0, or -1 with err set (out of
 * memory). */
int mcp_result_add_link(struct mcp_result *r, const char *uri, const char *name,
                        const char *mime_type, int64_t size, const char *description,
                        struct nsbox_err *err);

/* Appends r's blocks to content (a CallToolResult's array) as the
 * protocol version ("2025-11-25" ...) knows them: resource_link came with
 * 2025-06-18, so an older client gets none (their URIs stay in the
 * structured result) rather than a content type its schema refuses. */
void mcp_result_content(const struct mcp_result *r, const char *version, json_t *content);

/* Releases what r owns and zeroes it (safe on a zeroed or freed struct). */
void mcp_result_free(struct mcp_result *r);

#endif
