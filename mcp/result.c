/* A tool's typed result (result.h). */
#include "result.h"

#include <stdlib.h>
#include <string.h>

int mcp_result_add_image(struct mcp_result *r, char *base64, const char *mime_type,
                         struct nsbox_err *err)
{
    char *mime = strdup(mime_type);
    struct mcp_content *v = mime ? realloc(r->content, (r->n_content + 1) * sizeof(*v)) : NULL;
    if (v == NULL) {
        free(mime);
        free(base64);
        return nsbox_err_set(err, 0, "out of memory");
    }
    v[r->n_content++] = (struct mcp_content){
        .kind = MCP_CONTENT_IMAGE, .data = base64, .mime_type = mime};
    r->content = v;
    return 0;
}

void mcp_result_free(struct mcp_result *r)
{
    for (size_t i = 0; i < r->n_content; i++) {
        free(r->content[i].data);
        free(r->content[i].mime_type);
        free(r->content[i].uri);
        free(r->content[i].name);
    }
    free(r->content);
    json_decref(r->structured);
    *r = (struct mcp_result){0};
}
