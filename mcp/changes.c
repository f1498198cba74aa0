/* The files a run changed, shaped for the result record; images also as
 * MCP image content. */
#include "changes.h"

#include <stdlib.h>
#include <string.h>

#include "server.h"

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

/* The image's contents as {data, mimeType, path}, or NULL. */
static json_t *image_json(const struct nsbox_snapshot *after, const struct nsbox_change *c,
                          size_t *len)
{
    unsigned char *data = nsbox_changes_read(after, c->path, IMAGE_MAX, len);
    char *b64 = data ? mcp_base64_encode(data, *len) : NULL;
    json_t *img = b64 ? json_pack("{s:s,s:s,s:s}", "data", b64, "mimeType", c->mime, "path",
                                  c->path)
                      : NULL;
    free(b64);
    free(data);
    return img;
}

json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         json_t **images)
{
    struct nsbox_changes ch;
    struct nsbox_err err;
    size_t image_bytes = 0;

    *images = json_array();
    if (nsbox_changes_diff(before, after, &ch, &err) < 0)
        return NULL;
    json_t *files = json_array();
    for (size_t i = 0; i < ch.n; i++) {
        const struct nsbox_change *c = &ch.v[i];
        json_t *f = entry_json(c);
        bool named = f != NULL && json_object_get(f, "path") != NULL;
        json_array_append_new(files, f);
        if (!named || c->mime == NULL || c->size > IMAGE_MAX ||
            image_bytes + (size_t)c->size > IMAGES_TOTAL)
            continue;
        size_t len;
        json_t *img = image_json(after, c, &len);
        if (img != NULL) {
            json_array_append_new(*images, img);
            image_bytes += len;
        }
    }
    nsbox_changes_free(&ch);
    return files;
}
