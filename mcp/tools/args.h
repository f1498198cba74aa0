/* Tool arguments as typed C structs: the pure part of the tools.
 *
 * Each tool's arguments are declared once (struct mcp_tool_args,
 * schema.h): its inputSchema is built from the declaration, and each
 * decoder first checks `arguments` against it (additionalProperties:
 * false, types, ranges, enums, a known language), then what the tool
 * needs on top: an absolute workdir, a workspace name, an env map, base64,
 * a host path inside an allowed directory, limits within the ceilings.
 * It touches no sandbox, store or session, so tests/fuzz/fuzz_tools.c and
 * tests/unit/test_args.c call it directly; the tool (*.c) then
 * works from the struct alone.
 *
 * Contract, for every decoder: returns 0 with the struct filled, or -1
 * with err set and nothing owned left in the struct.  Strings are borrowed
 * from args, which must outlive the struct, and never hold a NUL byte;
 * what a decoder allocates is released by the struct's _free function
 * (safe on a zeroed or already released struct). */
#ifndef NSBOX_MCP_TOOLS_ARGS_H
#define NSBOX_MCP_TOOLS_ARGS_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../boxes/packages.h"
#include "../../common/err.h"
#include "../server.h"
#include "schema.h"

/* Code travels in argv: bounded well below the control message (128 KiB)
 * and ARG_MAX.  Larger programs belong in a file (write_file). */
#define MCP_CODE_MAX (96 * 1024)
#define MCP_WRITE_MAX (16u << 20) /* decoded bytes per write_file */
#define MCP_READ_DEFAULT (1u << 20)
#define MCP_READ_MAX (8u << 20)
#define MCP_INLINE_KB_DEFAULT 32    /* KiB of output inline unless max_inline_kb */
#define MCP_TREE_DEPTH_MAX 16       /* project_structure's depth */
#define MCP_LIST_RECURSIVE_DEPTH 64 /* list_directory with recursive */

/* Per-call limits: cfg's defaults, each overridden by the call within
 * cfg's ceilings. */
struct mcp_limit_args {
    struct mcp_limits limits;
    bool has_memory, has_cpus, has_pids, has_timeout, has_disk; /* named by the call */
    bool has_workspace;                                         /* workspace_mb (sandbox_create) */
};

#define MCP_PKG_MAX 64       /* packages in one install */
#define MCP_PKG_SPEC_MAX 256 /* bytes of one specification */

/* What to install: install_packages' arguments, sandbox_create's
 * `packages` object.  Never a string starting with '-' (an option of the
 * manager's). */
struct mcp_pkg_args {
    bool given;
    enum box_pkg_manager manager;
    char *packages[MCP_PKG_MAX + 1]; /* borrowed, NULL-terminated */
    size_t n_packages;
    const char *requirements_file; /* or NULL */
};

/* sandbox_create */
struct mcp_create_args {
    const char *image;    /* NULL: the language's image */
    const char *language; /* "python" unless given */
    struct mcp_limit_args limits;
    char **env;            /* owned: "KEY=VALUE" strings, or NULL for none */
    const char *workdir;   /* absolute, or NULL for /workspace */
    const char *workspace; /* a valid workspace name, or NULL */
    json_t *network;       /* borrowed: an array of rule texts, or NULL (tools/network.c) */
    json_t *secrets;       /* borrowed: an array of secret names, or NULL (tools/secrets.c) */
    struct mcp_pkg_args packages; /* installed at creation (mcp/tools/packages.c) */
    bool nested;                  /* containers inside (boxes/nested.h) */
    json_t *nested_images;        /* borrowed: an array of image names, or NULL */
};

/* install_packages */
struct mcp_install_args {
    const char *sandbox_id;
    struct mcp_pkg_args packages;
    double timeout_s; /* 300 unless given, within the server's max-timeout */
};

/* sandbox_stop */
struct mcp_stop_args {
    const char *sandbox_id;
};

/* context_create, context_list, context_restart, context_remove (strings
 * borrowed from args; each tool fills what it takes) */
struct mcp_context_args {
    const char *sandbox_id;
    const char *language;   /* context_create: an interpreter language ("python" unless given) */
    const char *cwd;        /* context_create: absolute, or NULL for the sandbox's */
    const char *context_id; /* context_restart, context_remove */
};

/* sandbox_commit (strings borrowed from args) */
struct mcp_commit_args {
    const char *sandbox_id;
    const char *name;    /* NAME[:TAG], checked by the tool */
    const char *message; /* or NULL */
};

