/* libFuzzer target: the host's side of the interpreter driver protocol
 * (mcp/interp/protocol.c), which reads what the code in a kept sandbox can
 * write: channel bytes split into lines at arbitrary read boundaries, each
 * line parsed strictly, a "done" turned into result fields.  Checks the
 * contract's promises on every field (caps, UTF-8, absolute figure paths). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/utf8.h"
#include "../../mcp/interp/protocol.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "fuzz-interp: " __VA_ARGS__);                                              \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

static void check_text(const char *s, size_t max, const char *what)
{
    if (s == NULL)
        return;
    size_t n = strlen(s);
    if (n > max && strcmp(s, "(the value is not valid UTF-8)") != 0)
        FAIL("%s is %zu bytes, over %zu", what, n, max);
    if (!nsbox_utf8_valid(s, n))
        FAIL("%s is not valid UTF-8", what);
}

/* A bundle keeps the contract's promises (mcp/interp/bundle.h). */
static void check_bundle(const struct mcp_bundle *b)
{
    static const char *const texts[] = {"text", "html", "markdown", "svg", "latex", "javascript"};
    size_t total = 0;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        json_t *t = json_object_get(b->fields, texts[i]);
        if (t == NULL)
            continue;
        if (!json_is_string(t))
            FAIL("bundle %s is no string", texts[i]);
        check_text(json_string_value(t), MCP_BUNDLE_TEXT_MAX, texts[i]);
        total += json_string_length(t);
    }
    for (size_t i = 0; i < b->n_images; i++) {
        const struct mcp_bundle_image *im = &b->images[i];
        const char *magic = strcmp(im->key, "png") == 0    ? "\x89PNG\r\n\x1a\n"
                            : strcmp(im->key, "jpeg") == 0 ? "\xff\xd8\xff"
                                                           : "%PDF-";
        if (im->len < strlen(magic) || memcmp(im->data, magic, strlen(magic)) != 0)
            FAIL("a %s without its magic", im->key);
        total += im->len;
    }
    if (total > MCP_BUNDLE_MAX)
        FAIL("a bundle of %zu bytes", total);
}

static void check_done(const json_t *msg)
{
    struct mcp_interp_info info = {0};
    int code = -7;
    mcp_interp_take_done(msg, &code, &info);
    if (code != 0 && code != 1)
        FAIL("exit code %d", code);
    check_text(info.result, MCP_INTERP_RESULT_MAX, "result");
    check_text(info.error_type, MCP_INTERP_ERROR_TYPE_MAX, "error type");
    check_text(info.error_value, MCP_INTERP_ERROR_VALUE_MAX, "error value");
    if (info.error_value != NULL && info.error_type == NULL)
        FAIL("an error value without a type");
    size_t k = 0;
    for (; info.figures && info.figures[k]; k++) {
        check_text(info.figures[k], MCP_INTERP_PATH_MAX, "figure");
        if (info.figures[k][0] != '/')
            FAIL("figure path '%s' is not absolute", info.figures[k]);
    }
    if (k > MCP_INTERP_FIGURES_MAX)
        FAIL("%zu figures", k);
    if (info.n_results > MCP_INTERP_RESULTS_MAX)
        FAIL("%zu results", info.n_results);
    for (size_t i = 0; i < info.n_results; i++)
        check_bundle(&info.results[i]);
    check_text(info.error_traceback, MCP_INTERP_TRACEBACK_MAX, "traceback");
    mcp_interp_info_free(&info);
}

/* The first byte picks the read sizes, so lines are split across reads at
 * every boundary the fuzzer finds. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] % 17 + 1;
    data++, size--;
    struct mcp_interp_lines lines = {0};
    for (size_t at = 0; at < size;) {
        size_t room;
        char *to = mcp_interp_lines_room(&lines, &room);
        if (to == NULL)
            FAIL("no room for a read of a short input");
        size_t n = size - at < chunk ? size - at : chunk;
        n = n < room ? n : room;
        memcpy(to, data + at, n);
        mcp_interp_lines_add(&lines, n);
        at += n;
        for (;;) {
            bool bad;
            json_t *j = mcp_interp_lines_next(&lines, &bad);
            if (j == NULL)
                break;
            if (!json_is_object(j))
                FAIL("a line parsed to a non-object");
            (void)mcp_interp_is_done(j, 1);
            (void)mcp_interp_msg_op(j);
            check_done(j);
            json_decref(j);
        }
    }
    mcp_interp_lines_free(&lines);
    /* The whole input as one line, too: the parser alone. */
    json_t *j = mcp_interp_parse_line((const char *)data, size);
    if (j != NULL)
        check_done(j);
    json_decref(j);
    return 0;
}
