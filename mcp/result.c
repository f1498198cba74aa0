/* A tool's typed result (result.h). */
#include "result.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Appends c (its strings owned); on failure frees them. */
static int add(struct mcp_result *r, struct mcp_content c, bool ok, struct nsbox_err *err)
{
    struct mcp_content *v = ok ? realloc(r->content, (r->n_content + 1) * sizeof(*v)) : NULL;
    if (v == NULL) {
        free(c.data);
        free(c.mime_type);
        free(c.uri);
        free(c.name);
        free(c.description);
        return nsbox_err_set(err, 0, "out of memory");
    }
    v[r->n_content++] = c;
    r->content = v;
    return 0;
}

int mcp_result_add_image(struct mcp_result *r, char *base64, const char *mime_type,
                         struct nsbox_err *err)
{
    char *mime = strdup(mime_type);
    return add(r,
               (struct mcp_content){.kind = MCP_CONTENT_IMAGE, .data = base64, .mime_type = mime},
               mime != NULL, err);
}

int mcp_result_add_link(struct mcp_result *r, const char *uri, const char *name,
                        const char *mime_type, int64_t size, const char *description,
                        struct nsbox_err *err)
{
    struct mcp_content c = {.kind = MCP_CONTENT_RESOURCE_LINK,
                            .uri = strdup(uri),
                            .name = strdup(name),
                            .mime_type = strdup(mime_type),
                            .description = description ? strdup(description) : NULL,
                            .size = size};
    bool ok = c.uri && c.name && c.mime_type && (description == NULL || c.description);
    return add(r, c, ok, err);
}

static json_t *content_json(const struct mcp_content *c)
{
    if (c->kind == MCP_CONTENT_IMAGE)
        return json_pack("{s:s,s:s,s:s}", "type", "image", "data", c->data, "mimeType",
                         c->mime_type);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "type", "resource_link", "uri", c->uri, "name",
                          c->name, "mimeType", c->mime_type);
    if (j != NULL && c->size >= 0)
        json_object_set_new(j, "size", json_integer(c->size));
    if (j != NULL && c->description != NULL)
        json_object_set_new(j, "description", json_string(c->description));
    return j;
}

void mcp_result_content(const struct mcp_result *r, const char *version, json_t *content)
{
    bool links = strcmp(version, "2025-06-18") >= 0; /* dates compare as strings */
    for (size_t i = 0; i < r->n_content; i++)
        if (links || r->content[i].kind != MCP_CONTENT_RESOURCE_LINK)
            json_array_append_new(content, content_json(&r->content[i]));
}

void mcp_result_free(struct mcp_result *r)
{
    for (size_t i = 0; i < r->n_content; i++) {
        free(r->content[i].data);
        free(r->content[i].mime_type);
        free(r->content[i].uri);
        free(r->content[i].name);
        free(r->content[i].description);
    }
    free(r->content);
    json_decref(r->structured);
    *r = (struct mcp_result){0};
}
