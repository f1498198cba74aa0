/* What interp.c and fork.c share: an interpreter's record and the channel
 * helpers.  Private to mcp/interp/; everyone else goes through interp.h. */
#ifndef NSBOX_MCP_INTERP_INTERNAL_H
#define NSBOX_MCP_INTERP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp.h"
#include "protocol.h"

struct mcp_interp {
    enum mcp_interp_lang lang;
    struct nsbox_proc proc;
    uint64_t next_id;
    uint64_t ooms_seen;            /* the cgroup's OOM kills when the last call ended */
    struct mcp_interp_lines lines; /* what came on the channel */
};

/* Reads what it->proc.chan has into it->lines.  Returns 1 while open, 0
 * at EOF, -1 when a line outgrows MCP_INTERP_LINE_MAX. */
int mcp_interp_chan_read(struct mcp_interp *it);

/* Whether the interpreter kept from the last call died since; why (in
 * words: "oom", "exit(1)") filled when it did. */
bool mcp_interp_gone(struct mcp_interp *it, struct box *box, char *why, size_t size);

#endif
