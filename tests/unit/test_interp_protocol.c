/* Unit tests for mcp/interp/protocol.c: the host's parsing of what an
 * interpreter driver sends (hostile: the code in the sandbox can write it). */
#include "check.h"
#include "suites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/base64.h"
#include "../../mcp/interp/bundle.h"
#include "../../mcp/interp/protocol.h"

/* Feeds s to lines as one read. */
static bool feed(struct mcp_interp_lines *lines, const char *s, size_t n)
{
    while (n > 0) {
        size_t room;
        char *to = mcp_interp_lines_room(lines, &room);
        if (to == NULL)
            return false;
        size_t k = n < room ? n : room;
        memcpy(to, s, k);
        mcp_interp_lines_add(lines, k);
        s += k, n -= k;
    }
    return true;
}

static bool feeds(struct mcp_interp_lines *lines, const char *s)
{
    return feed(lines, s, strlen(s));
}

/* Before anything was read there is no buffer: no line, nothing bad (the
 * first `ready` wait asks before the first read; UBSan caught NULL + 0). */
static void lines_before_any_read(void)
{
    struct mcp_interp_lines l = {0};
    bool bad = true;
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && !bad);
    mcp_interp_lines_free(&l);
}

/* A line in three reads, then two lines in one read with a third begun. */
static void lines_across_reads(void)
{
    struct mcp_interp_lines l = {0};
    bool bad = true;
    CHECK(feeds(&l, "{\"op\":\"do"));
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && !bad);
    CHECK(feeds(&l, "ne\",\"id\""));
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && !bad);
    CHECK(feeds(&l, ":1}\n{\"op\":\"ready\"}\n{\"op\""));
    json_t *a = mcp_interp_lines_next(&l, &bad);
    CHECK(a != NULL && !bad && mcp_interp_is_done(a, 1) && !mcp_interp_is_done(a, 2));
    json_t *b = mcp_interp_lines_next(&l, &bad);
    CHECK(b != NULL && strcmp(mcp_interp_msg_op(b), "ready") == 0);
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && !bad);
    CHECK(feeds(&l, ":\"x\"}\n"));
    json_t *c = mcp_interp_lines_next(&l, &bad);
    CHECK_STR(mcp_interp_msg_op(c), "x");
    json_decref(a), json_decref(b), json_decref(c);
    mcp_interp_lines_free(&l);
}

/* Garbage lines are consumed and flagged; the next good line still comes. */
static void lines_strict(void)
{
    struct mcp_interp_lines l = {0};
    bool bad;
    CHECK(feeds(&l, "nope\n[1]\n\"s\"\n{\"a\":1,\"a\":2}\n{\"s\":\"\\u0000\"}\n\n{}\n"));
    for (int i = 0; i < 6; i++)
        CHECK(mcp_interp_lines_next(&l, &bad) == NULL && bad);
    json_t *j = mcp_interp_lines_next(&l, &bad);
    CHECK(j != NULL && !bad && strcmp(mcp_interp_msg_op(j), "") == 0);
    CHECK(!mcp_interp_is_done(j, 0));
    json_decref(j);
    mcp_interp_lines_free(&l);
}

/* A line of exactly the cap is taken; one byte more is garbage. */
static void line_cap(void)
{
    size_t n = MCP_INTERP_LINE_MAX;
    char *big = malloc(n + 2);
    CHECK(big != NULL);
    if (big == NULL)
        return;
    memset(big, 'x', n);
    memcpy(big, "{\"op\":\"", 7);
    memcpy(big + n - 2, "\"}", 2);
    big[n] = '\n';
    struct mcp_interp_lines l = {0};
    bool bad;
    CHECK(feed(&l, big, n + 1));
    json_t *j = mcp_interp_lines_next(&l, &bad);
    CHECK(j != NULL && !bad && strlen(mcp_interp_msg_op(j)) == n - 9);
    json_decref(j);
    mcp_interp_lines_free(&l);

    /* One more byte and no newline: garbage, and no more room. */
    CHECK(feed(&l, big, n));
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && !bad);
    CHECK(feed(&l, "y", 1));
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && bad);
    size_t room;
    CHECK(mcp_interp_lines_room(&l, &room) == NULL);
    mcp_interp_lines_free(&l);

    /* Over the cap with its newline in the same read: garbage too. */
    big[n] = 'z';
    big[n + 1] = '\n';
    CHECK(feed(&l, big, n + 2));
    CHECK(mcp_interp_lines_next(&l, &bad) == NULL && bad);
    mcp_interp_lines_free(&l);
    free(big);
}

