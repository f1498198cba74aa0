/* The tools: their table (table.c) and the functions behind it, one file
 * per tool or small group (sandbox.c, exec.c, files.c, host.c).  Each
 * tool's arguments are declared once in args.c, from which its
 * inputSchema (schema.c) and its decoder come.  A tool works through the
 * session's sandboxes (../sandboxes.h) and answers with a typed result
 * (../result.h); the protocol (../protocol/tools_call.c) dispatches to it by name. */
#ifndef NSBOX_MCP_TOOLS_TOOLS_H
#define NSBOX_MCP_TOOLS_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../common/err.h"
#include "../call.h"
#include "../result.h"
#include "../sandbox.h"
#include "../server.h"
#include "../session.h"

/* A tool: returns 0 with out filled (result.h), or -1 with err set to a
 * message the model can act on (it becomes the isError text). */
typedef int (*mcp_tool_fn)(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err);

/* A tool's annotations (MCP 2025-06-18 ToolAnnotations).  A tool that is
 * not read-only and not MCP_HINT_DESTRUCTIVE only adds (a file, a
 * sandbox) or runs code inside a sandbox.  openWorldHint is false but for
 * the tools that can open a sandbox to the network on a server whose
 * operator allows some (serve --allow-net): sandboxes otherwise have no
 * network and reach nothing outside nsbox. */
enum {
    MCP_HINT_READ_ONLY = 1,   /* changes nothing */
    MCP_HINT_DESTRUCTIVE = 2, /* may delete or overwrite (a file, a sandbox) */
    MCP_HINT_IDEMPOTENT = 4,  /* a repeat with the same arguments changes nothing more */
    MCP_HINT_NETWORK = 8,     /* takes `network`: open world when the server has a ceiling */
    MCP_HINT_INSTALLS = 16, /* runs package installs: open world when serve --install allows any */
};

/* What the operator must have allowed for a tool to be offered. */
enum {
    MCP_NEEDS_HOST_DIRS = 1,    /* serve --allow-host-dir */
    MCP_NEEDS_COMMITS = 2,      /* serve --max-commits above 0 */
    MCP_NEEDS_INSTALLS = 4,     /* serve --install other than none */
    MCP_NEEDS_URLS = 8,         /* the HTTP transport (file URLs, mcp/files/urls.h) */
    MCP_NEEDS_CHECKPOINTS = 16, /* serve --max-checkpoints above 0 */
    MCP_NEEDS_NET_CEILING = 32, /* serve --allow-net: something can be granted */
};

/* The inputSchema is not here: tools/list builds it from the tool's
 * declaration of its arguments (args.h, mcp_tool_args_find). */
struct mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    const char *output_schema; /* JSON text */
    mcp_tool_fn call;
    unsigned needs; /* MCP_NEEDS_*: listed and callable only then */
    unsigned hints; /* MCP_HINT_*: the annotations clients show or confirm by */
};

extern const struct mcp_tool mcp_tools[];
extern const size_t mcp_n_tools;

struct box_files;
struct box_file_opts;
enum box_file_kind;

/* The session's sandbox id, held and locked for one series of file
 * operations of kind by call (../sandboxes.h: a cancellation or a stop
 * kills it), opened with boxes/files.h (the sandbox's env, workdir and
 * user; o's timeout, write_max and measure_later, the call's cancel;
 * refused over the workspace budget).  NULL with err set.  End it with mcp_file_op_end,
 * which ends the series (measured after writes and removals) and returns
 * r, the operations' result. */
struct mcp_sandbox *mcp_file_op_begin(struct mcp_session *s, struct mcp_call *call,
                                      const char *sandbox_id, enum box_file_kind kind,
                                      const struct box_file_opts *o, struct box_files *f,
                                      struct nsbox_err *err);
int mcp_file_op_end(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                    struct box_files *f, int r);

struct nsbox_file_data;

/* read_file's read, shared with resources/read: at most length bytes of
 * the regular file path from offset, in the session's sandbox sandbox_id
 * and confined to it (read inside the sandbox as its user, symlinks
 * resolved there: boxes/files.h; 30 s at most).  Returns 0 with d
 * filled (free with nsbox_file_data_free), or -1 with err set. */
int mcp_file_read(struct mcp_session *s, struct mcp_call *call, const char *sandbox_id,
                  const char *path, int64_t offset, size_t length, struct nsbox_file_data *d,
                  struct nsbox_err *err);

/* Whether the operator allowed what t needs (tools/list lists only those;
 * a call of another is an unknown tool). */
bool mcp_tool_offered(const struct mcp_server *cfg, const struct mcp_tool *t);

struct egress_policy;

