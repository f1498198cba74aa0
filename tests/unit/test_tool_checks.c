/* Unit tests for what the MCP tools' argument table cannot say, checked by
 * the decoders after it (mcp/tools/args.c and the tools' own decoders):
 * strings (NUL bytes, lengths), each tool's own checks (absolute paths, env
 * forms, base64), the languages table (mcp/tools/languages.c), the tool
 * table (every tool has a declaration), the typed result (mcp/result.c),
 * upload URL sizes, the process tools and run_command's env.  The generic
 * checks the table drives are in test_tool_args.c. */
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

/* ---- strings ---- */

static void strings(void)
{
    struct nsbox_err err;
    json_t *args = json_pack("{s:s%}", "sandbox_id", "a\0b", (size_t)3);
    CHECK(ta_try("sandbox_stop", args, &err) == -1);
    CHECK_STR(err.msg, "sandbox_id must be a string without NUL bytes");
    CHECK_STR(ta_fails("sandbox_stop", "{\"sandbox_id\":\"\"}"),
              "sandbox_id must be a non-empty string");
    CHECK_STR(ta_fails("write_file", "{\"sandbox_id\":\"s\",\"path\":\"\",\"content\":\"\"}"),
              "path must be a non-empty string");
    CHECK_STR(
        ta_fails("read_file", "{\"sandbox_id\":\"s\",\"path\":\"p\",\"encoding\":\"latin1\"}"),
        "encoding must be utf-8 or base64");
    CHECK(ta_accepts("execute_code", "{\"code\":\"\"}"));

    /* File content may hold NUL bytes: it is written as it is. */
    struct mcp_write_args w;
    args = json_pack("{s:s,s:s,s:s%}", "sandbox_id", "s", "path", "p", "content", "a\0b",
                     (size_t)3);
    CHECK(mcp_args_write_file(args, &w, &err) == 0);
    CHECK(w.len == 3 && memcmp(w.content, "a\0b", 3) == 0 && w.decoded == NULL);
    mcp_write_args_free(&w);
    json_decref(args);

    char *big = malloc(MCP_CODE_MAX + 2);
    memset(big, 'x', MCP_CODE_MAX + 1);
    big[MCP_CODE_MAX + 1] = '\0';
    args = json_pack("{s:s}", "code", big);
    CHECK(ta_try("execute_code", args, &err) == -1);
    CHECK(strstr(err.msg, "code is longer than") && strstr(err.msg, "run_command"));
    big[MCP_CODE_MAX] = '\0';
    CHECK(ta_try("run_command", json_pack("{s:s}", "command", big), &err) == 0);
    free(big);
}

