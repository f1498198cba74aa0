/* What the files of boxes/ share and nothing above them sees. */
#ifndef NSBOX_BOXES_INTERNAL_H
#define NSBOX_BOXES_INTERNAL_H

#include "box.h"
#include "commit.h"
#include "result.h"
#include "usage.h"
#include "volume.h"

/* Compiles the profile (len bytes of Docker JSON) through the cache in
 * STORE/cache; name is for errors.  On success *out owns a new filter.
 * Returns 0 or -1. */
int box_seccomp_cached(struct box_ctx *ctx, const char *text, size_t len, const char *name,
                       struct nsbox_seccomp **out, struct nsbox_err *err);

/* STORE/workspaces/NAME, created, and locked (flock) for one sandbox
 * alone; its path goes into dir.  Returns the lock fd, or -1 (EWOULDBLOCK:
 * another sandbox holds it). */
int box_workspace_claim(struct box_ctx *ctx, const char *name, char *dir, size_t size,
                        struct nsbox_err *err);

/* Sets up the budget of the claimed workspace name (at dir) into *ws:
 * none for 0 bytes; as root with project quotas on dir's filesystem, the
 * workspace's own project id (allocated once, kept in
 * STORE/workspaces/NAME.projid and claimed in .projids/) with a hard
 * limit; else measured.  Returns 0 or -1. */
int box_workspace_budget(struct box_ctx *ctx, const char *name, const char *dir, uint64_t bytes,
                         struct box_workspace_budget *ws, struct nsbox_err *err);

/* Writes box's record (box.json) into its state directory.  Returns 0 or -1. */
int box_record_save(const struct box *box, struct nsbox_err *err);

/* Reads the record in state_dir into box (image, digest, env, workdir,
 * user, created, limits).  Returns 0, or -1 (ENOENT: there is none). */
int box_record_load(const char *state_dir, struct box *box, struct nsbox_err *err);

/* spec's binds, then its volumes opened (nsbox_bind_open) and checked
 * against the store and the state root, into all (NSBOX_MAX_BINDS
 * entries): *n of them.  Returns 0 (close with box_volumes_close), or -1
 * with err naming the volume and why it is refused (nothing left open). */
int box_volumes_open(struct box_ctx *ctx, const struct box_spec *spec, struct nsbox_bind *all,
                     size_t *n, struct nsbox_err *err);

/* Closes the fds box_volumes_open opened. */
void box_volumes_close(struct nsbox_bind *all, size_t n);

/* The record's "net": {"rules": [{"rule", "allow_private"}], "ever"}
 * (boxes/record.c), a new reference or NULL. */
struct json_t *box_net_record_json(const struct box *box);

/* Reads that object (NULL: none) back into box->net and box->net_ever.
 * Returns 0 or -1. */
int box_net_record_load(struct box *box, struct json_t *j, struct nsbox_err *err);

/* box->tls_ca set, and box->env given the CA variables (boxes/net.h)
 * it lacks.  Returns 0 or -1 (out of memory). */
int box_tls_env(struct box *box);

#endif
