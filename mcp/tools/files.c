/* write_file, read_file, list_directory, create_directory, delete_path,
 * project_structure: file operations that run inside the sandbox (see
 * runtime/files.h), so paths are the sandbox's own and never the host's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/base64.h"
#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../../common/mime.h"
#include "../../common/utf8.h"
#include "../../boxes/files.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

#define IMAGE_MAX (4u << 20)

char *mcp_base64_encode(const unsigned char *in, size_t len)
{
    return nsbox_base64_encode(in, len);
}

/* Text when the bytes are strict UTF-8 without NUL (what jansson takes
 * in a string), else base64: a lenient check sent overlong forms and
 * surrogates as text, jansson refused them, and read_file answered an
 * empty error. */
static bool valid_utf8(const unsigned char *s, size_t n)
{
    return nsbox_utf8_valid((const char *)s, n);
}

/* File operations here run 30 s at most and write at most MCP_WRITE_MAX. */
static struct mcp_sandbox *op_begin(struct mcp_session *s, struct mcp_call *call,
                                    const char *sandbox_id, enum box_file_kind kind,
                                    struct box_files *f, struct nsbox_err *err)
{
    struct box_file_opts o = {.timeout_s = 30, .write_max = MCP_WRITE_MAX};
    return mcp_file_op_begin(s, call, sandbox_id, kind, &o, f, err);
}

int mcp_tool_write_file(struct mcp_session *s, struct mcp_call *call, json_t *args,
                        struct mcp_result *out, struct nsbox_err *err)
{
    _cleanup_(mcp_write_args_free) struct mcp_write_args a = {0};
    struct box_files f;

    if (mcp_args_write_file(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = op_begin(s, call, a.sandbox_id, BOX_FILE_WRITES, &f, err);
    if (m == NULL)
        return -1;
    int r = box_file_write(&f, a.path, a.content, a.len, a.append, NULL, err);
    if (mcp_file_op_end(s, call, m, &f, r) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:I,s:b}", "path", a.path, "bytes_written", (json_int_t)a.len,
                                "appended", a.append);
    return 0;
}

/* read_file's record of what it read (content as text or base64); no
 * mime_type when none is known (the output schema says string, and SDK
 * clients refuse a null). */
static json_t *read_json(const struct mcp_read_args *a, const struct nsbox_file_data *d,
                         bool base64, const char *enc, const char *mime)
{
    return json_pack(
        "{s:s,s:I,s:I,s:s,s:s%,s:b,s:s*}", "path", a->path, "size", (json_int_t)d->size, "offset",
        (json_int_t)a->offset, "encoding", base64 ? "base64" : "utf-8", "content",
        base64 ? (enc ? enc : "") : (const char *)d->data,
        base64 ? (enc ? strlen(enc) : 0) : d->len, "truncated", d->truncated, "mime_type", mime);
}

int mcp_file_read(struct mcp_session *s, struct mcp_call *call, const char *sandbox_id,
                  const char *path, int64_t offset, size_t length, struct nsbox_file_data *d,
                  struct nsbox_err *err)
{
    struct box_files f;
    struct mcp_sandbox *m = op_begin(s, call, sandbox_id, BOX_FILE_READS, &f, err);
    if (m == NULL)
        return -1;
    int r = box_file_read(&f, path, offset, length, d, err);
    return mcp_file_op_end(s, call, m, &f, r);
}

int mcp_tool_read_file(struct mcp_session *s, struct mcp_call *call, json_t *args,
                       struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_read_args a;
    struct box_files f;
    _cleanup_(nsbox_file_data_free) struct nsbox_file_data d = {0};

    if (mcp_args_read_file(args, &a, err) < 0)
        return -1;
    if (a.url && s->cfg->file_urls == NULL)
        return nsbox_err_set(err, ENOTSUP, "url: true needs the HTTP transport (serve --http)");
    struct mcp_sandbox *m = op_begin(s, call, a.sandbox_id, BOX_FILE_READS, &f, err);
    if (m == NULL)
        return -1;
    /* With url, only what a URL will serve: a regular file at the path
     * itself, its first bytes for the type (mcp/http/files.c). */
    f.ctx.no_follow = a.url;
    int r = box_file_read(&f, a.path, a.url ? 0 : a.offset, a.url ? 512 : a.length, &d, err);
    if (r == 0 && a.url)
        r = mcp_read_file_url(s, m, a.path, &d, out, err);
    if (mcp_file_op_end(s, call, m, &f, r) < 0 || a.url)
        return r;
    bool base64 = a.base64 || !valid_utf8(d.data, d.len);
    const char *mime = nsbox_mime_sniff(d.data, d.len, a.path);
    _cleanup_free_ char *enc = base64 ? mcp_base64_encode(d.data, d.len) : NULL;
    out->structured = read_json(&a, &d, base64, enc, mime);
    /* Images also travel as MCP image content (best effort). */
    if (mime != NULL && d.len <= IMAGE_MAX) {
        char *img = enc ? strdup(enc) : mcp_base64_encode(d.data, d.len);
        struct nsbox_err ignored;
        if (img != NULL)
            mcp_result_add_image(out, img, mime, &ignored);
    }
    return 0;
}
/* {entries: [{path, type, size, mode, mtime, name_not_utf8?}], truncated, path} */
static json_t *listing_json(const struct nsbox_file_list *l, const char *path)
{
    json_t *entries = json_array();
    for (size_t i = 0; i < l->n; i++) {
        const struct nsbox_file_entry *e = &l->v[i];
        char mode[8];
        snprintf(mode, sizeof(mode), "%04o", (unsigned)e->mode);
        json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:I}", "path", e->path, "type",
                              nsbox_file_type_name(e->type), "size", (json_int_t)e->size, "mode",
                              mode, "mtime", (json_int_t)e->mtime);
        if (o != NULL && e->name_not_utf8)
            json_object_set_new(o, "name_not_utf8", json_true());
        json_array_append_new(entries, o);
    }
    return json_pack("{s:o,s:b,s:s}", "entries", entries, "truncated", l->truncated, "path", path);
}

