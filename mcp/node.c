/* Node ids (node.h). */
#include "node.h"

#include <stdio.h>
#include <string.h>

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* The n bytes at p form a node name (see node.h). */
static bool name_ok(const char *p, size_t n)
{
    if (n == 0 || n > MCP_NODE_MAX || !lower_alnum(p[0]) || !lower_alnum(p[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!lower_alnum(p[i]) && p[i] != '-')
            return false;
    return true;
}

bool mcp_node_name_ok(const char *name)
{
    return name_ok(name, strnlen(name, MCP_NODE_MAX + 1));
}

void mcp_id_compose(const char *node, const char *hex, char out[MCP_ID_MAX + 1])
{
    snprintf(out, MCP_ID_MAX + 1, "%s%s%.*s", node, node[0] ? "." : "", MCP_HEX_ID_LEN, hex);
}

bool mcp_id_syntax_ok(const char *id, size_t n)
{
    if (n < MCP_HEX_ID_LEN || n > MCP_ID_MAX)
        return false;
    size_t pre = n - MCP_HEX_ID_LEN; /* "NAME." or nothing */
    if (pre > 0 && (pre < 2 || id[pre - 1] != '.' || !name_ok(id, pre - 1)))
        return false;
    for (size_t i = pre; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}
