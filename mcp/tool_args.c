/* Tool arguments as typed C structs (see tool_args.h): every check a tool
 * makes on its `arguments` before it touches a sandbox, in the order the
 * tool makes them, so the first problem is the one reported. */
#include "tool_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cleanup.h"

/* ---- helpers ---- */

/* Refuses arguments not in allowed (additionalProperties: false). */
static int check_allowed(json_t *args, const char *const *allowed, struct nsbox_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok)
            return nsbox_err_set(err, 0, "unknown argument \"%s\"", key);
    }
    return 0;
}

static bool has_nul(json_t *v)
{
    return strlen(json_string_value(v)) != json_string_length(v);
}

/* A string argument as execute_code and run_command take it: required or
 * not, empty allowed.  *out is NULL when absent. */
static int run_string(json_t *args, const char *key, bool required, const char **out,
                      struct nsbox_err *err)
{
    json_t *v = json_object_get(args, key);
    *out = NULL;
    if (v == NULL && !required)
        return 0;
    if (!json_is_string(v) || has_nul(v))
        return nsbox_err_set(err, 0, "%s must be a string%s", key,
                             v && json_is_string(v) ? " without NUL bytes" : "");
    *out = json_string_value(v);
    return 0;
}

/* A string argument as the file tools take it: a required one must not be
 * empty.  *out is NULL when absent. */
static int file_string(json_t *args, const char *key, bool required, const char **out,
                       struct nsbox_err *err)
{
    json_t *v = json_object_get(args, key);
    *out = NULL;
    if (v == NULL && !required)
        return 0;
    if (!json_is_string(v) || has_nul(v) || (required && json_string_length(v) == 0))
        return nsbox_err_set(err, 0, "%s must be a non-empty string without NUL bytes", key);
    *out = json_string_value(v);
    return 0;
}

/* A required, non-empty string argument of copy_in and copy_out. */
static int host_string(json_t *args, const char *key, const char **out, struct nsbox_err *err)
{
    json_t *v = json_object_get(args, key);
    if (!json_is_string(v) || json_string_length(v) == 0 || has_nul(v))
        return nsbox_err_set(err, 0, "%s must be a non-empty string", key);
    *out = json_string_value(v);
    return 0;
}

/* Refuses key when present and not a string, or one holding a NUL. */
static int not_string(json_t *args, const char *key, struct nsbox_err *err)
{
    json_t *v = json_object_get(args, key);
    if (v != NULL && (!json_is_string(v) || has_nul(v)))
        return nsbox_err_set(err, 0, "%s must be a string without NUL bytes", key);
    return 0;
}

