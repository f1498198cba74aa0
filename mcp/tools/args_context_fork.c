/* The declaration and decoder of context_fork's arguments (context_fork.c,
 * docs/context-fork.md), by the table of args.c (args_internal.h). */
#include "args_internal.h"
#include "contexts.h"

const struct mcp_arg mcp_context_fork_fields[MCP_CONTEXT_FORK_NF] = {
    {.name = "sandbox_id",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .header = "Sandbox-Id"},
    {.name = "context_id",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .description = "the python context to fork: one made with context_create (or forked), or "
                    "the default \"python\""},
    {.name = "reseed",
     .type = MCP_ARG_BOOLEAN,
     .description = "reseed random and numpy.random in the fork (default true; false: the fork "
                    "draws the same numbers as its source)"},
};

int mcp_args_context_fork(json_t *args, struct mcp_context_fork_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_context_fork_args){0};
    if (mcp_schema_check(&mcp_arg_decls[CONTEXT_FORK], args, err) < 0)
        return -1;
    out->sandbox_id = str(CONTEXT_FORK, args, "sandbox_id");
    out->context_id = str(CONTEXT_FORK, args, "context_id");
    json_t *r = json_object_get(args, "reseed");
    out->reseed = r == NULL || json_is_true(r);
    return 0;
}
