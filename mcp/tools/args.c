/* Tool arguments as typed C structs (see args.h).  Each tool's
 * arguments are declared once, in a table below (schema.h): tools/list
 * shows the schema built from it and every call is checked against it
 * first.  A decoder here then does only what a table cannot say, in the
 * order the tool needs it, so the first problem is the one reported. */
#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/box.h"
#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "languages.h"
#include "schema.h"

/* ---- the declarations ---- */

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define DECL(t, f)                                                                                 \
    {                                                                                              \
        .tool = t, .fields = f, .n_fields = N(f)                                                   \
    }
#define NO_ARGS(t)                                                                                 \
    {                                                                                              \
        .tool = t                                                                                  \
    }

static const char *const encodings[] = {"utf-8", "base64", NULL};

/* A field: its name, type, MCP_ARG_* flags, then what it needs of the
 * rest of struct mcp_arg (.description, .dflt, ...). */
#define ARG(n, t, f, ...)                                                                          \
    {                                                                                              \
        .name = n, .type = MCP_ARG_##t, .flags = (f), __VA_ARGS__                                  \
    }
#define REQUIRED MCP_ARG_REQUIRED
#define NONEMPTY MCP_ARG_NONEMPTY

/* The handle a stateless client passes on every call: routers may route
 * on it (Mcp-Param-Sandbox-Id over Streamable HTTP, 2026-07-28). */
#define SANDBOX_ID_HEADER "Sandbox-Id"
#define SANDBOX_ID ARG("sandbox_id", STRING, REQUIRED | NONEMPTY, .header = SANDBOX_ID_HEADER)
#define SANDBOX_ID_OPTIONAL ARG("sandbox_id", STRING, NONEMPTY, .header = SANDBOX_ID_HEADER)
#define PATH ARG("path", STRING, REQUIRED | NONEMPTY)
#define HOST_PATH                                                                                  \
    ARG("host_path", STRING, REQUIRED | NONEMPTY,                                                  \
        .description = "absolute, inside an allowed directory")
/* Their ranges come from the server's ceilings (limit_args). */
#define LIMITS                                                                                     \
    ARG("memory_mb", NUMBER, 0, .description = "memory limit in MiB"),                             \
        ARG("cpus", NUMBER, 0, .description = "CPU limit, e.g. 0.5"),                              \
        ARG("pids", INTEGER, 0, .description = "most processes and threads"),                      \
        ARG("timeout_s", NUMBER, 0, .description = "wall-clock limit in seconds"),                 \
        ARG("disk_mb", NUMBER, 0,                                                                  \
            .description = "the sandbox's writable files in total (/workspace and every "          \
                           "writable path but /tmp and /dev/shm), in MiB")

static const char *const managers[] = {"pip", "npm", "apt", NULL};
#define PACKAGES_SCHEMA "\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":64"
/* Checked against the operator's ceiling by the tool (tools/network.c). */
#define NETWORK                                                                                    \
    ARG("network", STRING_LIST, 0,                                                                 \
        .description = "what the sandbox may reach (default: nothing, no network), within the "    \
                       "operator's allow-list (serve --allow-net): host names (pypi.org), "        \
                       "NAME:PORT, *.SUFFIX, presets (pypi, npm, debian, github), or an "          \
                       "operator's IP:PORT or NAME=IP:PORT rule as written there; results list "   \
                       "what was tried, allowed or refused, in network",                           \
        .max_len = 64)

