/* The method table: every request method nsbox answers, and in which era
 * (request.h).  Notifications are dispatch.c's. */
#include <string.h>

#include "request.h"

const struct mcp_method mcp_methods[] = {
    {"initialize", mcp_handle_initialize, MCP_M_LEGACY | MCP_M_BEFORE_INIT},
    {"ping", mcp_handle_ping, MCP_M_LEGACY | MCP_M_BEFORE_INIT},
    {"logging/setLevel", mcp_handle_set_level, MCP_M_LEGACY},
    {"tools/list", mcp_handle_tools_list, MCP_M_BOTH},
    {"tools/call", mcp_handle_tools_call, MCP_M_BOTH},
    {"server/discover", mcp_handle_discover, MCP_M_MODERN},
    {"subscriptions/listen", mcp_handle_listen, MCP_M_MODERN},
};
const size_t mcp_n_methods = sizeof(mcp_methods) / sizeof(mcp_methods[0]);

const struct mcp_method *mcp_method_find(const char *name)
{
    for (size_t i = 0; name && i < mcp_n_methods; i++)
        if (strcmp(mcp_methods[i].name, name) == 0)
            return &mcp_methods[i];
    return NULL;
}
