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

#include "../common/fsutil.h"
#include "../common/syscalls.h"
#include "../runtime/files.h"
#include "sandboxes.h"
#include "server.h"
#include "tool_args.h"

#define COPY_MAX (16u << 20)
#define HOST_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* One in-sandbox file operation on the session's sandbox id: a read of at
 * most COPY_MAX + 1 bytes into *d, or (d NULL) a write of in.  Returns
 * false with error set. */
static bool sandbox_op(struct mcp_session *s, struct mcp_call *call, const char *id,
                       const char *path, const char *in, size_t in_len,
                       struct nsbox_file_data *d, char *error, size_t error_size)
{
    struct nsbox_err err = {0};
    struct mcp_sandbox *m = mcp_sandbox_get(s, id, &err);
    if (m == NULL) {
        snprintf(error, error_size, "%s", err.msg);
        return false;
    }
    struct nsbox_file_ctx ctx = {.env = m->box.env, .cwd = m->box.workdir, .uid = m->box.uid,
                                 .gid = m->box.gid, .timeout_s = 60, .write_max = COPY_MAX,
                                 .cancel = &call->cancel};
    int r = mcp_op_begin(s, call, m, &err);
    if (r == 0) {
        r = d ? nsbox_file_read(&m->box.sb, &ctx, path, 0, COPY_MAX + 1, d, &err)
              : nsbox_file_write(&m->box.sb, &ctx, path, in, in_len, false, NULL, &err);
        mcp_op_end(s, call, m);
    }
    mcp_sandbox_put(s, m);
    if (r < 0) {
        snprintf(error, error_size, "%s", err.msg);
        return false;
    }
    return true;
}

MCP_TOOL_FN(copy_in)
{
    struct mcp_copy_args a;
    struct nsbox_err err = {0};
    struct stat st;

    if (mcp_args_copy_in(s->cfg, args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    int dfd = s->cfg->host_dirs[a.dir].fd;
    int fd = nsbox_openat2(dfd, a.rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0, HOST_RESOLVE);
    if (fd < 0) {
        snprintf(error, error_size, "cannot open %.200s: %s%s", a.host_path, strerror(errno),
                 errno == ELOOP || errno == EXDEV ? " (symlinks and escapes are refused)" : "");
        return NULL;
    }
    char *buf = NULL;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= COPY_MAX &&
        (buf = malloc((size_t)st.st_size + 1)) != NULL)
        n = read(fd, buf, (size_t)st.st_size);
    close(fd);
    if (n < 0 || n != st.st_size) {
        free(buf);
        snprintf(error, error_size, "%.200s is not a regular file of at most %u bytes",
                 a.host_path, COPY_MAX);
        return NULL;
    }
    bool ok = sandbox_op(s, call, a.sandbox_id, a.path, buf, (size_t)n, NULL, error, error_size);
    free(buf);
    if (!ok)
        return NULL;
    return json_pack("{s:s,s:s,s:I}", "host_path", a.host_path, "path", a.path, "bytes",
                     (json_int_t)n);
}

MCP_TOOL_FN(copy_out)
{
    struct mcp_copy_args a;
    struct nsbox_err err = {0};
    struct nsbox_file_data res;

    if (mcp_args_copy_out(s->cfg, args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    int dfd = s->cfg->host_dirs[a.dir].fd;
    /* The parent must exist beneath the allowed directory, symlink-free
     * (the decoder refused "." and ".." as the name). */
    int pfd = a.has_parent
                  ? nsbox_openat2(dfd, a.parent, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, HOST_RESOLVE)
                  : dup(dfd);
    if (pfd < 0) {
        snprintf(error, error_size, "cannot write %.200s: no such directory, or a symlink or "
                                    "escape on the way", a.host_path);
        return NULL;
    }
    if (!sandbox_op(s, call, a.sandbox_id, a.path, NULL, 0, &res, error, error_size)) {
        close(pfd);
        return NULL;
    }
    if (res.len > COPY_MAX) {
        close(pfd);
        nsbox_file_data_free(&res);
        snprintf(error, error_size, "%.200s is larger than %u bytes", a.path, COPY_MAX);
        return NULL;
    }
    /* O_NOFOLLOW always; O_EXCL unless replacing was asked for. */
    int fd = openat(pfd, a.name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
                                   (a.overwrite ? O_TRUNC : O_EXCL), 0644);
    close(pfd);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        nsbox_file_data_free(&res);
        snprintf(error, error_size, "cannot write %.200s: %s%s", a.host_path, strerror(e),
                 e == EEXIST ? " (pass overwrite: true to replace it)" : "");
        return NULL;
    }
    int w = nsbox_write_all(fd, res.data, res.len);
    int e = errno;
    close(fd);
    size_t total = res.len;
    nsbox_file_data_free(&res);
    if (w < 0) {
        snprintf(error, error_size, "cannot write %.200s completely: %s", a.host_path,
                 strerror(e));
        return NULL;
    }
    return json_pack("{s:s,s:s,s:I}", "path", a.path, "host_path", a.host_path, "bytes",
                     (json_int_t)total);
}