/* execute_code, run_command */
struct mcp_run_args {
    char *argv[6];          /* interpreter, flag, code (borrowed), NULL; or
                             * interpreter, flag, script, language, code, NULL */
    const char *sandbox_id; /* NULL: a one-shot sandbox */
    const char *language;   /* execute_code: the language ("python" unless
                                   * given); run_command: NULL, the tool picks */
    const char *stdin_data; /* NULL: none */
    const char *workdir;    /* run_command: absolute, or NULL */
    struct mcp_limit_args limits;
    /* execute_code: the code (argv[2]), and how it runs in a kept
     * sandbox (docs/interpreters.md): a persistent interpreter unless
     * fresh; restart starts a new one first. */
    const char *code;
    bool fresh, restart;
    const char *context; /* execute_code: a code context's id (tools/contexts.c), or NULL */
    bool language_given; /* execute_code: language was in the call (not the default) */
    json_t *network;     /* a one-shot run's rules (borrowed array), or NULL */
    size_t inline_max;   /* bytes of stdout + stderr inline (max_inline_kb) */
    /* The run's own environment (borrowed: [{name, value}] or {NAME:
     * VALUE}, checked: see MCP_RUN_ENV_*), or NULL.  Its values must
     * never be logged or echoed. */
    json_t *env;
};

#define MCP_RUN_ENV_MAX 256      /* variables of a run's env */
#define MCP_RUN_ENV_NAME_MAX 256 /* bytes of one name */
#define MCP_RUN_ENV_BYTES                                                                          \
    (16u << 10) /* names and values in all (the exec
                                          * message beside 96 KiB of code) */

/* A run's checked env as "NAME=VALUE" strings (NULL-terminated, free with
 * nsbox_strvfree), or as a new object {NAME: VALUE}; NULL when out of
 * memory. */
char **mcp_args_env_strings(json_t *env);
json_t *mcp_args_env_object(json_t *env);

/* write_file */
struct mcp_write_args {
    const char *sandbox_id, *path;
    const char *content;    /* len bytes (may hold NULs): borrowed text, or decoded */
    size_t len;             /* at most MCP_WRITE_MAX */
    unsigned char *decoded; /* owned: base64's bytes (content points here), or NULL */
    bool append;
};

/* read_file */
struct mcp_read_args {
    const char *sandbox_id, *path;
    bool base64;    /* encoding "base64" was asked for */
    int64_t offset; /* >= 0 */
    size_t length;  /* 1 .. MCP_READ_MAX */
    bool url;       /* a download URL instead of the content (HTTP) */
};

/* list_directory, project_structure */
struct mcp_list_args {
    const char *sandbox_id;
    const char *path; /* "." unless given */
    int depth;        /* 1 or MCP_LIST_RECURSIVE_DEPTH; 1 .. MCP_TREE_DEPTH_MAX */
};

/* create_directory, delete_path */
struct mcp_path_args {
    const char *sandbox_id, *path;
    bool recursive;
};

/* upload_url */
struct mcp_upload_args {
    const char *sandbox_id, *path;
    uint64_t max_bytes; /* size_mb, or the server's ceiling */
};

/* copy_in, copy_out */
struct mcp_copy_args {
    const char *sandbox_id, *path, *host_path;
    size_t dir;      /* index into cfg->host_dirs holding host_path */
    const char *rel; /* host_path below that directory: non-empty */
    bool overwrite;  /* copy_out */
    /* copy_out: rel split at its last '/'. */
    bool has_parent; /* rel has a '/': parent is the part before it */
    char parent[PATH_MAX];
    const char *name; /* the part after it (or all of rel): points into rel */
};

/* process_start, run_command {background}, and the other process tools
 * (args_processes.c; strings borrowed, each tool fills what it takes). */
#define MCP_PROCESS_LOGS_DEFAULT 65536
#define MCP_PROCESS_LOGS_MAX (1u << 20)
struct mcp_process_args {
    const char *sandbox_id, *command, *workdir, *name;
    json_t *env;                     /* borrowed, checked as a run's env, or NULL */
    const char *handle;              /* SANDBOX_ID/pN */
    unsigned streams;                /* process_logs: BOX_BG_* (boxes/bg.h) */
    uint64_t out_cursor, err_cursor; /* from cursor "OUT:ERR"; 0 when absent */
    size_t max_bytes;                /* 1 .. MCP_PROCESS_LOGS_MAX */
    int signal;                      /* process_signal: SIGTERM unless given */
    double timeout_s;                /* process_wait */
};
int mcp_args_process_start(json_t *args, struct mcp_process_args *out, struct nsbox_err *err);
/* run_command's arguments with background: true (only command,
 * sandbox_id, env, workdir; sandbox_id required). */