/* What the table cannot say: checked by the decoders after it. */
static void tool_specific_checks(void)
{
    CHECK(strstr(ta_fails("run_command", "{\"command\":\"ls\",\"workdir\":\"w\"}"), "absolute"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"workdir\":\"w\"}"), "absolute"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"workspace\":\"../x\"}"), "workspace names"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":{\"A=B\":\"x\"}}"), "without '='"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":{\"A\":1}}"), "env: \"A\""));
    /* The schema's form, [{name, value}]: each entry exactly that. */
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":[{\"name\":\"A=B\",\"value\":\"x\"}]}"),
                 "without '='"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":[{\"name\":\"A\"}]}"), "env[0] must be"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":[{\"name\":\"\",\"value\":\"x\"}]}"),
                 "env[0] must be"));
    CHECK(strstr(
        ta_fails("sandbox_create", "{\"env\":[{\"name\":\"A\",\"value\":\"x\",\"extra\":1}]}"),
        "env[0] must be"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":[\"A=B\"]}"), "env[0] must be"));
    CHECK(strstr(ta_fails("sandbox_create", "{\"env\":\"A=B\"}"), "env must be an array"));
    CHECK(
        strstr(ta_fails("delete_path", "{\"sandbox_id\":\"s\",\"path\":\"a/../..\"}"), "refusing"));
    ta_fails("delete_path", "{\"sandbox_id\":\"s\",\"path\":\"/\"}");
    ta_fails("delete_path", "{\"sandbox_id\":\"s\",\"path\":\".\"}");
    CHECK(strstr(ta_fails("copy_in", "{\"sandbox_id\":\"s\",\"host_path\":\"/srv/sharex/f\","
                                     "\"path\":\"p\"}"),
                 "not inside"));
    ta_fails("copy_out", "{\"sandbox_id\":\"s\",\"host_path\":\"/srv/share/a/..\",\"path\":\"p\"}");

    struct mcp_create_args c;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"env\":{\"A\":\"b\",\"C\":\"\"},\"workspace\":\"ws\"}");
    CHECK(mcp_args_sandbox_create(&ta_cfg, args, &c, &err) == 0);
    CHECK(c.env && strcmp(c.env[0], "A=b") == 0 && strcmp(c.env[1], "C=") == 0 && !c.env[2]);
    CHECK_STR(c.language, MCP_LANGUAGE_DEFAULT);
    CHECK(c.image == NULL && c.workdir == NULL);
    mcp_create_args_free(&c);
    json_decref(args);
    args = ta_parse(
        "{\"env\":[{\"name\":\"A\",\"value\":\"b=c\"},{\"name\":\"D\",\"value\":\"\"}]}");
    CHECK(mcp_args_sandbox_create(&ta_cfg, args, &c, &err) == 0);
    CHECK(c.env && strcmp(c.env[0], "A=b=c") == 0 && strcmp(c.env[1], "D=") == 0 && !c.env[2]);
    mcp_create_args_free(&c);
    json_decref(args);

    struct mcp_list_args l;
    args = ta_parse("{\"sandbox_id\":\"s\"}");
    CHECK(mcp_args_list_directory(args, &l, &err) == 0 && strcmp(l.path, ".") == 0 && l.depth == 1);
    CHECK(mcp_args_project_structure(args, &l, &err) == 0 && strcmp(l.path, ".") == 0 &&
          l.depth == 3);
    json_decref(args);
}

