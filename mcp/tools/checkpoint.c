/* sandbox_checkpoint, sandbox_restore, checkpoint_list, checkpoint_delete
 * (docs/fork.md): a sandbox's state kept in the checkpoint store
 * (boxes/checkpoint.h, --checkpoint-dir, STORE/checkpoints by default)
 * and new sandboxes made from it, after the server restarted too.
 *
 * Contract: a checkpoint belongs to the tenant of the session that took
 * it (mcp_session.commit_scope, as commits do); another tenant's is
 * answered exactly as one that does not exist.  Each tenant keeps at most
 * --max-checkpoints of them, --checkpoint-mb in total: one that would go
 * past the budget is removed again and refused.  A checkpoint is verified
 * whole before anything of it is used (checkpoint.h); a tampered one is
 * refused and named, never restored.  Memory is kept only where CRIU works
 * (box_criu_unavailable): here every checkpoint and restore says
 * state_lost with the reason.  Checkpoints are serialized server-wide. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../boxes/checkpoint.h"
#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../sandboxes.h"
#include "fork.h"
#include "tools.h"

static pthread_mutex_t ckpt_lock = PTHREAD_MUTEX_INITIALIZER;

static json_t *ckpt_json(const struct box_ckpt *c)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:I,s:b}", "checkpoint_id", c->id, "sandbox_id",
                          c->source, "image", c->image, "created", (json_int_t)c->created, "bytes",
                          (json_int_t)c->bytes, "memory", c->memory);
    if (j != NULL && !c->memory) {
        json_object_set_new(j, "state_lost", json_true());
        json_object_set_new(j, "state_lost_reason", json_string(c->state_lost_reason));
    }
    return j;
}

/* The tenant's count and bytes: before one is written (written false),
 * ENOSPC when the count is reached or the bytes are used up; after,
 * ENOSPC when the bytes went past the budget. */