/* Many short lines: each is handed out (the buffer compacts lazily). */
static void many_lines(void)
{
    struct mcp_interp_lines l = {0};
    bool bad;
    size_t got = 0;
    for (int r = 0; r < 64; r++) {
        char chunk[4096];
        size_t k = 0;
        while (k + 3 <= sizeof(chunk))
            memcpy(chunk + k, "{}\n", 3), k += 3;
        CHECK(feed(&l, chunk, k));
        json_t *j;
        while ((j = mcp_interp_lines_next(&l, &bad)) != NULL)
            got++, json_decref(j);
        CHECK(!bad);
    }
    CHECK(got == 64 * (4096 / 3));
    CHECK(l.cap <= 2 * 65536);
    mcp_interp_lines_free(&l);
}

static json_t *done_of(const char *text)
{
    return mcp_interp_parse_line(text, strlen(text));
}

static void done_fields(void)
{
    json_t *d = done_of(
        "{\"op\":\"done\",\"id\":3,\"status\":\"ok\",\"result\":\"42\",\"error\":null,"
        "\"interrupted\":true,\"figures\":[{\"path\":\"/workspace/figure-3-1.png\"}]}");
    struct mcp_interp_info info = {0};
    int code = -1;
    mcp_interp_take_done(d, &code, &info);
    CHECK(code == 0);
    CHECK_STR(info.result, "42");
    CHECK(info.error_type == NULL && info.interrupted);
    CHECK(info.figures != NULL && info.figures[1] == NULL);
    CHECK_STR(info.figures ? info.figures[0] : NULL, "/workspace/figure-3-1.png");
    mcp_interp_info_free(&info);
    json_decref(d);

    d = done_of("{\"op\":\"done\",\"status\":\"error\",\"error\":{\"type\":\"ValueError\"}}");
    mcp_interp_take_done(d, &code, &info);
    CHECK(code == 1 && info.result == NULL && !info.interrupted);
    CHECK_STR(info.error_type, "ValueError");
    CHECK(info.error_value == NULL);
    CHECK(info.figures != NULL && info.figures[0] == NULL);
    mcp_interp_info_free(&info);
    json_decref(d);

    /* The message travels too (issue #24), as error_value. */
    d = done_of("{\"op\":\"done\",\"status\":\"error\",\"error\":{\"type\":\"KeyError\","
                "\"message\":\"'missing'\"}}");
    mcp_interp_take_done(d, &code, &info);
    CHECK(code == 1);
    CHECK_STR(info.error_type, "KeyError");
    CHECK_STR(info.error_value, "'missing'");
    CHECK(info.figures != NULL && info.figures[0] == NULL);
    mcp_interp_info_free(&info);
    json_decref(d);
}

/* Every field of the wrong type is ignored, one by one. */
static void done_wrong_types(void)
{
    json_t *d = done_of(
        "{\"op\":\"done\",\"id\":\"1\",\"status\":1,\"result\":[\"x\"],"
        "\"error\":\"TypeError\",\"interrupted\":\"true\",\"figures\":{\"path\":\"/a\"}}");
    struct mcp_interp_info info = {0};
    int code = -1;
    CHECK(!mcp_interp_is_done(d, 1));
    mcp_interp_take_done(d, &code, &info);
    CHECK(code == 1);
    CHECK(info.result == NULL && info.error_type == NULL && !info.interrupted);
    CHECK(info.figures != NULL && info.figures[0] == NULL);
    mcp_interp_info_free(&info);
    json_decref(d);

    d = done_of(
        "{\"error\":{\"type\":5,\"message\":\"m\"},\"figures\":[7,null,{\"path\":9},{\"path\":\"/ok.png\"}]}");
    mcp_interp_take_done(d, &code, &info);
    CHECK(info.error_type == NULL && info.error_value == NULL);
    CHECK_STR(info.figures ? info.figures[0] : NULL, "/ok.png");
    CHECK(info.figures && info.figures[1] == NULL);
    mcp_interp_info_free(&info);
    json_decref(d);
}

