/* The declaration and decoder of sandbox_pause's and sandbox_resume's
 * arguments (one field: sandbox_id), by the table of args.c
 * (args_internal.h); the tools are pause.c. */
#include "args_internal.h"

const struct mcp_arg mcp_pause_fields[1] = {
    {.name = "sandbox_id",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .header = "Sandbox-Id",
     .description = "a sandbox made by sandbox_create"},
};

int mcp_args_sandbox_pause(json_t *args, bool resume, struct mcp_stop_args *out,
                           struct nsbox_err *err)
{
    int tool = resume ? SANDBOX_RESUME : SANDBOX_PAUSE;
    *out = (struct mcp_stop_args){0};
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0)
        return -1;
    out->sandbox_id = str(tool, args, "sandbox_id");
    return 0;
}
