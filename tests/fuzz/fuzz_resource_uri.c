/* libFuzzer target: resource URIs (mcp/resources/uri.c), the text a
 * client sends in resources/read.  Whatever parses must name a canonical
 * absolute path (no `.`/`..`/empty segment, no NUL) and format back to
 * exactly the same URI: one spelling per file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../mcp/resources/uri.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    if (uri == NULL)
        return 0;
    memcpy(uri, data, size);
    uri[size] = '\0';
    char id[MCP_URI_ID_MAX + 1], path[MCP_URI_MAX + 2], again[MCP_URI_MAX + 1];
    if (mcp_uri_parse(uri, id, path, sizeof(path)) == 0) {
        if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
            abort();
        if (mcp_uri_format(id, path, again, sizeof(again)) < 0 || strcmp(again, uri) != 0)
            abort();
    }
    free(uri);
    return 0;
}