/* A result over the cap is cut at a whole UTF-8 sequence, still valid. */
static void done_huge_result(void)
{
    size_t n = 3 * MCP_INTERP_RESULT_MAX;
    json_t *d = json_object();
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i += 3)
        memcpy(s + i, "\xe2\x82\xac", 3); /* the euro sign */
    s[n] = '\0';
    json_object_set_new(d, "result", json_string(s));
    struct mcp_interp_info info = {0};
    int code;
    mcp_interp_take_done(d, &code, &info);
    CHECK(info.result != NULL);
    size_t got = info.result ? strlen(info.result) : 0;
    CHECK(got <= MCP_INTERP_RESULT_MAX && got > MCP_INTERP_RESULT_MAX - 3 && got % 3 == 0);
    CHECK(info.result && memcmp(info.result, s, got) == 0);
    mcp_interp_info_free(&info);
    json_decref(d);
    free(s);
}

/* Invalid UTF-8 never reaches a result: the parser refuses the line, and a
 * string made otherwise is replaced by a note. */
static void invalid_utf8(void)
{
    CHECK(done_of("{\"result\":\"\xc3\x28\"}") == NULL);
    CHECK(done_of("{\"result\":\"\xed\xa0\x80\"}") == NULL); /* a surrogate */
    json_t *d = json_object();
    json_object_set_new_nocheck(d, "result", json_stringn_nocheck("a\xff", 2));
    json_object_set_new_nocheck(d, "figures",
                                json_pack("[{s:o}]", "path", json_stringn_nocheck("/\xc0\x80", 3)));
    struct mcp_interp_info info = {0};
    int code;
    mcp_interp_take_done(d, &code, &info);
    CHECK_STR(info.result, "(the value is not valid UTF-8)");
    CHECK(info.figures && info.figures[0] && strcmp(info.figures[0], "/\xc0\x80") != 0);
    mcp_interp_info_free(&info);
    json_decref(d);
}

/* Figures: absolute paths only, at most MCP_INTERP_FIGURES_MAX looked at. */
static void figures_checked(void)
{
    json_t *figs = json_array();
    json_array_append_new(figs, json_pack("{s:s}", "path", "figure-1-1.png"));
    json_array_append_new(figs, json_pack("{s:s}", "path", "../etc/passwd"));
    json_array_append_new(figs, json_pack("{s:s}", "path", ""));
    json_array_append_new(figs, json_pack("{s:s}", "path", "/workspace/a.png"));
    for (int i = 0; i < 100; i++)
        json_array_append_new(figs, json_pack("{s:s}", "path", "/x.png"));
    json_t *d = json_pack("{s:o}", "figures", figs);
    struct mcp_interp_info info = {0};
    int code;
    mcp_interp_take_done(d, &code, &info);
    size_t k = 0;
    while (info.figures && info.figures[k])
        CHECK(info.figures[k++][0] == '/');
    CHECK(k == MCP_INTERP_FIGURES_MAX - 3);
    CHECK_STR(info.figures ? info.figures[0] : NULL, "/workspace/a.png");
    mcp_interp_info_free(&info);
    json_decref(d);
}

/* The error's E2B names win over the older ones; a traceback goes with a
 * name only; execution_count is a positive integer or nothing. */
static void done_error_and_count(void)
{
    struct mcp_interp_info info = {0};
    int code;
    json_t *d = done_of("{\"status\":\"error\",\"execution_count\":7,\"error\":{\"type\":\"T\","
                        "\"message\":\"m\",\"name\":\"KeyError\",\"value\":\"'k'\","
                        "\"traceback\":\"Traceback\\nKeyError: 'k'\\n\"}}");
    mcp_interp_take_done(d, &code, &info);
    CHECK(code == 1 && info.execution_count == 7);
    CHECK_STR(info.error_type, "KeyError");
    CHECK_STR(info.error_value, "'k'");
    CHECK_STR(info.error_traceback, "Traceback\nKeyError: 'k'\n");
    mcp_interp_info_free(&info);
    json_decref(d);

    const char *bad[] = {"\"7\"", "-1", "0", "1.5", "true", "null"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "{\"execution_count\":%s,\"error\":{\"traceback\":\"t\"}}",
                 bad[i]);
        d = done_of(text);
        mcp_interp_take_done(d, &code, &info);
        CHECK(info.execution_count == 0 && info.error_traceback == NULL);
        mcp_interp_info_free(&info);
        json_decref(d);
    }
}

