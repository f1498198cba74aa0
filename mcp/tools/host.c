/* copy_in and copy_out: files between the host and a sandbox, only in
 * directories the operator allowed (`serve --allow-host-dir DIR`).
 *
 * Host paths are resolved beneath an allowed directory's fd with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: no "..",
 * no absolute escape, no symlink (the client or a sandbox may have planted
 * one there).  Only regular files; sizes capped; an existing host file is
 * replaced only when asked, never through a symlink.  The sandbox side goes
 * through the in-sandbox file builtins, like the other file tools. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/fsutil.h"
#include "../../common/syscalls.h"
#include "../../runtime/files.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

#define COPY_MAX (16u << 20)
#define HOST_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* One in-sandbox file operation on the session's sandbox id: a read of at
 * most COPY_MAX + 1 bytes into *d, or (d NULL) a write of in.  Returns 0,
 * or -1 with err set. */
static int sandbox_op(struct mcp_session *s, struct mcp_call *call, const char *id,
                      const char *path, const char *in, size_t in_len, struct nsbox_file_data *d,
                      struct nsbox_err *err)
{
    struct nsbox_file_ctx ctx;
    enum mcp_file_op_kind kind = d ? MCP_FILE_READS : MCP_FILE_WRITES;
    struct mcp_sandbox *m = mcp_file_op_begin(s, call, id, kind, 60, COPY_MAX, &ctx, err);
    if (m == NULL)
        return -1;
    int r = d ? nsbox_file_read(&m->box.sb, &ctx, path, 0, COPY_MAX + 1, d, err)
              : nsbox_file_write(&m->box.sb, &ctx, path, in, in_len, false, NULL, err);
    return mcp_file_op_end(s, call, m, kind, r);
}

/* The whole of the regular file rel beneath dfd (at most COPY_MAX bytes)
 * into *buf (malloc'ed), its length in *n.  Returns 0, or -1 with err. */
static int read_host(int dfd, const struct mcp_copy_args *a, char **buf, ssize_t *n,
                     struct nsbox_err *err)
{
    struct stat st;
    _cleanup_close_ int fd = nsbox_openat2(dfd, a->rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0,
                                           HOST_RESOLVE);
    int e = errno;
    if (fd < 0)
        return nsbox_err_set(err, e, "cannot open %.200s: %s%s", a->host_path, strerror(e),
                             e == ELOOP || e == EXDEV ? " (symlinks and escapes are refused)" : "");
    _cleanup_free_ char *b = NULL;
    *n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= COPY_MAX &&
        (b = malloc((size_t)st.st_size + 1)) != NULL)
        *n = read(fd, b, (size_t)st.st_size);
    if (*n < 0 || *n != st.st_size)
        return nsbox_err_set(err, EINVAL, "%.200s is not a regular file of at most %u bytes",
                             a->host_path, COPY_MAX);
    *buf = TAKE_PTR(b);
    return 0;
}

MCP_TOOL_FN(copy_in)
{
    struct mcp_copy_args a;
    _cleanup_free_ char *buf = NULL;
    ssize_t n = 0;

    if (mcp_args_copy_in(s->cfg, args, &a, err) < 0 ||
        read_host(s->cfg->host_dirs[a.dir].fd, &a, &buf, &n, err) < 0 ||
        sandbox_op(s, call, a.sandbox_id, a.path, buf, (size_t)n, NULL, err) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:s,s:I}", "host_path", a.host_path, "path", a.path, "bytes",
                                (json_int_t)n);
    return 0;
}

/* Writes d to a.name in pfd: O_NOFOLLOW always, O_EXCL unless replacing
 * was asked for.  Returns 0, or -1 with err. */
static int write_host(int pfd, const struct mcp_copy_args *a, const struct nsbox_file_data *d,
                      struct nsbox_err *err)
{
    struct stat st;
    _cleanup_close_ int fd = openat(
        pfd, a->name,
        O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (a->overwrite ? O_TRUNC : O_EXCL), 0644);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        return nsbox_err_set(err, e, "cannot write %.200s: %s%s", a->host_path, strerror(e),
                             e == EEXIST ? " (pass overwrite: true to replace it)" : "");
    }
    if (nsbox_write_all(fd, d->data, d->len) < 0)
        return nsbox_err_set(err, errno, "cannot write %.200s completely: %s", a->host_path,
                             strerror(errno));
    return 0;
}

MCP_TOOL_FN(copy_out)
{
    struct mcp_copy_args a;
    _cleanup_(nsbox_file_data_free) struct nsbox_file_data res = {0};

    if (mcp_args_copy_out(s->cfg, args, &a, err) < 0)
        return -1;
    int dfd = s->cfg->host_dirs[a.dir].fd;
    /* The parent must exist beneath the allowed directory, symlink-free
     * (the decoder refused "." and ".." as the name). */
    _cleanup_close_ int pfd = a.has_parent
                                  ? nsbox_openat2(dfd, a.parent, O_PATH | O_DIRECTORY | O_CLOEXEC,
                                                  0, HOST_RESOLVE)
                                  : dup(dfd);
    if (pfd < 0)
        return nsbox_err_set(err, errno,
                             "cannot write %.200s: no such directory, or a "
                             "symlink or escape on the way",
                             a.host_path);
    if (sandbox_op(s, call, a.sandbox_id, a.path, NULL, 0, &res, err) < 0)
        return -1;
    if (res.len > COPY_MAX)
        return nsbox_err_set(err, EFBIG, "%.200s is larger than %u bytes", a.path, COPY_MAX);
    if (write_host(pfd, &a, &res, err) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:s,s:I}", "path", a.path, "host_path", a.host_path, "bytes",
                                (json_int_t)res.len);
    return 0;
}
