/* Unit tests for mcp/interp/protocol.c: the host's parsing of what an
 * interpreter driver sends (hostile: the code in the sandbox can write it). */
#include "check.h"
#include "suites.h"

#include <stdlib.h>
#include <string.h>

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
}
