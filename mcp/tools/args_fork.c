/* The declarations and decoders of the fork and checkpoint tools'
 * arguments (fork.h), by the table of args.c (args_internal.h). */
#include <errno.h>

#include "../../common/cleanup.h"
#include "args_internal.h"
#include "fork.h"

#define SANDBOX_FIELD                                                                              \
    {                                                                                              \
        .name = "sandbox_id", .type = MCP_ARG_STRING,                                              \
        .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY, .header = "Sandbox-Id"                       \
    }
#define CHECKPOINT_FIELD                                                                           \
    {                                                                                              \
        .name = "checkpoint_id", .type = MCP_ARG_STRING,                                           \
        .flags = MCP_ARG_REQUIRED | MCP_ARG_NONEMPTY,                                              \
        .description = "a checkpoint's id (sandbox_checkpoint, checkpoint_list)", .max_len = 64    \
    }
/* The new sandboxes' own: the source's limits unless named, the image's
 * environment and this env (never the source's), no network unless
 * named. */
#define CHILD_FIELDS                                                                               \
    {.name = "memory_mb",                                                                          \
     .type = MCP_ARG_NUMBER,                                                                       \
     .description = "memory limit in MiB (default: "                                               \
                    "the source's)"},                                                              \
        {.name = "cpus",                                                                           \
         .type = MCP_ARG_NUMBER,                                                                   \
         .description = "CPU limit (default: the source's)"},                                      \
        {.name = "pids",                                                                           \
         .type = MCP_ARG_INTEGER,                                                                  \
         .description = "most processes and threads (default: the source's)"},                     \
        {.name = "timeout_s",                                                                      \
         .type = MCP_ARG_NUMBER,                                                                   \
         .description = "wall-clock limit in seconds (default: the source's)"},                    \
        {.name = "disk_mb",                                                                        \
         .type = MCP_ARG_NUMBER,                                                                   \
         .description = "the writable files in total, in MiB (default: the source's)"},            \
        {.name = "env",                                                                            \
         .type = MCP_ARG_STRING_MAP,                                                               \
         .description = "environment variables of the new sandbox, over its image's (the "         \
                        "source's own env is not carried: give secrets again)"},                   \
    {                                                                                              \
        .name = "network", .type = MCP_ARG_STRING_LIST,                                            \
        .description = "what the new sandbox may reach, as sandbox_create's network (default: "    \
                       "nothing; the source's grants are never carried)",                          \
        .max_len = 64                                                                              \
    }

const struct mcp_arg mcp_sandbox_fork_fields[MCP_FORK_NF] = {
    SANDBOX_FIELD,
    {.name = "count",
     .type = MCP_ARG_INTEGER,
     .description = "how many children (1 unless given, at most 10; each counts against the "
                    "server's sandbox caps)",
     .has_min = true,
     .min = 1,
     .has_max = true,
     .max = MCP_FORK_MAX},
    CHILD_FIELDS,
};
const struct mcp_arg mcp_sandbox_checkpoint_fields[1] = {SANDBOX_FIELD};
const struct mcp_arg mcp_sandbox_restore_fields[MCP_RESTORE_NF] = {CHECKPOINT_FIELD, CHILD_FIELDS};
const struct mcp_arg mcp_checkpoint_delete_fields[1] = {CHECKPOINT_FIELD};

static int decode(int tool, const struct mcp_server *cfg, json_t *args, struct mcp_fork_args *out,
                  struct nsbox_err *err)
{
    *out = (struct mcp_fork_args){.count = 1};
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0)
        return -1;
    out->sandbox_id = str(tool, args, "sandbox_id");
    out->checkpoint_id = str(tool, args, "checkpoint_id");
    out->count = (unsigned)mcp_arg_integer(args, "count", 1);
    if (mcp_args_limits(cfg, args, &out->limits, err) < 0)
        return -1;
    json_t *env = json_object_get(args, "env");
    if (env != NULL && mcp_args_env(env, &out->env, err) < 0)
        return -1;
    out->network = json_object_get(args, "network");
    return 0;
}

int mcp_args_sandbox_fork(const struct mcp_server *cfg, json_t *args, struct mcp_fork_args *out,
                          struct nsbox_err *err)
{
    return decode(SANDBOX_FORK, cfg, args, out, err);
}

int mcp_args_sandbox_restore(const struct mcp_server *cfg, json_t *args, struct mcp_fork_args *out,
                             struct nsbox_err *err)
{
    return decode(SANDBOX_RESTORE, cfg, args, out, err);
}

void mcp_fork_args_free(struct mcp_fork_args *a)
{
    nsbox_strvfree(a->env);
    a->env = NULL;
}

static int ckpt(int tool, json_t *args, struct mcp_ckpt_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_ckpt_args){0};
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0)
        return -1;
    out->sandbox_id = str(tool, args, "sandbox_id");
    out->checkpoint_id = str(tool, args, "checkpoint_id");
    return 0;
}

int mcp_args_sandbox_checkpoint(json_t *args, struct mcp_ckpt_args *out, struct nsbox_err *err)
{
    return ckpt(SANDBOX_CHECKPOINT, args, out, err);
}

int mcp_args_checkpoint_delete(json_t *args, struct mcp_ckpt_args *out, struct nsbox_err *err)
{
    return ckpt(CHECKPOINT_DELETE, args, out, err);
}