static const struct mcp_arg create_fields[] = {
    ARG("image", STRING, 0, .description = "image reference (see list_images)"),
    /* Any sandbox.language label, not only the languages execute_code runs. */
    ARG("language", STRING, 0, .description = "pick the image serving this language"),
    LIMITS,
    ARG("env", STRING_MAP, 0),
    ARG("workdir", STRING, 0, .description = "absolute path, default /workspace"),
    ARG("workspace", STRING, 0,
        .description = "name of a persistent workspace mounted at workdir: its files outlive "
                       "the sandbox and the server"),
    ARG("workspace_mb", NUMBER, 0,
        .description = "with workspace: its budget in MiB (once over, commands and writes are "
                       "refused until files are deleted)"),
    ARG("packages", JSON, 0,
        .schema = "\"type\":\"object\",\"properties\":{\"manager\":{\"type\":\"string\","
                  "\"enum\":[\"pip\",\"npm\",\"apt\"]},\"packages\":{" PACKAGES_SCHEMA "},"
                  "\"requirements_file\":{\"type\":\"string\"}},\"additionalProperties\":false",
        .description = "install these at creation, as install_packages does (a set installed "
                       "before comes from the cache, without network)"),
    NETWORK,
};
#define PACKAGE_FIELDS                                                                             \
    ARG("manager", STRING, 0, .choices = managers,                                                 \
        .description = "pip, npm or apt (implied by a requirements.txt or package.json)"),         \
        ARG("packages", JSON, 0, .schema = PACKAGES_SCHEMA,                                        \
            .description = "specifications as the manager takes them (\"requests==2.31\", "        \
                           "\"lodash@4\", \"jq\")"),                                               \
        ARG("requirements_file", STRING, NONEMPTY,                                                 \
            .description = "instead of packages: a requirements.txt (pip) or package.json "        \
                           "(npm) in the sandbox, relative to its working directory",              \
            .max_len = 1024)
static const struct mcp_arg install_fields[] = {
    SANDBOX_ID,
    PACKAGE_FIELDS,
    ARG("timeout_s", NUMBER, 0, .description = "wall-clock limit of the install (300)"),
};
static const struct mcp_arg stop_fields[] = {SANDBOX_ID};
static const struct mcp_arg commit_fields[] = {
    SANDBOX_ID,
    ARG("name", STRING, REQUIRED | NONEMPTY,
        .description = "NAME[:TAG] (a-z 0-9 . _ -): the image becomes "
                       "localhost/nsbox-commit/NAME[:TAG]",
        .max_len = 160),
    ARG("message", STRING, 0, .description = "a comment kept in the image's history",
        .max_len = 1024),
};
/* Code travels in argv (MCP_CODE_MAX). */
static const struct mcp_arg execute_fields[] = {
    ARG("code", STRING, REQUIRED, .description = "the program's source", .max_len = MCP_CODE_MAX,
        .long_hint = "; write it to a file and run it with run_command"),
    ARG("language", STRING, MCP_ARG_LANGUAGE, .description = "(see list_languages)",
        .dflt = MCP_LANGUAGE_DEFAULT),
    SANDBOX_ID_OPTIONAL,
    ARG("stdin", STRING, 0),
    ARG("fresh", BOOLEAN, 0,
        .description = "with sandbox_id: run as a new process instead of in the sandbox's "
                       "persistent interpreter (python, javascript, typescript keep state "
                       "between calls)"),
    ARG("restart", BOOLEAN, 0,
        .description = "with sandbox_id: restart the persistent interpreter first (its "
                       "variables are gone)"),
    LIMITS,
    NETWORK,
};
static const struct mcp_arg run_fields[] = {
    ARG("command", STRING, REQUIRED, .max_len = MCP_CODE_MAX),
    SANDBOX_ID_OPTIONAL,
    ARG("stdin", STRING, 0),
    ARG("workdir", STRING, 0, .description = "absolute path inside the sandbox"),
    LIMITS,
    NETWORK,
};
static const struct mcp_arg write_fields[] = {
    SANDBOX_ID,
    PATH,
    ARG("content", STRING, REQUIRED | MCP_ARG_NUL_OK),
    ARG("encoding", STRING, 0, .dflt = "utf-8", .choices = encodings),
    ARG("append", BOOLEAN, 0),
};
static const struct mcp_arg read_fields[] = {
    SANDBOX_ID,
    PATH,
    ARG("encoding", STRING, 0, .choices = encodings),
    ARG("offset", INTEGER, 0, .has_min = true, .min = 0),
    ARG("length", INTEGER, 0, .has_min = true, .min = 1),
};
static const struct mcp_arg list_fields[] = {
    SANDBOX_ID,
    ARG("path", STRING, 0, .dflt = "."),
    ARG("recursive", BOOLEAN, 0),
};
static const struct mcp_arg mkdir_fields[] = {SANDBOX_ID, PATH};
static const struct mcp_arg delete_fields[] = {SANDBOX_ID, PATH, ARG("recursive", BOOLEAN, 0)};
static const struct mcp_arg tree_fields[] = {
    SANDBOX_ID,
    ARG("path", STRING, 0),
    ARG("depth", INTEGER, 0, .has_min = true, .min = 1, .has_max = true, .max = MCP_TREE_DEPTH_MAX),
};
static const struct mcp_arg copy_in_fields[] = {SANDBOX_ID, HOST_PATH, PATH};
static const struct mcp_arg copy_out_fields[] = {
    SANDBOX_ID,
    PATH,
    HOST_PATH,
    ARG("overwrite", BOOLEAN, 0),
};

