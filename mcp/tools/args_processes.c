/* The arguments of the background-process tools (process_start,
 * process_list, process_logs, process_signal, process_wait, and
 * run_command {background: true}): their declarations, which args.c's
 * table names (args_internal.h), and their decoders.  Pure, as args.h
 * says: no sandbox, no session. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/bg.h"
#include "args.h"
#include "args_internal.h"

#define ARG(n, t, f, ...)                                                                          \
    {                                                                                              \
        .name = n, .type = MCP_ARG_##t, .flags = (f), __VA_ARGS__                                  \
    }
#define REQUIRED MCP_ARG_REQUIRED
#define NONEMPTY MCP_ARG_NONEMPTY
#define SANDBOX_ID ARG("sandbox_id", STRING, REQUIRED | NONEMPTY, .header = "Sandbox-Id")
#define HANDLE                                                                                     \
    ARG("handle", STRING, REQUIRED | NONEMPTY,                                                     \
        .description = "a process handle from process_start: SANDBOX_ID/pN", .max_len = 128)

static const char *const streams[] = {"both", "stdout", "stderr", NULL};
static const char *const signals[] = {"TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2", NULL};
static const int signal_numbers[] = {SIGTERM, SIGKILL, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

const struct mcp_arg mcp_process_start_fields[MCP_PROCESS_START_NF] = {
    SANDBOX_ID,
    ARG("command", STRING, REQUIRED | NONEMPTY, .description = "a command line for /bin/sh -c",
        .max_len = MCP_CODE_MAX),
    ARG("env", STRING_MAP, 0,
        .description = "environment variables on top of the sandbox's; never logged or returned"),
    ARG("workdir", STRING, 0, .description = "absolute path inside the sandbox"),
    ARG("name", STRING, 0, .description = "a label shown by process_list",
        .max_len = BOX_BG_NAME_MAX),
};
const struct mcp_arg mcp_process_list_fields[MCP_PROCESS_LIST_NF] = {SANDBOX_ID};
const struct mcp_arg mcp_process_logs_fields[MCP_PROCESS_LOGS_NF] = {
    HANDLE,
    ARG("stream", STRING, 0, .dflt = "both", .choices = streams),
    ARG("cursor", STRING, 0,
        .description = "the cursor the last process_logs returned (\"OUT:ERR\": the position of "
                       "the next byte of stdout and of stderr); absent: from the oldest byte "
                       "kept",
        .max_len = 64),
    ARG("max_bytes", INTEGER, 0, .has_min = true, .min = 1, .has_max = true,
        .max = MCP_PROCESS_LOGS_MAX,
        .description = "the most bytes returned, both streams together (65536)"),
};
const struct mcp_arg mcp_process_signal_fields[MCP_PROCESS_SIGNAL_NF] = {
    HANDLE,
    ARG("signal", STRING, 0, .dflt = "TERM", .choices = signals,
        .description = "sent to the process's group"),
};
const struct mcp_arg mcp_process_wait_fields[MCP_PROCESS_WAIT_NF] = {
    HANDLE,
    ARG("timeout_s", NUMBER, 0, .has_min = true, .min = 0,
        .description = "how long to wait (30; at most the server's --max-timeout); on timeout "
                       "the answer says running: true"),
};

int mcp_args_process_start(json_t *args, struct mcp_process_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_process_args){0};
    if (mcp_schema_check(&mcp_arg_decls[PROCESS_START], args, err) < 0)
        return -1;
    out->sandbox_id = str(PROCESS_START, args, "sandbox_id");
    out->command = str(PROCESS_START, args, "command");
    out->workdir = str(PROCESS_START, args, "workdir");
    out->name = str(PROCESS_START, args, "name");
    out->env = json_object_get(args, "env");
    if (out->env != NULL && mcp_args_run_env_check(out->env, err) < 0)
        return -1;
    if (out->workdir != NULL && out->workdir[0] != '/')
        return nsbox_err_set(err, 0, "workdir must be an absolute path inside the sandbox");
    return 0;
}

int mcp_args_run_background(json_t *args, struct mcp_process_args *out, struct nsbox_err *err)
{
    const char *key;
    json_t *v;
    *out = (struct mcp_process_args){0};
    if (mcp_schema_check(&mcp_arg_decls[RUN_COMMAND], args, err) < 0)
        return -1;
    json_object_foreach (args, key, v)
        if (strcmp(key, "command") != 0 && strcmp(key, "sandbox_id") != 0 &&
            strcmp(key, "env") != 0 && strcmp(key, "workdir") != 0 &&
            strcmp(key, "background") != 0)
            return nsbox_err_set(err, 0,
                                 "with background, run_command takes only command, sandbox_id, "
                                 "env and workdir (not %s): it runs until it ends or is "
                                 "signalled (process_signal)",
                                 key);
    out->sandbox_id = str(RUN_COMMAND, args, "sandbox_id");
    if (out->sandbox_id == NULL)
        return nsbox_err_set(err, 0,
                             "background needs sandbox_id: a background process runs in a "
                             "sandbox made by sandbox_create");
    out->command = str(RUN_COMMAND, args, "command");
    out->workdir = str(RUN_COMMAND, args, "workdir");
    out->env = json_object_get(args, "env");
    if (out->env != NULL && mcp_args_run_env_check(out->env, err) < 0)
        return -1;
    if (out->workdir != NULL && out->workdir[0] != '/')
        return nsbox_err_set(err, 0, "workdir must be an absolute path inside the sandbox");
    return 0;
}

int mcp_args_process_list(json_t *args, struct mcp_process_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_process_args){0};
    if (mcp_schema_check(&mcp_arg_decls[PROCESS_LIST], args, err) < 0)
        return -1;
    out->sandbox_id = str(PROCESS_LIST, args, "sandbox_id");
    return 0;
}

/* "OUT:ERR", two decimal positions. */
static int parse_cursor(const char *s, uint64_t *out_pos, uint64_t *err_pos)
{
    char *end;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    *out_pos = strtoull(s, &end, 10);
    if (errno != 0 || *end != ':' || end[1] < '0' || end[1] > '9')
        return -1;
    *err_pos = strtoull(end + 1, &end, 10);
    return errno != 0 || *end != '\0' ? -1 : 0;
}

