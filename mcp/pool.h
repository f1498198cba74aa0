/* Server-wide sandbox bookkeeping: making sandboxes under the live count
 * of --max-total-sandboxes, removing them off the response's path, and the
 * spare sandbox kept ready for one-shot runs. */
#ifndef NSBOX_MCP_POOL_H
#define NSBOX_MCP_POOL_H

#include "sandbox.h"
#include "server.h"

/* What sandbox_create asked of nested containers (box_spec's nested,
 * nested_images: borrowed). */
struct mcp_nested {
    bool nested;
    const char *const *images;
    size_t n_images;
};

/* A started sandbox in no session (boxes/ makes it), counted under
 * --max-total-sandboxes until mcp_sandbox_free; nested may be NULL (none).
 * NULL with err set. */
struct mcp_sandbox *mcp_sandbox_build(struct mcp_server *cfg, const char *image,
                                      const struct mcp_limits *limits, char **env,
                                      const char *workdir, const char *workspace, bool one_shot,
                                      const struct mcp_nested *nested, struct nsbox_err *err);
/* Frees the record of a sandbox that is destroyed or never started. */
void mcp_sandbox_free_record(struct mcp_sandbox *m);

/* Stops and frees a sandbox that is in no session, now. */
void mcp_sandbox_free(struct mcp_server *cfg, struct mcp_sandbox *m);
/* Kills everything in it now; the removal runs on a thread of its own. */
void mcp_sandbox_free_detached(struct mcp_server *cfg, struct mcp_sandbox *m);
/* The ready spare for image, or NULL (none ready, or --spares 0); either
 * way the pool is refilled.  lang: the call's interpreter language (enum
 * mcp_interp_lang, -1 none): a spare whose zygote is for it is taken
 * first; one for another language has it killed (m->zygote NULL). */
struct mcp_sandbox *mcp_pool_take(struct mcp_server *cfg, const char *image, int lang);
/* --warm-import's list ("numpy,pandas": python module names, dotted
 * identifiers, comma-separated; NULL or "": none) as *out (NULL-terminated,
 * owned; NULL for none).  Returns 0, or -1 with err saying which name is
 * wrong and why. */
int mcp_pool_warm_parse(const char *list, char ***out, struct nsbox_err *err);
/* Stops refilling, waits for pending removals, frees the spares. */
void mcp_pool_drain(struct mcp_server *cfg);

/* Begins draining the node (the first SIGTERM of serve --http): from
 * now on a call that would make a sandbox (mcp_sandbox_new, the spare) is
 * refused with MCP_NODE_DRAINING_MSG; sandboxes already made are served.
 * Idempotent, from any thread. */
void mcp_node_drain_begin(struct mcp_server *cfg);
bool mcp_node_draining(const struct mcp_server *cfg);

#define MCP_NODE_DRAINING_MSG                                                                      \
    "this node is draining (it is shutting down) and makes no new sandboxes; ask again and "       \
    "the router sends the call to another node (sandboxes made here before still answer until "    \
    "it stops)"

#endif