static int list(struct mcp_session *s, struct mcp_call *call, const char *id, const char *path,
                int depth, struct mcp_result *out, struct nsbox_err *err)
{
    struct box_files f;
    struct nsbox_file_list l;

    struct mcp_sandbox *m = op_begin(s, call, id, BOX_FILE_READS, &f, err);
    if (m == NULL)
        return -1;
    int r = box_file_list(&f, path, depth, &l, err);
    if (mcp_file_op_end(s, call, m, &f, r) < 0)
        return -1;
    out->structured = listing_json(&l, path);
    nsbox_file_list_free(&l);
    return 0;
}

int mcp_tool_list_directory(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_list_args a;

    if (mcp_args_list_directory(args, &a, err) < 0)
        return -1;
    return list(s, call, a.sandbox_id, a.path, a.depth, out, err);
}

/* The listing j as a tree of text, the way a person would draw it
 * (malloc'ed), or NULL when out of memory. */
static char *tree_text(const char *root, json_t *j)
{
    size_t cap = 1 << 16, n = 0, i;
    char *tree = malloc(cap);
    json_t *e;
    if (tree == NULL)
        return NULL;
    n += (size_t)snprintf(tree, cap, "%s\n", root);
    json_array_foreach (json_object_get(j, "entries"), i, e) {
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
    return tree;
}

int mcp_tool_project_structure(struct mcp_session *s, struct mcp_call *call, json_t *args,
                               struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_list_args a;

    if (mcp_args_project_structure(args, &a, err) < 0 ||
        list(s, call, a.sandbox_id, a.path, a.depth, out, err) < 0)
        return -1;
    _cleanup_free_ char *tree = tree_text(a.path, out->structured);
    json_object_set_new(out->structured, "tree", json_string(tree ? tree : ""));
    return 0;
}

int mcp_tool_create_directory(struct mcp_session *s, struct mcp_call *call, json_t *args,
                              struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_path_args a;
    struct box_files f;

    if (mcp_args_create_directory(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = op_begin(s, call, a.sandbox_id, BOX_FILE_WRITES, &f, err);
    if (m == NULL)
        return -1;
    int r = box_file_mkdir(&f, a.path, err);
    if (mcp_file_op_end(s, call, m, &f, r) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:b}", "path", a.path, "created", 1);
    return 0;
}

int mcp_tool_delete_path(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_path_args a;
    struct box_files f;

    if (mcp_args_delete_path(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = op_begin(s, call, a.sandbox_id, BOX_FILE_REMOVES, &f, err);
    if (m == NULL)
        return -1;
    int r = box_file_remove(&f, a.path, a.recursive, err);
    if (mcp_file_op_end(s, call, m, &f, r) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:b}", "path", a.path, "deleted", 1);
    return 0;
}

struct mcp_sandbox *mcp_file_op_begin(struct mcp_session *s, struct mcp_call *call,
                                      const char *sandbox_id, enum box_file_kind kind,
                                      const struct box_file_opts *opts, struct box_files *f,
                                      struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_get(s, sandbox_id, err);
    if (m == NULL)
        return NULL;
    struct box_file_opts o = *opts;
    o.cancel = &call->cancel;
    if (mcp_op_begin(s, call, m, err) < 0) {
        mcp_sandbox_put(s, m);
        return NULL;
    }
    if (box_files_begin(&m->box, kind, &o, f, err) < 0) {
        mcp_op_end(s, call, m);
        mcp_sandbox_put(s, m);
        return NULL;
    }
    return m;
}

int mcp_file_op_end(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                    struct box_files *f, int r)
{
    r = box_files_end(f, r);
    mcp_op_end(s, call, m);
    mcp_sandbox_put(s, m);
    return r;
}
