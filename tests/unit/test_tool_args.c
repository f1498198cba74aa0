/* Unit tests for the MCP tool arguments: the declarations (mcp/tools/args.c),
 * the schema built from them and the generic checks (mcp/tools/schema.c):
 * the types, the ranges and the ceilings.  The schema and the decoder come
 * from one table; these tests walk the schema and make the decoder answer
 * for every property in it.  What the table cannot say (strings, each
 * tool's own checks, the languages, the tool table, the typed result) is in
 * test_tool_checks.c; the helpers both use are declared in tool_args_lib.h. */
#include "check.h"
#include "suites.h"
#include "tool_args_lib.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../../mcp/tools/languages.h"
#include "../../mcp/tools/args.h"
#include "../../mcp/tools/fork.h"
#include "../../mcp/tools/contexts.h"
#include "../../mcp/tools/ports.h"
#include "../../mcp/tools/tools.h"

struct mcp_server ta_cfg = {
    .defaults = {.memory_mb = 512,
                 .cpus = 1,
                 .pids = 256,
                 .timeout_s = 30,
                 .disk_mb = 1024,
                 .workspace_mb = 1024},
    .ceilings = {.memory_mb = 4096,
                 .cpus = 4,
                 .pids = 4096,
                 .timeout_s = 600,
                 .disk_mb = 8192,
                 .workspace_mb = 2048},
    .host_dirs = {{"/srv/share", -1}},
    .n_host_dirs = 1,
    .max_inline_kb = 1024,
};

/* ---- helpers ---- */

/* Runs tool's decoder and releases what it decoded: 0, -1 with err set,
 * or -2 for a tool this file does not know. */