int mcp_args_process_logs(json_t *args, struct mcp_process_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_process_args){0};
    if (mcp_schema_check(&mcp_arg_decls[PROCESS_LOGS], args, err) < 0)
        return -1;
    out->handle = str(PROCESS_LOGS, args, "handle");
    const char *stream = str(PROCESS_LOGS, args, "stream");
    out->streams = strcmp(stream, "stdout") == 0   ? BOX_BG_STDOUT
                   : strcmp(stream, "stderr") == 0 ? BOX_BG_STDERR
                                                   : BOX_BG_BOTH;
    const char *cursor = str(PROCESS_LOGS, args, "cursor");
    if (cursor != NULL && parse_cursor(cursor, &out->out_cursor, &out->err_cursor) < 0)
        return nsbox_err_set(err, 0,
                             "cursor must be as process_logs returned it: \"OUT:ERR\", two "
                             "whole numbers (\"0:0\" reads from the start)");
    out->max_bytes = (size_t)mcp_arg_integer(args, "max_bytes", MCP_PROCESS_LOGS_DEFAULT);
    return 0;
}

int mcp_args_process_signal(json_t *args, struct mcp_process_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_process_args){0};
    if (mcp_schema_check(&mcp_arg_decls[PROCESS_SIGNAL], args, err) < 0)
        return -1;
    out->handle = str(PROCESS_SIGNAL, args, "handle");
    const char *name = str(PROCESS_SIGNAL, args, "signal");
    for (size_t i = 0; signals[i] != NULL; i++)
        if (strcmp(signals[i], name) == 0)
            out->signal = signal_numbers[i];
    return 0;
}

int mcp_args_process_wait(const struct mcp_server *cfg, json_t *args, struct mcp_process_args *out,
                          struct nsbox_err *err)
{
    bool given;
    *out = (struct mcp_process_args){0};
    if (mcp_schema_check(&mcp_arg_decls[PROCESS_WAIT], args, err) < 0)
        return -1;
    out->handle = str(PROCESS_WAIT, args, "handle");
    double ceiling = cfg->ceilings.timeout_s > 0 ? cfg->ceilings.timeout_s : 600;
    out->timeout_s = mcp_arg_number(args, "timeout_s", 30, &given);
    if (given && out->timeout_s > ceiling)
        return nsbox_err_set(err, 0,
                             "timeout_s is at most %g (the server's --max-timeout); wait again "
                             "for longer",
                             ceiling);
    if (!given && out->timeout_s > ceiling)
        out->timeout_s = ceiling;
    return 0;
}

int mcp_process_handle_split(const char *handle, char *sandbox_id, size_t size, const char **id,
                             struct nsbox_err *err)
{
    const char *slash = strrchr(handle, '/');
    if (slash == NULL || slash == handle || (size_t)(slash - handle) >= size || slash[1] != 'p' ||
        slash[2] < '1' || slash[2] > '9')
        return nsbox_err_set(err, ENOENT,
                             "no process \"%.80s\": a handle is SANDBOX_ID/pN, as process_start "
                             "returned it",
                             handle);
    memcpy(sandbox_id, handle, (size_t)(slash - handle));
    sandbox_id[slash - handle] = '\0';
    *id = slash + 1;
    return 0;
}
