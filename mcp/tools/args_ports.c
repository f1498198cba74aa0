/* The declarations and decoders of the port tools' arguments
 * (port_expose, port_list, port_close: ports.h), by the table of args.c
 * (args_internal.h). */
#include <stdint.h>

#include "args_internal.h"
#include "ports.h"

#define PORT_FIELD                                                                                 \
    {                                                                                              \
        .name = "port", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_REQUIRED,                        \
        .description = "a TCP port in the sandbox (something listening on 127.0.0.1, ::1 or any "  \
                       "address)",                                                                 \
        .has_min = true, .min = 1, .has_max = true, .max = 65535                                   \
    }
#define SANDBOX_FIELD                                                                              \
    {                                                                                              \
        .name = "sandbox_id", .type = MCP_ARG_STRING,                                              \
        .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY, .header = "Sandbox-Id"                       \
    }

const struct mcp_arg mcp_port_expose_fields[3] = {
    SANDBOX_FIELD,
    PORT_FIELD,
    {.name = "wait_s",
     .type = MCP_ARG_NUMBER,
     .description = "how long to wait for something to listen on the port (default 10, at most "
                    "60; 0: not at all)",
     .has_min = true,
     .min = 0,
     .has_max = true,
     .max = MCP_PORT_WAIT_MAX},
};
const struct mcp_arg mcp_port_list_fields[1] = {SANDBOX_FIELD};
const struct mcp_arg mcp_port_close_fields[2] = {SANDBOX_FIELD, PORT_FIELD};

static int decode(int tool, json_t *args, struct mcp_port_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_port_args){0};
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0)
        return -1;
    out->sandbox_id = str(tool, args, "sandbox_id");
    out->port = (uint16_t)mcp_arg_integer(args, "port", 0);
    out->wait_s = (unsigned)mcp_arg_number(args, "wait_s", MCP_PORT_WAIT_DEFAULT, NULL);
    return 0;
}

int mcp_args_port_expose(json_t *args, struct mcp_port_args *out, struct nsbox_err *err)
{
    return decode(PORT_EXPOSE, args, out, err);
}

int mcp_args_port_list(json_t *args, struct mcp_port_args *out, struct nsbox_err *err)
{
    return decode(PORT_LIST, args, out, err);
}

int mcp_args_port_close(json_t *args, struct mcp_port_args *out, struct nsbox_err *err)
{
    return decode(PORT_CLOSE, args, out, err);
}