/* The decoders below name their tool's declaration by these. */
enum {
    SANDBOX_CREATE,
    SANDBOX_LIST,
    SANDBOX_STOP,
    SANDBOX_COMMIT,
    EXECUTE_CODE,
    RUN_COMMAND,
    WRITE_FILE,
    READ_FILE,
    LIST_DIRECTORY,
    CREATE_DIRECTORY,
    DELETE_PATH,
    PROJECT_STRUCTURE,
    COPY_IN,
    COPY_OUT,
    LIST_LANGUAGES,
    LIST_IMAGES,
    INSTALL_PACKAGES,
    N_TOOLS
};

static const struct mcp_tool_args decls[N_TOOLS] = {
    [SANDBOX_CREATE] = DECL("sandbox_create", create_fields),
    [SANDBOX_LIST] = NO_ARGS("sandbox_list"),
    [SANDBOX_STOP] = DECL("sandbox_stop", stop_fields),
    [SANDBOX_COMMIT] = DECL("sandbox_commit", commit_fields),
    [EXECUTE_CODE] = DECL("execute_code", execute_fields),
    [RUN_COMMAND] = DECL("run_command", run_fields),
    [WRITE_FILE] = DECL("write_file", write_fields),
    [READ_FILE] = DECL("read_file", read_fields),
    [LIST_DIRECTORY] = DECL("list_directory", list_fields),
    [CREATE_DIRECTORY] = DECL("create_directory", mkdir_fields),
    [DELETE_PATH] = DECL("delete_path", delete_fields),
    [PROJECT_STRUCTURE] = DECL("project_structure", tree_fields),
    [COPY_IN] = DECL("copy_in", copy_in_fields),
    [COPY_OUT] = DECL("copy_out", copy_out_fields),
    [LIST_LANGUAGES] = NO_ARGS("list_languages"),
    [LIST_IMAGES] = NO_ARGS("list_images"),
    [INSTALL_PACKAGES] = DECL("install_packages", install_fields),
};

const struct mcp_tool_args *mcp_tool_args_find(const char *tool)
{
    for (size_t i = 0; i < N(decls); i++)
        if (strcmp(decls[i].tool, tool) == 0)
            return &decls[i];
    return NULL;
}

const struct mcp_tool_args *mcp_tool_args_all(size_t *n)
{
    *n = N(decls);
    return decls;
}

/* ---- helpers ---- */

/* One limit: the default unless named, then within lo..hi (hi: the
 * server's ceiling). */
static int limit_arg(json_t *args, const char *key, double lo, double hi, bool integer, double *v,
                     bool *given, struct nsbox_err *err)
{
    *v = mcp_arg_number(args, key, *v, given);
    if (*given && (*v < lo || *v > hi))
        return nsbox_err_set(err, 0, "%s must be %s from %g to %g", key,
                             integer ? "an integer" : "a number", lo, hi);
    return 0;
}

/* A size in MiB within lo..the ceiling that serve's option `ceiling` sets,
 * said in the error. */
