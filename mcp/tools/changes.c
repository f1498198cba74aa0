/* The files a run changed (listed by boxes/run.c's box_run_json), each
 * also as a resource link (a kept sandbox's), images also as MCP image
 * content. */
#include "changes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../files/urls.h"
#include "../resources/resources.h"
#include "../resources/uri.h"
#include "../server.h"
#include "tools.h"

#define IMAGE_MAX (4u << 20)
#define IMAGES_TOTAL (8u << 20)

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

/* The file's resource link (its uri in f) and, over HTTP, a signed GET
 * URL for it (urls.h). */
static void add_links(struct mcp_result *out, json_t *f, const struct mcp_file_links *links,
                      const struct nsbox_change *c)
{
    char abs[MCP_URI_MAX + 2], uri[MCP_URI_MAX + 1], when[32];
    const char *cwd = links->cwd ? links->cwd : "/";
    size_t n = strlen(cwd);
    int64_t expires;

    while (n > 0 && cwd[n - 1] == '/')
        n--;
    if ((size_t)snprintf(abs, sizeof(abs), "%.*s/%s", (int)n, cwd, c->path) >= sizeof(abs))
        return;
    if (mcp_resource_link(out, links->sandbox_id, abs, c->size, c->mime, NULL, uri) == 0)
        json_object_set_new(f, "uri", json_string(uri));
    if (links->urls == NULL || strlen(abs) > MCP_FILE_PATH_MAX)
        return;
    char *url = mcp_file_url(links->urls, MCP_FILE_GET, links->owner, links->sandbox_id, abs, 0,
                             &expires);
    if (url == NULL)
        return;
    mcp_file_time_text(expires, when);
    json_object_set_new(f, "download_url", json_string(url));
    json_object_set_new(f, "download_expires_at", json_string(when));
    free(url);
}

/* Whether the result has c's image already (a figure among the cell's
 * results). */
static bool has_image(const struct mcp_file_links *links, const struct nsbox_change *c)
{
    const char *cwd = links && links->cwd ? links->cwd : "/";
    size_t n = strlen(cwd);
    while (n > 0 && cwd[n - 1] == '/')
        n--;
    for (size_t i = 0; links && links->no_image && links->no_image[i]; i++) {
        const char *p = links->no_image[i];
        if (strncmp(p, cwd, n) == 0 && p[n] == '/' && strcmp(p + n + 1, c->path) == 0)
            return true;
    }
    return false;
}

void mcp_changes_link(json_t *files, const struct box_run_result *res,
                      const struct mcp_file_links *links, struct mcp_result *out)
{
    size_t image_bytes = links ? links->image_bytes : 0;

    for (size_t i = 0; i < res->changes.n && i < json_array_size(files); i++) {
        const struct nsbox_change *c = &res->changes.v[i];
        json_t *f = json_array_get(files, i);
        bool named = json_object_get(f, "path") != NULL;
        if (named && links != NULL && links->sandbox_id != NULL)
            add_links(out, f, links, c);
        if (!named || c->mime == NULL || c->size > IMAGE_MAX ||
            image_bytes + (size_t)c->size > IMAGES_TOTAL || has_image(links, c))
            continue;
        size_t len;
        if (add_image(out, res->after, c, &len))
            image_bytes += len;
    }
}
