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
 *     splits back into exactly itself. */
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

static const char *tool_name = "";

/* Aborts, saying why, unless cond holds. */
__attribute__((format(printf, 2, 3))) static void must(bool cond, const char *fmt, ...)
{
    va_list ap;
    if (cond)
        return;
    fprintf(stderr, "fuzz-tools: %s: ", tool_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* The configuration the decoders read: serve's defaults and ceilings, and
 * two allowed host directories, one a prefix of the other's name. */
static struct mcp_server cfg = {
    .defaults = {.memory_mb = 512, .cpus = 1, .pids = 256, .timeout_s = 30},
    .ceilings = {.memory_mb = 4096, .cpus = 4, .pids = 4096, .timeout_s = 600},
    .host_dirs = {{"/srv/share", -1}, {"/srv/share2", -1}},
    .n_host_dirs = 2,
};

/* ---- generic checks ---- */

/* s came from args[key] whole: same pointer, no NUL inside. */
static void whole_string(json_t *args, const char *key, const char *s)
{
    json_t *v = json_object_get(args, key);
    must(json_is_string(v) && json_string_value(v) == s, "%s is not the argument's string", key);
    must(strlen(s) == json_string_length(v), "%s holds a NUL byte", key);
}

static void optional_string(json_t *args, const char *key, const char *s)
{
    if (json_object_get(args, key) != NULL || s != NULL)
        whole_string(args, key, s);
}

static void check_limits(json_t *args, const struct mcp_limit_args *a)
{
    const struct mcp_limits *l = &a->limits, *d = &cfg.defaults, *c = &cfg.ceilings;
    must(a->has_memory == (json_object_get(args, "memory_mb") != NULL), "has_memory");
    must(a->has_cpus == (json_object_get(args, "cpus") != NULL), "has_cpus");
    must(a->has_pids == (json_object_get(args, "pids") != NULL), "has_pids");
    must(a->has_timeout == (json_object_get(args, "timeout_s") != NULL), "has_timeout");
    must(a->has_memory ? l->memory_mb >= 16 && l->memory_mb <= c->memory_mb
                       : l->memory_mb == d->memory_mb, "memory_mb %llu",
         (unsigned long long)l->memory_mb);
    must(a->has_cpus ? l->cpus >= 0.01 && l->cpus <= c->cpus : l->cpus == d->cpus, "cpus %g",
         l->cpus);
    must(a->has_pids ? l->pids >= 8 && l->pids <= c->pids : l->pids == d->pids, "pids %u",
         l->pids);
    must(a->has_timeout ? l->timeout_s >= 0.1 && l->timeout_s <= c->timeout_s
                        : l->timeout_s == d->timeout_s, "timeout_s %g", l->timeout_s);
}

static bool integral(json_t *v)
{
    return json_is_integer(v) ||
           (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
}

static bool has_type(json_t *v, const char *type)
{
    return strcmp(type, "string") == 0    ? json_is_string(v)
           : strcmp(type, "number") == 0  ? json_is_number(v)
           : strcmp(type, "integer") == 0 ? integral(v)
           : strcmp(type, "boolean") == 0 ? json_is_boolean(v)
           : strcmp(type, "object") == 0  ? json_is_object(v)
           : strcmp(type, "array") == 0   ? json_is_array(v)
                                          : false;
}

/* A string map as accepted: pairs with a non-empty string name and a
 * string value and nothing else, or an object of strings. */
static void check_pairs(const char *key, json_t *v)
{
    json_t *e, *x;
    const char *k;
    size_t i;

    json_array_foreach(v, i, e) {
        x = json_object_get(e, "name");
        must(json_is_object(e) && json_object_size(e) == 2 && json_is_string(x) &&
                 json_string_length(x) > 0 && json_is_string(json_object_get(e, "value")),
             "accepted %s[%zu] that is not a {name, value} pair of strings", key, i);
    }
    json_object_foreach(json_is_object(v) ? v : NULL, k, x)
        must(json_is_string(x), "accepted %s.%s of the wrong type", key, k);
}

/* What was accepted satisfies the tool's inputSchema (the part of JSON
 * Schema the table uses). */
static void check_schema(json_t *schema, json_t *args)
{
    json_t *props = json_object_get(schema, "properties"), *v, *p;
    const char *key;
    size_t i;

    json_array_foreach(json_object_get(schema, "required"), i, v)
        must(json_object_get(args, json_string_value(v)) != NULL, "accepted without %s",
             json_string_value(v));
    json_object_foreach(args, key, v) {
        p = json_object_get(props, key);
        must(p != NULL, "accepted the unknown argument \"%s\"", key);
        const char *type = json_string_value(json_object_get(p, "type"));
        json_t *pairs = json_object_get(json_object_get(p, "items"), "properties");
        bool map = json_object_get(pairs, "name") != NULL && json_object_get(pairs, "value") != NULL;
        /* A string map (env) is declared as [{name, value}] pairs and also
         * taken as an object of strings (mcp/tools/schema.c, docs/tools.md). */
        must(has_type(v, type) || (map && json_is_object(v)), "accepted %s of the wrong type (not %s)",
             key, type);
        check_pairs(key, map ? v : NULL);
        json_t *en = json_object_get(p, "enum"), *e;
        bool found = en == NULL;
        json_array_foreach(en, i, e)
            found = found || json_equal(e, v);
        must(found, "accepted %s outside its enum", key);
        json_t *lo = json_object_get(p, "minimum"), *hi = json_object_get(p, "maximum");
        must(!lo || json_number_value(v) >= json_number_value(lo), "%s below its minimum", key);
        must(!hi || json_number_value(v) <= json_number_value(hi), "%s above its maximum", key);
        json_t *items = json_object_get(json_object_get(p, "additionalProperties"), "type");
        const char *k2;
        json_t *v2;
        json_object_foreach(json_is_object(v) && items ? v : NULL, k2, v2)
            must(has_type(v2, json_string_value(items)), "accepted %s.%s of the wrong type",
                 key, k2);
    }
}

/* ---- an independent base64 decoder, for write_file ---- */

static int b64_value(unsigned char c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

/* RFC 4648 base64 with the padding optional: either none or the right
 * amount; no other character; no dangling sixth of a byte.  Returns the
 * length decoded into out, or -1. */
static long reference_b64(const char *in, size_t n, unsigned char *out)
{
    size_t pad = 0;
    while (n > 0 && in[n - 1] == '=')
        n--, pad++;
    if (n % 4 == 1 || pad > 2 || (pad > 0 && (n + pad) % 4 != 0))
        return -1;
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_value((unsigned char)in[i]);
        if (d < 0)
            return -1;
        v = v << 6 | (unsigned)d;
        if ((bits += 6) >= 8)
            out[o++] = (unsigned char)(v >> (bits -= 8));
    }
    return (long)o;
}

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
    must(p->given, "packages decoded but not marked given");
    must((p->n_packages > 0) != (p->requirements_file != NULL), "both a list and a file, or none");
    must(p->n_packages <= MCP_PKG_MAX && p->packages[p->n_packages] == NULL, "list not terminated");
    for (size_t i = 0; i < p->n_packages; i++) {
        const char *v = p->packages[i];
        must(v == json_string_value(json_array_get(list, i)), "packages[%zu] is not the argument", i);
        must(v[0] != '\0' && v[0] != '-' && strlen(v) <= MCP_PKG_SPEC_MAX && !strpbrk(v, "\r\n") &&
                 strlen(v) == json_string_length(json_array_get(list, i)),
             "packages[%zu] \"%s\" let through", i, v);
    }
    if (p->requirements_file != NULL) {
        whole_string(o, "requirements_file", p->requirements_file);
        must(p->requirements_file[0] != '-', "requirements_file is an option");
    }
    json_t *m = json_object_get(o, "manager");
    must(!m || strcmp(json_string_value(m), box_pkg_manager_name(p->manager)) == 0,
         "manager not the argument's");
}

static int install_packages(json_t *args, struct nsbox_err *err)
{
    struct mcp_install_args a;
    if (mcp_args_install_packages(&cfg, args, &a, err) < 0)
        return -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    must(a.timeout_s > 0 && a.timeout_s <= cfg.ceilings.timeout_s, "timeout_s %g", a.timeout_s);
    check_packages(args, &a.packages);
    return 0;
}

static int sandbox_create(json_t *args, struct nsbox_err *err)
{
    struct mcp_create_args a;
    if (mcp_args_sandbox_create(&cfg, args, &a, err) < 0) {
        must(a.env == NULL && a.image == NULL && a.workspace == NULL, "failed but filled");
        return -1;
    }
    optional_string(args, "image", a.image);
    json_t *pk = json_object_get(args, "packages");
    must((pk != NULL) == a.packages.given, "packages given but not decoded, or the reverse");
    if (pk != NULL)
        check_packages(pk, &a.packages);
    must(a.language != NULL, "no language");
    if (json_object_get(args, "language"))
        whole_string(args, "language", a.language);
    optional_string(args, "workdir", a.workdir);
    must(!a.workdir || a.workdir[0] == '/', "workdir \"%s\" is not absolute", a.workdir);
    optional_string(args, "workspace", a.workspace);
    must(!a.workspace || box_workspace_name_ok(a.workspace), "workspace \"%s\"", a.workspace);
    check_limits(args, &a.limits);
    json_t *env = json_object_get(args, "env"), *v;
    const char *key;
    size_t i = 0;
    must((env != NULL) == (a.env != NULL), "env given but not decoded, or the reverse");
    json_object_foreach(env, key, v) {
        size_t kl = strlen(key), vl = json_string_length(v);
        must(a.env[i] != NULL, "env has fewer entries than the object");
        must(kl > 0 && !strchr(key, '=') && strlen(a.env[i]) == kl + 1 + vl &&
                 memcmp(a.env[i], key, kl) == 0 && a.env[i][kl] == '=' &&
                 memcmp(a.env[i] + kl + 1, json_string_value(v), vl) == 0,
             "env entry %zu is not KEY=VALUE", i);
        i++;
    }
    must(!a.env || a.env[i] == NULL, "env has more entries than the object");
    mcp_create_args_free(&a);
    must(a.env == NULL, "free left env");
    return 0;
}

static int sandbox_stop(json_t *args, struct nsbox_err *err)
{
    struct mcp_stop_args a;
    if (mcp_args_sandbox_stop(args, &a, err) < 0)
        return must(a.sandbox_id == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    return 0;
}

/* sandbox_pause and sandbox_resume: the id as given, and nothing else. */
static int pause_tool(json_t *args, struct nsbox_err *err, bool resume)
{
    struct mcp_stop_args a;
    if (mcp_args_sandbox_pause(args, resume, &a, err) < 0)
        return must(a.sandbox_id == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
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
        return must(a.sandbox_id == NULL && a.name == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "name", a.name);
    optional_string(args, "message", a.message);
    return 0;
}

/* A run's env as taken: the call's own, every name non-empty without '='
 * or NUL, within the caps (args.h). */
static void check_run_env(json_t *args, json_t *env)
{
    must(env == json_object_get(args, "env"), "env is not the call's");
    if (env == NULL)
        return;
    char **v = mcp_args_env_strings(env);
    size_t n = 0, bytes = 0;
    for (; v && v[n]; n++) {
        const char *eq = strchr(v[n], '=');
        must(eq != NULL && eq > v[n], "env entry without a name");
        must((size_t)(eq - v[n]) <= MCP_RUN_ENV_NAME_MAX, "env name too long");
        bytes += strlen(v[n]) + 1;
    }
    must(v != NULL && n <= MCP_RUN_ENV_MAX && bytes <= MCP_RUN_ENV_BYTES,
         "env of %zu variables, %zu bytes", n, bytes);
    json_t *o = mcp_args_env_object(env);
    must(o != NULL && json_object_size(o) == n, "env object of another size");
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
    whole_string(args, key, code);
    must(a->argv[0] && a->argv[1] && a->argv[2] && (a->argv[3] == NULL || a->argv[5] == NULL),
         "argv not program, flag, [script, name,] code");
    must(strlen(code) <= MCP_CODE_MAX, "%s longer than %d", key, MCP_CODE_MAX);
    optional_string(args, "sandbox_id", a->sandbox_id);
    optional_string(args, "stdin", a->stdin_data);
    check_limits(args, &a->limits);
    check_run_env(args, a->env);
}

/* The code context tools: a failure fills nothing; a success has its
 * sandbox id whole, and what the tool takes. */
static int context_check(int (*dec)(json_t *, struct mcp_context_args *, struct nsbox_err *),
                         json_t *args, struct nsbox_err *err)
{
    struct mcp_context_args a;
    if (dec(args, &a, err) < 0)
        return must(a.sandbox_id == NULL && a.context_id == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    if (a.cwd != NULL)
        must(a.cwd[0] == '/', "cwd %s is not absolute", a.cwd);
    return 0;
}

/* context_fork: both ids whole, reseed true unless given false. */
static int context_fork(json_t *args, struct nsbox_err *err)
{
    struct mcp_context_fork_args a;
    if (mcp_args_context_fork(args, &a, err) < 0)
        return must(a.sandbox_id == NULL && a.context_id == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "context_id", a.context_id);
    must(a.reseed == !json_is_false(json_object_get(args, "reseed")), "reseed %d", a.reseed);
    return 0;
}

/* request_network: the three strings whole, the wait within its range. */
static int request_network(json_t *args, struct nsbox_err *err)
{
    struct mcp_request_network_args a;
    if (mcp_args_request_network(args, &a, err) < 0)
        return must(a.sandbox_id == NULL && a.rule == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "rule", a.rule);
    whole_string(args, "reason", a.reason);
    must(a.timeout_s >= 1 && a.timeout_s <= MCP_ASK_TIMEOUT_MAX_S, "timeout_s %g", a.timeout_s);
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
        must(a.sandbox_id != NULL && a.sandbox_id[0] != '\0', "terminal_open without a sandbox_id");
        must(a.cols >= 1 && a.cols <= 1000 && a.rows >= 1 && a.rows <= 1000,
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
        must(a.sandbox_id != NULL && a.sandbox_id[0] != '\0', "a port tool without a sandbox_id");
        must(a.wait_s <= MCP_PORT_WAIT_MAX, "wait_s past its maximum");
        must(decode != mcp_args_port_list ? a.port >= 1 : a.port == 0, "a port out of range");
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
    int r = decode(&cfg, args, &a, err);
    if (r == 0) {
        must(a.count >= 1 && a.count <= MCP_FORK_MAX, "count out of range");
        must(a.limits.limits.memory_mb <= cfg.ceilings.memory_mb, "memory past the ceiling");
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
        must(a.sandbox_id != NULL && a.sandbox_id[0] != '\0', "no sandbox_id");
    return r;
}

static int checkpoint_delete(json_t *args, struct nsbox_err *err)
{
    struct mcp_ckpt_args a;
    int r = mcp_args_checkpoint_delete(args, &a, err);
    if (r == 0)
        must(a.checkpoint_id != NULL && a.checkpoint_id[0] != '\0', "no checkpoint_id");
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
        whole_string(args, "handle", a.handle);
    if (a.command != NULL)
        whole_string(args, "command", a.command);
    must(a.max_bytes <= MCP_PROCESS_LOGS_MAX, "max_bytes past its bound");
    must(a.workdir == NULL || a.workdir[0] == '/', "a relative workdir");
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
    if (mcp_args_process_wait(&cfg, args, &a, err) < 0)
        return -1;
    must(a.timeout_s >= 0, "a negative timeout");
    return 0;
}

static int execute_code(json_t *args, struct nsbox_err *err)
{
    struct mcp_run_args a;
    if (mcp_args_execute_code(&cfg, args, &a, err) < 0)
        return must(a.argv[0] == NULL && a.language == NULL, "failed but filled"), -1;
    check_run(args, &a, "code");
    must(a.language != NULL, "no language");
    if (json_object_get(args, "language"))
        whole_string(args, "language", a.language);
    must(a.workdir == NULL, "execute_code has no workdir");
    return 0;
}

static int run_command(json_t *args, struct nsbox_err *err)
{
    struct mcp_run_args a;
    if (mcp_args_run_command(&cfg, args, &a, err) < 0)
        return must(a.argv[0] == NULL, "failed but filled"), -1;
    check_run(args, &a, "command");
    must(strcmp(a.argv[0], "/bin/sh") == 0 && strcmp(a.argv[1], "-c") == 0, "not sh -c");
    optional_string(args, "workdir", a.workdir);
    must(!a.workdir || a.workdir[0] == '/', "workdir \"%s\" is not absolute", a.workdir);
    return 0;
}

static int write_file(json_t *args, struct nsbox_err *err)
{
    struct mcp_write_args a;
    if (mcp_args_write_file(args, &a, err) < 0)
        return must(a.decoded == NULL && a.content == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "path", a.path);
    must(a.sandbox_id[0] && a.path[0], "empty sandbox_id or path");
    json_t *c = json_object_get(args, "content");
    const char *enc = json_string_value(json_object_get(args, "encoding"));
    must(a.len <= MCP_WRITE_MAX, "%zu bytes to write", a.len);
    if (enc && strcmp(enc, "base64") == 0) {
        unsigned char *ref = malloc(json_string_length(c) + 1);
        long n = ref ? reference_b64(json_string_value(c), json_string_length(c), ref) : -2;
        must(n != -1, "accepted invalid base64 (%zu characters)", json_string_length(c));
        must(n < 0 || ((size_t)n == a.len && memcmp(ref, a.content, a.len) == 0),
             "base64 decoded to %zu bytes, not the %ld expected", a.len, n);
        must(a.decoded != NULL && a.content == (const char *)a.decoded, "content not decoded");
        free(ref);
    } else {
        must(a.decoded == NULL && a.content == json_string_value(c) &&
                 a.len == json_string_length(c), "utf-8 content not the argument's");
    }
    mcp_write_args_free(&a);
    must(a.decoded == NULL, "free left decoded");
    return 0;
}

static int read_file(json_t *args, struct nsbox_err *err)
{
    struct mcp_read_args a;
    if (mcp_args_read_file(args, &a, err) < 0)
        return must(a.path == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "path", a.path);
    /* An integer as JSON Schema has it: 5 and 5.0 alike. */
    json_t *o = json_object_get(args, "offset");
    json_int_t want = json_is_real(o) ? (json_int_t)json_real_value(o) : json_integer_value(o);
    must(a.offset >= 0 && a.offset == want, "offset %lld", (long long)a.offset);
    must(a.length >= 1 && a.length <= MCP_READ_MAX, "length %zu", a.length);
    const char *enc = json_string_value(json_object_get(args, "encoding"));
    must(a.base64 == (enc && strcmp(enc, "base64") == 0), "base64 flag");
    return 0;
}

static void check_list(json_t *args, const struct mcp_list_args *a)
{
    whole_string(args, "sandbox_id", a->sandbox_id);
    if (json_object_get(args, "path"))
        whole_string(args, "path", a->path);
    else
        must(strcmp(a->path, ".") == 0, "path defaults to \".\"");
}

static int list_directory(json_t *args, struct nsbox_err *err)
{
    struct mcp_list_args a;
    if (mcp_args_list_directory(args, &a, err) < 0)
        return must(a.path == NULL, "failed but filled"), -1;
    check_list(args, &a);
    must(a.depth == (json_is_true(json_object_get(args, "recursive")) ? MCP_LIST_RECURSIVE_DEPTH
                                                                       : 1),
         "depth %d", a.depth);
    return 0;
}

static int project_structure(json_t *args, struct nsbox_err *err)
{
    struct mcp_list_args a;
    if (mcp_args_project_structure(args, &a, err) < 0)
        return must(a.path == NULL, "failed but filled"), -1;
    check_list(args, &a);
    must(a.depth >= 1 && a.depth <= MCP_TREE_DEPTH_MAX, "depth %d", a.depth);
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
        return must(a.path == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "path", a.path);
    must(a.path[0] != '\0', "empty path");
    must(!delete || !whole_sandbox(a.path), "deleting \"%s\"", a.path);
    must(delete || !a.recursive, "create_directory has no recursive");
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
    int r = out ? mcp_args_copy_out(&cfg, args, &a, err) : mcp_args_copy_in(&cfg, args, &a, err);
    if (r < 0)
        return must(a.rel == NULL && a.name == NULL, "failed but filled"), -1;
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "path", a.path);
    whole_string(args, "host_path", a.host_path);
    must(a.dir < cfg.n_host_dirs, "directory %zu", a.dir);
    const char *d = cfg.host_dirs[a.dir].path;
    size_t n = strlen(d);
    must(strncmp(a.host_path, d, n) == 0 && a.host_path[n] == '/' && a.rel == a.host_path + n + 1 &&
             a.rel[0] != '\0', "\"%s\" is not below %s as \"%s\"", a.host_path, d, a.rel);
    if (!out)
        return 0;
    must(a.overwrite == json_is_true(json_object_get(args, "overwrite")), "overwrite");
    must(strcmp(a.name, ".") != 0 && strcmp(a.name, "..") != 0, "name \"%s\"", a.name);
    const char *slash = strrchr(a.rel, '/');
    must(a.has_parent == (slash != NULL), "has_parent");
    must(a.name == (slash ? slash + 1 : a.rel), "name is not what follows the last '/'");
    must(!slash || (strlen(a.parent) == (size_t)(slash - a.rel) &&
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
    whole_string(args, "sandbox_id", a.sandbox_id);
    whole_string(args, "path", a.path);
    must(a.max_bytes >= 1 && a.max_bytes <= ceiling, "max_bytes %llu",
         (unsigned long long)a.max_bytes);
    must(json_object_get(args, "size_mb") != NULL || a.max_bytes == ceiling,
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
        tool_name = mcp_tools[t].name;
        must(i < N_CHECKS, "in mcp_tools[] but not in fuzz_tools.c's checks");
        const struct mcp_tool_args *decl = mcp_tool_args_find(mcp_tools[t].name);
        must(decl != NULL, "in mcp_tools[] but has no argument declaration (tools/args.c)");
        schemas[i] = mcp_schema_build(decl);
        must(schemas[i] != NULL, "inputSchema could not be built");
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
    tool_name = checks[t].name;

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
        must(err.msg[0] == '\0' && err.code == 0, "succeeded with an error: %s", err.msg);
        check_schema(schemas[t], args);
    } else {
        must(err.msg[0] != '\0', "failed without a message");
    }
    json_decref(args);
    return 0;
}
