/* The terminals' WebSocket endpoint, GET /t/TOKEN (terminal.c; the
 * terminals themselves: mcp/preview/terminal.h).  Registered by the HTTP
 * transport next to /files/. */
#ifndef NSBOX_MCP_HTTP_TERMINAL_H
#define NSBOX_MCP_HTTP_TERMINAL_H

#include "../../common/err.h"
#include "core.h"

struct mcp_terminals;

/* Registers /t/ on srv; *tab (which must outlive srv) is the table the
 * route serves, read at each request.  Returns 0 or -1 with err. */
int http_terminal_register(struct http_server *srv, struct mcp_terminals **tab,
                           struct nsbox_err *err);

#endif
