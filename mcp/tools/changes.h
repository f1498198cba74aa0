/* The files a run changed, as the result record's JSON (the walk and the
 * diff are the runtime's: runtime/changes.h). */
#ifndef NSBOX_MCP_TOOLS_CHANGES_H
#define NSBOX_MCP_TOOLS_CHANGES_H

#include <jansson.h>

#include "../../runtime/changes.h"
#include "../result.h"

/* [{path, change: created|modified, size, mime_type?, uri?}] (a name that
 * is not UTF-8 as path_base64).  In a kept sandbox (sandbox_id not NULL;
 * cwd: the directory the snapshots' paths are relative to) each file also
 * becomes a resource_link block in out, its URI the entry's uri
 * (resources/resources.h); a one-shot sandbox is gone once the call
 * returns, so its files get no link.  The changed images' contents,
 * size-capped, are added to out as image blocks.  Links and images are
 * best effort: one that cannot be made or read is left out.  Returns the
 * list, or NULL (out of memory). */
json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         const char *sandbox_id, const char *cwd, struct mcp_result *out);

#endif
