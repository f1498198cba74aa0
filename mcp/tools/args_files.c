/* The decoders of the file tools' arguments (write_file, read_file,
 * list_directory, project_structure, create_directory, delete_path,
 * upload_url, copy_in, copy_out), against the declarations of args.c
 * (args_internal.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/base64.h"
#include "../../common/cleanup.h"
#include "args.h"
#include "args_internal.h"

/* ---- file tools ---- */

static int write_args(json_t *args, struct mcp_write_args *out, struct nsbox_err *err)
{
    if (mcp_schema_check(&mcp_arg_decls[WRITE_FILE], args, err) < 0)
        return -1;
    json_t *c = json_object_get(args, "content");
    out->sandbox_id = str(WRITE_FILE, args, "sandbox_id");
    out->path = str(WRITE_FILE, args, "path");
    out->append = mcp_arg_bool(args, "append");
    out->content = json_string_value(c);
    out->len = json_string_length(c);
    if (strcmp(str(WRITE_FILE, args, "encoding"), "base64") == 0) {
        out->decoded = nsbox_base64_decode(out->content, out->len, SIZE_MAX / 2, 0, &out->len);
        if (out->decoded == NULL)
            return nsbox_err_set(err, 0, "content is not valid base64");
        out->content = (const char *)out->decoded;
    }
    if (out->len > MCP_WRITE_MAX)
        return nsbox_err_set(err, 0, "content is larger than %u bytes", MCP_WRITE_MAX);
    return 0;
}

int mcp_args_write_file(json_t *args, struct mcp_write_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_write_args){0};
    if (write_args(args, out, err) < 0) {
        mcp_write_args_free(out);
        return -1;
    }
    return 0;
}

void mcp_write_args_free(struct mcp_write_args *a)
{
    free(a->decoded);
    *a = (struct mcp_write_args){0};
}

int mcp_args_read_file(json_t *args, struct mcp_read_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_read_args){0};
    if (mcp_schema_check(&mcp_arg_decls[READ_FILE], args, err) < 0)
        return -1;
    const char *encoding = str(READ_FILE, args, "encoding");
    int64_t length = mcp_arg_integer(args, "length", MCP_READ_DEFAULT);
    out->sandbox_id = str(READ_FILE, args, "sandbox_id");
    out->path = str(READ_FILE, args, "path");
    out->length = (size_t)(length > MCP_READ_MAX ? MCP_READ_MAX : length);
    out->offset = mcp_arg_integer(args, "offset", 0);
    out->base64 = encoding && strcmp(encoding, "base64") == 0;
    out->url = mcp_arg_bool(args, "url");
    return 0;
}

int mcp_args_list_directory(json_t *args, struct mcp_list_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_list_args){0};
    if (mcp_schema_check(&mcp_arg_decls[LIST_DIRECTORY], args, err) < 0)
        return -1;
    out->sandbox_id = str(LIST_DIRECTORY, args, "sandbox_id");
    out->path = str(LIST_DIRECTORY, args, "path");
    out->depth = mcp_arg_bool(args, "recursive") ? MCP_LIST_RECURSIVE_DEPTH : 1;
    return 0;
}

int mcp_args_project_structure(json_t *args, struct mcp_list_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_list_args){0};
    if (mcp_schema_check(&mcp_arg_decls[PROJECT_STRUCTURE], args, err) < 0)
        return -1;
    out->sandbox_id = str(PROJECT_STRUCTURE, args, "sandbox_id");
    out->path = str(PROJECT_STRUCTURE, args, "path");
    if (out->path == NULL)
        out->path = ".";
    out->depth = (int)mcp_arg_integer(args, "depth", 3);
    return 0;
}

int mcp_args_create_directory(json_t *args, struct mcp_path_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_path_args){0};
    if (mcp_schema_check(&mcp_arg_decls[CREATE_DIRECTORY], args, err) < 0)
        return -1;
    out->sandbox_id = str(CREATE_DIRECTORY, args, "sandbox_id");
    out->path = str(CREATE_DIRECTORY, args, "path");
    return 0;
}

int mcp_args_upload_url(uint64_t ceiling, json_t *args, struct mcp_upload_args *out,
                        struct nsbox_err *err)
{
    bool given;

    *out = (struct mcp_upload_args){0};
    if (mcp_schema_check(&mcp_arg_decls[UPLOAD_URL], args, err) < 0)
        return -1;
    out->sandbox_id = str(UPLOAD_URL, args, "sandbox_id");
    out->path = str(UPLOAD_URL, args, "path");
    double mb = mcp_arg_number(args, "size_mb", 0, &given);
    if (given && (mb <= 0 || mb * 1048576.0 > (double)ceiling))
        return nsbox_err_set(err, 0, "size_mb must be above 0 and at most %llu (the server's cap)",
                             (unsigned long long)(ceiling >> 20));
    out->max_bytes = given ? (uint64_t)(mb * 1048576.0) : ceiling;
    if (out->max_bytes == 0)
        out->max_bytes = 1;
    return 0;
}

