/* Helpers shared by the MCP tool-argument unit tests (test_tool_args.c,
 * which defines them, and test_tool_checks.c): a server configuration with
 * known defaults and ceilings, and calls of a tool's decoder on JSON text. */
#ifndef NSBOX_TOOL_ARGS_LIB_H
#define NSBOX_TOOL_ARGS_LIB_H

#include <jansson.h>
#include <stdbool.h>

#include "../../common/err.h"
#include "../../mcp/tools/tools.h"

/* Defaults 512 MB, 1 CPU, 256 pids, 30 s, 1024 MB disk and workspace;
 * ceilings 4096 MB, 4 CPUs, 4096 pids, 600 s, 8192 MB, 2048 MB; one host
 * directory /srv/share; max_inline_kb 1024. */
extern struct mcp_server ta_cfg;

/* Decodes args (stolen) for tool and releases what it decoded: 0, -1 with
 * the message in err, or -2 for a tool the helpers do not know. */
int ta_try(const char *tool, json_t *args, struct nsbox_err *err);
/* text as JSON, or NULL. */
json_t *ta_parse(const char *text);
/* The message of a call that must fail, or "" (and a failed check). */
const char *ta_fails(const char *tool, const char *args_json);
/* Whether tool's decoder accepts args_json. */
bool ta_accepts(const char *tool, const char *args_json);

#endif
