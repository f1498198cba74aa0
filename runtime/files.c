/* Files inside a sandbox: the client (the side in the sandbox is
 * files_builtin.c, the wire files_wire.h).
 *
 * The builtin runs with the sandbox's privileges, and a process of the
 * sandbox may have got hold of it (ptrace as the same user, say), so its
 * reply is read as hostile input: its stdout is capped, the reply line must
 * parse exactly, numbers are range-checked, listing records validated, and
 * every message is rendered here from the path this side sent. */
#include "files.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cleanup.h"
#include "files_wire.h"

#define REPLY_CAP 4096       /* stderr: one short line */
#define LIST_CAP (16u << 20) /* a listing's records */

const char *nsbox_file_type_name(enum nsbox_file_type t)
{
    static const char *const names[] = {"file", "directory", "symlink", "fifo", "socket", "device"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "device";
}

/* What a failed operation says, from the builtin's reason and the path. */
static int render_error(enum files_why why, int code, long long arg, const char *path,
                        struct nsbox_err *err)
{
    static const char *const what[WHY_COUNT] = {
        [WHY_READ] = "cannot read",
        [WHY_SEEK] = "cannot seek in",
        [WHY_WRITE] = "cannot write",
        [WHY_WRITE_NOT_REGULAR] = "not a regular file:",
        [WHY_LIST] = "cannot list",
        [WHY_NOT_DIR] = "not a directory:",
        [WHY_DELETE] = "cannot delete",
        [WHY_RMDIR] = "cannot delete directory (not empty? pass recursive)",
    };
    switch (why) {
    case WHY_NOT_REGULAR:
        return nsbox_err_set(err, code, "%s is a %s, not a regular file", path,
                             nsbox_file_type_name((enum nsbox_file_type)arg));
    case WHY_MKDIR: /* arg: the length of the parent that could not be made */
        return nsbox_err_set(err, code, "cannot create directory %.*s: %s",
                             arg > 0 && (size_t)arg <= strlen(path) ? (int)arg : (int)strlen(path),
                             path, strerror(code));
    case WHY_ROOT:
        return nsbox_err_set(err, code, "refusing to delete the sandbox's root (%s)", path);
    case WHY_UNKNOWN:
        return nsbox_err_set(err, code, "unknown file operation");
    default:
        return nsbox_err_set(err, code, "%s %s: %s", what[why], path, strerror(code));
    }
}

/* Reads the reply line; renders an error reply.  Returns 0 with *value
 * set, or -1. */
static int read_reply(const char *text, const char *path, long long *value, struct nsbox_err *err)
{
    struct files_reply r;
    switch (nsbox_files_reply_parse(text, &r)) {
    case 0:
        *value = r.value;
        return 0;
    case 1:
        return render_error(r.why, r.code, r.arg, path, err);
    default:
        return nsbox_err_set(err, EPROTO, "%s: the file operation's reply is malformed", path);
    }
}

/* Init's child failed before the operation began (its uid, its working
 * directory: exit status 126, "nsbox: why" on stderr).  That text comes
 * from inside the sandbox too: printable ASCII only, one line, bounded. */
static int setup_failed(const char *text, const char *path, struct nsbox_err *err)
{
    char why[256];
    size_t n = 0;
    for (const char *p = text + strlen("nsbox: "); *p && *p != '\n' && n + 1 < sizeof(why); p++)
        why[n++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
    why[n] = '\0';
    return nsbox_err_set(err, EIO, "%s: %s", path, why);
}

/* Runs one operation and reads its reply.  Returns 0 with res (the caller
 * frees) and *value filled, or -1. */
static int run_op(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, char **argv,
                  const void *in, size_t in_len, size_t out_cap, const char *path,
                  struct nsbox_exec_result *res, long long *value, struct nsbox_err *err)
{
    struct nsbox_exec_opts eo = {
        .argv = argv,
        .env = ctx->env,
        .cwd = ctx->cwd,
        .uid = ctx->uid,
        .gid = ctx->gid,
        .timeout_s = ctx->timeout_s,
        .stdin_fd = -1,
        .stdin_data = in ? in : "",
        .stdin_len = in_len,
        .capture = true,
        /* One cap for both streams: the reply line must fit whatever the data. */
        .output_cap = out_cap < REPLY_CAP ? REPLY_CAP : out_cap,
        .rlimit_fsize = ctx->write_max,
        .cancel = ctx->cancel};

    if (nsbox_sandbox_exec(sb, &eo, res, err) < 0)
        return -1;
    int r = 0;
    if (res->cancelled)
        r = nsbox_err_set(err, ECANCELED, "%s: cancelled", path);
    else if (res->timed_out)
        r = nsbox_err_set(err, ETIMEDOUT, "%s: timed out", path);
    else if (res->signal != 0)
        r = nsbox_err_set(err, EINTR, "%s: the file operation was killed (signal %d)", path,
                          res->signal);
    else if (res->err_truncated)
        r = nsbox_err_set(err, EPROTO, "%s: the file operation's reply is malformed", path);
    else if (res->exit_code == 126 && res->err && strncmp(res->err, "nsbox: ", 7) == 0)
        r = setup_failed(res->err, path, err);
    else
        r = read_reply(res->err, path, value, err);
    /* The status must agree: a reply "ok" from a process that failed is none. */
    if (r == 0 && res->exit_code != 0)
        r = nsbox_err_set(err, EPROTO, "%s: the file operation failed without a reason", path);
    if (r < 0)
        nsbox_exec_result_free(res);
    return r;
}

#define OP(...)                                                                                    \
    (char *[])                                                                                     \
    {                                                                                              \
        NSBOX_FILE_OP_MARKER, __VA_ARGS__, NULL                                                    \
    }

int nsbox_file_read(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                    int64_t offset, size_t length, struct nsbox_file_data *out,
                    struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    char off[32], len[32];
    long long size;

    memset(out, 0, sizeof(*out));
    if (offset < 0)
        return nsbox_err_set(err, EINVAL, "%s: a negative offset", path);
    snprintf(off, sizeof(off), "%" PRId64, offset);
    snprintf(len, sizeof(len), "%zu", length);
    char **argv = ctx->no_follow ? OP("read", (char *)path, off, len, "nofollow")
                                 : OP("read", (char *)path, off, len);
    if (run_op(sb, ctx, argv, NULL, 0, length, path, &res, &size, err) < 0)
        return -1;
    /* The builtin sends at most length bytes; a hostile one is cut. */
    bool cut = res.out_truncated || res.out_len > length;
    out->len = res.out_len > length ? length : res.out_len;
    out->data = res.out ? (unsigned char *)res.out : calloc(1, 1);
    res.out = NULL;
    if (out->data == NULL) {
        nsbox_exec_result_free(&res);
        return nsbox_err_set(err, ENOMEM, "reading %s: out of memory", path);
    }
    out->data[out->len] = '\0';
    out->size = size;
    out->truncated = cut || (int64_t)out->len < size - offset;
    nsbox_exec_result_free(&res);
    return 0;
}

void nsbox_file_data_free(struct nsbox_file_data *d)
{
    free(d->data);
    memset(d, 0, sizeof(*d));
}

int nsbox_file_write(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                     const void *data, size_t len, bool append, int64_t *size,
                     struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    long long value;

    if (run_op(sb, ctx, append ? OP("write", (char *)path, "append") : OP("write", (char *)path),
               data, len, 0, path, &res, &value, err) < 0)
        return -1;
    nsbox_exec_result_free(&res);
    if (size != NULL)
        *size = value;
    return 0;
}

int nsbox_file_list(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                    int depth, struct nsbox_file_list *out, struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    char d[16];
    long long truncated;

    memset(out, 0, sizeof(*out));
    snprintf(d, sizeof(d), "%d", depth < 1 ? 1 : depth > FILES_DEPTH_MAX ? FILES_DEPTH_MAX : depth);
    if (run_op(sb, ctx, OP("list", (char *)path, d), NULL, 0, LIST_CAP, path, &res, &truncated,
               err) < 0)
        return -1;
    int r = res.out_truncated || truncated > 1
                ? -1
                : nsbox_files_listing_parse(res.out, res.out_len, out);
    nsbox_exec_result_free(&res);
    if (r < 0) {
        nsbox_file_list_free(out);
        return nsbox_err_set(err, EPROTO, "the listing of %s came back malformed", path);
    }
    out->truncated = truncated == 1;
    return 0;
}

void nsbox_file_list_free(struct nsbox_file_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int nsbox_file_mkdir(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                     struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    long long value;

    if (run_op(sb, ctx, OP("mkdir", (char *)path), NULL, 0, 0, path, &res, &value, err) < 0)
        return -1;
    nsbox_exec_result_free(&res);
    return 0;
}

int nsbox_file_rename(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *from,
                      const char *to, struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    long long value;

    if (run_op(sb, ctx, OP("rename", (char *)from, (char *)to), NULL, 0, 0, to, &res, &value, err) <
        0)
        return -1;
    nsbox_exec_result_free(&res);
    return 0;
}

int nsbox_file_remove(struct nsbox_sandbox *sb, const struct nsbox_file_ctx *ctx, const char *path,
                      bool recursive, struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    long long value;

    if (run_op(sb, ctx,
               recursive ? OP("delete", (char *)path, "recursive") : OP("delete", (char *)path),
               NULL, 0, 0, path, &res, &value, err) < 0)
        return -1;
    nsbox_exec_result_free(&res);
    return 0;
}