static int decode(const char *tool, json_t *args, struct nsbox_err *err)
{
    int r = -2;
    if (strcmp(tool, "sandbox_create") == 0) {
        struct mcp_create_args a;
        r = mcp_args_sandbox_create(&ta_cfg, args, &a, err);
        mcp_create_args_free(&a);
    } else if (strcmp(tool, "sandbox_stop") == 0) {
        struct mcp_stop_args a;
        r = mcp_args_sandbox_stop(args, &a, err);
    } else if (strcmp(tool, "sandbox_pause") == 0 || strcmp(tool, "sandbox_resume") == 0) {
        struct mcp_stop_args a;
        r = mcp_args_sandbox_pause(args, tool[8] == 'r', &a, err);
    } else if (strcmp(tool, "sandbox_commit") == 0) {
        struct mcp_commit_args a;
        r = mcp_args_sandbox_commit(args, &a, err);
    } else if (strcmp(tool, "execute_code") == 0 || strcmp(tool, "run_command") == 0) {
        struct mcp_run_args a;
        r = tool[0] == 'e' ? mcp_args_execute_code(&ta_cfg, args, &a, err)
                           : mcp_args_run_command(&ta_cfg, args, &a, err);
    } else if (strcmp(tool, "write_file") == 0) {
        struct mcp_write_args a;
        r = mcp_args_write_file(args, &a, err);
        mcp_write_args_free(&a);
    } else if (strcmp(tool, "read_file") == 0) {
        struct mcp_read_args a;
        r = mcp_args_read_file(args, &a, err);
    } else if (strcmp(tool, "list_directory") == 0 || strcmp(tool, "project_structure") == 0) {
        struct mcp_list_args a;
        r = tool[0] == 'l' ? mcp_args_list_directory(args, &a, err)
                           : mcp_args_project_structure(args, &a, err);
    } else if (strcmp(tool, "create_directory") == 0 || strcmp(tool, "delete_path") == 0) {
        struct mcp_path_args a;
        r = tool[0] == 'c' ? mcp_args_create_directory(args, &a, err)
                           : mcp_args_delete_path(args, &a, err);
    } else if (strcmp(tool, "copy_in") == 0 || strcmp(tool, "copy_out") == 0) {
        struct mcp_copy_args a;
        r = strcmp(tool, "copy_in") == 0 ? mcp_args_copy_in(&ta_cfg, args, &a, err)
                                         : mcp_args_copy_out(&ta_cfg, args, &a, err);
    } else if (strcmp(tool, "request_network") == 0) {
        struct mcp_request_network_args a;
        r = mcp_args_request_network(args, &a, err);
    } else if (strcmp(tool, "context_fork") == 0) {
        struct mcp_context_fork_args a;
        r = mcp_args_context_fork(args, &a, err);
    } else if (strncmp(tool, "context_", 8) == 0) {
        struct mcp_context_args a;
        r = strcmp(tool, "context_create") == 0    ? mcp_args_context_create(args, &a, err)
            : strcmp(tool, "context_list") == 0    ? mcp_args_context_list(args, &a, err)
            : strcmp(tool, "context_restart") == 0 ? mcp_args_context_restart(args, &a, err)
                                                   : mcp_args_context_remove(args, &a, err);
    } else if (strncmp(tool, "process_", 8) == 0) {
        struct mcp_process_args a;
        r = strcmp(tool, "process_start") == 0    ? mcp_args_process_start(args, &a, err)
            : strcmp(tool, "process_list") == 0   ? mcp_args_process_list(args, &a, err)
            : strcmp(tool, "process_logs") == 0   ? mcp_args_process_logs(args, &a, err)
            : strcmp(tool, "process_signal") == 0 ? mcp_args_process_signal(args, &a, err)
                                                  : mcp_args_process_wait(&ta_cfg, args, &a, err);
    } else if (strncmp(tool, "port_", 5) == 0) {
        struct mcp_port_args a;
        r = strcmp(tool, "port_expose") == 0 ? mcp_args_port_expose(args, &a, err)
            : strcmp(tool, "port_list") == 0 ? mcp_args_port_list(args, &a, err)
                                             : mcp_args_port_close(args, &a, err);
    } else if (strcmp(tool, "sandbox_fork") == 0 || strcmp(tool, "sandbox_restore") == 0) {
        struct mcp_fork_args a;
        r = tool[8] == 'f' ? mcp_args_sandbox_fork(&ta_cfg, args, &a, err)
                           : mcp_args_sandbox_restore(&ta_cfg, args, &a, err);
        mcp_fork_args_free(&a);
    } else if (strcmp(tool, "sandbox_checkpoint") == 0 || strcmp(tool, "checkpoint_delete") == 0) {
        struct mcp_ckpt_args a;
        r = tool[0] == 's' ? mcp_args_sandbox_checkpoint(args, &a, err)
                           : mcp_args_checkpoint_delete(args, &a, err);
    } else if (strcmp(tool, "upload_url") == 0) {
        struct mcp_upload_args a;
        r = mcp_args_upload_url(64ull << 20, args, &a, err);
    } else if (strcmp(tool, "terminal_open") == 0) {
        struct mcp_terminal_args a;
        r = mcp_args_terminal_open(args, &a, err);
    } else if (strcmp(tool, "install_packages") == 0) {
        /* What to install is required in substance (packages or a
         * requirements_file, a manager), not by the schema: given here
         * unless the test gives it; the create form's object stands for
         * its list. */
        struct mcp_install_args a;
        json_t *pk = json_object_get(args, "packages");
        if (json_is_object(pk))
            json_object_set(args, "packages", json_object_get(pk, "packages"));
        if (pk == NULL && json_object_get(args, "requirements_file") == NULL)
            json_object_set_new(args, "packages", json_pack("[s]", "x"));
        if (json_object_get(args, "manager") == NULL)
            json_object_set_new(args, "manager", json_string("pip"));
        r = mcp_args_install_packages(&ta_cfg, args, &a, err);
    } else if (strcmp(tool, "sandbox_list") == 0 || strcmp(tool, "list_languages") == 0 ||
               strcmp(tool, "checkpoint_list") == 0 || strcmp(tool, "list_images") == 0 ||
               strcmp(tool, "list_secrets") == 0) {
        r = mcp_args_none(args, err);
    }
    return r;
}

/* A value every tool taking key accepts; NULL for a key this file does
 * not know (a new argument needs a line here). */
