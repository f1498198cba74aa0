/* The method table: every request method nsbox answers, and in which era
 * (request.h).  Notifications are dispatch.c's. */
#include <string.h>

#include "../resources/resources.h"
#include "../resources/watches.h"
#include "../tasks/tasks.h"
#include "request.h"

const struct mcp_method mcp_methods[] = {
    {"initialize", mcp_handle_initialize, MCP_M_LEGACY | MCP_M_BEFORE_INIT},
    {"ping", mcp_handle_ping, MCP_M_LEGACY | MCP_M_BEFORE_INIT},
    {"logging/setLevel", mcp_handle_set_level, MCP_M_LEGACY},
    {"tools/list", mcp_handle_tools_list, MCP_M_BOTH},
    {"tools/call", mcp_handle_tools_call, MCP_M_BOTH},
    {"resources/list", mcp_handle_resources_list, MCP_M_BOTH},
    {"resources/read", mcp_handle_resources_read, MCP_M_BOTH},
    {"resources/templates/list", mcp_handle_resources_templates, MCP_M_BOTH},
    /* 2026-07-28 subscribes through subscriptions/listen's resourceSubscriptions. */
    {"resources/subscribe", mcp_handle_resources_subscribe, MCP_M_LEGACY},
    {"resources/unsubscribe", mcp_handle_resources_unsubscribe, MCP_M_LEGACY},
    {"server/discover", mcp_handle_discover, MCP_M_MODERN},
    {"subscriptions/listen", mcp_handle_listen, MCP_M_MODERN},
    {"tasks/get", mcp_handle_tasks_get, MCP_M_BOTH},
    {"tasks/result", mcp_handle_tasks_result, MCP_M_LEGACY},
    {"tasks/list", mcp_handle_tasks_list, MCP_M_LEGACY},
    {"tasks/cancel", mcp_handle_tasks_cancel, MCP_M_BOTH},
    {"tasks/update", mcp_handle_tasks_update, MCP_M_MODERN},
};
const size_t mcp_n_methods = sizeof(mcp_methods) / sizeof(mcp_methods[0]);

const struct mcp_method *mcp_method_find(const char *name)
{
    for (size_t i = 0; name && i < mcp_n_methods; i++)
        if (strcmp(mcp_methods[i].name, name) == 0)
            return &mcp_methods[i];
    return NULL;
}
