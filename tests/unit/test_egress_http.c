/* Unit tests for runtime/egress/http.c: request heads the broker lets
 * through on plain HTTP, and the smuggling, tunnelling and Host-switching
 * tricks it refuses. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/inspect.h"

#include <string.h>

static enum egress_http parse(const char *s, struct egress_http_req *req, const char **why)
{
    return egress_http_parse((const uint8_t *)s, strlen(s), req, why);
}

static void expect_ok(const char *s, const char *method, const char *host, uint16_t port)
{
    struct egress_http_req req;
    const char *why = NULL;
    enum egress_http v = parse(s, &req, &why);
    if (v != EGRESS_HTTP_OK)
        printf("# %d (%s) for: %s\n", v, why ? why : "", s);
    CHECK(v == EGRESS_HTTP_OK);
    CHECK_STR(req.method, method);
    CHECK_STR(req.host, host);
    CHECK(req.port == port);
    CHECK(req.head_len == strlen(s));
}

static void expect_bad(const char *s, const char *want)
{
    struct egress_http_req req;
    const char *why = NULL;
    enum egress_http v = parse(s, &req, &why);
    if (v != EGRESS_HTTP_BAD || !why || !strstr(why, want))
        printf("# %d (%s) for: %s\n", v, why ? why : "(null)", s);
    CHECK(v == EGRESS_HTTP_BAD);
    CHECK(why != NULL && strstr(why, want) != NULL);
    CHECK(req.host[0] == '\0' && req.head_len == 0);
}

static void test_ok(void)
{
    expect_ok("GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n", "GET", "pypi.org", 0);
    expect_ok("HEAD / HTTP/1.0\r\nhost:PyPI.Org.:8080\r\nAccept: */*\r\n\r\n", "HEAD", "pypi.org",
              8080);
    expect_ok("OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", "OPTIONS", "a.test", 0);
    expect_ok("GET http://a.test:81/x?y HTTP/1.1\r\nHost: a.test:81\r\n\r\n", "GET", "a.test", 81);
    expect_ok("GET HTTP://A.test HTTP/1.1\r\nHost: a.test\r\n\r\n", "GET", "a.test", 0);
    expect_ok("GET / HTTP/1.1\r\nHost: \t a.test \t\r\nContent-Length: 0\r\n"
              "Connection: keep-alive, close\r\nUser-Agent: pip/23 \xc3\xa9\r\n\r\n",
              "GET", "a.test", 0);
}

static void test_more(void)
{
    static const char full[] = "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nAccept: */*\r\n\r\n";
    struct egress_http_req req;
    const char *why;
    /* Every proper prefix, byte by byte, asks for more. */
    for (size_t n = 0; n < sizeof(full) - 1; n++) {
        enum egress_http v = egress_http_parse((const uint8_t *)full, n, &req, &why);
        if (v != EGRESS_HTTP_MORE)
            printf("# prefix of %zu: %d (%s)\n", n, v, why);
        CHECK(v == EGRESS_HTTP_MORE);
    }
    CHECK(egress_http_parse((const uint8_t *)full, sizeof(full) - 1, &req, &why) == EGRESS_HTTP_OK);
}

/* Keep-alive: two requests back to back, the second switching Host; each
 * is parsed at the previous one's head_len and reported as it is. */
static void test_keep_alive(void)
{
    static const char two[] = "GET /a HTTP/1.1\r\nHost: pypi.org\r\n\r\n"
                              "GET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n"
                              "GET /c HTTP/1.1\r\nHost: pypi.org\r\n";
    const uint8_t *p = (const uint8_t *)two;
    size_t len = sizeof(two) - 1;
    struct egress_http_req req;
    const char *why;

    CHECK(egress_http_parse(p, len, &req, &why) == EGRESS_HTTP_OK);
    CHECK_STR(req.host, "pypi.org");
    CHECK(req.head_len == 35);
    p += req.head_len;
    len -= req.head_len;
    CHECK(egress_http_parse(p, len, &req, &why) == EGRESS_HTTP_OK);
    CHECK_STR(req.host, "evil.test");
    CHECK(req.head_len == 36);
    p += req.head_len;
    len -= req.head_len;
    CHECK(egress_http_parse(p, len, &req, &why) == EGRESS_HTTP_MORE);
}

