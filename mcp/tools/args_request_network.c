/* The declaration and decoder of request_network's arguments, by the
 * table of args.c (args_internal.h); the tool is request_network.c. */
#include "args_internal.h"

const struct mcp_arg mcp_request_network_fields[MCP_REQUEST_NETWORK_NF] = {
    {.name = "sandbox_id",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .header = "Sandbox-Id",
     .description = "a sandbox made by sandbox_create"},
    {.name = "rule",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .max_len = 1024,
     .description = "one rule as sandbox_create's network takes it (NAME[:PORTS], *.SUFFIX[:PORTS] "
                    "or a preset, optionally with methods and paths: \"api.github.com "
                    "GET,POST /repos/ORG/**\"), within the operator's allow-list"},
    {.name = "reason",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .max_len = 4096,
     .description = "why the sandbox needs it, shown to the user (the first 300 characters, "
                    "control characters removed)"},
    {.name = "timeout_s",
     .type = MCP_ARG_NUMBER,
     .has_min = true,
     .min = 1,
     .has_max = true,
     .max = MCP_ASK_TIMEOUT_MAX_S,
     .description = "how long to wait for the user's answer, in seconds (default 120)"},
};

int mcp_args_request_network(json_t *args, struct mcp_request_network_args *out,
                             struct nsbox_err *err)
{
    *out = (struct mcp_request_network_args){0};
    if (mcp_schema_check(&mcp_arg_decls[REQUEST_NETWORK], args, err) < 0)
        return -1;
    out->sandbox_id = str(REQUEST_NETWORK, args, "sandbox_id");
    out->rule = str(REQUEST_NETWORK, args, "rule");
    out->reason = str(REQUEST_NETWORK, args, "reason");
    out->timeout_s = mcp_arg_number(args, "timeout_s", MCP_ASK_TIMEOUT_DEFAULT_S, NULL);
    return 0;
}
