#ifndef NSBOX_MCP_TRANSPORT_STDIO_H
#define NSBOX_MCP_TRANSPORT_STDIO_H

#include "session.h"

/* Serves s over stdin/stdout until stdin closes.  Returns 0 or -1. */
int mcp_stdio_run(struct mcp_session *s);

#endif