static void base64_strict(void)
{
    static const struct {
        const char *in, *out; /* out NULL: refused */
    } cases[] = {
        {"QUJD", "ABC"}, {"QUI=", "AB"},  {"QUI", "AB"},    {"QQ==", "A"},
        {"QQ", "A"},     {"", ""},        {"QUJDR", NULL},  {"QQ=====", NULL},
        {"QQ=", NULL},   {"QU JD", NULL}, {"QUJD\n", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mcp_write_args w;
        struct nsbox_err err;
        json_t *args = json_pack("{s:s,s:s,s:s,s:s}", "sandbox_id", "s", "path", "p", "content",
                                 cases[i].in, "encoding", "base64");
        int r = mcp_args_write_file(args, &w, &err);
        if (cases[i].out == NULL) {
            CHECK(r == -1 && strcmp(err.msg, "content is not valid base64") == 0);
        } else {
            CHECK(r == 0 && w.len == strlen(cases[i].out) &&
                  memcmp(w.content, cases[i].out, w.len) == 0);
        }
        mcp_write_args_free(&w);
        json_decref(args);
    }
}

/* ---- languages ---- */

static void languages_table(void)
{
    size_t n, primary = 0;
    const struct mcp_language *langs = mcp_languages(&n);
    char list[256];
    mcp_languages_text(list, sizeof(list), " or ");
    CHECK_STR(list, "python, sh, bash, javascript, typescript, ruby, r, java or perl");
    CHECK(mcp_language_find(MCP_LANGUAGE_DEFAULT) != NULL);
    CHECK(mcp_language_find("cobol") == NULL);
    for (size_t i = 0; i < n; i++) {
        const struct mcp_language *l = &langs[i], *of;
        CHECK(mcp_language_find(l->name) == l);
        CHECK(l->argv[0] && l->argv[1] && l->description);
        if (l->alias_of == NULL) {
            primary++;
            CHECK(strstr(list, l->name) != NULL);
            continue;
        }
        /* An alias runs what the name it stands for runs. */
        CHECK((of = mcp_language_find(l->alias_of)) != NULL && of->alias_of == NULL);
        CHECK(of && strcmp(of->argv[0], l->argv[0]) == 0 && strcmp(of->argv[1], l->argv[1]) == 0);
    }
    CHECK(primary == 9);
}

/* execute_code runs each language with the table's interpreter, lists them
 * in its schema, and refuses others naming them all. */
static void execute_code_languages(void)
{
    size_t n;
    const struct mcp_language *langs = mcp_languages(&n);
    for (size_t i = 0; i < n; i++) {
        struct mcp_run_args a;
        struct nsbox_err err;
        json_t *args = json_pack("{s:s,s:s}", "code", "1", "language", langs[i].name);
        CHECK(mcp_args_execute_code(&ta_cfg, args, &a, &err) == 0);
        CHECK_STR(a.argv[0], langs[i].argv[0]);
        CHECK_STR(a.argv[1], langs[i].argv[1]);
        if (langs[i].argv[2] == NULL) {
            CHECK_STR(a.argv[2], "1");
            CHECK(a.argv[3] == NULL);
        } else { /* sh -c SCRIPT LANGUAGE CODE (java) */
            CHECK_STR(a.argv[2], langs[i].argv[2]);
            CHECK_STR(a.argv[3], langs[i].name);
            CHECK_STR(a.argv[4], "1");
            CHECK(a.argv[5] == NULL);
        }
        CHECK_STR(a.code, "1");
        CHECK_STR(a.language, langs[i].name);
        json_decref(args);
    }
    struct mcp_run_args a;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"code\":\"1\"}");
    CHECK(mcp_args_execute_code(&ta_cfg, args, &a, &err) == 0);
    CHECK_STR(a.language, MCP_LANGUAGE_DEFAULT);
    CHECK_STR(a.argv[0], mcp_language_find(MCP_LANGUAGE_DEFAULT)->argv[0]);
    json_decref(args);

    const char *msg = ta_fails("execute_code", "{\"code\":\"1\",\"language\":\"cobol\"}");
    CHECK(strstr(msg, "\"cobol\"") && strstr(msg, "run_command"));
    json_t *schema = mcp_schema_build(mcp_tool_args_find("execute_code"));
    json_t *lang = json_object_get(json_object_get(schema, "properties"), "language");
    const char *desc = json_string_value(json_object_get(lang, "description"));
    CHECK_STR(json_string_value(json_object_get(lang, "default")), MCP_LANGUAGE_DEFAULT);
    for (size_t i = 0; i < n; i++)
        if (langs[i].alias_of == NULL) {
            CHECK(desc && strstr(desc, langs[i].name) != NULL);
            CHECK(strstr(msg, langs[i].name) != NULL);
        }
    json_decref(schema);
    /* sandbox_create's language is any image's label, not only these. */
    CHECK(ta_accepts("sandbox_create", "{\"language\":\"cobol\"}"));
}

/* tools/list builds each inputSchema from the tool's declaration: a tool
 * in the table without one could not be listed, and a declaration no
 * tool has is a leftover. */
static void every_tool_has_a_declaration(void)
{
    size_t n;
    mcp_tool_args_all(&n);
    CHECK(mcp_n_tools == n);
    for (size_t i = 0; i < mcp_n_tools; i++) {
        const struct mcp_tool_args *decl = mcp_tool_args_find(mcp_tools[i].name);
        CHECK(decl != NULL);
        CHECK(decl == NULL || strcmp(decl->tool, mcp_tools[i].name) == 0);
        json_t *out = json_loads(mcp_tools[i].output_schema, 0, NULL);
        CHECK(json_is_object(out));
        json_decref(out);
    }
}

/* A tool's typed result owns its image blocks; an image it cannot keep
 * is freed, not leaked (mcp/result.h). */
static void result_owns_its_images(void)
{
    struct mcp_result r = {0};
    struct nsbox_err err;
    CHECK(mcp_result_add_image(&r, strdup("iVBORw0KGgo="), "image/png", &err) == 0);
    CHECK(mcp_result_add_image(&r, strdup("R0lGODlh"), "image/gif", &err) == 0);
    CHECK(r.n_content == 2);
    CHECK(r.content[0].kind == MCP_CONTENT_IMAGE);
    CHECK_STR(r.content[1].data, "R0lGODlh");
    CHECK_STR(r.content[1].mime_type, "image/gif");
    CHECK(r.content[0].uri == NULL);
    r.structured = json_object();
    mcp_result_free(&r);
    CHECK(r.n_content == 0 && r.content == NULL && r.structured == NULL);
    mcp_result_free(&r); /* safe twice */
}

