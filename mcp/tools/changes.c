/* The files a run changed, shaped for the result record; each also as a
 * resource link (a kept sandbox's), images also as MCP image content. */
#include "changes.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../resources/resources.h"
#include "../resources/uri.h"
#include "../server.h"
#include "tools.h"

#define IMAGE_MAX (4u << 20)
#define IMAGES_TOTAL (8u << 20)

static json_t *entry_json(const struct nsbox_change *c)
{
    const char *kind = nsbox_change_kind_name(c->kind);
    json_t *f = json_pack("{s:s,s:s,s:I,s:s?}", "path", c->path, "change", kind, "size",
                          (json_int_t)c->size, "mime_type", c->mime);
    if (f != NULL)
        return f;
    /* A name that is not UTF-8 cannot be a JSON string: listed
     * base64-encoded instead. */
    char *enc = mcp_base64_encode((const unsigned char *)c->path, strlen(c->path));
    f = json_pack("{s:s?,s:s,s:I}", "path_base64", enc, "change", kind, "size",
                  (json_int_t)c->size);
    free(enc);
    return f;
}

/* Adds the image's contents to out as an image block; false when it could
 * not be read (or stored).  *len: its size. */
static bool add_image(struct mcp_result *out, const struct nsbox_snapshot *after,
                      const struct nsbox_change *c, size_t *len)
{
    struct nsbox_err ignored;
    _cleanup_free_ unsigned char *data = nsbox_changes_read(after, c->path, IMAGE_MAX, len);
    char *b64 = data ? mcp_base64_encode(data, *len) : NULL;
    return b64 != NULL && mcp_result_add_image(out, b64, c->mime, &ignored) == 0;
}

/* The file's resource link, and its uri in f: path is relative to cwd. */
static void add_link(struct mcp_result *out, json_t *f, const char *sandbox_id, const char *cwd,
                     const struct nsbox_change *c)
{
    char abs[MCP_URI_MAX + 2], uri[MCP_URI_MAX + 1];
    size_t n = strlen(cwd);
    while (n > 0 && cwd[n - 1] == '/')
        n--;
    if ((size_t)snprintf(abs, sizeof(abs), "%.*s/%s", (int)n, cwd, c->path) >= sizeof(abs))
        return;
    if (mcp_resource_link(out, sandbox_id, abs, c->size, c->mime, NULL, uri) == 0)
        json_object_set_new(f, "uri", json_string(uri));
}

json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         const char *sandbox_id, const char *cwd, struct mcp_result *out)
{
    struct nsbox_changes ch;
    struct nsbox_err err;
    size_t image_bytes = 0;

    if (nsbox_changes_diff(before, after, &ch, &err) < 0)
        return NULL;
    json_t *files = json_array();
    for (size_t i = 0; i < ch.n; i++) {
        const struct nsbox_change *c = &ch.v[i];
        json_t *f = entry_json(c);
        bool named = f != NULL && json_object_get(f, "path") != NULL;
        if (named && sandbox_id != NULL)
            add_link(out, f, sandbox_id, cwd, c);
        json_array_append_new(files, f);
        if (!named || c->mime == NULL || c->size > IMAGE_MAX ||
            image_bytes + (size_t)c->size > IMAGES_TOTAL)
            continue;
        size_t len;
        if (add_image(out, after, c, &len))
            image_bytes += len;
    }
    nsbox_changes_free(&ch);
    return files;
}
