/* The files a run changed, shaped for the result record; images also as
 * MCP image content. */
#include "changes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../files/urls.h"
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

/* A signed GET URL for the file f names (HTTP only, see urls.h). */
static void add_link(json_t *f, const struct mcp_file_links *links)
{
    const char *rel = json_string_value(json_object_get(f, "path"));
    int64_t expires;
    char when[32], path[MCP_FILE_PATH_MAX + 1];

    if (links == NULL || links->urls == NULL || rel == NULL || links->workdir == NULL)
        return;
    const char *wd = links->workdir;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", strcmp(wd, "/") == 0 ? "" : wd, rel) >=
        sizeof(path))
        return;
    char *url = mcp_file_url(links->urls, MCP_FILE_GET, links->owner, links->sandbox_id, path, 0,
                             &expires);
    if (url == NULL) /* a path no URL can name (too long) */
        return;
    mcp_file_time_text(expires, when);
    json_object_set_new(f, "download_url", json_string(url));
    json_object_set_new(f, "download_expires_at", json_string(when));
    free(url);
}

json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         const struct mcp_file_links *links, struct mcp_result *out)
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
        if (named)
            add_link(f, links);
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