/* A call's `network` (an array of rule texts, or NULL) as a policy within
 * the server's ceiling (tools/network.c): *out is NULL for none, else
 * malloc'ed.  Returns 0, or -1 with err naming the rule and the ceiling. */
int mcp_network_request(const struct mcp_server *cfg, json_t *network, struct egress_policy **out,
                        struct nsbox_err *err);

struct egress_secret;

/* Adds to *net (NULL: made) the hosts of secrets[0..n), each as a model's
 * bare name would be (the ceiling's mapping or method and path rules for
 * it).  Returns 0, or -1 with err naming the secret and the host outside
 * the ceiling. */
int mcp_network_add_secrets(const struct mcp_server *cfg, const struct egress_secret *secrets,
                            size_t n, struct egress_policy **net, struct nsbox_err *err);

/* path (absolute, or relative to workdir) as an absolute path with no
 * empty or "." component, into buf, for a file URL (urls.c); ".." is
 * refused.  Returns 0 or -1 with err. */
int mcp_url_path(const char *workdir, const char *path, char *buf, size_t size,
                 struct nsbox_err *err);

/* read_file {url: true}: the result for the regular file path of m (read
 * with d, its first bytes), with download_url and download_expires_at
 * (urls.c).  Returns 0, or -1 with err. */
struct nsbox_file_data;
int mcp_read_file_url(struct mcp_session *s, struct mcp_sandbox *m, const char *path,
                      const struct nsbox_file_data *d, struct mcp_result *out,
                      struct nsbox_err *err);

/* Shared by the tools (sandboxes.h and pool.h have the sandboxes). */
const char *mcp_image_for_language(struct mcp_session *s, const char *language);

/* Whether the session may see and use an image by this name: any public
 * one, and of the private ones (images_name_private) only its own
 * tenant's commits (commit.c); package caches never. */
bool mcp_image_name_visible(const struct mcp_session *s, const char *name);

/* Whether image is one the session may see: public, or one of its names
 * is visible (mcp_image_name_visible). */
bool mcp_image_visible(const struct mcp_session *s, const struct images_image *image);

/* Standard base64 (malloc'ed), or NULL when out of memory. */
char *mcp_base64_encode(const unsigned char *in, size_t len);

/* The tools, one function each (the table in table.c points at them):
 * args are the call's arguments (decoded with args.h), the result goes
 * into out.  Returns 0, or -1 with err (a tool error for the client). */
int mcp_tool_sandbox_create(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_sandbox_commit(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_sandbox_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
/* sandbox_pause, sandbox_resume (pause.c) */
int mcp_tool_sandbox_pause(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_sandbox_resume(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_sandbox_stop(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_list_secrets(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_list_languages(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_list_images(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err);
/* contexts.c */
int mcp_tool_context_create(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_context_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_context_restart(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_context_remove(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_execute_code(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_run_command(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_write_file(struct mcp_session *s, struct mcp_call *call, json_t *args,
                        struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_read_file(struct mcp_session *s, struct mcp_call *call, json_t *args,
                       struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_list_directory(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_create_directory(struct mcp_session *s, struct mcp_call *call, json_t *args,
                              struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_delete_path(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_project_structure(struct mcp_session *s, struct mcp_call *call, json_t *args,
                               struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_copy_in(struct mcp_session *s, struct mcp_call *call, json_t *args,
                     struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_copy_out(struct mcp_session *s, struct mcp_call *call, json_t *args,
                      struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_install_packages(struct mcp_session *s, struct mcp_call *call, json_t *args,
                              struct mcp_result *out, struct nsbox_err *err);
/* processes.c (docs/services-bg.md) */
int mcp_tool_process_start(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_process_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_process_logs(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_process_signal(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_process_wait(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
/* run_command {background: true}: process_start's answer. */
int mcp_process_run_background(struct mcp_session *s, struct mcp_call *call, json_t *args,
                               struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_upload_url(struct mcp_session *s, struct mcp_call *call, json_t *args,
                        struct mcp_result *out, struct nsbox_err *err);
/* request_network.c */
int mcp_tool_request_network(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err);
/* A "once" grant (request_network.c) around one run_command or
 * execute_code in m, with m's exec lock held: begin puts m->net_once in
 * force on top of m's rules (taking it: once), end puts back what m had.
 * end failing leaves m sealed, or kills every process in it.  Both return
 * 0, or -1 with err. */
struct mcp_net_once {
    bool applied;
    struct egress_policy *saved; /* m's rules before, or NULL: sealed */
};
int mcp_net_once_begin(struct mcp_sandbox *m, struct mcp_net_once *o, struct nsbox_err *err);
int mcp_net_once_end(struct mcp_sandbox *m, struct mcp_net_once *o, struct nsbox_err *err);
int mcp_tool_terminal_open(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err);

#endif
