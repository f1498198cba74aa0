/* Code contexts of a kept sandbox (contexts.c has the contract): where
 * execute_code {context} finds its interpreter. */
#ifndef NSBOX_MCP_TOOLS_CONTEXTS_H
#define NSBOX_MCP_TOOLS_CONTEXTS_H

#include "../../common/err.h"
#include "../sandbox.h"

/* Where a context's interpreter lives, its language and its working
 * directory (NULL: the sandbox's, for a default context). */
struct mcp_context_slot {
    struct mcp_interp **interp;
    enum mcp_interp_lang lang;
    const char *cwd;
};

/* The context id of m (its operation lock held): 0 with out, or -1 with
 * err (ENOENT) when m has none of that id. */
int mcp_context_slot(struct mcp_sandbox *m, const char *id, struct mcp_context_slot *out,
                     struct nsbox_err *err);

#endif