static int bool_arg(json_t *args, const char *key, bool *out, struct nsbox_err *err)
{
    json_t *v = json_object_get(args, key);
    *out = false;
    if (v == NULL)
        return 0;
    if (!json_is_boolean(v))
        return nsbox_err_set(err, 0, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* A number from lo to hi; with integer, a whole one (JSON Schema's
 * "integer": 64 and 64.0 alike). */
static int number_arg(json_t *args, const char *key, double lo, double hi, bool integer,
                      double *out, bool *given, struct nsbox_err *err)
{
    json_t *v = json_object_get(args, key);
    *given = v != NULL;
    if (v == NULL)
        return 0;
    double d = json_number_value(v);
    /* In range before the cast: a double beyond int64_t is undefined. */
    if (!json_is_number(v) || d < lo || d > hi || (integer && d != (double)(int64_t)d))
        return nsbox_err_set(err, 0, "%s must be %s from %g to %g", key,
                             integer ? "an integer" : "a number", lo, hi);
    *out = d;
    return 0;
}

/* memory_mb, cpus, pids, timeout_s: the defaults, or within the ceilings.
 * pids is an integer in the schema; fuzz_tools found 8.5 accepted (and
 * cut to 8). */
static int limit_args(const struct mcp_server *cfg, json_t *args, struct mcp_limit_args *out,
                      struct nsbox_err *err)
{
    double mem = (double)cfg->defaults.memory_mb, pids = cfg->defaults.pids;
    struct mcp_limits *l = &out->limits;

    *l = cfg->defaults;
    if (number_arg(args, "memory_mb", 16, (double)cfg->ceilings.memory_mb, false, &mem,
                   &out->has_memory, err) < 0 ||
        number_arg(args, "cpus", 0.01, cfg->ceilings.cpus, false, &l->cpus, &out->has_cpus,
                   err) < 0 ||
        number_arg(args, "pids", 8, cfg->ceilings.pids, true, &pids, &out->has_pids, err) < 0 ||
        number_arg(args, "timeout_s", 0.1, cfg->ceilings.timeout_s, false, &l->timeout_s,
                   &out->has_timeout, err) < 0)
        return -1;
    l->memory_mb = (uint64_t)mem;
    l->pids = (uint32_t)pids;
    return 0;
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Strict base64: padding optional (none, or the right amount), nothing
 * but the alphabet, whitespace refused; NULL when invalid or out of
 * memory.  fuzz_tools found this taking "QUJDR" as "ABC" and "QQ=====" as
 * "A": a dangling character (6 bits, no whole byte) and extra padding were
 * dropped in silence, so a truncated upload was written short instead of
 * refused. */
static unsigned char *base64_decode(const char *in, size_t n, size_t *len)
{
    size_t pad = 0;
    while (n > 0 && in[n - 1] == '=')
        n--, pad++;
    if (n % 4 == 1 || pad > 2 || (pad > 0 && (n + pad) % 4 != 0))
        return NULL;
    _cleanup_free_ unsigned char *out = malloc(n * 3 / 4 + 3);
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *c = in[i] ? strchr(b64, in[i]) : NULL;
        if (c == NULL)
            return NULL;
        v = v << 6 | (unsigned)(c - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    *len = o;
    return TAKE_PTR(out);
}

/* ---- env and workspace names ---- */

bool mcp_workspace_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n &&
           name[0] != '.' && name[0] != '-';
}

/* {"KEY": "VALUE", ...} as "KEY=VALUE" strings (NULL-terminated). */
static int env_strings(json_t *env, char ***out, struct nsbox_err *err)
{
    const char *key;
    json_t *value;
    size_t i = 0;
    _cleanup_strv_ char **v = calloc(json_object_size(env) + 1, sizeof(char *));

    if (v == NULL)
        return nsbox_err_set(err, 0, "out of memory");
    json_object_foreach(env, key, value) {
        if (!json_is_string(value) || has_nul(value) || key[0] == '\0' ||
            strchr(key, '=') != NULL)
            return nsbox_err_set(err, 0, "env: \"%s\" must be a name without '=' with a "
                                         "string value",
                                 key);
        if (asprintf(&v[i], "%s=%s", key, json_string_value(value)) < 0) {
            v[i] = NULL;
            return nsbox_err_set(err, 0, "out of memory");
        }
        i++;
    }
    *out = TAKE_PTR(v);
    return 0;
}

/* ---- sandbox tools ---- */

int mcp_args_none(json_t *args, struct nsbox_err *err)
{
    static const char *const allowed[] = {NULL};
    return check_allowed(args, allowed, err);
}

static int create_args(const struct mcp_server *cfg, json_t *args, struct mcp_create_args *out,
                       struct nsbox_err *err)
{
    static const char *const allowed[] = {"image", "language", "memory_mb", "cpus", "pids",
                                          "timeout_s", "env", "workdir", "workspace", NULL};
    json_t *env = json_object_get(args, "env");
    json_t *jws = json_object_get(args, "workspace");

    out->image = json_string_value(json_object_get(args, "image"));
    out->language = json_string_value(json_object_get(args, "language"));
    out->workdir = json_string_value(json_object_get(args, "workdir"));
    out->workspace = json_string_value(jws);
    if (out->language == NULL)
        out->language = "python";
    if (jws != NULL && (out->workspace == NULL || has_nul(jws)))
        return nsbox_err_set(err, 0, "workspace must be a name");
    if (check_allowed(args, allowed, err) < 0)
        return -1;
    /* A non-string image, language or workdir was ignored (the default
     * image, /workspace) where the schema says string; fuzz_tools found
     * the language one.  A NUL (jsonrpc_parse refuses \u0000, so only a
     * direct caller) would cut the name short. */
    if (not_string(args, "image", err) < 0 || not_string(args, "language", err) < 0 ||
        not_string(args, "workdir", err) < 0 || limit_args(cfg, args, &out->limits, err) < 0)
        return -1;
    if (env != NULL && !json_is_object(env))
        return nsbox_err_set(err, 0, "env must be an object of strings");
    if (out->workdir != NULL && out->workdir[0] != '/')
        return nsbox_err_set(err, 0, "workdir must be an absolute path inside the sandbox");
    /* The env map and the workspace name were checked only once the
     * sandbox was being made; checking them here, with the rest, only
     * changes which error a call with several faults hears first. */
    if (env != NULL && env_strings(env, &out->env, err) < 0)
        return -1;
    if (out->workspace != NULL && !mcp_workspace_name_ok(out->workspace))
        return nsbox_err_set(err, 0, "workspace names are 1-64 of a-z 0-9 . _ -, not "
                                     "starting with . or -");
    return 0;
}

int mcp_args_sandbox_create(const struct mcp_server *cfg, json_t *args,
                            struct mcp_create_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_create_args){0};
    if (create_args(cfg, args, out, err) < 0) {
        mcp_create_args_free(out);
        return -1;
    }
    return 0;
}

void mcp_create_args_free(struct mcp_create_args *a)
{
    nsbox_strvfree(a->env);
    *a = (struct mcp_create_args){0};
}

int mcp_args_sandbox_stop(json_t *args, struct mcp_stop_args *out, struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", NULL};
    *out = (struct mcp_stop_args){0};
    /* A sandbox_id with a NUL byte was taken, cut at the NUL, where every
     * other tool refuses it; fuzz_tools found it (jsonrpc_parse refuses
     * \u0000, so only a direct caller could send one). */
    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0)
        return -1;
    return 0;
}

/* ---- execute_code, run_command ---- */

struct runner {
    const char *language;
    const char *argv[2]; /* program, flag; the code follows */
};

static const struct runner runners[] = {
    {"python", {"python3", "-c"}}, {"python3", {"python3", "-c"}}, {"sh", {"/bin/sh", "-c"}},
    {"bash", {"bash", "-c"}},      {"javascript", {"node", "-e"}}, {"node", {"node", "-e"}},
    {"ruby", {"ruby", "-e"}},      {"perl", {"perl", "-e"}},
};

static const struct runner *runner_for(const char *language)
{
    for (size_t i = 0; i < sizeof(runners) / sizeof(runners[0]); i++)
        if (strcmp(runners[i].language, language) == 0)
            return &runners[i];
    return NULL;
}

int mcp_args_execute_code(const struct mcp_server *cfg, json_t *args, struct mcp_run_args *out,
                          struct nsbox_err *err)
{
    static const char *const allowed[] = {"code", "language", "sandbox_id", "timeout_s",
                                          "stdin", "memory_mb", "cpus", "pids", NULL};
    const char *code;

    *out = (struct mcp_run_args){0};
    if (check_allowed(args, allowed, err) < 0 || run_string(args, "code", true, &code, err) < 0 ||
        run_string(args, "language", false, &out->language, err) < 0 ||
        run_string(args, "sandbox_id", false, &out->sandbox_id, err) < 0 ||
        run_string(args, "stdin", false, &out->stdin_data, err) < 0)
        goto fail;
    if (out->language == NULL)
        out->language = "python";
    const struct runner *runner = runner_for(out->language);
    if (runner == NULL) {
        nsbox_err_set(err, 0, "no way to run \"%.32s\" code; use run_command, or one of "
                              "python, sh, bash, javascript, ruby, perl",
                      out->language);
        goto fail;
    }
    if (strlen(code) > MCP_CODE_MAX) {
        nsbox_err_set(err, 0, "code is longer than %d bytes; write it to a file and run it "
                              "with run_command",
                      MCP_CODE_MAX);
        goto fail;
    }
    if (limit_args(cfg, args, &out->limits, err) < 0)
        goto fail;
    out->argv[0] = (char *)runner->argv[0];
    out->argv[1] = (char *)runner->argv[1];
    out->argv[2] = (char *)code;
    return 0;
fail:
    *out = (struct mcp_run_args){0};
    return -1;
}

int mcp_args_run_command(const struct mcp_server *cfg, json_t *args, struct mcp_run_args *out,
                         struct nsbox_err *err)
{
    static const char *const allowed[] = {"command", "sandbox_id", "timeout_s", "stdin",
                                          "workdir", "memory_mb", "cpus", "pids", NULL};
    const char *command;

    *out = (struct mcp_run_args){0};
    if (check_allowed(args, allowed, err) < 0 ||
        run_string(args, "command", true, &command, err) < 0 ||
        run_string(args, "sandbox_id", false, &out->sandbox_id, err) < 0 ||
        run_string(args, "stdin", false, &out->stdin_data, err) < 0 ||
        run_string(args, "workdir", false, &out->workdir, err) < 0)
        goto fail;
    if (strlen(command) > MCP_CODE_MAX) {
        nsbox_err_set(err, 0, "command is longer than %d bytes", MCP_CODE_MAX);
        goto fail;
    }
    if (out->workdir != NULL && out->workdir[0] != '/') {
        nsbox_err_set(err, 0, "workdir must be an absolute path inside the sandbox");
        goto fail;
    }
    if (limit_args(cfg, args, &out->limits, err) < 0)
        goto fail;
    out->argv[0] = "/bin/sh";
    out->argv[1] = "-c";
    out->argv[2] = (char *)command;
    return 0;
fail:
    *out = (struct mcp_run_args){0};
    return -1;
}

/* ---- file tools ---- */

static int write_args(json_t *args, struct mcp_write_args *out, struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "path", "content", "encoding",
                                          "append", NULL};
    const char *encoding;

    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0 ||
        file_string(args, "path", true, &out->path, err) < 0 ||
        bool_arg(args, "append", &out->append, err) < 0 ||
        file_string(args, "encoding", false, &encoding, err) < 0)
        return -1;
    json_t *c = json_object_get(args, "content");
    if (!json_is_string(c))
        return nsbox_err_set(err, 0, "content must be a string");
    out->content = json_string_value(c);
    out->len = json_string_length(c);
    if (encoding != NULL && strcmp(encoding, "base64") == 0) {
        out->decoded = base64_decode(out->content, out->len, &out->len);
        if (out->decoded == NULL)
            return nsbox_err_set(err, 0, "content is not valid base64");
        out->content = (const char *)out->decoded;
    } else if (encoding != NULL && strcmp(encoding, "utf-8") != 0) {
        return nsbox_err_set(err, 0, "encoding must be utf-8 or base64");
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
    static const char *const allowed[] = {"sandbox_id", "path", "encoding", "offset",
                                          "length", NULL};
    const char *encoding;

    *out = (struct mcp_read_args){0};
    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0 ||
        file_string(args, "path", true, &out->path, err) < 0 ||
        file_string(args, "encoding", false, &encoding, err) < 0)
        goto fail;
    json_t *jo = json_object_get(args, "offset"), *jl = json_object_get(args, "length");
    if ((jo && (!json_is_integer(jo) || json_integer_value(jo) < 0)) ||
        (jl && (!json_is_integer(jl) || json_integer_value(jl) < 1))) {
        nsbox_err_set(err, 0, "offset and length must be non-negative integers");
        goto fail;
    }
    /* fuzz_tools found any encoding taken (as utf-8) where the schema
     * and write_file allow only these two. */
    if (encoding != NULL && strcmp(encoding, "base64") != 0 && strcmp(encoding, "utf-8") != 0) {
        nsbox_err_set(err, 0, "encoding must be utf-8 or base64");
        goto fail;
    }
    json_int_t length = jl ? json_integer_value(jl) : MCP_READ_DEFAULT;
    out->length = (size_t)(length > MCP_READ_MAX ? MCP_READ_MAX : length);
    out->offset = jo ? json_integer_value(jo) : 0;
    out->base64 = encoding && strcmp(encoding, "base64") == 0;
    return 0;
