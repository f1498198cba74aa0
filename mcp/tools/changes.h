/* The files a run changed, as the result record's JSON (the walk and the
 * diff are the runtime's: runtime/changes.h). */
#ifndef NSBOX_MCP_TOOLS_CHANGES_H
#define NSBOX_MCP_TOOLS_CHANGES_H

#include <jansson.h>

#include "../../runtime/changes.h"
#include "../result.h"

/* [{path, change: created|modified, size, mime_type?}] (a name that is not
 * UTF-8 as path_base64); the changed images' contents, size-capped, are
 * added to out as image blocks (best effort: one that cannot be read or
 * stored is left out).  Returns the list, or NULL (out of memory). */
json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         struct mcp_result *out);

#endif
