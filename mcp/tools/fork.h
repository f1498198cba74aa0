/* The fork and checkpoint tools (fork.c, checkpoint.c): sandbox_fork,
 * sandbox_checkpoint, sandbox_restore, checkpoint_list,
 * checkpoint_delete, and their arguments (args_fork.c).  What they keep
 * and what they do not: docs/fork.md. */
#ifndef NSBOX_MCP_TOOLS_FORK_H
#define NSBOX_MCP_TOOLS_FORK_H

#include <jansson.h>

#include "../../common/err.h"
#include "../call.h"
#include "../result.h"
#include "../sandbox.h"
#include "../server.h"
#include "../session.h"
#include "args.h"

#define MCP_FORK_MAX 10 /* children of one sandbox_fork */

/* sandbox_fork, sandbox_restore (checkpoint_id instead of sandbox_id) */
struct mcp_fork_args {
    const char *sandbox_id;
    const char *checkpoint_id;
    unsigned count;
    struct mcp_limit_args limits; /* has_*: named by the call, else the source's */
    char **env;                   /* owned, or NULL */
    json_t *network;              /* borrowed, or NULL */
};

/* sandbox_checkpoint, checkpoint_delete */
struct mcp_ckpt_args {
    const char *sandbox_id;
    const char *checkpoint_id;
};

int mcp_args_sandbox_fork(const struct mcp_server *cfg, json_t *args, struct mcp_fork_args *out,
                          struct nsbox_err *err);
int mcp_args_sandbox_restore(const struct mcp_server *cfg, json_t *args, struct mcp_fork_args *out,
                             struct nsbox_err *err);
void mcp_fork_args_free(struct mcp_fork_args *a);
int mcp_args_sandbox_checkpoint(json_t *args, struct mcp_ckpt_args *out, struct nsbox_err *err);
int mcp_args_checkpoint_delete(json_t *args, struct mcp_ckpt_args *out, struct nsbox_err *err);

int mcp_tool_sandbox_fork(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_sandbox_checkpoint(struct mcp_session *s, struct mcp_call *call, json_t *args,
                                struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_sandbox_restore(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_checkpoint_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err);
int mcp_tool_checkpoint_delete(struct mcp_session *s, struct mcp_call *call, json_t *args,
                               struct mcp_result *out, struct nsbox_err *err);

/* fork.c, for checkpoint.c: count new sandboxes of s made from the image
 * name (a private fork name, removed afterwards whatever happens) with
 * a's limits over base (the source's), a's env and network, workdir and
 * display the source's image name.  All or none: the children made are
 * stopped when one fails.  Returns a JSON array of their records, or NULL
 * with err. */
json_t *mcp_fork_children(struct mcp_session *s, struct mcp_call *call, const char *name,
                          const char *display, const char *workdir, const struct box_limits *base,
                          uint64_t base_disk, const struct mcp_fork_args *a, struct nsbox_err *err);

/* The id of a private image name for a fork or restore of what (a
 * sandbox or checkpoint id): IMAGES_PRIVATE_FORK_REPO WHAT-RANDOM. */
int mcp_fork_image_name(const char *what, char *buf, size_t size, struct nsbox_err *err);

#endif