static json_t *valid_value(const char *key)
{
    static const struct {
        const char *key, *json;
    } values[] = {
        {"sandbox_id", "\"sb1\""},
        {"path", "\"a/b\""},
        {"host_path", "\"/srv/share/f\""},
        {"code", "\"print(1)\""},
        {"command", "\"ls\""},
        {"language", "\"python\""},
        {"context_id", "\"ctx-0123456789abcdef\""},
        {"cwd", "\"/tmp\""},
        {"context", "\"python\""},
        {"stdin", "\"in\""},
        {"image", "\"busybox\""},
        {"workdir", "\"/w\""},
        {"workspace", "\"ws-1\""},
        {"name", "\"env1:v1\""},
        {"message", "\"prepared\""},
        {"env", "{\"A\":\"b\"}"},
        {"content", "\"aGk=\""},
        {"encoding", "\"base64\""},
        {"append", "true"},
        {"fresh", "true"},
        {"restart", "true"},
        {"recursive", "true"},
        {"overwrite", "true"},
        {"offset", "0"},
        {"length", "10"},
        {"depth", "2"},
        {"cols", "100"},
        {"rows", "30"},
        {"port", "8000"},
        {"wait_s", "5"},
        {"memory_mb", "64"},
        {"size_mb", "2"},
        {"url", "true"},
        {"cpus", "0.5"},
        {"pids", "64"},
        {"timeout_s", "5"},
        {"disk_mb", "64"},
        {"workspace_mb", "64"},
        {"network", "[\"pypi\"]"},
        {"secrets", "[\"github\"]"},
        {"max_inline_kb", "64"},
        {"manager", "\"pip\""},
        {"requirements_file", "\"requirements.txt\""},
        {"packages", "{\"manager\":\"pip\",\"packages\":[\"x\"]}"},
        {"background", "false"},
        {"handle", "\"sb1/p1\""},
        {"stream", "\"stderr\""},
        {"cursor", "\"12:0\""},
        {"max_bytes", "100"},
        {"signal", "\"KILL\""},
        {"count", "2"},
        {"checkpoint_id", "\"ck-0123456789abcdef\""},
        {"reseed", "false"},
        {"rule", "\"api.example.com\""},
        {"reason", "\"fetch the API\""},
        {"nested", "true"},
        {"nested_images", "[\"localhost/app:1\"]"},
    };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        if (strcmp(values[i].key, key) == 0)
            return json_loads(values[i].json, JSON_DECODE_ANY, NULL);
    return NULL;
}

/* A value of the wrong type for a property of this type. */
static json_t *wrong_value(const char *type)
{
    return strcmp(type, "string") == 0 ? json_integer(42) : json_string("x");
}

/* The tool's required properties, each with a valid value. */
static json_t *base_args(json_t *schema)
{
    json_t *args = json_object(), *v;
    size_t i;
    json_array_foreach (json_object_get(schema, "required"), i, v)
        json_object_set_new(args, json_string_value(v), valid_value(json_string_value(v)));
    return args;
}

/* Decodes args (stolen) for tool; returns the result, the message in err. */
int ta_try(const char *tool, json_t *args, struct nsbox_err *err)
{
    *err = (struct nsbox_err){0};
    int r = decode(tool, args, err);
    json_decref(args);
    return r;
}

json_t *ta_parse(const char *text)
{
    return json_loads(text, 0, NULL);
}

/* The message of a call that must fail, or "" (and a failed check). */
const char *ta_fails(const char *tool, const char *args_json)
{
    static struct nsbox_err err;
    json_t *args = ta_parse(args_json);
    CHECK(args != NULL);
    if (ta_try(tool, args, &err) != -1) {
        CHECK(!"accepted");
        return "";
    }
    return err.msg;
}

bool ta_accepts(const char *tool, const char *args_json)
{
    struct nsbox_err err;
    json_t *args = ta_parse(args_json);
    return args != NULL && ta_try(tool, args, &err) == 0;
}

/* ---- the schemas ---- */

static void every_schema_is_closed_json(void)
{
    size_t n;
    const struct mcp_tool_args *all = mcp_tool_args_all(&n);
    CHECK(n == 41);
    for (size_t t = 0; t < n; t++) {
        char text[4096];
        CHECK(mcp_schema_text(&all[t], text, sizeof(text)) < sizeof(text));
        json_t *schema = json_loads(text, JSON_REJECT_DUPLICATES, NULL), *built;
        CHECK(schema != NULL);
        CHECK(json_equal(schema, built = mcp_schema_build(&all[t])));
        json_decref(built);
        CHECK_STR(json_string_value(json_object_get(schema, "type")), "object");
        CHECK(json_is_false(json_object_get(schema, "additionalProperties")));
        json_t *props = json_object_get(schema, "properties"), *v;
        CHECK(json_is_object(props) && json_object_size(props) == all[t].n_fields);
        size_t i;
        json_array_foreach (json_object_get(schema, "required"), i, v)
            CHECK(json_object_get(props, json_string_value(v)) != NULL);
        struct nsbox_err err;
        CHECK(decode(all[t].tool, NULL, &err) != -2); /* a decoder for every declaration */
        CHECK(mcp_tool_args_find(all[t].tool) == &all[t]);
        json_decref(schema);
    }
    CHECK(mcp_tool_args_find("format_disk") == NULL);
}

