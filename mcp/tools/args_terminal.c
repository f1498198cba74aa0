/* terminal_open's arguments: their declaration (the table in args.c
 * points here) and decoder (args.h). */
#include <string.h>

#include "args.h"
#include "args_internal.h"

const struct mcp_arg mcp_terminal_open_fields[MCP_TERMINAL_OPEN_N_FIELDS] = {
    {.name = "sandbox_id",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,
     .header = "Sandbox-Id"},
    {.name = "cols",
     .type = MCP_ARG_INTEGER,
     .description = "the terminal's width in columns (80)",
     .has_min = true,
     .min = 1,
     .has_max = true,
     .max = 1000},
    {.name = "rows",
     .type = MCP_ARG_INTEGER,
     .description = "the terminal's height in rows (24)",
     .has_min = true,
     .min = 1,
     .has_max = true,
     .max = 1000},
    {.name = "command",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_NONEMPTY,
     .max_len = 4096,
     .description = "what runs on the terminal, by /bin/sh -c (default: bash if the image has "
                    "it, else sh)"},
};

int mcp_args_terminal_open(json_t *args, struct mcp_terminal_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_terminal_args){0};
    if (mcp_schema_check(&mcp_arg_decls[TERMINAL_OPEN], args, err) < 0)
        return -1;
    out->sandbox_id = str(TERMINAL_OPEN, args, "sandbox_id");
    out->command = str(TERMINAL_OPEN, args, "command");
    out->cols = (unsigned)mcp_arg_integer(args, "cols", 80);
    out->rows = (unsigned)mcp_arg_integer(args, "rows", 24);
    return 0;
}
