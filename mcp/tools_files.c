/* write_file, read_file, list_directory, create_directory, delete_path,
 * project_structure: file operations that run inside the sandbox (see
 * runtime/files.c), so paths are the sandbox's own and never the host's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/files.h"
#include "server.h"

#define WRITE_MAX (16u << 20)   /* decoded bytes per write_file */
#define READ_DEFAULT (1u << 20)
#define READ_MAX (8u << 20)
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

/* Strict base64 (padding optional, whitespace refused); NULL when invalid. */
static unsigned char *base64_decode(const char *in, size_t *len)
{
    size_t n = strlen(in);
    while (n > 0 && in[n - 1] == '=')
        n--;
    unsigned char *out = malloc(n * 3 / 4 + 3);
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; out && i < n; i++) {
        const char *c = strchr(b64, in[i]);
        if (c == NULL || in[i] == '\0') {
            free(out);
            return NULL;
        }
        v = v << 6 | (unsigned)(c - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    *len = o;
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
        .argv = argv, .env = m->env, .cwd = m->workdir, .uid = m->uid, .gid = m->gid,
        .timeout_s = 30, .stdin_fd = -1, .stdin_data = in ? in : "", .stdin_len = in_len,
        .capture = true, .output_cap = out_cap, .rlimit_fsize = WRITE_MAX};
    pthread_mutex_lock(&m->exec_lock);
    pthread_mutex_lock(&s->lock);
    call->sandbox = m;
    pthread_mutex_unlock(&s->lock);
    int r = nsbox_sandbox_exec(&m->sb, &eo, res, &err);
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

static bool str_arg(json_t *args, const char *key, bool required, const char **out,
                    char *error, size_t error_size)
{
    json_t *v = json_object_get(args, key);
    *out = NULL;
    if (v == NULL && !required)
        return true;
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
        (required && json_string_length(v) == 0)) {
        snprintf(error, error_size, "%s must be a non-empty string without NUL bytes", key);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

static bool bool_arg(json_t *args, const char *key, bool *out, char *error, size_t size)
{
    json_t *v = json_object_get(args, key);
    *out = false;
    if (v == NULL)
        return true;
    if (!json_is_boolean(v)) {
        snprintf(error, size, "%s must be true or false", key);
        return false;
    }
    *out = json_is_true(v);
    return true;
}

#define OP(...) (char *[]){NSBOX_FILE_OP_MARKER, __VA_ARGS__, NULL}

MCP_TOOL_FN(write_file)
{
    static const char *const allowed[] = {"sandbox_id", "path", "content", "encoding",
                                          "append", NULL};
    const char *id, *path, *content, *encoding;
    bool append;
    size_t len;
    struct nsbox_exec_result res;

    if (!mcp_check_args(args, allowed, error, error_size) ||
        !str_arg(args, "sandbox_id", true, &id, error, error_size) ||
        !str_arg(args, "path", true, &path, error, error_size) ||
        !bool_arg(args, "append", &append, error, error_size) ||
        !str_arg(args, "encoding", false, &encoding, error, error_size))
        return NULL;
    json_t *c = json_object_get(args, "content");
    if (!json_is_string(c)) {
        snprintf(error, error_size, "content must be a string");
        return NULL;
    }
    content = json_string_value(c);
    len = json_string_length(c);
    unsigned char *decoded = NULL;
    if (encoding != NULL && strcmp(encoding, "base64") == 0) {
        decoded = base64_decode(content, &len);
        if (decoded == NULL) {
            snprintf(error, error_size, "content is not valid base64");
            return NULL;
        }
        content = (const char *)decoded;
    } else if (encoding != NULL && strcmp(encoding, "utf-8") != 0) {
        snprintf(error, error_size, "encoding must be utf-8 or base64");
        return NULL;
    }
    if (len > WRITE_MAX) {
        free(decoded);
        snprintf(error, error_size, "content is larger than %u bytes", WRITE_MAX);
        return NULL;
    }
    bool ok = file_op(s, call, id, append ? OP("write", (char *)path, "append")
                                          : OP("write", (char *)path),
                      content, len, 4096, &res, error, error_size);
    free(decoded);
    if (!ok)
        return NULL;
    nsbox_exec_result_free(&res);
    return json_pack("{s:s,s:I,s:b}", "path", path, "bytes_written", (json_int_t)len, "appended",
                     append);
}

MCP_TOOL_FN(read_file)
{
    static const char *const allowed[] = {"sandbox_id", "path", "encoding", "offset",
                                          "length", NULL};
    const char *id, *path, *encoding;
    struct nsbox_exec_result res;
    char off[32], lenbuf[32];

    if (!mcp_check_args(args, allowed, error, error_size) ||
        !str_arg(args, "sandbox_id", true, &id, error, error_size) ||
        !str_arg(args, "path", true, &path, error, error_size) ||
        !str_arg(args, "encoding", false, &encoding, error, error_size))
        return NULL;
    json_t *jo = json_object_get(args, "offset"), *jl = json_object_get(args, "length");
    if ((jo && (!json_is_integer(jo) || json_integer_value(jo) < 0)) ||
        (jl && (!json_is_integer(jl) || json_integer_value(jl) < 1))) {
        snprintf(error, error_size, "offset and length must be non-negative integers");
        return NULL;
    }
    json_int_t length = jl ? json_integer_value(jl) : READ_DEFAULT;
    if (length > READ_MAX)
        length = READ_MAX;
    snprintf(off, sizeof(off), "%lld", (long long)(jo ? json_integer_value(jo) : 0));
    snprintf(lenbuf, sizeof(lenbuf), "%lld", (long long)length);
    if (!file_op(s, call, id, OP("read", (char *)path, off, lenbuf), NULL, 0, (size_t)length,
                 &res, error, error_size))
        return NULL;
    long long size = atoll(res.err ? res.err : "0");
    const unsigned char *data = (const unsigned char *)res.out;
    bool base64 = (encoding && strcmp(encoding, "base64") == 0) || !valid_utf8(data, res.out_len);
    const char *mime = image_mime(data, res.out_len, path);
    char *enc = base64 ? mcp_base64_encode(data, res.out_len) : NULL;
    json_t *r = json_pack("{s:s,s:I,s:I,s:s,s:s%,s:b,s:s?}", "path", path, "size",
                          (json_int_t)size, "offset", (json_int_t)(jo ? json_integer_value(jo) : 0),
                          "encoding", base64 ? "base64" : "utf-8", "content",
                          base64 ? (enc ? enc : "") : (const char *)data,
                          base64 ? (enc ? strlen(enc) : 0) : res.out_len, "truncated",
                          res.out_truncated || (long long)res.out_len < size -
                              (jo ? (long long)json_integer_value(jo) : 0),
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
    static const char *const allowed[] = {"sandbox_id", "path", "recursive", NULL};
    const char *id, *path;
    bool recursive;

    if (!mcp_check_args(args, allowed, error, error_size) ||
        !str_arg(args, "sandbox_id", true, &id, error, error_size) ||
        !str_arg(args, "path", false, &path, error, error_size) ||
        !bool_arg(args, "recursive", &recursive, error, error_size))
        return NULL;
    return list(s, call, id, path ? path : ".", recursive ? 64 : 1, error, error_size);
}

MCP_TOOL_FN(project_structure)
{
    static const char *const allowed[] = {"sandbox_id", "path", "depth", NULL};
    const char *id, *path;
    json_t *jd = json_object_get(args, "depth");

    if (!mcp_check_args(args, allowed, error, error_size) ||
        !str_arg(args, "sandbox_id", true, &id, error, error_size) ||
        !str_arg(args, "path", false, &path, error, error_size))
        return NULL;
    if (jd && (!json_is_integer(jd) || json_integer_value(jd) < 1 || json_integer_value(jd) > 16)) {
        snprintf(error, error_size, "depth must be an integer from 1 to 16");
        return NULL;
    }
    json_t *j = list(s, call, id, path ? path : ".", jd ? (int)json_integer_value(jd) : 3,
                     error, error_size);
    if (j == NULL)
        return NULL;
    /* A tree as text, the way a person would draw it. */
    size_t cap = 1 << 16, n = 0, i;
    char *tree = malloc(cap);
    json_t *e;
    n += (size_t)snprintf(tree, cap, "%s\n", path ? path : ".");
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
    static const char *const allowed[] = {"sandbox_id", "path", NULL};
    const char *id, *path;
    struct nsbox_exec_result res;

    if (!mcp_check_args(args, allowed, error, error_size) ||
        !str_arg(args, "sandbox_id", true, &id, error, error_size) ||
        !str_arg(args, "path", true, &path, error, error_size) ||
        !file_op(s, call, id, OP("mkdir", (char *)path), NULL, 0, 4096, &res, error, error_size))
        return NULL;
    nsbox_exec_result_free(&res);
    return json_pack("{s:s,s:b}", "path", path, "created", 1);
}

MCP_TOOL_FN(delete_path)
{
    static const char *const allowed[] = {"sandbox_id", "path", "recursive", NULL};
    const char *id, *path;
    bool recursive;
    struct nsbox_exec_result res;

    if (!mcp_check_args(args, allowed, error, error_size) ||
        !str_arg(args, "sandbox_id", true, &id, error, error_size) ||
        !str_arg(args, "path", true, &path, error, error_size) ||
        !bool_arg(args, "recursive", &recursive, error, error_size))
        return NULL;
    if (strcmp(path, "/") == 0 || strcmp(path, ".") == 0) {
        snprintf(error, error_size, "refusing to delete %s", path);
        return NULL;
    }
    if (!file_op(s, call, id, recursive ? OP("delete", (char *)path, "recursive")
                                        : OP("delete", (char *)path),
                 NULL, 0, 4096, &res, error, error_size))
        return NULL;
    nsbox_exec_result_free(&res);
    return json_pack("{s:s,s:b}", "path", path, "deleted", 1);
}
