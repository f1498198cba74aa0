/* write_file, read_file, list_directory, create_directory, delete_path,
 * project_structure: file operations that run inside the sandbox (see
 * runtime/files.c), so paths are the sandbox's own and never the host's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cleanup.h"
#include "../runtime/files.h"
#include "server.h"
#include "tool_args.h"

#define IMAGE_MAX (4u << 20)

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *mcp_base64_encode(const unsigned char *in, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1), *p = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < len ? in[i + 2] : 0);
        *p++ = b64[v >> 18];
        *p++ = b64[(v >> 12) & 63];
        *p++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
        *p++ = i + 2 < len ? b64[v & 63] : '=';
    }
    *p = '\0';
    return out;
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (k == 0 || i + k > n || c == 0)
            return false;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

static const char *image_mime(const unsigned char *d, size_t n, const char *path)
{
    size_t pl = strlen(path);
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "image/png";
    if (n >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0) return "image/jpeg";
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return "image/gif";
    if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return "image/webp";
    if (pl > 4 && strcmp(path + pl - 4, ".svg") == 0) return "image/svg+xml";
    return NULL;
}

/* Runs one file operation in the sandbox.  Returns the result (caller
 * frees with nsbox_exec_result_free) or false with error set. */
static bool file_op(struct mcp_session *s, struct mcp_call *call, const char *sandbox_id,
                    char **argv, const char *in, size_t in_len, size_t out_cap,
                    struct nsbox_exec_result *res, char *error, size_t error_size)
{
    struct mcp_sandbox *m = mcp_sandbox_find(s, sandbox_id);
    struct nsbox_err err = {0};

    if (m == NULL || m->one_shot) {
        snprintf(error, error_size, "no sandbox \"%.64s\" in this session (create one with "
                                    "sandbox_create)", sandbox_id ? sandbox_id : "");
        return false;
    }
    struct nsbox_exec_opts eo = {
        .argv = argv, .env = m->box.env, .cwd = m->box.workdir, .uid = m->box.uid,
        .gid = m->box.gid,
        .timeout_s = 30, .stdin_fd = -1, .stdin_data = in ? in : "", .stdin_len = in_len,
        .capture = true, .output_cap = out_cap, .rlimit_fsize = MCP_WRITE_MAX};
    pthread_mutex_lock(&m->exec_lock);
    pthread_mutex_lock(&s->lock);
    call->sandbox = m;
    pthread_mutex_unlock(&s->lock);
    int r = nsbox_sandbox_exec(&m->box.sb, &eo, res, &err);
    pthread_mutex_lock(&s->lock);
    call->sandbox = NULL;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&m->exec_lock);
    if (r < 0) {
        snprintf(error, error_size, "%s", err.msg);
        return false;
    }
    if (res->exit_code != 0 || res->signal != 0) {
        snprintf(error, error_size, "%s", res->err && res->err[0] ? res->err
                                          : res->timed_out ? "timed out" : "failed");
        nsbox_exec_result_free(res);
        return false;
    }
    return true;
}

#define OP(...) (char *[]){NSBOX_FILE_OP_MARKER, __VA_ARGS__, NULL}

