/* libFuzzer target: MCP tool-argument decoding (mcp/tools/args.c), the
 * path every tools/call takes from its `arguments` object to the typed
 * struct the tool runs from.  No sandbox is made: the decoders are pure.
 *
 * Input: the tool's name, a newline, then the arguments as JSON text,
 * e.g. "write_file\n{\"sandbox_id\":\"x\",\"path\":\"a\",\"content\":\"\"}".
 * A name that is not in mcp_tools[] is skipped.  The JSON is read as
 * jsonrpc_parse reads it (depth limit, duplicate keys refused) but with
 * \u0000 allowed, a superset of what reaches a tool, so the NUL checks
 * are exercised too; anything but an object is skipped (the server
 * refuses it with -32602 before any tool sees it).
 *
 * Checks, beyond memory safety and leaks:
 *   - every tool in mcp_tools[] has a decoder here (at start-up);
 *   - a decoder either succeeds with err untouched and the struct filled,
 *     or fails with a message and nothing left in the struct;
 *   - what it accepts satisfies the tool's own inputSchema: no unknown
 *     property, the required ones present, types, enums, minimum/maximum;
 *   - decoded strings are the argument's whole string (no NUL cut one
 *     short) and limits lie within the server's ceilings, or are its
 *     defaults when not asked for;
 *   - base64 content decodes to what an independent strict decoder gets;
 *   - paths: a workdir is absolute, a workspace a valid name, delete_path
 *     never gets "/" or ".", a host path maps to an allowed directory and
 *     splits back into exactly itself.
 * The checks that hold for every tool are in tests/fuzz/tools_checks.c. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mcp/jsonrpc.h"
#include "../../mcp/server.h"
#include "../../mcp/tools/args.h"
#include "../../mcp/tools/fork.h"
#include "../../mcp/tools/contexts.h"
#include "../../mcp/tools/ports.h"
#include "../../mcp/tools/tools.h"
#include "tools_checks.h"

/* ---- one check per tool ---- */

static int none(json_t *args, struct nsbox_err *err)
{
    return mcp_args_none(args, err);
}

/* What to install, decoded from o (install_packages' arguments, or
 * sandbox_create's packages object): the list is o's strings, each an
 * operand (never an option), or a requirements_file, never both. */
static void check_packages(json_t *o, const struct mcp_pkg_args *p)
{
    json_t *list = json_object_get(o, "packages");
    tf_must(p->given, "packages decoded but not marked given");
    tf_must((p->n_packages > 0) != (p->requirements_file != NULL),
            "both a list and a file, or none");
    tf_must(p->n_packages <= MCP_PKG_MAX && p->packages[p->n_packages] == NULL,
            "list not terminated");
    for (size_t i = 0; i < p->n_packages; i++) {
        const char *v = p->packages[i];
        tf_must(v == json_string_value(json_array_get(list, i)),
                "packages[%zu] is not the argument", i);
        tf_must(v[0] != '\0' && v[0] != '-' && strlen(v) <= MCP_PKG_SPEC_MAX &&
                    !strpbrk(v, "\r\n") && strlen(v) == json_string_length(json_array_get(list, i)),
                "packages[%zu] \"%s\" let through", i, v);
    }
    if (p->requirements_file != NULL) {
        tf_whole_string(o, "requirements_file", p->requirements_file);
        tf_must(p->requirements_file[0] != '-', "requirements_file is an option");
    }
    json_t *m = json_object_get(o, "manager");
    tf_must(!m || strcmp(json_string_value(m), box_pkg_manager_name(p->manager)) == 0,
         "manager not the argument's");
}

static int install_packages(json_t *args, struct nsbox_err *err)
{
    struct mcp_install_args a;
    if (mcp_args_install_packages(&tf_cfg, args, &a, err) < 0)
        return -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_must(a.timeout_s > 0 && a.timeout_s <= tf_cfg.ceilings.timeout_s, "timeout_s %g",
            a.timeout_s);
    check_packages(args, &a.packages);
    return 0;
}