/* A schema text that does not fit says how much it needs, and is cut
 * terminated. */
static void schema_text_reports_its_length(void)
{
    const struct mcp_tool_args *t = mcp_tool_args_find("sandbox_create");
    char small[16];
    size_t need = mcp_schema_text(t, NULL, 0);
    CHECK(need > 100);
    CHECK(mcp_schema_text(t, small, sizeof(small)) == need);
    CHECK(strlen(small) == sizeof(small) - 1);
    CHECK(strncmp(small, "{\"type\":\"object", 15) == 0);
}

/* Each tool accepts its required arguments alone and each property of its
 * schema on top: the decoder takes every field the schema lists. */
static void decoder_takes_every_listed_field(void)
{
    size_t n;
    const struct mcp_tool_args *all = mcp_tool_args_all(&n);
    for (size_t t = 0; t < n; t++) {
        json_t *schema = mcp_schema_build(&all[t]), *p;
        const char *key;
        struct nsbox_err err;
        CHECK(ta_try(all[t].tool, base_args(schema), &err) == 0);
        json_object_foreach (json_object_get(schema, "properties"), key, p) {
            json_t *args = base_args(schema), *v = valid_value(key);
            CHECK(v != NULL);
            json_object_set_new(args, key, v);
            /* A workspace's budget goes with a workspace (refused alone). */
            if (strcmp(key, "workspace_mb") == 0)
                json_object_set_new(args, "workspace", valid_value("workspace"));
            /* A code context goes with a sandbox (refused alone). */
            if (strcmp(key, "context") == 0)
                json_object_set_new(args, "sandbox_id", valid_value("sandbox_id"));
            /* Nested images go with nested (refused alone). */
            if (strcmp(key, "nested_images") == 0)
                json_object_set_new(args, "nested", valid_value("nested"));
            if (ta_try(all[t].tool, args, &err) != 0)
                printf("# %s with %s: %s\n", all[t].tool, key, err.msg);
            CHECK(err.msg[0] == '\0');
        }
        json_decref(schema);
    }
}

/* ... and refuses each of them of the wrong type, naming it: the decoder
 * takes exactly the fields and types the schema lists. */
static void wrong_type_names_the_field(void)
{
    size_t n;
    const struct mcp_tool_args *all = mcp_tool_args_all(&n);
    for (size_t t = 0; t < n; t++) {
        json_t *schema = mcp_schema_build(&all[t]), *p;
        const char *key;
        json_object_foreach (json_object_get(schema, "properties"), key, p) {
            json_t *args = base_args(schema);
            struct nsbox_err err;
            json_object_set_new(args, key,
                                wrong_value(json_string_value(json_object_get(p, "type"))));
            CHECK(ta_try(all[t].tool, args, &err) == -1);
            if (strstr(err.msg, key) == NULL)
                printf("# %s with %s of the wrong type: %s\n", all[t].tool, key, err.msg);
            CHECK(strstr(err.msg, key) != NULL);
        }
        json_decref(schema);
    }
}

static void unknown_and_missing_arguments_named(void)
{
    size_t n;
    const struct mcp_tool_args *all = mcp_tool_args_all(&n);
    for (size_t t = 0; t < n; t++) {
        json_t *schema = mcp_schema_build(&all[t]), *args = base_args(schema), *v;
        struct nsbox_err err;
        json_object_set_new(args, "bogus_key", json_true());
        CHECK(ta_try(all[t].tool, args, &err) == -1);
        CHECK_STR(err.msg, "unknown argument \"bogus_key\"");
        size_t i;
        json_array_foreach (json_object_get(schema, "required"), i, v) {
            args = base_args(schema);
            json_object_del(args, json_string_value(v));
            CHECK(ta_try(all[t].tool, args, &err) == -1);
            CHECK(strstr(err.msg, json_string_value(v)) != NULL);
            CHECK(strstr(err.msg, "required") != NULL);
        }
        json_decref(schema);
    }
    CHECK(strstr(ta_fails("list_images", "[]"), "must be an object") != NULL);
}

