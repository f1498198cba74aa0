/* What args.c and args_files.c share: the tools' argument declarations,
 * by index (args.c holds the table), and a string argument by name.
 * Private to mcp/tools/: everyone else goes through args.h. */
#ifndef NSBOX_MCP_TOOLS_ARGS_INTERNAL_H
#define NSBOX_MCP_TOOLS_ARGS_INTERNAL_H

#include <jansson.h>

#include "args.h"
#include "schema.h"

enum {
    SANDBOX_CREATE,
    SANDBOX_LIST,
    SANDBOX_STOP,
    SANDBOX_COMMIT,
    EXECUTE_CODE,
    RUN_COMMAND,
    WRITE_FILE,
    READ_FILE,
    LIST_DIRECTORY,
    CREATE_DIRECTORY,
    DELETE_PATH,
    PROJECT_STRUCTURE,
    COPY_IN,
    COPY_OUT,
    LIST_LANGUAGES,
    LIST_IMAGES,
    INSTALL_PACKAGES,
    UPLOAD_URL,
    CONTEXT_CREATE,
    CONTEXT_LIST,
    CONTEXT_RESTART,
    CONTEXT_REMOVE,
    PROCESS_START,
    PROCESS_LIST,
    PROCESS_LOGS,
    PROCESS_SIGNAL,
    PROCESS_WAIT,
    PORT_EXPOSE, /* args_ports.c */
    PORT_LIST,
    PORT_CLOSE,
    TERMINAL_OPEN,
    SANDBOX_FORK, /* args_fork.c */
    SANDBOX_CHECKPOINT,
    SANDBOX_RESTORE,
    CHECKPOINT_LIST,
    CHECKPOINT_DELETE,
    SANDBOX_PAUSE, /* args_pause.c */
    SANDBOX_RESUME,
    CONTEXT_FORK, /* args_context_fork.c */
    LIST_SECRETS,
    REQUEST_NETWORK, /* args_request_network.c */
    N_TOOLS
};

/* terminal_open's, in args_terminal.c. */
#define MCP_TERMINAL_OPEN_N_FIELDS 4
extern const struct mcp_arg mcp_terminal_open_fields[MCP_TERMINAL_OPEN_N_FIELDS];

/* sandbox_pause's and sandbox_resume's, in args_pause.c. */
extern const struct mcp_arg mcp_pause_fields[1];

extern const struct mcp_tool_args mcp_arg_decls[N_TOOLS];

/* The process tools' fields (args_processes.c), sized here so that the
 * table in args.c can count them. */
#define MCP_PROCESS_START_NF 5
#define MCP_PROCESS_LIST_NF 1
#define MCP_PROCESS_LOGS_NF 4
#define MCP_PROCESS_SIGNAL_NF 2
#define MCP_PROCESS_WAIT_NF 2
extern const struct mcp_arg mcp_process_start_fields[MCP_PROCESS_START_NF];
extern const struct mcp_arg mcp_process_list_fields[MCP_PROCESS_LIST_NF];
extern const struct mcp_arg mcp_process_logs_fields[MCP_PROCESS_LOGS_NF];
extern const struct mcp_arg mcp_process_signal_fields[MCP_PROCESS_SIGNAL_NF];
extern const struct mcp_arg mcp_process_wait_fields[MCP_PROCESS_WAIT_NF];

/* A run's env (execute_code's and run_command's checks: count, sizes,
 * names).  0, or -1 with err. */
int mcp_args_run_env_check(json_t *env, struct nsbox_err *err);
/* The port tools' fields (args_ports.c). */
extern const struct mcp_arg mcp_port_expose_fields[3];
extern const struct mcp_arg mcp_port_list_fields[1];
extern const struct mcp_arg mcp_port_close_fields[2];

/* The fork and checkpoint tools' fields (args_fork.c). */
#define MCP_FORK_NF 9
#define MCP_RESTORE_NF 8
extern const struct mcp_arg mcp_sandbox_fork_fields[MCP_FORK_NF];
extern const struct mcp_arg mcp_sandbox_checkpoint_fields[1];
extern const struct mcp_arg mcp_sandbox_restore_fields[MCP_RESTORE_NF];
extern const struct mcp_arg mcp_checkpoint_delete_fields[1];
/* args.c's limits (memory_mb, cpus, pids, timeout_s, disk_mb) and env
 * decoders, for args_fork.c. */
int mcp_args_limits(const struct mcp_server *cfg, json_t *args, struct mcp_limit_args *out,
                    struct nsbox_err *err);
int mcp_args_env(json_t *env, char ***out, struct nsbox_err *err);
/* context_fork's (args_context_fork.c). */
#define MCP_CONTEXT_FORK_NF 3
extern const struct mcp_arg mcp_context_fork_fields[MCP_CONTEXT_FORK_NF];

/* request_network's (args_request_network.c). */
#define MCP_REQUEST_NETWORK_NF 4
extern const struct mcp_arg mcp_request_network_fields[MCP_REQUEST_NETWORK_NF];

/* args_packages.c: the packages object o (sandbox_create's, or
 * install_packages' less its own keys) into *out; strings borrowed from o. */
int mcp_args_pkg(json_t *o, struct mcp_pkg_args *out, struct nsbox_err *err);

/* The string argument name of a call of tool (declared in the table), or
 * NULL when absent. */
static inline const char *str(int tool, json_t *args, const char *name)
{
    return mcp_arg_string(&mcp_arg_decls[tool], args, name);
}

#endif