static int size_arg(json_t *args, const char *key, uint64_t lo, uint64_t hi, const char *ceiling,
                    uint64_t *mb, bool *given, struct nsbox_err *err)
{
    double v = mcp_arg_number(args, key, (double)*mb, given);
    if (*given && (v < (double)lo || v > (double)hi))
        return nsbox_err_set(err, 0,
                             "%s must be from %llu to %llu MiB (the server's ceiling, serve "
                             "--%s); %g asked for",
                             key, (unsigned long long)lo, (unsigned long long)hi, ceiling, v);
    if (*given)
        *mb = (uint64_t)v;
    return 0;
}

/* memory_mb, cpus, pids, timeout_s, disk_mb: the defaults, or within the ceilings.
 * Their types were checked with the rest (pids an integer: fuzz_tools
 * found 8.5 accepted, and cut to 8, before). */
static int limit_args(const struct mcp_server *cfg, json_t *args, struct mcp_limit_args *out,
                      struct nsbox_err *err)
{
    double mem = (double)cfg->defaults.memory_mb, pids = cfg->defaults.pids;
    struct mcp_limits *l = &out->limits;

    *l = cfg->defaults;
    if (limit_arg(args, "memory_mb", 16, (double)cfg->ceilings.memory_mb, false, &mem,
                  &out->has_memory, err) < 0 ||
        limit_arg(args, "cpus", 0.01, cfg->ceilings.cpus, false, &l->cpus, &out->has_cpus, err) <
            0 ||
        limit_arg(args, "pids", 8, cfg->ceilings.pids, true, &pids, &out->has_pids, err) < 0 ||
        limit_arg(args, "timeout_s", 0.1, cfg->ceilings.timeout_s, false, &l->timeout_s,
                  &out->has_timeout, err) < 0 ||
        size_arg(args, "disk_mb", 16, cfg->ceilings.disk_mb, "max-disk", &l->disk_mb,
                 &out->has_disk, err) < 0)
        return -1;
    l->memory_mb = (uint64_t)mem;
    l->pids = (uint32_t)pids;
    return 0;
}

