/* The files a run changed, as the result record's JSON (the walk and the
 * diff are the runtime's: runtime/changes.h). */
#ifndef NSBOX_MCP_CHANGES_H
#define NSBOX_MCP_CHANGES_H

#include <jansson.h>

#include "../runtime/changes.h"

/* [{path, change: created|modified, size, mime_type?}] (a name that is not
 * UTF-8 as path_base64) and, in *images (always set; caller decrefs), the
 * changed images' contents [{data (base64), mimeType, path}], size-capped.
 * Returns the list, or NULL (out of memory). */
json_t *mcp_changes_json(const struct nsbox_snapshot *before, const struct nsbox_snapshot *after,
                         json_t **images);

#endif
