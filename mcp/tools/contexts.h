/* Code contexts of a kept sandbox (contexts.c has the contract): where
 * execute_code {context} finds its interpreter. */
#ifndef NSBOX_MCP_TOOLS_CONTEXTS_H
#define NSBOX_MCP_TOOLS_CONTEXTS_H

#include "../../common/err.h"
#include "../sandbox.h"

/* Where a context's interpreter lives, its language and its working
 * directory (NULL: the sandbox's, for a default context). */
struct mcp_context_slot {
    struct mcp_interp **interp;
    enum mcp_interp_lang lang;
    const char *cwd;
};

/* The context id of m (its operation lock held): 0 with out, or -1 with
 * err (ENOENT) when m has none of that id. */
int mcp_context_slot(struct mcp_sandbox *m, const char *id, struct mcp_context_slot *out,
                     struct nsbox_err *err);

#define MCP_MAX_CONTEXTS 16 /* made (and forked) contexts per sandbox */

struct mcp_session;
struct mcp_call;
struct mcp_result;

typedef int (*mcp_context_fn)(struct mcp_session *, struct mcp_sandbox *, void *,
                              struct mcp_result *, struct nsbox_err *);

/* Runs fn on the session's kept sandbox id as one operation of call
 * (mcp_op_begin .. mcp_op_end): "not found" for any other's. */
int mcp_context_op(struct mcp_session *s, struct mcp_call *call, const char *id, mcp_context_fn fn,
                   void *arg, struct mcp_result *out, struct nsbox_err *err);

/* Starts *interp (lang, in cwd) with an empty cell: a bad directory or a
 * missing interpreter is an error now.  0, or -1 with err. */
int mcp_context_start(struct mcp_sandbox *m, struct mcp_interp **interp, enum mcp_interp_lang lang,
                      const char *cwd, struct nsbox_err *err);

/* A new made context's record (its id, lang, cwd; no interpreter), or
 * NULL with err (EAGAIN: m has MCP_MAX_CONTEXTS already). */
struct mcp_context *mcp_context_new(struct mcp_sandbox *m, enum mcp_interp_lang lang,
                                    const char *cwd, struct nsbox_err *err);

/* Appends c to m's list (m owns it now) and describes it in out. */
void mcp_context_add(struct mcp_sandbox *m, struct mcp_context *c, struct mcp_result *out);

/* context_fork's arguments (args_context_fork.c; strings borrowed). */
struct mcp_context_fork_args {
    const char *sandbox_id;
    const char *context_id;
    bool reseed; /* true unless given false */
};
int mcp_args_context_fork(json_t *args, struct mcp_context_fork_args *out, struct nsbox_err *err);

/* context_fork (context_fork.c; docs/context-fork.md). */
int mcp_tool_context_fork(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);

/* "python", "javascript", ... */
const char *mcp_context_lang_name(enum mcp_interp_lang lang);

#endif