static const char *str(int tool, json_t *args, const char *name)
{
    return mcp_arg_string(&decls[tool], args, name);
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

/* ---- env ---- */

/* {"KEY": "VALUE", ...} as "KEY=VALUE" strings (NULL-terminated). */
static int env_strings(json_t *env, char ***out, struct nsbox_err *err)
{
    const char *key;
    json_t *value;
    size_t i = 0;
    _cleanup_strv_ char **v = calloc(json_object_size(env) + 1, sizeof(char *));

    if (v == NULL)
        return nsbox_err_set(err, 0, "out of memory");
    json_object_foreach (env, key, value) {
        if (key[0] == '\0' || strchr(key, '=') != NULL)
            return nsbox_err_set(err, 0,
                                 "env: \"%s\" must be a name without '=' with a "
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
    return mcp_schema_check(&decls[SANDBOX_LIST], args, err);
}

static int pkg_args(json_t *o, struct mcp_pkg_args *out, struct nsbox_err *err);

static int create_args(const struct mcp_server *cfg, json_t *args, struct mcp_create_args *out,
                       struct nsbox_err *err)
{
    if (mcp_schema_check(&decls[SANDBOX_CREATE], args, err) < 0)
        return -1;
    out->image = str(SANDBOX_CREATE, args, "image");
    out->language = str(SANDBOX_CREATE, args, "language");
    out->workdir = str(SANDBOX_CREATE, args, "workdir");
    out->workspace = str(SANDBOX_CREATE, args, "workspace");
    if (out->language == NULL)
        out->language = MCP_LANGUAGE_DEFAULT;
    if (limit_args(cfg, args, &out->limits, err) < 0 ||
        size_arg(args, "workspace_mb", 1, cfg->ceilings.workspace_mb, "max-workspace",
                 &out->limits.limits.workspace_mb, &out->limits.has_workspace, err) < 0)
        return -1;
    if (out->limits.has_workspace && out->workspace == NULL)
        return nsbox_err_set(err, 0,
                             "workspace_mb goes with workspace (a persistent workspace's name)");
    if (out->workdir != NULL && out->workdir[0] != '/')
        return nsbox_err_set(err, 0, "workdir must be an absolute path inside the sandbox");
    /* The env map and the workspace name were checked only once the
     * sandbox was being made; checking them here, with the rest, only
     * changes which error a call with several faults hears first. */
    json_t *env = json_object_get(args, "env");
    if (env != NULL && env_strings(env, &out->env, err) < 0)
        return -1;
    if (out->workspace != NULL && !box_workspace_name_ok(out->workspace))
        return nsbox_err_set(err, 0,
                             "workspace names are 1-64 of a-z 0-9 . _ -, not "
                             "starting with . or -");
    json_t *pk = json_object_get(args, "packages");
    if (pk != NULL && !json_is_object(pk))
        return nsbox_err_set(err, 0,
                             "packages must be an object {manager, packages} or "
                             "{requirements_file}");
    if (pk != NULL && pkg_args(pk, &out->packages, err) < 0)
        return nsbox_err_prefix(err, "packages");
    out->network = json_object_get(args, "network");
    return 0;
}

int mcp_args_sandbox_create(const struct mcp_server *cfg, json_t *args, struct mcp_create_args *out,
                            struct nsbox_err *err)
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
    *out = (struct mcp_stop_args){0};
    if (mcp_schema_check(&decls[SANDBOX_STOP], args, err) < 0)
        return -1;
    out->sandbox_id = str(SANDBOX_STOP, args, "sandbox_id");
    return 0;
}

int mcp_args_sandbox_commit(json_t *args, struct mcp_commit_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_commit_args){0};
    if (mcp_schema_check(&decls[SANDBOX_COMMIT], args, err) < 0)
        return -1;
    out->sandbox_id = str(SANDBOX_COMMIT, args, "sandbox_id");
    out->name = str(SANDBOX_COMMIT, args, "name");
    out->message = str(SANDBOX_COMMIT, args, "message");
    return 0;
}

/* ---- packages (install_packages, sandbox_create's packages) ---- */

/* A string the manager will see as an operand: never an option. */
static int pkg_operand(const char *what, const char *v, struct nsbox_err *err)
{
    if (v[0] == '-')
        return nsbox_err_set(err, 0, "%s \"%.64s\" starts with '-': options are not taken", what,
                             v);
    if (strlen(v) > MCP_PKG_SPEC_MAX || strpbrk(v, "\n\r") != NULL)
        return nsbox_err_set(err, 0, "%s \"%.64s\" is longer than %d bytes or has a line break",
                             what, v, MCP_PKG_SPEC_MAX);
    return 0;
}

/* o: an object with manager, packages, requirements_file (checked here,
 * as its schema says, for sandbox_create's object). */
static int pkg_args(json_t *o, struct mcp_pkg_args *out, struct nsbox_err *err)
{
    json_t *m = json_object_get(o, "manager"), *list = json_object_get(o, "packages");
    json_t *file = json_object_get(o, "requirements_file");
    const char *key;
    json_t *v;
    size_t i;

    json_object_foreach (o, key, v)
        if (strcmp(key, "manager") && strcmp(key, "packages") && strcmp(key, "requirements_file"))
            return nsbox_err_set(err, 0, "packages: unknown key \"%s\"", key);
    if (m != NULL &&
        (!json_is_string(m) || box_pkg_manager_parse(json_string_value(m), &out->manager) < 0))
        return nsbox_err_set(err, 0, "manager must be pip, npm or apt");
    if (list != NULL && !json_is_array(list))
        return nsbox_err_set(err, 0, "packages must be an array of strings");
    if (file != NULL && (!json_is_string(file) || json_string_length(file) == 0 ||
                         strlen(json_string_value(file)) != json_string_length(file)))
        return nsbox_err_set(err, 0, "requirements_file must be a non-empty string");
    if ((list != NULL && json_array_size(list) > 0) == (file != NULL))
        return nsbox_err_set(err, 0,
                             "give either packages (a non-empty list) or "
                             "requirements_file");
    if (json_array_size(list) > MCP_PKG_MAX)
        return nsbox_err_set(err, 0, "at most %d packages in one install", MCP_PKG_MAX);
    json_array_foreach (list, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            strlen(json_string_value(v)) != json_string_length(v))
            return nsbox_err_set(err, 0, "packages[%zu] must be a non-empty string", i);
        if (pkg_operand("package", json_string_value(v), err) < 0)
            return -1;
        out->packages[out->n_packages++] = (char *)json_string_value(v);
    }
    if (file != NULL) {
        out->requirements_file = json_string_value(file);
        if (pkg_operand("requirements_file", out->requirements_file, err) < 0)
            return -1;
        const char *base = strrchr(out->requirements_file, '/');
        base = base ? base + 1 : out->requirements_file;
        /* The file's name says which manager, unless one is named. */
        if (m == NULL && strcmp(base, "package.json") == 0)
            out->manager = BOX_PKG_NPM;
        else if (m == NULL && strstr(base, ".txt") != NULL)
            out->manager = BOX_PKG_PIP;
        else if (m == NULL)
            return nsbox_err_set(err, 0, "name the manager of requirements_file \"%.64s\"",
                                 out->requirements_file);
    } else if (m == NULL) {
        return nsbox_err_set(err, 0, "manager is required with packages (pip, npm or apt)");
    }
    out->given = true;
    return 0;
}