static int sandbox_create(json_t *args, struct nsbox_err *err)
{
    struct mcp_create_args a;
    if (mcp_args_sandbox_create(&tf_cfg, args, &a, err) < 0) {
        tf_must(a.env == NULL && a.image == NULL && a.workspace == NULL, "failed but filled");
        return -1;
    }
    tf_optional_string(args, "image", a.image);
    json_t *pk = json_object_get(args, "packages");
    tf_must((pk != NULL) == a.packages.given, "packages given but not decoded, or the reverse");
    if (pk != NULL)
        check_packages(pk, &a.packages);
    tf_must(a.language != NULL, "no language");
    if (json_object_get(args, "language"))
        tf_whole_string(args, "language", a.language);
    tf_optional_string(args, "workdir", a.workdir);
    tf_must(!a.workdir || a.workdir[0] == '/', "workdir \"%s\" is not absolute", a.workdir);
    tf_optional_string(args, "workspace", a.workspace);
    tf_must(!a.workspace || box_workspace_name_ok(a.workspace), "workspace \"%s\"", a.workspace);
    tf_check_limits(args, &a.limits);
    json_t *env = json_object_get(args, "env"), *v;
    const char *key;
    size_t i = 0;
    tf_must((env != NULL) == (a.env != NULL), "env given but not decoded, or the reverse");
    json_object_foreach(env, key, v) {
        size_t kl = strlen(key), vl = json_string_length(v);
        tf_must(a.env[i] != NULL, "env has fewer entries than the object");
        tf_must(kl > 0 && !strchr(key, '=') && strlen(a.env[i]) == kl + 1 + vl &&
                 memcmp(a.env[i], key, kl) == 0 && a.env[i][kl] == '=' &&
                 memcmp(a.env[i] + kl + 1, json_string_value(v), vl) == 0,
             "env entry %zu is not KEY=VALUE", i);
        i++;
    }
    tf_must(!a.env || a.env[i] == NULL, "env has more entries than the object");
    mcp_create_args_free(&a);
    tf_must(a.env == NULL, "free left env");
    return 0;
}

