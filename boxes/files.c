/* A box's files over its workspace budget (files.h). */
#include "files.h"

#include <errno.h>

#include "../common/log.h"

int box_files_begin(struct box *box, enum box_file_kind kind, const struct box_file_opts *o,
                    struct box_files *f, struct nsbox_err *err)
{
    *f = (struct box_files){.box = box, .kind = kind, .measure_later = o->measure_later};
    f->ctx = (struct nsbox_file_ctx){.env = box->env,
                                     .cwd = box->workdir,
                                     .uid = box->uid,
                                     .gid = box->gid,
                                     .timeout_s = o->timeout_s,
                                     .write_max = o->write_max,
                                     .cancel = o->cancel,
                                     .no_follow = o->no_follow};
    if (kind != BOX_FILE_WRITES)
        return 0;
    /* A measured workspace over its budget takes no more writes. */
    if (box_workspace_check(box, err) < 0)
        return -1;
    box_workspace_watch_begin(box, &f->watch);
    return 0;
}

int box_files_end(struct box_files *f, int r)
{
    struct nsbox_err merr;
    bool changed = f->kind == BOX_FILE_WRITES || f->kind == BOX_FILE_REMOVES;
    if (changed && !f->measure_later && box_measure(f->box, &merr) < 0)
        nsbox_warn("sandbox %s: %s", f->box->sb.id, merr.msg);
    return r;
}

/* Whether a write may go ahead: in a scratch series, or in a write series
 * while the watch has not found the workspace over its budget (then the
 * refusal is box_workspace_check's). */
static int may_write(struct box_files *f, struct nsbox_err *err)
{
    if (f->kind == BOX_FILE_SCRATCH)
        return 0;
    if (f->kind != BOX_FILE_WRITES)
        return nsbox_err_set(err, EINVAL, "a write in a series not opened for writing");
    if (box_workspace_watch_over(f->box, &f->watch))
        return box_workspace_check(f->box, err) < 0 ? -1 : 0;
    return 0;
}

int box_file_read(struct box_files *f, const char *path, int64_t offset, size_t length,
                  struct nsbox_file_data *out, struct nsbox_err *err)
{
    return nsbox_file_read(&f->box->sb, &f->ctx, path, offset, length, out, err);
}

int box_file_list(struct box_files *f, const char *path, int depth, struct nsbox_file_list *out,
                  struct nsbox_err *err)
{
    return nsbox_file_list(&f->box->sb, &f->ctx, path, depth, out, err);
}

int box_file_write(struct box_files *f, const char *path, const void *data, size_t len, bool append,
                   int64_t *size, struct nsbox_err *err)
{
    if (may_write(f, err) < 0)
        return -1;
    return nsbox_file_write(&f->box->sb, &f->ctx, path, data, len, append, size, err);
}

int box_file_mkdir(struct box_files *f, const char *path, struct nsbox_err *err)
{
    if (may_write(f, err) < 0)
        return -1;
    return nsbox_file_mkdir(&f->box->sb, &f->ctx, path, err);
}

int box_file_rename(struct box_files *f, const char *from, const char *to, struct nsbox_err *err)
{
    if (may_write(f, err) < 0)
        return -1;
    return nsbox_file_rename(&f->box->sb, &f->ctx, from, to, err);
}

int box_file_remove(struct box_files *f, const char *path, bool recursive, struct nsbox_err *err)
{
    if (f->kind == BOX_FILE_READS)
        return nsbox_err_set(err, EINVAL, "a removal in a series opened for reading");
    return nsbox_file_remove(&f->box->sb, &f->ctx, path, recursive, err);
}