fail:
    *out = (struct mcp_read_args){0};
    return -1;
}

int mcp_args_list_directory(json_t *args, struct mcp_list_args *out, struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "path", "recursive", NULL};
    bool recursive;

    *out = (struct mcp_list_args){0};
    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0 ||
        file_string(args, "path", false, &out->path, err) < 0 ||
        bool_arg(args, "recursive", &recursive, err) < 0) {
        *out = (struct mcp_list_args){0};
        return -1;
    }
    if (out->path == NULL)
        out->path = ".";
    out->depth = recursive ? MCP_LIST_RECURSIVE_DEPTH : 1;
    return 0;
}

int mcp_args_project_structure(json_t *args, struct mcp_list_args *out, struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "path", "depth", NULL};
    json_t *jd = json_object_get(args, "depth");

    *out = (struct mcp_list_args){0};
    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0 ||
        file_string(args, "path", false, &out->path, err) < 0)
        goto fail;
    if (jd && (!json_is_integer(jd) || json_integer_value(jd) < 1 ||
               json_integer_value(jd) > MCP_TREE_DEPTH_MAX)) {
        nsbox_err_set(err, 0, "depth must be an integer from 1 to %d", MCP_TREE_DEPTH_MAX);
        goto fail;
    }
    if (out->path == NULL)
        out->path = ".";
    out->depth = jd ? (int)json_integer_value(jd) : 3;
    return 0;