int mcp_args_install_packages(const struct mcp_server *cfg, json_t *args,
                              struct mcp_install_args *out, struct nsbox_err *err)
{
    bool given;
    *out = (struct mcp_install_args){0};
    if (mcp_schema_check(&decls[INSTALL_PACKAGES], args, err) < 0)
        return -1;
    out->sandbox_id = str(INSTALL_PACKAGES, args, "sandbox_id");
    out->timeout_s = 300;
    if (limit_arg(args, "timeout_s", 0.001, cfg->ceilings.timeout_s, false, &out->timeout_s, &given,
                  err) < 0)
        return -1;
    if (!given && out->timeout_s > cfg->ceilings.timeout_s)
        out->timeout_s = cfg->ceilings.timeout_s;
    /* The same object sandbox_create takes, less sandbox_id and timeout_s. */
    _cleanup_(json_decrefp) json_t *o = json_deep_copy(args);
    if (o == NULL)
        return nsbox_err_set(err, 0, "out of memory");
    json_object_del(o, "sandbox_id");
    json_object_del(o, "timeout_s");
    struct mcp_pkg_args tmp = {0};
    if (pkg_args(o, &tmp, err) < 0)
        return -1;
    /* Strings borrowed from args, not from the copy. */
    out->packages = tmp;
    json_t *list = json_object_get(args, "packages");
    for (size_t i = 0; i < tmp.n_packages; i++)
        out->packages.packages[i] = (char *)json_string_value(json_array_get(list, i));
    if (tmp.requirements_file != NULL)
        out->packages.requirements_file = str(INSTALL_PACKAGES, args, "requirements_file");
    return 0;
}

/* ---- execute_code, run_command ---- */

/* What both share: the sandbox, stdin, the limits, and argv around the
 * program text. */
static int run_args(const struct mcp_server *cfg, int tool, json_t *args, const char *key,
                    struct mcp_run_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_run_args){0};
    if (mcp_schema_check(&decls[tool], args, err) < 0 ||
        limit_args(cfg, args, &out->limits, err) < 0) {
        *out = (struct mcp_run_args){0};
        return -1;
    }
    out->sandbox_id = str(tool, args, "sandbox_id");
    out->stdin_data = str(tool, args, "stdin");
    out->argv[2] = (char *)str(tool, args, key);
    out->network = json_object_get(args, "network");
    if (out->network != NULL && out->sandbox_id != NULL) {
        *out = (struct mcp_run_args){0};
        return nsbox_err_set(err, 0,
                             "network goes with a one-shot run; a kept sandbox's network is set "
                             "by sandbox_create {network}");
    }
    return 0;
}

