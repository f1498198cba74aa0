/* The port tools (ports.c): port_expose, port_list, port_close, their
 * arguments (args_ports.c), and the teardown a sandbox's stop calls.
 * Over HTTP a port is reached through the preview proxy
 * (mcp/preview/preview.h) by a signed URL; over stdio through a listener
 * on the host's 127.0.0.1 (boxes/forward.h).  Either ends with the
 * sandbox, port_close, or (a URL) its expiry. */
#ifndef NSBOX_MCP_TOOLS_PORTS_H
#define NSBOX_MCP_TOOLS_PORTS_H

#include <jansson.h>
#include <stdint.h>

#include "../../common/err.h"
#include "../call.h"
#include "../result.h"
#include "../sandbox.h"
#include "../server.h"
#include "../session.h"

#define MCP_PORT_WAIT_DEFAULT 10 /* s: port_expose waits this long for a listener */
#define MCP_PORT_WAIT_MAX 60

/* port_expose, port_list, port_close (port 0: none given) */
struct mcp_port_args {
    const char *sandbox_id;
    uint16_t port;
    unsigned wait_s;
};

int mcp_args_port_expose(json_t *args, struct mcp_port_args *out, struct nsbox_err *err);
int mcp_args_port_list(json_t *args, struct mcp_port_args *out, struct nsbox_err *err);
int mcp_args_port_close(json_t *args, struct mcp_port_args *out, struct nsbox_err *err);

int mcp_tool_port_expose(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_port_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                       struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_port_close(struct mcp_session *s, struct mcp_call *call, json_t *args,
                        struct mcp_result *out, struct nsbox_err *err);

/* Ends every exposure of m (URLs refused, listeners closed, connections
 * cut); called once where m is finally stopped, before its box goes. */
void mcp_ports_sandbox_gone(struct mcp_sandbox *m);

/* Connections open now to m's exposed ports (preview or loopback). */
unsigned mcp_ports_open_connections(struct mcp_sandbox *m);

#endif