/* Whether PATH, read lexically, names the sandbox's root, the working
 * directory itself or one of its ancestors: "/", "//", "/.", "/a/..", ".",
 * "./", "..", "a/../..".  A safety net against wiping the whole sandbox
 * with one call, not a security boundary (the deletion runs inside). */
static bool names_root_or_workdir(const char *path)
{
    long depth = 0;
    for (const char *p = path; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            depth--;
        else if (n > 0 && !(n == 1 && p[0] == '.'))
            depth++;
        p += n;
        p += *p == '/';
        if (path[0] == '/' && depth < 0)
            depth = 0; /* "/.." is "/" */
    }
    return depth <= 0;
}

int mcp_args_delete_path(json_t *args, struct mcp_path_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_path_args){0};
    if (mcp_schema_check(&mcp_arg_decls[DELETE_PATH], args, err) < 0)
        return -1;
    const char *path = str(DELETE_PATH, args, "path");
    if (names_root_or_workdir(path))
        return nsbox_err_set(err, 0, "refusing to delete %s", path);
    out->sandbox_id = str(DELETE_PATH, args, "sandbox_id");
    out->path = path;
    out->recursive = mcp_arg_bool(args, "recursive");
    return 0;
}

/* ---- copy_in, copy_out ---- */

/* The allowed directory host_path lies in: its index, and the path below
 * it in *rel. */
static int allowed_dir(const struct mcp_server *cfg, const char *host_path, size_t *dir,
                       const char **rel, struct nsbox_err *err)
{
    for (size_t i = 0; i < cfg->n_host_dirs; i++) {
        const char *d = cfg->host_dirs[i].path;
        size_t n = strlen(d);
        if (strncmp(host_path, d, n) == 0 && host_path[n] == '/' && host_path[n + 1] != '\0') {
            *dir = i;
            *rel = host_path + n + 1;
            return 0;
        }
    }
    return nsbox_err_set(err, 0,
                         "%.200s is not inside a directory the operator allowed "
                         "(serve --allow-host-dir)",
                         host_path);
}

static int copy_args(const struct mcp_server *cfg, int tool, json_t *args,
                     struct mcp_copy_args *out, struct nsbox_err *err)
{
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0)
        return -1;
    out->sandbox_id = str(tool, args, "sandbox_id");
    out->host_path = str(tool, args, "host_path");
    out->path = str(tool, args, "path");
    out->overwrite = mcp_arg_bool(args, "overwrite");
    return allowed_dir(cfg, out->host_path, &out->dir, &out->rel, err);
}

int mcp_args_copy_in(const struct mcp_server *cfg, json_t *args, struct mcp_copy_args *out,
                     struct nsbox_err *err)
{
    *out = (struct mcp_copy_args){0};
    if (copy_args(cfg, COPY_IN, args, out, err) < 0) {
        *out = (struct mcp_copy_args){0};
        return -1;
    }
    return 0;
}

int mcp_args_copy_out(const struct mcp_server *cfg, json_t *args, struct mcp_copy_args *out,
                      struct nsbox_err *err)
{
    *out = (struct mcp_copy_args){0};
    if (copy_args(cfg, COPY_OUT, args, out, err) < 0)
        goto fail;
    /* The parent is opened beneath the allowed directory, symlink-free;
     * the name is created in it. */
    /* A rel of PATH_MAX or more was cut short here and the name taken
     * from the cut: a file other than the one asked for. */
    if (strlen(out->rel) >= sizeof(out->parent)) {
        nsbox_err_set(err, ENAMETOOLONG, "cannot write %.200s: the path is too long",
                      out->host_path);
        goto fail;
    }
    snprintf(out->parent, sizeof(out->parent), "%s", out->rel);
    char *slash = strrchr(out->parent, '/');
    out->has_parent = slash != NULL;
    out->name = slash ? out->rel + (slash - out->parent) + 1 : out->rel;
    if (slash)
        *slash = '\0';
    if (strcmp(out->name, "..") == 0 || strcmp(out->name, ".") == 0) {
        nsbox_err_set(err, 0,
                      "cannot write %.200s: no such directory, or a symlink or escape "
                      "on the way",
                      out->host_path);
        goto fail;
    }
    return 0;
fail:
    *out = (struct mcp_copy_args){0};
    return -1;
}