/* A PNG's, a JPEG's and a PDF's first bytes, as base64. */
#define PNG_B64 "iVBORw0KGgoAAAAN" /* \x89PNG\r\n\x1a\n + 4 bytes */
#define JPEG_B64 "/9j/4AAQ"        /* \xff\xd8\xff\xe0\x00\x10 */
#define PDF_B64 "JVBERi0xLjQ="     /* %PDF-1.4 */

static const struct mcp_bundle *bundle(const struct mcp_interp_info *info, size_t i)
{
    return i < info->n_results ? &info->results[i] : NULL;
}

/* Each key only with its type; images only as strict base64 with their
 * magic; bundles that are no objects, and unknown keys, left out. */
static void results_checked(void)
{
    json_t *d = done_of(
        "{\"results\":[7,\"s\",null,"
        "{\"is_main_result\":\"yes\",\"text\":5,\"html\":\"<b>x</b>\",\"markdown\":[],"
        "\"json\":{\"a\":[1,null]},\"data\":[1],\"chart\":{\"type\":\"evil\"},\"extra\":\"x\","
        "\"evil\":\"x\",\"png\":\"" JPEG_B64 "\",\"jpeg\":\"" JPEG_B64 "\",\"pdf\":\"%PDF\"},"
        "{\"is_main_result\":true,\"chart\":{\"type\":\"pie\",\"elements\":[]},"
        "\"png\":\"" PNG_B64 "\",\"pdf\":\"" PDF_B64 "\",\"data\":{\"a\":[1]}}]}");
    struct mcp_interp_info info = {0};
    int code;
    mcp_interp_take_done(d, &code, &info);
    CHECK(info.n_results == 2 && !info.results_truncated);
    const struct mcp_bundle *a = bundle(&info, 0), *b = bundle(&info, 1);
    char *fa = a ? json_dumps(a->fields, JSON_COMPACT) : NULL;
    char *fb = b ? json_dumps(b->fields, JSON_COMPACT) : NULL;
    CHECK_STR(fa, "{\"html\":\"<b>x</b>\",\"json\":{\"a\":[1,null]}}");
    CHECK(a && a->n_images == 1 && strcmp(a->images[0].key, "jpeg") == 0 && a->images[0].len == 6);
    CHECK(a && strcmp(a->images[0].mime, "image/jpeg") == 0);
    CHECK_STR(fb, "{\"is_main_result\":true,\"data\":{\"a\":[1]},\"chart\":{\"type\":\"pie\","
                  "\"elements\":[]}}");
    CHECK(b && b->n_images == 2 && strcmp(b->images[0].key, "png") == 0 && b->images[0].len == 12);
    CHECK(b && b->n_images == 2 && strcmp(b->images[1].mime, "application/pdf") == 0 &&
          memcmp(b->images[1].data, "%PDF-1.4", 8) == 0);
    free(fa);
    free(fb);
    mcp_interp_info_free(&info);
    json_decref(d);

    d = done_of("{\"results\":{\"text\":\"x\"}}"); /* not an array */
    mcp_interp_take_done(d, &code, &info);
    CHECK(info.n_results == 0 && info.results == NULL);
    mcp_interp_info_free(&info);
    json_decref(d);
}

/* At most MCP_INTERP_RESULTS_MAX bundles; a text over MCP_BUNDLE_TEXT_MAX
 * and what passes MCP_BUNDLE_MAX in all are dropped, and named in extra's
 * "nsbox/dropped" after the driver's own note. */