static int sandbox_stop(json_t *args, struct nsbox_err *err)
{
    struct mcp_stop_args a;
    if (mcp_args_sandbox_stop(args, &a, err) < 0)
        return tf_must(a.sandbox_id == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    return 0;
}

/* sandbox_pause and sandbox_resume: the id as given, and nothing else. */
static int pause_tool(json_t *args, struct nsbox_err *err, bool resume)
{
    struct mcp_stop_args a;
    if (mcp_args_sandbox_pause(args, resume, &a, err) < 0)
        return tf_must(a.sandbox_id == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    return 0;
}

static int sandbox_pause(json_t *args, struct nsbox_err *err)
{
    return pause_tool(args, err, false);
}

static int sandbox_resume(json_t *args, struct nsbox_err *err)
{
    return pause_tool(args, err, true);
}

static int sandbox_commit(json_t *args, struct nsbox_err *err)
{
    struct mcp_commit_args a;
    if (mcp_args_sandbox_commit(args, &a, err) < 0)
        return tf_must(a.sandbox_id == NULL && a.name == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "name", a.name);
    tf_optional_string(args, "message", a.message);
    return 0;
}

/* A run's env as taken: the call's own, every name non-empty without '='
 * or NUL, within the caps (args.h). */
static void check_run_env(json_t *args, json_t *env)
{
    tf_must(env == json_object_get(args, "env"), "env is not the call's");
    if (env == NULL)
        return;
    char **v = mcp_args_env_strings(env);
    size_t n = 0, bytes = 0;
    for (; v && v[n]; n++) {
        const char *eq = strchr(v[n], '=');
        tf_must(eq != NULL && eq > v[n], "env entry without a name");
        tf_must((size_t)(eq - v[n]) <= MCP_RUN_ENV_NAME_MAX, "env name too long");
        bytes += strlen(v[n]) + 1;
    }
    tf_must(v != NULL && n <= MCP_RUN_ENV_MAX && bytes <= MCP_RUN_ENV_BYTES,
         "env of %zu variables, %zu bytes", n, bytes);
    json_t *o = mcp_args_env_object(env);
    tf_must(o != NULL && json_object_size(o) == n, "env object of another size");
    json_decref(o);
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void check_run(json_t *args, const struct mcp_run_args *a, const char *key)
{
    /* The code is argv[2], or argv[4] for a language run by a script of
     * its own (java: sh -c SCRIPT java CODE, mcp/tools/languages.c). */
    const char *code = a->argv[3] == NULL ? a->argv[2] : a->argv[4];
    tf_whole_string(args, key, code);
    tf_must(a->argv[0] && a->argv[1] && a->argv[2] && (a->argv[3] == NULL || a->argv[5] == NULL),
         "argv not program, flag, [script, name,] code");
    tf_must(strlen(code) <= MCP_CODE_MAX, "%s longer than %d", key, MCP_CODE_MAX);
    tf_optional_string(args, "sandbox_id", a->sandbox_id);
    tf_optional_string(args, "stdin", a->stdin_data);
    tf_check_limits(args, &a->limits);
    check_run_env(args, a->env);
}

/* The code context tools: a failure fills nothing; a success has its
 * sandbox id whole, and what the tool takes. */
static int context_check(int (*dec)(json_t *, struct mcp_context_args *, struct nsbox_err *),
                         json_t *args, struct nsbox_err *err)
{
    struct mcp_context_args a;
    if (dec(args, &a, err) < 0)
        return tf_must(a.sandbox_id == NULL && a.context_id == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    if (a.cwd != NULL)
        tf_must(a.cwd[0] == '/', "cwd %s is not absolute", a.cwd);
    return 0;
}

/* context_fork: both ids whole, reseed true unless given false. */
static int context_fork(json_t *args, struct nsbox_err *err)
{
    struct mcp_context_fork_args a;
    if (mcp_args_context_fork(args, &a, err) < 0)
        return tf_must(a.sandbox_id == NULL && a.context_id == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "context_id", a.context_id);
    tf_must(a.reseed == !json_is_false(json_object_get(args, "reseed")), "reseed %d", a.reseed);
    return 0;
}

/* request_network: the three strings whole, the wait within its range. */
static int request_network(json_t *args, struct nsbox_err *err)
{
    struct mcp_request_network_args a;
    if (mcp_args_request_network(args, &a, err) < 0)
        return tf_must(a.sandbox_id == NULL && a.rule == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "rule", a.rule);
    tf_whole_string(args, "reason", a.reason);
    tf_must(a.timeout_s >= 1 && a.timeout_s <= MCP_ASK_TIMEOUT_MAX_S, "timeout_s %g", a.timeout_s);
    return 0;
}

static int context_create(json_t *args, struct nsbox_err *err)
{
    return context_check(mcp_args_context_create, args, err);
}

static int context_list(json_t *args, struct nsbox_err *err)
{
    return context_check(mcp_args_context_list, args, err);
}

static int context_restart(json_t *args, struct nsbox_err *err)
{
    int r = context_check(mcp_args_context_restart, args, err);
    return r;
}

/* terminal_open: a sandbox, a size within 1..1000 each way (80 x 24 when
 * absent). */
static int terminal_open(json_t *args, struct nsbox_err *err)
{
    struct mcp_terminal_args a;
    int r = mcp_args_terminal_open(args, &a, err);
    if (r == 0) {
        tf_must(a.sandbox_id != NULL && a.sandbox_id[0] != '\0',
                "terminal_open without a sandbox_id");
        tf_must(a.cols >= 1 && a.cols <= 1000 && a.rows >= 1 && a.rows <= 1000,
             "a terminal size out of range");
    }
    return r;
}

/* The port tools (tools/ports.h): a port within 1..65535, wait_s 0..60. */
static int port_check(int (*decode)(json_t *, struct mcp_port_args *, struct nsbox_err *),
                      json_t *args, struct nsbox_err *err)
{
    struct mcp_port_args a;
    int r = decode(args, &a, err);
    if (r == 0) {
        tf_must(a.sandbox_id != NULL && a.sandbox_id[0] != '\0',
                "a port tool without a sandbox_id");
        tf_must(a.wait_s <= MCP_PORT_WAIT_MAX, "wait_s past its maximum");
        tf_must(decode != mcp_args_port_list ? a.port >= 1 : a.port == 0, "a port out of range");
    }
    return r;
}

/* sandbox_fork, sandbox_restore: a count within 1-10, limits within the
 * ceilings; env freed. */
static int fork_check(int (*decode)(const struct mcp_server *, json_t *, struct mcp_fork_args *,
                                    struct nsbox_err *),
                      json_t *args, struct nsbox_err *err)
{
    struct mcp_fork_args a;
    int r = decode(&tf_cfg, args, &a, err);
    if (r == 0) {
        tf_must(a.count >= 1 && a.count <= MCP_FORK_MAX, "count out of range");
        tf_must(a.limits.limits.memory_mb <= tf_cfg.ceilings.memory_mb, "memory past the ceiling");
    }
    mcp_fork_args_free(&a);
    return r;
}

static int sandbox_fork(json_t *args, struct nsbox_err *err)
{
    return fork_check(mcp_args_sandbox_fork, args, err);
}

static int sandbox_restore(json_t *args, struct nsbox_err *err)
{
    return fork_check(mcp_args_sandbox_restore, args, err);
}

static int sandbox_checkpoint(json_t *args, struct nsbox_err *err)
{
    struct mcp_ckpt_args a;
    int r = mcp_args_sandbox_checkpoint(args, &a, err);
    if (r == 0)
        tf_must(a.sandbox_id != NULL && a.sandbox_id[0] != '\0', "no sandbox_id");
    return r;
}

static int checkpoint_delete(json_t *args, struct nsbox_err *err)
{
    struct mcp_ckpt_args a;
    int r = mcp_args_checkpoint_delete(args, &a, err);
    if (r == 0)
        tf_must(a.checkpoint_id != NULL && a.checkpoint_id[0] != '\0', "no checkpoint_id");
    return r;
}

static int port_expose(json_t *args, struct nsbox_err *err)
{
    return port_check(mcp_args_port_expose, args, err);
}

static int port_list(json_t *args, struct nsbox_err *err)
{
    return port_check(mcp_args_port_list, args, err);
}

static int port_close(json_t *args, struct nsbox_err *err)
{
    return port_check(mcp_args_port_close, args, err);
}

static int context_remove(json_t *args, struct nsbox_err *err)
{
    return context_check(mcp_args_context_remove, args, err);
}

/* The process tools (args_processes.c): what they accept is within
 * their bounds, strings whole. */
static int process_check(int (*fn)(json_t *, struct mcp_process_args *, struct nsbox_err *),
                         json_t *args, struct nsbox_err *err)
{
    struct mcp_process_args a;
    if (fn(args, &a, err) < 0)
        return -1;
    if (a.handle != NULL)
        tf_whole_string(args, "handle", a.handle);
    if (a.command != NULL)
        tf_whole_string(args, "command", a.command);
    tf_must(a.max_bytes <= MCP_PROCESS_LOGS_MAX, "max_bytes past its bound");
    tf_must(a.workdir == NULL || a.workdir[0] == '/', "a relative workdir");
    return 0;
}

static int process_start(json_t *args, struct nsbox_err *err)
{
    return process_check(mcp_args_process_start, args, err);
}

static int process_list(json_t *args, struct nsbox_err *err)
{
    return process_check(mcp_args_process_list, args, err);
}

static int process_logs(json_t *args, struct nsbox_err *err)
{
    return process_check(mcp_args_process_logs, args, err);
}

static int process_signal(json_t *args, struct nsbox_err *err)
{
    return process_check(mcp_args_process_signal, args, err);
}

static int process_wait(json_t *args, struct nsbox_err *err)
{
    struct mcp_process_args a;
    if (mcp_args_process_wait(&tf_cfg, args, &a, err) < 0)
        return -1;
    tf_must(a.timeout_s >= 0, "a negative timeout");
    return 0;
}

static int execute_code(json_t *args, struct nsbox_err *err)
{
    struct mcp_run_args a;
    if (mcp_args_execute_code(&tf_cfg, args, &a, err) < 0)
        return tf_must(a.argv[0] == NULL && a.language == NULL, "failed but filled"), -1;
    check_run(args, &a, "code");
    tf_must(a.language != NULL, "no language");
    if (json_object_get(args, "language"))
        tf_whole_string(args, "language", a.language);
    tf_must(a.workdir == NULL, "execute_code has no workdir");
    return 0;
}

static int run_command(json_t *args, struct nsbox_err *err)
{
    struct mcp_run_args a;
    if (mcp_args_run_command(&tf_cfg, args, &a, err) < 0)
        return tf_must(a.argv[0] == NULL, "failed but filled"), -1;
    check_run(args, &a, "command");
    tf_must(strcmp(a.argv[0], "/bin/sh") == 0 && strcmp(a.argv[1], "-c") == 0, "not sh -c");
    tf_optional_string(args, "workdir", a.workdir);
    tf_must(!a.workdir || a.workdir[0] == '/', "workdir \"%s\" is not absolute", a.workdir);
    return 0;
}

static int write_file(json_t *args, struct nsbox_err *err)
{
    struct mcp_write_args a;
    if (mcp_args_write_file(args, &a, err) < 0)
        return tf_must(a.decoded == NULL && a.content == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "path", a.path);
    tf_must(a.sandbox_id[0] && a.path[0], "empty sandbox_id or path");
    json_t *c = json_object_get(args, "content");
    const char *enc = json_string_value(json_object_get(args, "encoding"));
    tf_must(a.len <= MCP_WRITE_MAX, "%zu bytes to write", a.len);
    if (enc && strcmp(enc, "base64") == 0) {
        unsigned char *ref = malloc(json_string_length(c) + 1);
        long n = ref ? tf_reference_b64(json_string_value(c), json_string_length(c), ref) : -2;
        tf_must(n != -1, "accepted invalid base64 (%zu characters)", json_string_length(c));
        tf_must(n < 0 || ((size_t)n == a.len && memcmp(ref, a.content, a.len) == 0),
             "base64 decoded to %zu bytes, not the %ld expected", a.len, n);
        tf_must(a.decoded != NULL && a.content == (const char *)a.decoded, "content not decoded");
        free(ref);
    } else {
        tf_must(a.decoded == NULL && a.content == json_string_value(c) &&
                 a.len == json_string_length(c), "utf-8 content not the argument's");
    }
    mcp_write_args_free(&a);
    tf_must(a.decoded == NULL, "free left decoded");
    return 0;
}

static int read_file(json_t *args, struct nsbox_err *err)
{
    struct mcp_read_args a;
    if (mcp_args_read_file(args, &a, err) < 0)
        return tf_must(a.path == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "path", a.path);
    /* An integer as JSON Schema has it: 5 and 5.0 alike. */
    json_t *o = json_object_get(args, "offset");
    json_int_t want = json_is_real(o) ? (json_int_t)json_real_value(o) : json_integer_value(o);
    tf_must(a.offset >= 0 && a.offset == want, "offset %lld", (long long)a.offset);
    tf_must(a.length >= 1 && a.length <= MCP_READ_MAX, "length %zu", a.length);
    const char *enc = json_string_value(json_object_get(args, "encoding"));
    tf_must(a.base64 == (enc && strcmp(enc, "base64") == 0), "base64 flag");
    return 0;
}

static void check_list(json_t *args, const struct mcp_list_args *a)
{
    tf_whole_string(args, "sandbox_id", a->sandbox_id);
    if (json_object_get(args, "path"))
        tf_whole_string(args, "path", a->path);
    else
        tf_must(strcmp(a->path, ".") == 0, "path defaults to \".\"");
}

static int list_directory(json_t *args, struct nsbox_err *err)
{
    struct mcp_list_args a;
    if (mcp_args_list_directory(args, &a, err) < 0)
        return tf_must(a.path == NULL, "failed but filled"), -1;
    check_list(args, &a);
    tf_must(a.depth == (json_is_true(json_object_get(args, "recursive")) ? MCP_LIST_RECURSIVE_DEPTH
                                                                       : 1),
         "depth %d", a.depth);
    return 0;
}

static int project_structure(json_t *args, struct nsbox_err *err)
{
    struct mcp_list_args a;
    if (mcp_args_project_structure(args, &a, err) < 0)
        return tf_must(a.path == NULL, "failed but filled"), -1;
    check_list(args, &a);
    tf_must(a.depth >= 1 && a.depth <= MCP_TREE_DEPTH_MAX, "depth %d", a.depth);
    return 0;
}

/* The oracle for delete_path, written apart from the decoder's: keep a
 * stack of the path's names; ".." pops (at the root it stays there, above
 * the working directory it goes negative).  An empty or negative stack is
 * the root, the working directory or an ancestor of it. */
static bool whole_sandbox(const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return false;
    long names = 0;
    for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, "..") == 0)
            names = path[0] == '/' && names == 0 ? 0 : names - 1;
        else if (strcmp(c, ".") != 0)
            names++;
    }
    free(copy);
    return names <= 0;
}

static int path_tool(json_t *args, struct nsbox_err *err, bool delete)
{
    struct mcp_path_args a;
    int r = delete ? mcp_args_delete_path(args, &a, err) : mcp_args_create_directory(args, &a, err);
    if (r < 0)
        return tf_must(a.path == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "path", a.path);
    tf_must(a.path[0] != '\0', "empty path");
    tf_must(!delete || !whole_sandbox(a.path), "deleting \"%s\"", a.path);
    tf_must(delete || !a.recursive, "create_directory has no recursive");
    return 0;
}

static int create_directory(json_t *args, struct nsbox_err *err)
{
    return path_tool(args, err, false);
}

static int delete_path(json_t *args, struct nsbox_err *err)
{
    return path_tool(args, err, true);
}

static int copy_tool(json_t *args, struct nsbox_err *err, bool out)
{
    struct mcp_copy_args a;
    int r = out ? mcp_args_copy_out(&tf_cfg, args, &a, err)
                : mcp_args_copy_in(&tf_cfg, args, &a, err);
    if (r < 0)
        return tf_must(a.rel == NULL && a.name == NULL, "failed but filled"), -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "path", a.path);
    tf_whole_string(args, "host_path", a.host_path);
    tf_must(a.dir < tf_cfg.n_host_dirs, "directory %zu", a.dir);
    const char *d = tf_cfg.host_dirs[a.dir].path;
    size_t n = strlen(d);
    tf_must(strncmp(a.host_path, d, n) == 0 && a.host_path[n] == '/' &&
                a.rel == a.host_path + n + 1 && a.rel[0] != '\0',
            "\"%s\" is not below %s as \"%s\"", a.host_path, d, a.rel);
    if (!out)
        return 0;
    tf_must(a.overwrite == json_is_true(json_object_get(args, "overwrite")), "overwrite");
    tf_must(strcmp(a.name, ".") != 0 && strcmp(a.name, "..") != 0, "name \"%s\"", a.name);
    const char *slash = strrchr(a.rel, '/');
    tf_must(a.has_parent == (slash != NULL), "has_parent");
    tf_must(a.name == (slash ? slash + 1 : a.rel), "name is not what follows the last '/'");
    tf_must(!slash || (strlen(a.parent) == (size_t)(slash - a.rel) &&
                    memcmp(a.parent, a.rel, strlen(a.parent)) == 0),
         "parent \"%.40s...\" is not what precedes the last '/' of rel", a.parent);
    return 0;
}

