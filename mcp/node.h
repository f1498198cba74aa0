/* Node ids (`serve --http --node-id NAME`, docs/tools.md "Fleet"): in a
 * fleet of servers behind a router, every id a server mints for its
 * clients (HTTP session ids, sandbox ids) reads "NAME.<32 hex>", so the
 * router can send a request to the node that owns its session or sandbox
 * by the text before the first '.'.  Without a node id the ids are the
 * plain 32 hex digits, as before.  Pure: no I/O, no allocation. */
#ifndef NSBOX_MCP_NODE_H
#define NSBOX_MCP_NODE_H

#include <stdbool.h>
#include <stddef.h>

#define MCP_NODE_MAX 32   /* characters of a node name (a DNS label's 63 would do; 32 is plenty) */
#define MCP_HEX_ID_LEN 32 /* 128 random bits as lower-case hex */
#define MCP_ID_MAX (MCP_NODE_MAX + 1 + MCP_HEX_ID_LEN) /* "NAME." + hex */

/* Whether name is a node name: [a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?, a DNS
 * label such as a StatefulSet pod's name ("nsbox-0"). */
bool mcp_node_name_ok(const char *name);

/* Writes "node.hex" (or "hex" when node is "") to out.  hex is
 * MCP_HEX_ID_LEN characters, node a name mcp_node_name_ok accepts. */
void mcp_id_compose(const char *node, const char *hex, char out[MCP_ID_MAX + 1]);

/* Whether the n bytes at id have the shape of an id some node writes:
 * [NAME "."] followed by MCP_HEX_ID_LEN lower-case hex digits.  Whose id it
 * is (this node's or another's) is the lookup's business. */
bool mcp_id_syntax_ok(const char *id, size_t n);

#endif
