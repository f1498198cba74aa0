/* copy_in and copy_out: files between the host and a sandbox, only in
 * directories the operator allowed (`serve --allow-host-dir DIR`),
 * through boxes/copy.h (the copy `nsbox cp` uses too).
 *
 * Host paths are resolved beneath an allowed directory's fd with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: no "..",
 * no absolute escape, no symlink (the client or a sandbox may have planted
 * one there).  Only regular files, COPY_MAX bytes at most, at the path
 * given (no docker cp rules); an existing host file is replaced only when
 * asked, never through a symlink.  A copy in is refused while the
 * sandbox's workspace is over its budget. */
#include <errno.h>
#include <fcntl.h>

#include "../../boxes/copy.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

#define COPY_MAX (16u << 20)

/* Copies a's file one way in the session's sandbox, held and locked for
 * the call (a cancellation or a stop kills it).  Returns 0 with the bytes
 * copied in *bytes, or -1 with err. */
static int copy(struct mcp_session *s, struct mcp_call *call, const struct mcp_copy_args *a,
                bool in, uint64_t *bytes, struct nsbox_err *err)
{
    struct box_copy_policy p = {.host_dirfd = s->cfg->host_dirs[a->dir].fd,
                                .host_dir = s->cfg->host_dirs[a->dir].path,
                                .resolve = RESOLVE_BENEATH | BOX_COPY_RESOLVE,
                                .file_max = COPY_MAX,
                                .exact = true,
                                .replace = a->overwrite,
                                .timeout_s = 60,
                                .cancel = &call->cancel};
    struct box_copy_stats st = {0};
    struct mcp_sandbox *m = mcp_sandbox_get(s, a->sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        r = in ? box_copy_in(&m->box, a->rel, a->path, &p, &st, err)
               : box_copy_out(&m->box, a->path, a->rel, &p, &st, err);
        mcp_op_end(s, call, m);
    }
    mcp_sandbox_put(s, m);
    *bytes = st.bytes;
    return r;
}

int mcp_tool_copy_in(struct mcp_session *s, struct mcp_call *call, json_t *args,
                     struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_copy_args a;
    uint64_t n = 0;

    if (mcp_args_copy_in(s->cfg, args, &a, err) < 0 || copy(s, call, &a, true, &n, err) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:s,s:I}", "host_path", a.host_path, "path", a.path, "bytes",
                                (json_int_t)n);
    return 0;
}

int mcp_tool_copy_out(struct mcp_session *s, struct mcp_call *call, json_t *args,
                      struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_copy_args a;
    uint64_t n = 0;

    if (mcp_args_copy_out(s->cfg, args, &a, err) < 0 || copy(s, call, &a, false, &n, err) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:s,s:I}", "path", a.path, "host_path", a.host_path, "bytes",
                                (json_int_t)n);
    return 0;
}