fail:
    *out = (struct mcp_list_args){0};
    return -1;
}

int mcp_args_create_directory(json_t *args, struct mcp_path_args *out, struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "path", NULL};

    *out = (struct mcp_path_args){0};
    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0 ||
        file_string(args, "path", true, &out->path, err) < 0) {
        *out = (struct mcp_path_args){0};
        return -1;
    }
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
            depth = 0;   /* "/.." is "/" */
    }
    return depth <= 0;
}

int mcp_args_delete_path(json_t *args, struct mcp_path_args *out, struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "path", "recursive", NULL};

    *out = (struct mcp_path_args){0};
    if (check_allowed(args, allowed, err) < 0 ||
        file_string(args, "sandbox_id", true, &out->sandbox_id, err) < 0 ||
        file_string(args, "path", true, &out->path, err) < 0 ||
        bool_arg(args, "recursive", &out->recursive, err) < 0)
        goto fail;
    if (names_root_or_workdir(out->path)) {
        nsbox_err_set(err, 0, "refusing to delete %s", out->path);
        goto fail;
    }
    return 0;
fail:
    *out = (struct mcp_path_args){0};
    return -1;
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
    return nsbox_err_set(err, 0, "%.200s is not inside a directory the operator allowed "
                                 "(serve --allow-host-dir)",
                         host_path);
}