static void results_capped(void)
{
    json_t *many = json_array();
    for (int i = 0; i < MCP_INTERP_RESULTS_MAX + 6; i++)
        json_array_append_new(many, json_pack("{s:i}", "json", i));
    json_t *d = json_pack("{s:o}", "results", many);
    struct mcp_interp_info info = {0};
    int code;
    mcp_interp_take_done(d, &code, &info);
    CHECK(info.n_results == MCP_INTERP_RESULTS_MAX && info.results_truncated);
    CHECK(info.n_results &&
          json_integer_value(json_object_get(info.results[info.n_results - 1].fields, "json")) ==
              MCP_INTERP_RESULTS_MAX - 1);
    mcp_interp_info_free(&info);
    json_decref(d);

    size_t mib = 1u << 20;
    char *big = malloc(mib + 2);
    memset(big, 'x', mib + 1);
    big[mib + 1] = '\0';
    json_t *b = json_pack("{s:s,s:{s:s}}", "markdown", big, "extra", "nsbox/dropped", "drv");
    big[mib] = '\0'; /* exactly the cap: kept */
    const char *texts[] = {"text", "html", "svg", "latex", "javascript"};
    for (size_t i = 0; i < 5; i++)
        json_object_set_new(b, texts[i], json_string(big));
    big[mib / 2] = '\0';
    json_t *arr = json_array();
    for (int i = 0; i < 8; i++)
        json_array_append_new(arr, json_string(big)); /* 4 MiB as JSON: over the rest */
    json_object_set_new(b, "json", arr);
    d = json_pack("{s:[o]}", "results", b);
    mcp_interp_take_done(d, &code, &info);
    CHECK(info.n_results == 1);
    if (info.n_results == 1) {
        json_t *f = info.results[0].fields;
        CHECK(json_object_get(f, "markdown") == NULL && json_object_get(f, "json") == NULL);
        CHECK(json_string_length(json_object_get(f, "javascript")) == mib);
        const char *note = json_string_value(
            json_object_get(json_object_get(f, "extra"), "nsbox/dropped"));
        CHECK(note && strncmp(note, "drv; markdown: 1048577 bytes over 1 MiB; json: ", 47) == 0);
        CHECK(note && strstr(note, "over 8 MiB per bundle") != NULL);
    }
    mcp_interp_info_free(&info);
    json_decref(d);
    free(big);
}

/* common/base64.h's one strict decoder (bundles with NSBOX_B64_NEWLINES,
 * write_file with no flag, header values with NSBOX_B64_PADDED). */
static void results_base64(void)
{
    size_t n = 0;
    unsigned char *v;
    const char *ok[][2] = {
        {"QUJD", "ABC"}, {"QUI=", "AB"}, {"QUI", "AB"}, {"QUJD\nQUJD\n", "ABCABC"}, {"", ""}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        v = nsbox_base64_decode(ok[i][0], strlen(ok[i][0]), 64, NSBOX_B64_NEWLINES, &n);
        CHECK(v != NULL && n == strlen(ok[i][1]) && memcmp(v, ok[i][1], n) == 0);
        free(v);
    }
    const char *bad[] = {"QQ=====", "QUJDR", "QR==", "QU JD", "QUJ=D", "Q===", "QUJD\t", "-_8="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = nsbox_base64_decode(bad[i], strlen(bad[i]), 64, NSBOX_B64_NEWLINES, &n);
        CHECK(v == NULL);
        free(v);
    }
    v = nsbox_base64_decode("QUJD", 4, 2, 0, &n); /* over max */
    CHECK(v == NULL);
    free(v);
    v = nsbox_base64_decode("QUJD\n", 5, 64, 0, &n); /* a line break without the flag */
    CHECK(v == NULL);
    free(v);
    v = nsbox_base64_decode("QUI", 3, 64, NSBOX_B64_PADDED, &n); /* unpadded */
    CHECK(v == NULL);
    free(v);
    v = nsbox_base64_decode("QUI=", 4, 64, NSBOX_B64_PADDED, &n);
    CHECK(v != NULL && n == 2 && v[2] == 0);
    free(v);
}

void suite_interp_protocol(void)
{
    RUN_TEST(lines_before_any_read);
    RUN_TEST(lines_across_reads);
    RUN_TEST(lines_strict);
    RUN_TEST(line_cap);
    RUN_TEST(many_lines);
    RUN_TEST(done_fields);
    RUN_TEST(done_wrong_types);
    RUN_TEST(done_huge_result);
    RUN_TEST(invalid_utf8);
    RUN_TEST(figures_checked);
    RUN_TEST(done_error_and_count);
    RUN_TEST(results_checked);
    RUN_TEST(results_capped);
    RUN_TEST(results_base64);
}