int mcp_args_run_background(json_t *args, struct mcp_process_args *out, struct nsbox_err *err);
int mcp_args_process_list(json_t *args, struct mcp_process_args *out, struct nsbox_err *err);
int mcp_args_process_logs(json_t *args, struct mcp_process_args *out, struct nsbox_err *err);
int mcp_args_process_signal(json_t *args, struct mcp_process_args *out, struct nsbox_err *err);
int mcp_args_process_wait(const struct mcp_server *cfg, json_t *args, struct mcp_process_args *out,
                          struct nsbox_err *err);
/* A handle "SANDBOX_ID/pN" split: the sandbox's id into sandbox_id (size
 * bytes), *id pointing at "pN" in handle.  0, or -1 with err (ENOENT). */
int mcp_process_handle_split(const char *handle, char *sandbox_id, size_t size, const char **id,
                             struct nsbox_err *err);
/* terminal_open */
struct mcp_terminal_args {
    const char *sandbox_id, *command; /* command NULL: bash, else sh */
    unsigned cols, rows;
};

/* Each returns 0 with *out filled, or -1 with err set (see above). */
int mcp_args_terminal_open(json_t *args, struct mcp_terminal_args *out, struct nsbox_err *err);
int mcp_args_none(json_t *args, struct nsbox_err *err);
int mcp_args_sandbox_create(const struct mcp_server *cfg, json_t *args, struct mcp_create_args *out,
                            struct nsbox_err *err);
int mcp_args_install_packages(const struct mcp_server *cfg, json_t *args,
                              struct mcp_install_args *out, struct nsbox_err *err);
int mcp_args_context_create(json_t *args, struct mcp_context_args *out, struct nsbox_err *err);
int mcp_args_context_list(json_t *args, struct mcp_context_args *out, struct nsbox_err *err);
int mcp_args_context_restart(json_t *args, struct mcp_context_args *out, struct nsbox_err *err);
int mcp_args_context_remove(json_t *args, struct mcp_context_args *out, struct nsbox_err *err);
int mcp_args_sandbox_stop(json_t *args, struct mcp_stop_args *out, struct nsbox_err *err);
/* sandbox_pause (resume false) and sandbox_resume: args_pause.c */
int mcp_args_sandbox_pause(json_t *args, bool resume, struct mcp_stop_args *out,
                           struct nsbox_err *err);
int mcp_args_sandbox_commit(json_t *args, struct mcp_commit_args *out, struct nsbox_err *err);
int mcp_args_execute_code(const struct mcp_server *cfg, json_t *args, struct mcp_run_args *out,
                          struct nsbox_err *err);
int mcp_args_run_command(const struct mcp_server *cfg, json_t *args, struct mcp_run_args *out,
                         struct nsbox_err *err);
int mcp_args_write_file(json_t *args, struct mcp_write_args *out, struct nsbox_err *err);
int mcp_args_read_file(json_t *args, struct mcp_read_args *out, struct nsbox_err *err);
int mcp_args_list_directory(json_t *args, struct mcp_list_args *out, struct nsbox_err *err);
int mcp_args_project_structure(json_t *args, struct mcp_list_args *out, struct nsbox_err *err);
int mcp_args_create_directory(json_t *args, struct mcp_path_args *out, struct nsbox_err *err);
int mcp_args_delete_path(json_t *args, struct mcp_path_args *out, struct nsbox_err *err);
/* ceiling: the most bytes an upload may take (the operator's). */
int mcp_args_upload_url(uint64_t ceiling, json_t *args, struct mcp_upload_args *out,
                        struct nsbox_err *err);
int mcp_args_copy_in(const struct mcp_server *cfg, json_t *args, struct mcp_copy_args *out,
                     struct nsbox_err *err);
int mcp_args_copy_out(const struct mcp_server *cfg, json_t *args, struct mcp_copy_args *out,
                      struct nsbox_err *err);

/* request_network (args_request_network.c; strings borrowed) */
#define MCP_ASK_TIMEOUT_DEFAULT_S 120
#define MCP_ASK_TIMEOUT_MAX_S 600
struct mcp_request_network_args {
    const char *sandbox_id, *rule, *reason;
    double timeout_s; /* how long the user is waited for */
};
int mcp_args_request_network(json_t *args, struct mcp_request_network_args *out,
                             struct nsbox_err *err);

/* Release what the decoder allocated; the struct is zeroed after. */
void mcp_create_args_free(struct mcp_create_args *a);
void mcp_write_args_free(struct mcp_write_args *a);

/* The declaration of tool's arguments (static storage), or NULL for a
 * name no tool has. */
const struct mcp_tool_args *mcp_tool_args_find(const char *tool);
/* Every tool's declaration (static storage), their number in *n. */
const struct mcp_tool_args *mcp_tool_args_all(size_t *n);

#endif
