/* libFuzzer target: the HTTP transport's checks on request header values
 * (Host, Origin, Accept, Content-Type, MCP-Protocol-Version), the MCP
 * 2026-07-28 header value decoding (Mcp-Name, Mcp-Param-*: the base64
 * sentinel), the token file, and the listen address.  Beyond memory
 * safety it checks the DNS-rebinding guards (nothing but a loopback name
 * with our port passes as Host, nothing but an http(s) loopback page as
 * Origin), that a decoded sentinel value is the one canonical encoding of
 * what it decodes to, and that every token the token file yields is one
 * the file's contract allows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../mcp/http/policy.h"
#include "../../mcp/http/reqmeta.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard padded base64 of (in, n) into out. */
static void encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned w = in[i] << 16 | (i + 1 < n ? in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = b64[w >> 18 & 63];
        out[o++] = b64[w >> 12 & 63];
        out[o++] = i + 1 < n ? b64[w >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64[w & 63] : '=';
    }
    out[o] = '\0';
}

static void check_meta_value(const char *v)
{
    char out[8192], again[8192 * 4 / 3 + 8];
    size_t n = 0;
    if (http_meta_decode(v, out, sizeof(out), &n) < 0)
        return;
    const char *p = v + strspn(v, " \t");
    size_t len = strlen(p);
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len >= 11 && strncmp(p, "=?base64?", 9) == 0 && strncmp(p + len - 2, "?=", 2) == 0) {
        encode((const unsigned char *)out, n, again);
        if (strlen(again) != len - 11 || memcmp(again, p + 9, len - 11) != 0)
            abort(); /* accepted a non-canonical encoding */
    } else if (n != len || memcmp(out, p, n) != 0) {
        abort(); /* a plain value must come out as it went in */
    }
    json_t *s = json_stringn(out, n);
    if (s && !http_meta_matches(out, n, s))
        abort();
    json_decref(s);
}

static void check_tokens(const char *v)
{
    static struct http_token_entry e[HTTP_MAX_TENANTS];
    struct nsbox_err err = {0};
    int n = http_tokens_parse(v, "fuzz", e, HTTP_MAX_TENANTS, &err);
    if (n < 0 && !err.msg[0])
        abort();
    for (int i = 0; i < n; i++) {
        size_t t = strlen(e[i].token);
        if (t < HTTP_TOKEN_MIN || t > HTTP_TOKEN_MAX || !e[i].name[0])
            abort();
        for (size_t k = 0; k < t; k++)
            if (e[i].token[k] < 0x21 || e[i].token[k] > 0x7e)
                abort();
        for (int j = 0; j < i; j++)
            if (strcmp(e[i].token, e[j].token) == 0 || strcmp(e[i].name, e[j].name) == 0)
                abort();
    }
}

static int starts(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size + 1);
    if (!v)
        return 0;
    memcpy(v, data, size);
    v[size] = '\0';

    struct http_host_policy p = {.port = 8080};
    if (http_host_allowed(&p, v)) {
        const char *port = starts(v, "localhost:")   ? v + 10
                           : starts(v, "127.0.0.1:") ? v + 10
                           : starts(v, "[::1]:")     ? v + 6
                                                     : NULL;
        if (!port || strspn(port, "0123456789") != strlen(port) || atoi(port) != 8080)
            abort();
    }
    if (http_origin_allowed(v) && !starts(v, "http://") && !starts(v, "https://"))
        abort();
    (void)http_accepts(v, "text/event-stream", true);
    (void)http_accepts(v, "application/json", false);
    (void)http_content_type_json(v);
    (void)http_version_supported(v);
    check_meta_value(v);
    check_tokens(v);

    char host[256];
    uint16_t port = 0;
    struct nsbox_err err = {0};
    if (http_parse_address(v, host, sizeof host, &port, &err) != 0 && !err.msg[0])
        abort();
    free(v);
    return 0;
}
