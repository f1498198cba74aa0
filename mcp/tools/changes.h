/* The files a run changed, as MCP gives them: links, URLs, images (the
 * list itself is box_run_json's, boxes/run.h). */
#ifndef NSBOX_MCP_TOOLS_CHANGES_H
#define NSBOX_MCP_TOOLS_CHANGES_H

#include <jansson.h>
#include <stddef.h>

#include "../../boxes/run.h"
#include "../result.h"

struct mcp_file_urls;

/* Where a run's files can be reached again: a kept sandbox's (sandbox_id;
 * NULL for a one-shot one, gone once the call returns: its files get
 * neither), as resources and, over HTTP (urls not NULL), by signed URL
 * for owner (the session's id). */
struct mcp_file_links {
    const struct mcp_file_urls *urls;
    const char *owner, *sandbox_id;
    const char *cwd;       /* the directory the snapshots' paths are relative to */
    size_t image_bytes;    /* inline image bytes the result already has */
    char *const *no_image; /* absolute paths whose image the result already
                               * has (NULL-terminated, or NULL) */
};

/* Adds to files, the record's "files" from box_run_json (one entry per
 * res->changes entry, in order), what MCP gives each: in a kept sandbox a
 * resource_link block in out whose URI is the entry's "uri"
 * (resources/resources.h), and over HTTP a download URL (files/urls.h,
 * "download_url", "download_expires_at").  The changed images' contents,
 * size-capped, are added to out as image blocks.  Links, URLs and images
 * are best effort: one that cannot be made or read is left out. */
void mcp_changes_link(json_t *files, const struct box_run_result *res,
                      const struct mcp_file_links *links, struct mcp_result *out);

#endif
