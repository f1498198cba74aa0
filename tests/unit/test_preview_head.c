/* Unit tests for mcp/preview/head.c: the request heads and chunked bodies
 * the preview proxy parses (smuggling refused, framing exact). */
#include "check.h"
#include "suites.h"

#include <string.h>

#include "../../mcp/preview/head.h"

static int parse(const char *s, struct preview_head *h)
{
    const char *why = NULL;
    return preview_head_parse(s, strlen(s), h, &why);
}

static void heads(void)
{
    static struct preview_head h;
    const char *ok = "POST /p/tok/x?y=1 HTTP/1.1\r\nHost: a.test:8080\r\nContent-Length: 5\r\n"
                     "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\nhello";
    CHECK(parse(ok, &h) == 1);
    CHECK(h.len == strlen(ok) - 5);
    CHECK(h.content_length == 5 && !h.chunked && h.upgrade && h.minor == 1);
    CHECK(h.target.n == 12 && memcmp(h.target.s, "/p/tok/x?y=1", 12) == 0);
    CHECK(h.host.n == 11 && h.n_lines == 4 && preview_head_is(&h, 1, "CONTENT-LENGTH"));
    /* incomplete: more is needed */
    CHECK(parse("GET / HTTP/1.1\r\nHost: a\r\n", &h) == 0);
    CHECK(parse("GET / HTTP/1.1\r\nHost: a\r", &h) == 0);
    /* what two parsers could read differently */
    static const char *const bad[] = {
        "GET / HTTP/1.1\nHost: a\r\n\r\n",              /* bare LF */
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", /* obs-fold */
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",           /* space before : */
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",                    /* no Host */
        "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", /* not a path */
        "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n",
        "G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(parse(bad[i], &h) == -1);
    /* HTTP/1.0 without Host, and a head past the bound */
    CHECK(parse("GET / HTTP/1.0\r\n\r\n", &h) == 1 && h.host.n == 0);
    static char big[PREVIEW_HEAD_MAX + 64];
    memset(big, 'a', sizeof(big) - 1);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    CHECK(parse(big, &h) == -1);
}

static void chunked(void)
{
    struct preview_chunked c = {0};
    size_t used = 0;
    const char *body = "5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nT: x\r\n\r\nNEXT";
    size_t n = strlen(body) - 4;
    /* byte by byte: the end is found exactly */
    for (size_t i = 0; i < n; i++) {
        int r = preview_chunked_feed(&c, body + i, 1, &used);
        CHECK(r == (i + 1 == n ? 1 : 0));
    }
    c = (struct preview_chunked){0};
    CHECK(preview_chunked_feed(&c, body, strlen(body), &used) == 1 && used == n);
    static const char *const bad[] = {"x\r\n", "5\r\nhelloXX", "5\nhello", "\r\n",
                                      "1234567890123456\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = (struct preview_chunked){0};
        CHECK(preview_chunked_feed(&c, bad[i], strlen(bad[i]), &used) == -1);
    }
}

void suite_preview_head(void)
{
    RUN_TEST(heads);
    RUN_TEST(chunked);
}