static int check_budget(struct mcp_session *s, int store, bool written, struct nsbox_err *err)
{
    struct box_ckpt *v;
    size_t n;
    uint64_t bytes = 0;
    if (box_ckpt_list(store, s->commit_scope, &v, &n, NULL, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        bytes += v[i].bytes;
    free(v);
    uint64_t budget = s->cfg->checkpoint_mb << 20;
    if (!written && n >= s->cfg->max_checkpoints)
        return nsbox_err_set(err, ENOSPC,
                             "%zu checkpoints are kept, the most allowed (serve "
                             "--max-checkpoints): delete some with checkpoint_delete",
                             n);
    if (bytes > budget || (!written && bytes >= budget))
        return nsbox_err_set(err, ENOSPC,
                             "checkpoints would take %llu MiB, more than the %llu MiB allowed "
                             "(serve --checkpoint-mb): delete some with checkpoint_delete",
                             (unsigned long long)(bytes >> 20),
                             (unsigned long long)s->cfg->checkpoint_mb);
    return 0;
}

int mcp_tool_sandbox_checkpoint(struct mcp_session *s, struct mcp_call *call, json_t *args,
                                struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_ckpt_args a;
    struct box_ckpt c;
    struct nsbox_err ignored;

    if (mcp_args_sandbox_checkpoint(args, &a, err) < 0)
        return -1;
    const char *reason = box_criu_unavailable();
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    _cleanup_close_ int store = box_ckpt_store_open(s->cfg->checkpoint_dir, err);
    int r = store < 0 ? -1 : mcp_op_begin(s, call, m, err);
    if (r == 0) {
        pthread_mutex_lock(&ckpt_lock);
        r = check_budget(s, store, false, err);
        if (r == 0)
            r = box_checkpoint(&m->box, store, s->commit_scope, m->id,
                               reason ? reason : "memory is not kept", &c, err);
        if (r == 0 && check_budget(s, store, true, err) < 0) {
            /* Past the bytes allowed with this one in: it goes again. */
            box_ckpt_delete(store, c.id, s->commit_scope, &ignored);
            r = -1;
        }
        pthread_mutex_unlock(&ckpt_lock);
        mcp_op_end(s, call, m);
    }
    mcp_sandbox_put(s, m);
    if (r < 0)
        return -1;
    mcp_call_log(s, call, "info", "checkpoint %s of %s written (%llu bytes)", c.id, c.source,
                 (unsigned long long)c.bytes);
    out->structured = ckpt_json(&c);
    return out->structured ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}

int mcp_tool_sandbox_restore(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_fork_args a;
    struct box_ckpt c;
    char name[256], digest[OCI_DIGEST_BUF];

    if (mcp_args_sandbox_restore(s->cfg, args, &a, err) < 0) {
        mcp_fork_args_free(&a);
        return -1;
    }
    _cleanup_close_ int store = box_ckpt_store_open(s->cfg->checkpoint_dir, err);
    _cleanup_close_ int layer = store < 0 ? -1
                                          : box_ckpt_open(store, a.checkpoint_id, s->commit_scope,
                                                          &c, err);
    json_t *children = NULL;
    if (layer >= 0 && mcp_fork_image_name(c.id, name, sizeof(name), err) == 0 &&
        box_ckpt_image(&s->cfg->boxes, &c, layer, name, digest, err) == 0)
        children = mcp_fork_children(s, call, name, c.image, c.workdir, &c.limits, c.disk_bytes, &a,
                                     err);
    mcp_fork_args_free(&a);
    if (children == NULL)
        return -1;
    json_t *child = json_array_get(children, 0);
    mcp_call_log(s, call, "info", "checkpoint %s restored as %s", c.id,
                 json_string_value(json_object_get(child, "sandbox_id")));
    out->structured = json_deep_copy(child);
    json_decref(children);
    if (out->structured == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_object_set_new(out->structured, "checkpoint_id", json_string(c.id));
    json_object_set_new(out->structured, "memory", json_boolean(c.memory));
    if (!c.memory) {
        json_object_set_new(out->structured, "state_lost", json_true());
        json_object_set_new(out->structured, "state_lost_reason", json_string(c.state_lost_reason));
    }
    return 0;
}

int mcp_tool_checkpoint_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err)
{
    struct box_ckpt *v;
    size_t n, bad;
    (void)call;
    if (mcp_args_none(args, err) < 0)
        return -1;
    _cleanup_close_ int store = box_ckpt_store_open(s->cfg->checkpoint_dir, err);
    if (store < 0 || box_ckpt_list(store, s->commit_scope, &v, &n, &bad, err) < 0)
        return -1;
    json_t *list = json_array();
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(list, ckpt_json(&v[i]));
        bytes += v[i].bytes;
    }
    free(v);
    out->structured = json_pack(
        "{s:o,s:I,s:I,s:I,s:I}", "checkpoints", list, "bytes", (json_int_t)bytes, "budget_bytes",
        (json_int_t)(s->cfg->checkpoint_mb << 20), "max_checkpoints",
        (json_int_t)s->cfg->max_checkpoints, "refused", (json_int_t)(s->commit_scope[0] ? 0 : bad));
    return out->structured ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}

int mcp_tool_checkpoint_delete(struct mcp_session *s, struct mcp_call *call, json_t *args,
                               struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_ckpt_args a;
    (void)call;
    if (mcp_args_checkpoint_delete(args, &a, err) < 0)
        return -1;
    _cleanup_close_ int store = box_ckpt_store_open(s->cfg->checkpoint_dir, err);
    if (store < 0)
        return -1;
    pthread_mutex_lock(&ckpt_lock);
    int r = box_ckpt_delete(store, a.checkpoint_id, s->commit_scope, err);
    pthread_mutex_unlock(&ckpt_lock);
    if (r < 0)
        return -1;
    out->structured = json_pack("{s:s,s:b}", "checkpoint_id", a.checkpoint_id, "deleted", 1);
    return out->structured ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}