static void test_refused_methods(void)
{
    expect_bad("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", "CONNECT");
    expect_bad("POST / HTTP/1.1\r\nHost: a.test\r\n\r\n", "method refused");
    expect_bad("PUT / HTTP/1.1\r\nHost: a.test\r\n\r\n", "method refused");
    expect_bad("get / HTTP/1.1\r\nHost: a.test\r\n\r\n", "not an HTTP request line");
    expect_bad("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2");
    expect_bad("GET / HTTP/2.0\r\nHost: a.test\r\n\r\n", "HTTP/1.0 and HTTP/1.1");
    expect_bad("GET / HTTP/1.1 \r\nHost: a.test\r\n\r\n", "HTTP/1.0 and HTTP/1.1");
    expect_bad("GET  / HTTP/1.1\r\nHost: a.test\r\n\r\n", "visible ASCII");
    expect_bad("GET /a b HTTP/1.1\r\nHost: a.test\r\n\r\n", "visible ASCII");
    expect_bad("GET /\r\n\r\n", "HTTP/1.0 and HTTP/1.1");
    expect_bad("GET * HTTP/1.1\r\nHost: a.test\r\n\r\n", "request target");
    expect_bad("GET pypi.org:80 HTTP/1.1\r\nHost: a.test\r\n\r\n", "request target");
    expect_bad("GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "request target");
    expect_bad("GET http:// HTTP/1.1\r\nHost: a.test\r\n\r\n", "request target");
    expect_bad("GET /\x7f HTTP/1.1\r\nHost: a.test\r\n\r\n", "visible ASCII");
    expect_bad("\r\nGET / HTTP/1.1\r\nHost: a.test\r\n\r\n", "not an HTTP request line");
}

static void test_refused_headers(void)
{
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n", "more than one Host");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nhOsT: b.test\r\n\r\n", "more than one Host");
    expect_bad("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "no Host");
    expect_bad("GET / HTTP/1.1\r\nHost: user@a.test\r\n\r\n", "userinfo");
    expect_bad("GET http://u:p@a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "userinfo");
    expect_bad("GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "differs from the Host");
    expect_bad("GET http://a.test:8080/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "differs");
    expect_bad("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "not a host name");
    expect_bad("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", "not a host name");
    expect_bad("GET / HTTP/1.1\r\nHost: \r\n\r\n", "not a host name");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test:\r\n\r\n", "port");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test:65536\r\n\r\n", "port");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test:80:80\r\n\r\n", "port");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test b.test\r\n\r\n", "not a host name");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello", "body");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 00\r\n\r\n", "body");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n", "body");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\ntransfer-encoding: identity\r\n\r\n", "body");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\n\r\n", "Upgrade");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, Upgrade\r\n\r\n",
               "Connection: upgrade");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n",
               "Upgrade");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\n 2\r\n\r\n", "obs-fold");
    expect_bad("GET / HTTP/1.1\r\n Host: b.test\r\nHost: a.test\r\n\r\n", "obs-fold");
    expect_bad("GET / HTTP/1.1\r\nHost : a.test\r\n\r\n", "malformed header");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\n: x\r\n\r\n", "malformed header");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nNoColon\r\n\r\n", "malformed header");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\nX: a\001b\r\n\r\n", "control byte");
}

static void test_line_endings(void)
{
    expect_bad("GET / HTTP/1.1\nHost: a.test\n\n", "bare LF");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\n\r\n", "bare LF");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\r\n\n", "bare LF");
    expect_bad("GET / HTTP/1.1\r\nHost: a.test\rX: y\r\n\r\n", "bare CR");
    /* A NUL is a control byte, whatever C strings think of it. */
    static const char nul[] = "GET / HTTP/1.1\r\nHost: a.test\r\nX: a\0b\r\n\r\n";
    struct egress_http_req req;
    const char *why;
    CHECK(egress_http_parse((const uint8_t *)nul, sizeof(nul) - 1, &req, &why) == EGRESS_HTTP_BAD);
}

/* Not HTTP at all: refused as soon as the first bytes say so. */
static void test_not_http(void)
{
    struct egress_http_req req;
    const char *why;
    CHECK(parse("SSH-2.0-OpenSSH_9.2", &req, &why) == EGRESS_HTTP_BAD);
    CHECK(why && strstr(why, "not an HTTP request") != NULL);
    CHECK(parse("\x16\x03\x01", &req, &why) == EGRESS_HTTP_BAD);
    CHECK(parse(" GET", &req, &why) == EGRESS_HTTP_BAD);
    CHECK(parse("AAAAAAAAAAAAAAAAAAAA", &req, &why) == EGRESS_HTTP_BAD);
    CHECK(parse("GET", &req, &why) == EGRESS_HTTP_MORE);
    CHECK(parse("", &req, &why) == EGRESS_HTTP_MORE);
}

static void test_too_long(void)
{
    static char big[EGRESS_HEAD_MAX + 64];
    struct egress_http_req req;
    const char *why;
    size_t n = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a.test\r\nX: ");
    memset(big + n, 'a', sizeof(big) - n);
    CHECK(egress_http_parse((uint8_t *)big, EGRESS_HEAD_MAX - 1, &req, &why) == EGRESS_HTTP_MORE);
    CHECK(egress_http_parse((uint8_t *)big, EGRESS_HEAD_MAX, &req, &why) == EGRESS_HTTP_BAD);
    CHECK(strstr(why, "over 16384") != NULL);
    /* A complete head just inside the limit is fine; one byte more is not. */
    memcpy(big + EGRESS_HEAD_MAX - 4, "\r\n\r\n", 4);
    CHECK(egress_http_parse((uint8_t *)big, sizeof(big), &req, &why) == EGRESS_HTTP_OK);
    CHECK(req.head_len == EGRESS_HEAD_MAX);
    big[EGRESS_HEAD_MAX - 4] = 'a';
    memcpy(big + EGRESS_HEAD_MAX - 3, "\r\n\r\n", 4);
    CHECK(egress_http_parse((uint8_t *)big, sizeof(big), &req, &why) == EGRESS_HTTP_BAD);
}

void suite_egress_http(void)
{
    RUN_TEST(test_ok);
    RUN_TEST(test_more);
    RUN_TEST(test_keep_alive);
    RUN_TEST(test_refused_methods);
    RUN_TEST(test_refused_headers);
    RUN_TEST(test_line_endings);
    RUN_TEST(test_not_http);
    RUN_TEST(test_too_long);
}