static int copy_in(json_t *args, struct nsbox_err *err)
{
    return copy_tool(args, err, false);
}

static int copy_out(json_t *args, struct nsbox_err *err)
{
    return copy_tool(args, err, true);
}

/* upload_url: the sandbox and path as given, a cap within 1 .. the
 * server's ceiling (size_mb, or the ceiling itself). */
static int upload_url(json_t *args, struct nsbox_err *err)
{
    const uint64_t ceiling = 1024ull << 20;
    struct mcp_upload_args a;
    if (mcp_args_upload_url(ceiling, args, &a, err) < 0)
        return -1;
    tf_whole_string(args, "sandbox_id", a.sandbox_id);
    tf_whole_string(args, "path", a.path);
    tf_must(a.max_bytes >= 1 && a.max_bytes <= ceiling, "max_bytes %llu",
         (unsigned long long)a.max_bytes);
    tf_must(json_object_get(args, "size_mb") != NULL || a.max_bytes == ceiling,
         "no size_mb but max_bytes %llu", (unsigned long long)a.max_bytes);
    return 0;
}

static const struct {
    const char *name;
    int (*check)(json_t *args, struct nsbox_err *err);
} checks[] = {
    {"sandbox_create", sandbox_create}, {"sandbox_list", none},
    {"sandbox_stop", sandbox_stop},     {"execute_code", execute_code},
    {"run_command", run_command},       {"write_file", write_file},
    {"read_file", read_file},           {"list_directory", list_directory},
    {"create_directory", create_directory}, {"delete_path", delete_path},
    {"project_structure", project_structure}, {"copy_in", copy_in},
    {"copy_out", copy_out},             {"list_languages", none},
    {"list_images", none},              {"sandbox_commit", sandbox_commit},
    {"install_packages", install_packages}, {"upload_url", upload_url},
    {"context_create", context_create},     {"context_list", context_list},
    {"context_restart", context_restart},   {"context_remove", context_remove},
    {"process_start", process_start},       {"process_list", process_list},
    {"process_logs", process_logs},         {"process_signal", process_signal},
    {"process_wait", process_wait},
    {"port_expose", port_expose},           {"port_list", port_list},
    {"port_close", port_close},             {"terminal_open", terminal_open},
    {"sandbox_fork", sandbox_fork},         {"sandbox_restore", sandbox_restore},
    {"sandbox_checkpoint", sandbox_checkpoint}, {"checkpoint_delete", checkpoint_delete},
    {"checkpoint_list", none},
    {"sandbox_pause", sandbox_pause},       {"sandbox_resume", sandbox_resume},
    {"context_fork", context_fork},
    {"list_secrets", none},
    {"request_network", request_network},
};
#define N_CHECKS (sizeof(checks) / sizeof(checks[0]))

