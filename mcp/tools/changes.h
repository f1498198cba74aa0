/* The files a run changed, as the result record's JSON (the walk and the
 * diff are the runtime's: runtime/changes.h). */
#ifndef NSBOX_MCP_TOOLS_CHANGES_H
#define NSBOX_MCP_TOOLS_CHANGES_H

#include <jansson.h>

#include "../../runtime/changes.h"
#include "../result.h"

struct mcp_file_urls;

/* Where the files of a run can be downloaded by URL (HTTP, kept
 * sandboxes): urls NULL for none. */
struct mcp_file_links {
    const struct mcp_file_urls *urls;
    const char *owner, *sandbox_id;
    const char *workdir; /* the paths of the list are relative to it */
};

/* [{path, change: created|modified, size, mime_type?, download_url?,
 * download_expires_at?}] (a name that is not UTF-8 as path_base64; the
 * URLs only with links->urls); the changed images' contents, size-capped,
 * are added to out as image blocks (best effort: one that cannot be read
 * or stored is left out).  Returns the list, or NULL (out of memory). */
json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         const struct mcp_file_links *links, struct mcp_result *out);

#endif