/* ---- ranges ---- */

static void integer_ranges(void)
{
    CHECK_STR(ta_fails("project_structure", "{\"sandbox_id\":\"s\",\"depth\":0}"),
              "depth must be an integer from 1 to 16");
    ta_fails("project_structure", "{\"sandbox_id\":\"s\",\"depth\":17}");
    ta_fails("project_structure", "{\"sandbox_id\":\"s\",\"depth\":2.5}");
    CHECK(ta_accepts("project_structure", "{\"sandbox_id\":\"s\",\"depth\":16}"));
    CHECK(ta_accepts("project_structure", "{\"sandbox_id\":\"s\",\"depth\":1.0}"));
    CHECK(strstr(ta_fails("read_file", "{\"sandbox_id\":\"s\",\"path\":\"p\",\"offset\":-1}"),
                 "offset") != NULL);
    CHECK(strstr(ta_fails("read_file", "{\"sandbox_id\":\"s\",\"path\":\"p\",\"length\":0}"),
                 "length") != NULL);
    /* Beyond 2^53 a real is no exact integer. */
    ta_fails("read_file", "{\"sandbox_id\":\"s\",\"path\":\"p\",\"offset\":1e300}");

    struct mcp_read_args r;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"sandbox_id\":\"s\",\"path\":\"p\",\"offset\":1152921504606846976,"
                            "\"length\":1000000000000}");
    CHECK(mcp_args_read_file(args, &r, &err) == 0);
    CHECK(r.offset == 1152921504606846976LL && r.length == MCP_READ_MAX);
    json_decref(args);
    args = ta_parse("{\"sandbox_id\":\"s\",\"path\":\"p\",\"offset\":5.0}");
    CHECK(mcp_args_read_file(args, &r, &err) == 0);
    CHECK(r.offset == 5 && r.length == MCP_READ_DEFAULT && !r.base64);
    json_decref(args);
}

/* max_inline_kb: 32 KiB unless given, 1 .. the server's ceiling, which
 * also caps the default. */
static void inline_kb_within_ceiling(void)
{
    struct mcp_run_args r;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"code\":\"1\"}");
    CHECK(mcp_args_execute_code(&ta_cfg, args, &r, &err) == 0 && r.inline_max == 32u << 10);
    json_decref(args);
    args = ta_parse("{\"command\":\"ls\",\"max_inline_kb\":1024}");
    CHECK(mcp_args_run_command(&ta_cfg, args, &r, &err) == 0 && r.inline_max == 1024u << 10);
    json_decref(args);
    CHECK(strstr(ta_fails("execute_code", "{\"code\":\"1\",\"max_inline_kb\":1025}"),
                 "serve --max-inline-kb") != NULL);
    ta_fails("execute_code", "{\"code\":\"1\",\"max_inline_kb\":0}");
    ta_fails("run_command", "{\"command\":\"ls\",\"max_inline_kb\":1.5}");
    ta_cfg.max_inline_kb = 8;
    args = ta_parse("{\"code\":\"1\"}");
    CHECK(mcp_args_execute_code(&ta_cfg, args, &r, &err) == 0 && r.inline_max == 8u << 10);
    json_decref(args);
    ta_cfg.max_inline_kb = 1024;
}

/* Limits: their types from the table, their ranges from the server's
 * ceilings; the defaults unless named. */