static json_t *schemas[N_CHECKS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* A tool added to the table without a decoder check here fails at
     * once, not silently unfuzzed. */
    for (size_t t = 0; t < mcp_n_tools; t++) {
        size_t i = 0;
        while (i < N_CHECKS && strcmp(checks[i].name, mcp_tools[t].name) != 0)
            i++;
        tf_tool = mcp_tools[t].name;
        tf_must(i < N_CHECKS, "in mcp_tools[] but not in fuzz_tools.c's checks");
        const struct mcp_tool_args *decl = mcp_tool_args_find(mcp_tools[t].name);
        tf_must(decl != NULL, "in mcp_tools[] but has no argument declaration (tools/args.c)");
        schemas[i] = mcp_schema_build(decl);
        tf_must(schemas[i] != NULL, "inputSchema could not be built");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    if (nl == NULL)
        return -1;
    size_t t = 0, name_len = (size_t)(nl - text);
    while (t < N_CHECKS && (strlen(checks[t].name) != name_len ||
                            memcmp(checks[t].name, text, name_len) != 0))
        t++;
    if (t == N_CHECKS || schemas[t] == NULL)
        return -1; /* not a tool: keep it out of the corpus */
    tf_tool = checks[t].name;

    const char *json = nl + 1;
    size_t len = size - name_len - 1;
    if (jsonrpc_too_deep(json, len, MCP_DEPTH_MAX))
        return 0;
    json_t *args = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    if (!json_is_object(args)) {
        json_decref(args);
        return 0;
    }
    struct nsbox_err err = {0};
    if (checks[t].check(args, &err) == 0) {
        tf_must(err.msg[0] == '\0' && err.code == 0, "succeeded with an error: %s", err.msg);
        tf_check_schema(schemas[t], args);
    } else {
        tf_must(err.msg[0] != '\0', "failed without a message");
    }
    json_decref(args);
    return 0;
}
