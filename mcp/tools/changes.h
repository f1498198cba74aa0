/* The files a run changed, as the result record's JSON (the walk and the
 * diff are the runtime's: runtime/changes.h). */
#ifndef NSBOX_MCP_TOOLS_CHANGES_H
#define NSBOX_MCP_TOOLS_CHANGES_H

#include <jansson.h>

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
    const char *cwd; /* the directory the snapshots' paths are relative to */
};

/* [{path, change: created|modified, size, mime_type?, uri?, download_url?,
 * download_expires_at?}] (a name that is not UTF-8 as path_base64).  In a
 * kept sandbox each file also becomes a resource_link block in out, its
 * URI the entry's uri (resources/resources.h), and over HTTP it gets a
 * download URL (files/urls.h).  The changed images' contents, size-capped,
 * are added to out as image blocks.  Links, URLs and images are best
 * effort: one that cannot be made or read is left out.  Returns the list,
 * or NULL (out of memory). */
json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         const struct mcp_file_links *links, struct mcp_result *out);

#endif
