/* libFuzzer target: HTTP request heads as the egress broker checks them
 * (runtime/egress/http.c).  Beyond memory safety it checks: OK means a
 * head ending in CRLFCRLF within the input and EGRESS_HEAD_MAX, an allowed
 * method, a normalized host name, and that head alone parses the same;
 * a refusal says why; and the verdict is monotonic in the bytes read: a
 * prefix that is BAD stays BAD, a prefix that is OK is the same OK. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/egress/inspect.h"
#include "../../runtime/egress/name.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "fuzz-egress: http: %s\n", what);                                          \
        abort();                                                                                   \
    } while (0)

static void check_ok(const uint8_t *data, size_t size, const struct egress_http_req *req)
{
    char again[EGRESS_NAME_MAX + 1];
    if (req->head_len < 4 || req->head_len > size || req->head_len > EGRESS_HEAD_MAX ||
        memcmp(data + req->head_len - 4, "\r\n\r\n", 4) != 0)
        FAIL("OK head does not end in CRLFCRLF inside the input");
    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD") && strcmp(req->method, "OPTIONS"))
        FAIL("OK with another method");
    if (egress_name_normalize(req->host, strlen(req->host), again, NULL) < 0 ||
        strcmp(again, req->host) != 0)
        FAIL("OK with a host that is not a normalized name");
    for (size_t i = 0; i < req->head_len; i++)
        if ((data[i] == '\n' && (i == 0 || data[i - 1] != '\r')) ||
            (data[i] == '\r' && (i + 1 == req->head_len || data[i + 1] != '\n')))
            FAIL("a bare LF or CR accepted");
    struct egress_http_req alone;
    const char *why;
    if (egress_http_parse(data, req->head_len, &alone, &why) != EGRESS_HTTP_OK ||
        memcmp(&alone, req, sizeof(alone)) != 0)
        FAIL("the head alone parses differently");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct egress_http_req req, pre;
    const char *why = NULL, *pwhy;
    enum egress_http v = egress_http_parse(data, size, &req, &why);
    if (v == EGRESS_HTTP_BAD && (!why || !why[0]))
        FAIL("BAD without a reason");
    if (v == EGRESS_HTTP_MORE && size >= EGRESS_HEAD_MAX)
        FAIL("MORE past EGRESS_HEAD_MAX");
    if (v == EGRESS_HTTP_OK)
        check_ok(data, size, &req);
    if (size == 0)
        return 0;
    size_t k = ((size_t)data[0] + (size_t)data[size - 1] * 31) % size;
    enum egress_http pv = egress_http_parse(data, k, &pre, &pwhy);
    if (pv == EGRESS_HTTP_BAD && v != EGRESS_HTTP_BAD)
        FAIL("a BAD prefix of an acceptable input");
    if (pv == EGRESS_HTTP_OK && (v != EGRESS_HTTP_OK || memcmp(&pre, &req, sizeof(req)) != 0))
        FAIL("an OK prefix parsed differently in full");
    return 0;
}