/* upload_url: size_mb within the server's cap; the cap when absent. */
static void upload_url_sizes(void)
{
    struct mcp_upload_args a;
    struct nsbox_err err;
    json_t *j = ta_parse("{\"sandbox_id\":\"x\",\"path\":\"in.csv\"}");
    CHECK(mcp_args_upload_url(64ull << 20, j, &a, &err) == 0 && a.max_bytes == 64ull << 20);
    json_decref(j);
    j = ta_parse("{\"sandbox_id\":\"x\",\"path\":\"in.csv\",\"size_mb\":2}");
    CHECK(mcp_args_upload_url(64ull << 20, j, &a, &err) == 0 && a.max_bytes == 2ull << 20);
    json_decref(j);
    CHECK(strstr(ta_fails("upload_url", "{\"sandbox_id\":\"x\",\"path\":\"a\",\"size_mb\":65}"),
                 "at most 64") != NULL);
    CHECK(strstr(ta_fails("upload_url", "{\"sandbox_id\":\"x\",\"path\":\"a\",\"size_mb\":0}"),
                 "size_mb") != NULL);
}

/* A run's env: either form, names without '=' or NUL, no name twice,
 * within the caps; an error names the variable, never its value. */
/* The background-process tools: the cursor's form, the handle's, and
 * run_command {background} refusing what a background process cannot
 * take. */
static void process_args(void)
{
    struct mcp_process_args a;
    struct nsbox_err err;
    json_t *args = ta_parse("{\"handle\":\"sb1/p3\",\"cursor\":\"18446744073709551615:7\"}");
    CHECK(mcp_args_process_logs(args, &a, &err) == 0);
    CHECK(a.out_cursor == UINT64_MAX && a.err_cursor == 7 && a.streams == 3);
    CHECK(a.max_bytes == MCP_PROCESS_LOGS_DEFAULT);
    json_decref(args);
    CHECK(strstr(ta_fails("process_logs", "{\"handle\":\"s/p1\",\"cursor\":\"12\"}"), "OUT:ERR"));
    CHECK(strstr(ta_fails("process_logs", "{\"handle\":\"s/p1\",\"cursor\":\"-1:0\"}"), "OUT:ERR"));
    CHECK(strstr(ta_fails("process_logs", "{\"handle\":\"s/p1\",\"cursor\":\"1:2x\"}"), "OUT:ERR"));
    CHECK(strstr(ta_fails("process_logs", "{\"handle\":\"s/p1\",\"max_bytes\":2000000}"),
                 "max_bytes"));
    CHECK(
        strstr(ta_fails("process_signal", "{\"handle\":\"s/p1\",\"signal\":\"STOP\"}"), "signal"));
    CHECK(strstr(
        ta_fails("process_start", "{\"sandbox_id\":\"s\",\"command\":\"x\",\"workdir\":\"w\"}"),
        "absolute"));
    char sid[64];
    const char *id;
    CHECK(mcp_process_handle_split("NODE.abc/p12", sid, sizeof(sid), &id, &err) == 0);
    CHECK_STR(sid, "NODE.abc");
    CHECK_STR(id, "p12");
    CHECK(mcp_process_handle_split("p1", sid, sizeof(sid), &id, &err) < 0 && err.code == ENOENT);
    CHECK(mcp_process_handle_split("/p1", sid, sizeof(sid), &id, &err) < 0);
    CHECK(mcp_process_handle_split("s/x1", sid, sizeof(sid), &id, &err) < 0);
    args = ta_parse("{\"command\":\"x\",\"sandbox_id\":\"s\",\"background\":true,\"stdin\":\"y\"}");
    CHECK(mcp_args_run_background(args, &a, &err) < 0 && strstr(err.msg, "not stdin"));
    json_decref(args);
    args = ta_parse("{\"command\":\"x\",\"background\":true}");
    CHECK(mcp_args_run_background(args, &a, &err) < 0 && strstr(err.msg, "sandbox_id"));
    json_decref(args);
    args = ta_parse(
        "{\"command\":\"x\",\"sandbox_id\":\"s\",\"background\":true,\"env\":{\"A\":\"1\"}}");
    CHECK(mcp_args_run_background(args, &a, &err) == 0 && strcmp(a.command, "x") == 0);
    json_decref(args);
}