static int copy_args(const struct mcp_server *cfg, json_t *args, const char *const *allowed,
                     struct mcp_copy_args *out, struct nsbox_err *err)
{
    if (check_allowed(args, allowed, err) < 0 ||
        host_string(args, "sandbox_id", &out->sandbox_id, err) < 0 ||
        host_string(args, "host_path", &out->host_path, err) < 0 ||
        host_string(args, "path", &out->path, err) < 0)
        return -1;
    /* A non-boolean overwrite was taken as false (the schema says boolean). */
    if (bool_arg(args, "overwrite", &out->overwrite, err) < 0)
        return -1;
    return allowed_dir(cfg, out->host_path, &out->dir, &out->rel, err);
}

int mcp_args_copy_in(const struct mcp_server *cfg, json_t *args, struct mcp_copy_args *out,
                     struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "host_path", "path", NULL};

    *out = (struct mcp_copy_args){0};
    if (copy_args(cfg, args, allowed, out, err) < 0) {
        *out = (struct mcp_copy_args){0};
        return -1;
    }
    return 0;
}

int mcp_args_copy_out(const struct mcp_server *cfg, json_t *args, struct mcp_copy_args *out,
                      struct nsbox_err *err)
{
    static const char *const allowed[] = {"sandbox_id", "path", "host_path", "overwrite", NULL};

    *out = (struct mcp_copy_args){0};
    if (copy_args(cfg, args, allowed, out, err) < 0)
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
        nsbox_err_set(err, 0, "cannot write %.200s: no such directory, or a symlink or escape "
                              "on the way",
                      out->host_path);
        goto fail;
    }
    return 0;
fail:
    *out = (struct mcp_copy_args){0};
    return -1;
}