MCP_TOOL_FN(write_file)
{
    _cleanup_(mcp_write_args_free) struct mcp_write_args a = {0};
    struct nsbox_err err = {0};
    struct nsbox_exec_result res;

    if (mcp_args_write_file(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    if (!file_op(s, call, a.sandbox_id, a.append ? OP("write", (char *)a.path, "append")
                                                 : OP("write", (char *)a.path),
                 a.content, a.len, 4096, &res, error, error_size))
        return NULL;
    nsbox_exec_result_free(&res);
    return json_pack("{s:s,s:I,s:b}", "path", a.path, "bytes_written", (json_int_t)a.len,
                     "appended", a.append);
}

MCP_TOOL_FN(read_file)
{
    struct mcp_read_args a;
    struct nsbox_err err = {0};
    struct nsbox_exec_result res;
    char off[32], lenbuf[32];

    if (mcp_args_read_file(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    snprintf(off, sizeof(off), "%lld", (long long)a.offset);
    snprintf(lenbuf, sizeof(lenbuf), "%zu", a.length);
    /* The cap covers stderr too, which carries the file's size (or why the
     * read failed): never below 4 KiB, or a small length cut those short.
     * stdout gets at most length bytes from the builtin anyway. */
    if (!file_op(s, call, a.sandbox_id, OP("read", (char *)a.path, off, lenbuf), NULL, 0,
                 a.length < 4096 ? 4096 : a.length, &res, error, error_size))
        return NULL;
    long long size = atoll(res.err ? res.err : "0");
    const unsigned char *data = (const unsigned char *)res.out;
    bool base64 = a.base64 || !valid_utf8(data, res.out_len);
    const char *mime = image_mime(data, res.out_len, a.path);
    char *enc = base64 ? mcp_base64_encode(data, res.out_len) : NULL;
    json_t *r = json_pack("{s:s,s:I,s:I,s:s,s:s%,s:b,s:s?}", "path", a.path, "size",
                          (json_int_t)size, "offset", (json_int_t)a.offset, "encoding",
                          base64 ? "base64" : "utf-8", "content",
                          base64 ? (enc ? enc : "") : (const char *)data,
                          base64 ? (enc ? strlen(enc) : 0) : res.out_len, "truncated",
                          res.out_truncated || (long long)res.out_len < size - a.offset,
                          "mime_type", mime);
    /* Images also travel as MCP image content (server.c turns this into
     * content of type "image"). */
    if (mime != NULL && res.out_len <= IMAGE_MAX && !res.out_truncated) {
        char *img = enc ? strdup(enc) : mcp_base64_encode(data, res.out_len);
        if (img != NULL)
            json_object_set_new(r, "_images",
                                json_pack("[{s:s,s:s}]", "data", img, "mimeType", mime));
        free(img);
    }
    free(enc);
    nsbox_exec_result_free(&res);
    return r;
}

static json_t *list(struct mcp_session *s, struct mcp_call *call, const char *id,
                    const char *path, int depth, char *error, size_t error_size)
{
    struct nsbox_exec_result res;
    char d[16];
    snprintf(d, sizeof(d), "%d", depth);
    if (!file_op(s, call, id, OP("list", (char *)path, d), NULL, 0, 16u << 20, &res, error,
                 error_size))
        return NULL;
    json_t *j = json_loadb(res.out, res.out_len, 0, NULL);
    nsbox_exec_result_free(&res);
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(error, error_size, "the listing came back malformed");
        return NULL;
    }
    json_object_set_new(j, "path", json_string(path));
    return j;
}

MCP_TOOL_FN(list_directory)
{
    struct mcp_list_args a;
    struct nsbox_err err = {0};

    if (mcp_args_list_directory(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    return list(s, call, a.sandbox_id, a.path, a.depth, error, error_size);
}

MCP_TOOL_FN(project_structure)
{
    struct mcp_list_args a;
    struct nsbox_err err = {0};

    if (mcp_args_project_structure(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    json_t *j = list(s, call, a.sandbox_id, a.path, a.depth, error, error_size);
    if (j == NULL)
        return NULL;
    /* A tree as text, the way a person would draw it. */
    size_t cap = 1 << 16, n = 0, i;
    char *tree = malloc(cap);
    json_t *e;
    n += (size_t)snprintf(tree, cap, "%s\n", a.path);
    json_array_foreach(json_object_get(j, "entries"), i, e) {
        const char *p = json_string_value(json_object_get(e, "path"));
        const char *type = json_string_value(json_object_get(e, "type"));
        int level = 0;
        for (const char *c = p; *c; c++)
            level += *c == '/';
        const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
        size_t need = (size_t)level * 4 + strlen(base) + 8;
        if (n + need >= cap) {
            char *nt = realloc(tree, cap *= 2);
            if (nt == NULL)
                break;
            tree = nt;
        }
        n += (size_t)snprintf(tree + n, cap - n, "%*s%s%s\n", level * 4, "", base,
                              strcmp(type, "directory") == 0 ? "/" : "");
    }
    json_object_set_new(j, "tree", json_string(tree));
    free(tree);
    return j;
}

MCP_TOOL_FN(create_directory)
{
    struct mcp_path_args a;
    struct nsbox_err err = {0};
    struct nsbox_exec_result res;

    if (mcp_args_create_directory(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    if (!file_op(s, call, a.sandbox_id, OP("mkdir", (char *)a.path), NULL, 0, 4096, &res, error,
                 error_size))
        return NULL;
    nsbox_exec_result_free(&res);
    return json_pack("{s:s,s:b}", "path", a.path, "created", 1);
}

MCP_TOOL_FN(delete_path)
{
    struct mcp_path_args a;
    struct nsbox_err err = {0};
    struct nsbox_exec_result res;

    if (mcp_args_delete_path(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    if (!file_op(s, call, a.sandbox_id, a.recursive ? OP("delete", (char *)a.path, "recursive")
                                                    : OP("delete", (char *)a.path),
                 NULL, 0, 4096, &res, error, error_size))
        return NULL;
    nsbox_exec_result_free(&res);
    return json_pack("{s:s,s:b}", "path", a.path, "deleted", 1);
}