static void limits_within_ceilings(void)
{
    CHECK_STR(ta_fails("execute_code", "{\"code\":\"\",\"memory_mb\":15}"),
              "memory_mb must be a number from 16 to 4096");
    ta_fails("execute_code", "{\"code\":\"\",\"memory_mb\":4097}");
    ta_fails("execute_code", "{\"code\":\"\",\"cpus\":0.001}");
    ta_fails("execute_code", "{\"code\":\"\",\"timeout_s\":601}");
    CHECK_STR(ta_fails("execute_code", "{\"code\":\"\",\"pids\":8.5}"), "pids must be an integer");
    CHECK_STR(ta_fails("execute_code", "{\"code\":\"\",\"timeout_s\":\"soon\"}"),
              "timeout_s must be a number");

    struct mcp_run_args a;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"code\":\"\",\"pids\":64.0,\"memory_mb\":4096}");
    CHECK(mcp_args_execute_code(&ta_cfg, args, &a, &err) == 0);
    CHECK(a.limits.has_pids && a.limits.limits.pids == 64 && a.limits.limits.memory_mb == 4096);
    CHECK(!a.limits.has_cpus && a.limits.limits.cpus == 1 && a.limits.limits.timeout_s == 30);
    json_decref(args);
}

/* disk_mb on the three tools that make a sandbox, within serve --max-disk
 * (the error names it); workspace_mb only with a workspace, within
 * --max-workspace; the defaults unless named. */
static void disk_sizes_within_ceilings(void)
{
    CHECK_STR(ta_fails("execute_code", "{\"code\":\"\",\"disk_mb\":8193}"),
              "disk_mb must be from 16 to 8192 MiB (the server's ceiling, serve --max-disk); "
              "8193 asked for");
    ta_fails("run_command", "{\"command\":\"\",\"disk_mb\":15}");
    ta_fails("sandbox_create", "{\"disk_mb\":0}");
    CHECK_STR(ta_fails("execute_code", "{\"code\":\"\",\"disk_mb\":\"big\"}"),
              "disk_mb must be a number");
    CHECK_STR(ta_fails("sandbox_create", "{\"workspace\":\"w\",\"workspace_mb\":2049}"),
              "workspace_mb must be from 1 to 2048 MiB (the server's ceiling, serve "
              "--max-workspace); 2049 asked for");
    CHECK_STR(ta_fails("sandbox_create", "{\"workspace_mb\":10}"),
              "workspace_mb goes with workspace (a persistent workspace's name)");
    /* Nested images only in a nested sandbox (boxes/nested.h). */
    CHECK_STR(ta_fails("sandbox_create", "{\"nested_images\":[\"localhost/app:1\"]}"),
              "nested_images goes with nested: true");
    CHECK_STR(ta_fails("sandbox_create", "{\"nested\":false,\"nested_images\":[\"a\"]}"),
              "nested_images goes with nested: true");
    CHECK(ta_accepts("sandbox_create", "{\"nested\":true,\"nested_images\":[\"a\",\"b\"]}"));
    ta_fails("execute_code", "{\"code\":\"\",\"workspace_mb\":10}"); /* not its argument */

    struct mcp_run_args a;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"command\":\"\",\"disk_mb\":8192}");
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) == 0);
    CHECK(a.limits.has_disk && a.limits.limits.disk_mb == 8192);
    json_decref(args);
    args = ta_parse("{\"command\":\"\"}");
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) == 0);
    CHECK(!a.limits.has_disk && a.limits.limits.disk_mb == 1024);
    json_decref(args);
    struct mcp_create_args c;
    args = ta_parse("{\"workspace\":\"w\",\"workspace_mb\":64,\"disk_mb\":32}");
    CHECK(mcp_args_sandbox_create(&ta_cfg, args, &c, &err) == 0);
    CHECK(c.limits.has_workspace && c.limits.limits.workspace_mb == 64 &&
          c.limits.limits.disk_mb == 32);
    mcp_create_args_free(&c);
    json_decref(args);
    args = ta_parse("{\"workspace\":\"w\"}");
    CHECK(mcp_args_sandbox_create(&ta_cfg, args, &c, &err) == 0);
    CHECK(!c.limits.has_workspace && c.limits.limits.workspace_mb == 1024);
    mcp_create_args_free(&c);
    json_decref(args);
}

void suite_tool_args(void)
{
    RUN_TEST(every_schema_is_closed_json);
    RUN_TEST(schema_text_reports_its_length);
    RUN_TEST(decoder_takes_every_listed_field);
    RUN_TEST(wrong_type_names_the_field);
    RUN_TEST(unknown_and_missing_arguments_named);
    RUN_TEST(integer_ranges);
    RUN_TEST(inline_kb_within_ceiling);
    RUN_TEST(limits_within_ceilings);
    RUN_TEST(disk_sizes_within_ceilings);
}
