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
#include "args_internal.h"
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

/* Its range comes from the server's ceiling (run_args). */
#define INLINE_KB                                                                                  \
    ARG("max_inline_kb", INTEGER, 0,                                                               \
        .description = "the most stdout and stderr, together, in KiB, returned inline (32): more " \
                       "is cut in the middle, and in a kept sandbox the whole output is kept as "  \
                       "a file, linked (stdout_uri, stderr_uri)")

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

/* A run's own environment (execute_code, run_command), for that run only. */
#define RUN_ENV                                                                                    \
    ARG("env", STRING_MAP, 0,                                                                      \
        .description = "environment variables for this run only, on top of the sandbox's (in an "  \
                       "interpreter: set for the cell, then restored); values are never logged "   \
                       "or returned")

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
    /* Looked up and granted by the tool (tools/secrets.c). */
    ARG("secrets", STRING_LIST, 0,
        .description = "names of the operator's secrets (see list_secrets) the sandbox may use: "
                       "each one's environment variable holds a placeholder, never the value, "
                       "and the network broker puts the value in its place only in requests to "
                       "the secret's hosts (added to network)",
        .max_len = 16),
    ARG("nested", BOOLEAN, 0,
        .description = "containers inside: rootless podman and its Docker API at DOCKER_HOST "
                       "(compose, Testcontainers); only when the server allows it "
                       "(serve --allow-nested)"),
    ARG("nested_images", STRING_LIST, 0,
        .description = "with nested: images of the server's store (see list_images) loaded into "
                       "the nested engine under the same names, without network",
        .max_len = 32),
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
                       "persistent interpreter (python, javascript, typescript, r, java keep state "
                       "between calls)"),
    ARG("restart", BOOLEAN, 0,
        .description = "with sandbox_id: restart the persistent interpreter first (its "
                       "variables are gone)"),
    ARG("context", STRING, NONEMPTY,
        .description =
            "with sandbox_id: the code context to run in (context_create; "
            "\"python\", \"javascript\", \"typescript\", \"r\" and \"java\" are the default "
            "ones)"),
    RUN_ENV,
    LIMITS,
    NETWORK,
    INLINE_KB,
};
static const struct mcp_arg run_fields[] = {
    ARG("command", STRING, REQUIRED, .max_len = MCP_CODE_MAX),
    SANDBOX_ID_OPTIONAL,
    ARG("stdin", STRING, 0),
    ARG("workdir", STRING, 0, .description = "absolute path inside the sandbox"),
    RUN_ENV,
    LIMITS,
    NETWORK,
    INLINE_KB,
    ARG("background", BOOLEAN, 0,
        .description = "with sandbox_id: start it as a background process and return its handle "
                       "at once (as process_start)"),
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
    ARG("url", BOOLEAN, 0,
        .description = "HTTP only: a signed download URL (download_url) instead of the content"),
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

static const struct mcp_arg upload_fields[] = {
    SANDBOX_ID,
    ARG("path", STRING, REQUIRED | NONEMPTY,
        .description = "where the upload goes: absolute, or relative to the working directory"),
    ARG("size_mb", NUMBER, 0, .has_min = true, .min = 0,
        .description = "the largest upload the URL takes, in MiB (default and most: the "
                       "server's --max-upload-mb)"),
};

static const char *const interp_languages[] = {"python",     "python3", "javascript", "node",
                                               "typescript", "r",       "java",       NULL};
static const struct mcp_arg context_create_fields[] = {
    SANDBOX_ID,
    ARG("language", STRING, 0, .dflt = "python", .choices = interp_languages),
    ARG("cwd", STRING, 0,
        .description = "absolute path inside the sandbox (default: its working directory)"),
};
static const struct mcp_arg context_fields[] = {
    SANDBOX_ID,
    ARG("context_id", STRING, REQUIRED | NONEMPTY),
};

/* The decoders below name their tool's declaration by these. */

const struct mcp_tool_args mcp_arg_decls[N_TOOLS] = {
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
    [UPLOAD_URL] = DECL("upload_url", upload_fields),
    [TERMINAL_OPEN] = {.tool = "terminal_open",
                       .fields = mcp_terminal_open_fields,
                       .n_fields = MCP_TERMINAL_OPEN_N_FIELDS},
    [CONTEXT_CREATE] = DECL("context_create", context_create_fields),
    [CONTEXT_LIST] = DECL("context_list", stop_fields),
    [CONTEXT_RESTART] = DECL("context_restart", context_fields),
    [CONTEXT_REMOVE] = DECL("context_remove", context_fields),
    [PROCESS_START] = DECL("process_start", mcp_process_start_fields),
    [PROCESS_LIST] = DECL("process_list", mcp_process_list_fields),
    [PROCESS_LOGS] = DECL("process_logs", mcp_process_logs_fields),
    [PROCESS_SIGNAL] = DECL("process_signal", mcp_process_signal_fields),
    [PROCESS_WAIT] = DECL("process_wait", mcp_process_wait_fields),
    [PORT_EXPOSE] = DECL("port_expose", mcp_port_expose_fields),
    [SANDBOX_FORK] = DECL("sandbox_fork", mcp_sandbox_fork_fields),
    [SANDBOX_CHECKPOINT] = DECL("sandbox_checkpoint", mcp_sandbox_checkpoint_fields),
    [SANDBOX_RESTORE] = DECL("sandbox_restore", mcp_sandbox_restore_fields),
    [CHECKPOINT_LIST] = NO_ARGS("checkpoint_list"),
    [CHECKPOINT_DELETE] = DECL("checkpoint_delete", mcp_checkpoint_delete_fields),
    [PORT_LIST] = DECL("port_list", mcp_port_list_fields),
    [PORT_CLOSE] = DECL("port_close", mcp_port_close_fields),
    [SANDBOX_PAUSE] = DECL("sandbox_pause", mcp_pause_fields),
    [SANDBOX_RESUME] = DECL("sandbox_resume", mcp_pause_fields),
    [CONTEXT_FORK] = DECL("context_fork", mcp_context_fork_fields),
    [LIST_SECRETS] = NO_ARGS("list_secrets"),
    [REQUEST_NETWORK] = DECL("request_network", mcp_request_network_fields),
};

const struct mcp_tool_args *mcp_tool_args_find(const char *tool)
{
    for (size_t i = 0; i < N(mcp_arg_decls); i++)
        if (strcmp(mcp_arg_decls[i].tool, tool) == 0)
            return &mcp_arg_decls[i];
    return NULL;
}

const struct mcp_tool_args *mcp_tool_args_all(size_t *n)
{
    *n = N(mcp_arg_decls);
    return mcp_arg_decls;
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

/* ---- env ---- */

/* One "KEY=VALUE" into v[*i]. */
static int env_add(char **v, size_t *i, const char *key, const char *value, struct nsbox_err *err)
{
    if (key[0] == '\0' || strchr(key, '=') != NULL)
        return nsbox_err_set(err, 0, "env: \"%s\" must be a name without '=' with a string value",
                             key);
    if (asprintf(&v[*i], "%s=%s", key, value) < 0) {
        v[*i] = NULL;
        return nsbox_err_set(err, 0, "out of memory");
    }
    (*i)++;
    return 0;
}

/* [{"name": "KEY", "value": "VALUE"}, ...] (the schema's form) or
 * {"KEY": "VALUE", ...} (checked by mcp_schema_check) as "KEY=VALUE"
 * strings (NULL-terminated). */
static int env_strings(json_t *env, char ***out, struct nsbox_err *err)
{
    const char *key;
    json_t *value;
    size_t i = 0, k;
    size_t n = json_is_array(env) ? json_array_size(env) : json_object_size(env);
    _cleanup_strv_ char **v = calloc(n + 1, sizeof(char *));

    if (v == NULL)
        return nsbox_err_set(err, 0, "out of memory");
    json_array_foreach (env, k, value)
        if (env_add(v, &i, json_string_value(json_object_get(value, "name")),
                    json_string_value(json_object_get(value, "value")), err) < 0)
            return -1;
    json_object_foreach (env, key, value)
        if (env_add(v, &i, key, json_string_value(value), err) < 0)
            return -1;
    *out = TAKE_PTR(v);
    return 0;
}

/* One name/value pair of env in either form, by index; false past the
 * end.  *nlen: the name's length (a key may hold a NUL). */
static bool env_pair(json_t *env, size_t i, const char **name, size_t *nlen, const char **value)
{
    if (json_is_array(env)) {
        json_t *e = json_array_get(env, i);
        if (e == NULL)
            return false;
        *name = json_string_value(json_object_get(e, "name"));
        *nlen = json_string_length(json_object_get(e, "name"));
        *value = json_string_value(json_object_get(e, "value"));
        return true;
    }
    void *it = json_object_iter(env);
    for (size_t k = 0; it != NULL && k < i; k++)
        it = json_object_iter_next(env, it);
    if (it == NULL)
        return false;
    *name = json_object_iter_key(it);
    *nlen = json_object_iter_key_len(it);
    *value = json_string_value(json_object_iter_value(it));
    return true;
}

/* A run's env (checked by mcp_schema_check: strings without NUL): names
 * non-empty, without '=' or NUL, within MCP_RUN_ENV_NAME_MAX; at most
 * MCP_RUN_ENV_MAX entries of MCP_RUN_ENV_BYTES in all.  Errors name the
 * variable, never its value. */
/* One variable of a run's env (seen: the names so far).  Returns 0, or -1
 * with err naming the variable, never its value. */
static int run_env_one(json_t *seen, size_t i, const char *name, size_t nlen, const char *value,
                       struct nsbox_err *err)
{
    if (name == NULL || value == NULL)
        return nsbox_err_set(err, 0, "env[%zu] must be a name with a string value", i);
    if (nlen == 0 || nlen != strlen(name) || nlen > MCP_RUN_ENV_NAME_MAX ||
        strchr(name, '=') != NULL)
        return nsbox_err_set(err, 0,
                             "env: \"%.64s\" must be a name of 1 to %d bytes, without '=' or NUL",
                             name, MCP_RUN_ENV_NAME_MAX);
    if (json_object_get(seen, name) != NULL)
        return nsbox_err_set(err, 0, "env names \"%.64s\" twice", name);
    if (json_object_set_new(seen, name, json_true()) < 0)
        return nsbox_err_set(err, 0, "out of memory");
    return 0;
}

int mcp_args_run_env_check(json_t *env, struct nsbox_err *err)
{
    const char *name, *value;
    size_t nlen, total = 0, n = json_is_array(env) ? json_array_size(env) : json_object_size(env);
    if (n > MCP_RUN_ENV_MAX)
        return nsbox_err_set(err, 0, "env has more than %d variables", MCP_RUN_ENV_MAX);
    _cleanup_(json_decrefp) json_t *seen = json_object();
    if (seen == NULL)
        return nsbox_err_set(err, 0, "out of memory");
    for (size_t i = 0; env_pair(env, i, &name, &nlen, &value); i++) {
        if (run_env_one(seen, i, name, nlen, value, err) < 0)
            return -1;
        total += nlen + strlen(value) + 2; /* "NAME=VALUE" and its NUL */
        if (total > MCP_RUN_ENV_BYTES)
            return nsbox_err_set(err, 0, "env holds more than %d bytes of names and values",
                                 MCP_RUN_ENV_BYTES);
    }
    return 0;
}

char **mcp_args_env_strings(json_t *env)
{
    char **v = NULL;
    struct nsbox_err ignored;
    return env_strings(env, &v, &ignored) == 0 ? v : NULL;
}

json_t *mcp_args_env_object(json_t *env)
{
    const char *name, *value;
    size_t nlen;
    json_t *o = json_object();
    for (size_t i = 0; o != NULL && env_pair(env, i, &name, &nlen, &value); i++)
        if (json_object_set_new(o, name, json_string(value)) < 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* ---- sandbox tools ---- */

int mcp_args_none(json_t *args, struct nsbox_err *err)
{
    return mcp_schema_check(&mcp_arg_decls[SANDBOX_LIST], args, err);
}

static int create_args(const struct mcp_server *cfg, json_t *args, struct mcp_create_args *out,
                       struct nsbox_err *err)
{
    if (mcp_schema_check(&mcp_arg_decls[SANDBOX_CREATE], args, err) < 0)
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
    if (pk != NULL && mcp_args_pkg(pk, &out->packages, err) < 0)
        return nsbox_err_prefix(err, "packages");
    out->network = json_object_get(args, "network");
    out->secrets = json_object_get(args, "secrets");
    out->nested = mcp_arg_bool(args, "nested");
    out->nested_images = json_object_get(args, "nested_images");
    if (json_array_size(out->nested_images) > 0 && !out->nested)
        return nsbox_err_set(err, 0, "nested_images goes with nested: true");
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
    if (mcp_schema_check(&mcp_arg_decls[SANDBOX_STOP], args, err) < 0)
        return -1;
    out->sandbox_id = str(SANDBOX_STOP, args, "sandbox_id");
    return 0;
}

/* ---- code contexts (tools/contexts.c) ---- */

static int context_args(int tool, json_t *args, struct mcp_context_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_context_args){0};
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0)
        return -1;
    out->sandbox_id = str(tool, args, "sandbox_id");
    if (tool == CONTEXT_CREATE) {
        out->language = str(tool, args, "language");
        out->cwd = str(tool, args, "cwd");
        if (out->cwd != NULL && (out->cwd[0] != '/' || strlen(out->cwd) >= 4096)) {
            *out = (struct mcp_context_args){0};
            return nsbox_err_set(err, 0, "cwd must be an absolute path inside the sandbox");
        }
    } else if (tool != CONTEXT_LIST) {
        out->context_id = str(tool, args, "context_id");
    }
    return 0;
}

int mcp_args_context_create(json_t *args, struct mcp_context_args *out, struct nsbox_err *err)
{
    return context_args(CONTEXT_CREATE, args, out, err);
}

int mcp_args_context_list(json_t *args, struct mcp_context_args *out, struct nsbox_err *err)
{
    return context_args(CONTEXT_LIST, args, out, err);
}

int mcp_args_context_restart(json_t *args, struct mcp_context_args *out, struct nsbox_err *err)
{
    return context_args(CONTEXT_RESTART, args, out, err);
}

int mcp_args_context_remove(json_t *args, struct mcp_context_args *out, struct nsbox_err *err)
{
    return context_args(CONTEXT_REMOVE, args, out, err);
}

int mcp_args_sandbox_commit(json_t *args, struct mcp_commit_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_commit_args){0};
    if (mcp_schema_check(&mcp_arg_decls[SANDBOX_COMMIT], args, err) < 0)
        return -1;
    out->sandbox_id = str(SANDBOX_COMMIT, args, "sandbox_id");
    out->name = str(SANDBOX_COMMIT, args, "name");
    out->message = str(SANDBOX_COMMIT, args, "message");
    return 0;
}

/* ---- install_packages (its packages object: args_packages.c) ---- */

int mcp_args_install_packages(const struct mcp_server *cfg, json_t *args,
                              struct mcp_install_args *out, struct nsbox_err *err)
{
    bool given;
    *out = (struct mcp_install_args){0};
    if (mcp_schema_check(&mcp_arg_decls[INSTALL_PACKAGES], args, err) < 0)
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
    if (mcp_args_pkg(o, &tmp, err) < 0)
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

/* max_inline_kb as bytes: MCP_INLINE_KB_DEFAULT unless given, within 1 ..
 * the server's ceiling (serve --max-inline-kb), which also caps the
 * default. */
static int inline_arg(const struct mcp_server *cfg, json_t *args, size_t *bytes,
                      struct nsbox_err *err)
{
    size_t ceiling = cfg->max_inline_kb ? cfg->max_inline_kb : MCP_INLINE_KB_DEFAULT;
    bool given;
    double kb = mcp_arg_number(args, "max_inline_kb", 0, &given);
    if (given && (kb < 1 || kb > (double)ceiling))
        return nsbox_err_set(err, 0,
                             "max_inline_kb must be from 1 to %zu (the server's ceiling, serve "
                             "--max-inline-kb); %g asked for",
                             ceiling, kb);
    size_t v = given ? (size_t)kb : MCP_INLINE_KB_DEFAULT;
    *bytes = (v < ceiling ? v : ceiling) << 10;
    return 0;
}

/* What both share: the sandbox, stdin, the limits, the inline output,
 * and argv around the program text. */
static int run_args(const struct mcp_server *cfg, int tool, json_t *args, const char *key,
                    struct mcp_run_args *out, struct nsbox_err *err)
{
    *out = (struct mcp_run_args){0};
    if (mcp_schema_check(&mcp_arg_decls[tool], args, err) < 0 ||
        limit_args(cfg, args, &out->limits, err) < 0) {
        *out = (struct mcp_run_args){0};
        return -1;
    }
    if (inline_arg(cfg, args, &out->inline_max, err) < 0) {
        *out = (struct mcp_run_args){0};
        return -1;
    }
    out->sandbox_id = str(tool, args, "sandbox_id");
    out->stdin_data = str(tool, args, "stdin");
    out->argv[2] = (char *)str(tool, args, key);
    out->network = json_object_get(args, "network");
    out->env = json_object_get(args, "env");
    if (out->env != NULL && mcp_args_run_env_check(out->env, err) < 0) {
        *out = (struct mcp_run_args){0};
        return -1;
    }
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
    out->context = str(EXECUTE_CODE, args, "context");
    out->language_given = json_object_get(args, "language") != NULL;
    if (out->context != NULL && (out->sandbox_id == NULL || out->fresh)) {
        *out = (struct mcp_run_args){0};
        return nsbox_err_set(err, 0, "context needs a sandbox_id (and no fresh)");
    }
    /* As E2B's runCode: a context has its language; both is a mistake. */
    if (out->context != NULL && out->language_given) {
        *out = (struct mcp_run_args){0};
        return nsbox_err_set(err, 0,
                             "give context or language, not both (a context runs its own "
                             "language: context_list)");
    }
    /* Known: the schema check looked it up (MCP_ARG_LANGUAGE). */
    const struct mcp_language *lang = mcp_language_find(out->language);
    out->argv[0] = (char *)lang->argv[0];
    out->argv[1] = (char *)lang->argv[1];
    if (lang->argv[2] != NULL) {
        out->argv[2] = (char *)lang->argv[2];
        out->argv[3] = (char *)lang->name;
        out->argv[4] = (char *)out->code;
    }
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

int mcp_args_limits(const struct mcp_server *cfg, json_t *args, struct mcp_limit_args *out,
                    struct nsbox_err *err)
{
    return limit_args(cfg, args, out, err);
}

int mcp_args_env(json_t *env, char ***out, struct nsbox_err *err)
{
    return env_strings(env, out, err);
}