static void run_env_checked(void)
{
    CHECK(ta_accepts("execute_code", "{\"code\":\"\",\"env\":{\"A\":\"1\",\"B_2\":\"\"}}"));
    CHECK(
        ta_accepts("run_command", "{\"command\":\"\",\"env\":[{\"name\":\"A\",\"value\":\"v\"}]}"));
    CHECK_STR(ta_fails("run_command", "{\"command\":\"\",\"env\":{\"A=B\":\"s3cret\"}}"),
              "env: \"A=B\" must be a name of 1 to 256 bytes, without '=' or NUL");
    CHECK(strstr(ta_fails("execute_code", "{\"code\":\"\",\"env\":{\"\":\"s3cret\"}}"), "s3cret") ==
          NULL);
    CHECK_STR(ta_fails("run_command", "{\"command\":\"\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                                      "{\"name\":\"A\",\"value\":\"s3cret\"}]}"),
              "env names \"A\" twice");
    ta_fails("run_command", "{\"command\":\"\",\"env\":\"A=1\"}");

    json_t *args = ta_parse("{\"command\":\"\"}");
    json_t *env = json_object();
    char name[16];
    for (int i = 0; i <= MCP_RUN_ENV_MAX; i++) {
        snprintf(name, sizeof(name), "V%d", i);
        json_object_set_new(env, name, json_string("x"));
    }
    json_object_set(args, "env", env);
    struct mcp_run_args a;
    struct nsbox_err err;
    json_t *nul = json_object(); /* NUL bytes, as a parser allowing them would give */
    json_object_setn_new(nul, "A\0B", 3, json_string("x"));
    json_object_set(args, "env", nul);
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) < 0);
    json_object_clear(nul);
    json_object_set_new(nul, "A", json_stringn("s3\0cret", 7));
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) < 0 && strstr(err.msg, "s3") == NULL);
    json_decref(nul);
    json_object_set(args, "env", env);
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) < 0);
    CHECK_STR(err.msg, "env has more than 256 variables");
    json_object_clear(env);
    char *big = calloc(1, MCP_RUN_ENV_BYTES);
    memset(big, 'v', MCP_RUN_ENV_BYTES - 8);
    json_object_set_new(env, "AB", json_string(big));
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) == 0 && a.env == env);
    json_object_set_new(env, "CDE", json_string("x"));
    CHECK(mcp_args_run_command(&ta_cfg, args, &a, &err) < 0);
    CHECK_STR(err.msg, "env holds more than 16384 bytes of names and values");
    free(big);
    json_decref(env);
    json_decref(args);

    args = ta_parse("{\"code\":\"\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                    "{\"name\":\"B\",\"value\":\"2=3\"}]}");
    CHECK(mcp_args_execute_code(&ta_cfg, args, &a, &err) == 0);
    char **v = mcp_args_env_strings(a.env);
    CHECK(v && v[0] && v[1] && !v[2] && strcmp(v[0], "A=1") == 0 && strcmp(v[1], "B=2=3") == 0);
    nsbox_strvfree(v);
    json_t *o = mcp_args_env_object(a.env);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    CHECK_STR(text, "{\"A\":\"1\",\"B\":\"2=3\"}");
    free(text);
    json_decref(o);
    json_decref(args);
}

void suite_tool_checks(void)
{
    RUN_TEST(strings);
    RUN_TEST(tool_specific_checks);
    RUN_TEST(base64_strict);
    RUN_TEST(languages_table);
    RUN_TEST(execute_code_languages);
    RUN_TEST(every_tool_has_a_declaration);
    RUN_TEST(result_owns_its_images);
    RUN_TEST(upload_url_sizes);
    RUN_TEST(process_args);
    RUN_TEST(run_env_checked);
}