int mcp_args_execute_code(const struct mcp_server *cfg, json_t *args, struct mcp_run_args *out,
                          struct nsbox_err *err)
{
    if (run_args(cfg, EXECUTE_CODE, args, "code", out, err) < 0)
        return -1;
    out->language = str(EXECUTE_CODE, args, "language");
    out->code = out->argv[2];
    out->fresh = mcp_arg_bool(args, "fresh");
    out->restart = mcp_arg_bool(args, "restart");
    /* Known: the schema check looked it up (MCP_ARG_LANGUAGE). */
    const struct mcp_language *lang = mcp_language_find(out->language);
    out->argv[0] = (char *)lang->argv[0];
    out->argv[1] = (char *)lang->argv[1];
    return 0;
}

int mcp_args_run_command(const struct mcp_server *cfg, json_t *args, struct mcp_run_args *out,
                         struct nsbox_err *err)
{
    if (run_args(cfg, RUN_COMMAND, args, "command", out, err) < 0)
        return -1;
    out->workdir = str(RUN_COMMAND, args, "workdir");
    if (out->workdir != NULL && out->workdir[0] != '/') {
        *out = (struct mcp_run_args){0};
        return nsbox_err_set(err, 0, "workdir must be an absolute path inside the sandbox");
    }
    out->argv[0] = "/bin/sh";
    out->argv[1] = "-c";
    return 0;
}

/* ---- file tools ---- */

static int write_args(json_t *args, struct mcp_write_args *out, struct nsbox_err *err)
{
    if (mcp_schema_check(&decls[WRITE_FILE], args, err) < 0)
        return -1;
    json_t *c = json_object_get(args, "content");
    out->sandbox_id = str(WRITE_FILE, args, "sandbox_id");
    out->path = str(WRITE_FILE, args, "path");
    out->append = mcp_arg_bool(args, "append");
    out->content = json_string_value(c);
    out->len = json_string_length(c);
    if (strcmp(str(WRITE_FILE, args, "encoding"), "base64") == 0) {
        out->decoded = base64_decode(out->content, out->len, &out->len);
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
    if (mcp_schema_check(&decls[READ_FILE], args, err) < 0)
        return -1;
    const char *encoding = str(READ_FILE, args, "encoding");
    int64_t length = mcp_arg_integer(args, "length", MCP_READ_DEFAULT);
    out->sandbox_id = str(READ_FILE, args, "sandbox_id");
    out->path = str(READ_FILE, args, "path");
    out->length = (size_t)(length > MCP_READ_MAX ? MCP_READ_MAX : length);
    out->offset = mcp_arg_integer(args, "offset", 0);
    out->base64 = encoding && strcmp(encoding, "base64") == 0;
    return 0;
}

int mcp_args_list_directory(json_t *args, struct mcp_list_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_list_args){0};
    if (mcp_schema_check(&decls[LIST_DIRECTORY], args, err) < 0)
        return -1;
    out->sandbox_id = str(LIST_DIRECTORY, args, "sandbox_id");
    out->path = str(LIST_DIRECTORY, args, "path");
    out->depth = mcp_arg_bool(args, "recursive") ? MCP_LIST_RECURSIVE_DEPTH : 1;
    return 0;
}

int mcp_args_project_structure(json_t *args, struct mcp_list_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_list_args){0};
    if (mcp_schema_check(&decls[PROJECT_STRUCTURE], args, err) < 0)
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
    if (mcp_schema_check(&decls[CREATE_DIRECTORY], args, err) < 0)
        return -1;
    out->sandbox_id = str(CREATE_DIRECTORY, args, "sandbox_id");
    out->path = str(CREATE_DIRECTORY, args, "path");
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
    if (mcp_schema_check(&decls[DELETE_PATH], args, err) < 0)
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
    if (mcp_schema_check(&decls[tool], args, err) < 0)
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
