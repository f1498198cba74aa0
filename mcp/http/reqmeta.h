/* The pure parts of MCP 2026-07-28's request metadata over HTTP
 * ("Streamable HTTP", "Request Metadata") and of the token file: no MHD,
 * no session, no allocation; fuzzed (tests/fuzz/fuzz_http.c) and unit
 * tested (tests/unit/test_reqmeta.c).
 *
 * Header values.  Mcp-Name and Mcp-Param-{Name} carry a value either as
 * is (visible ASCII, space, tab) or, when it is not header-safe, as
 * "=?base64?B64?=" (the markers case-sensitive): the base64 of its UTF-8
 * bytes.  A server compares the decoded value with the body's.
 *
 * Token file (serve --token-file).  One tenant per line: "TOKEN" or
 * "NAME TOKEN" (separated by spaces or tabs); blank lines and lines
 * starting with '#' are skipped.  A name is 1..32 of [A-Za-z0-9._-]
 * (default "tenant-N", N counting tokens from 1; "default" when the file
 * has one token); a token is 16..512 visible ASCII characters.  Names and
 * tokens are unique. */
#ifndef NSBOX_MCP_HTTP_REQMETA_H
#define NSBOX_MCP_HTTP_REQMETA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../../common/err.h"

#define HTTP_TENANT_NAME_MAX 32
#define HTTP_TOKEN_MIN 16
#define HTTP_TOKEN_MAX 512
#define HTTP_MAX_TENANTS 64

/* Decodes a header value (NUL-terminated, as received; the whitespace
 * around it is no part of it) into out (size
 * bytes; the value may hold NUL bytes, *len says how many).  Returns 0, or
 * -1 when it has a character no header value may carry, is bad base64 in
 * the sentinel form, or does not fit. */
int http_meta_decode(const char *raw, char *out, size_t size, size_t *len);

/* Whether a decoded header value (v, len) matches the body's value b: a
 * string byte for byte, an integer (or an integral real) numerically ("42"
 * matches 42 and 42.0), a boolean as "true"/"false".  null, reals with a
 * fraction, arrays and objects never match. */
bool http_meta_matches(const char *v, size_t len, const json_t *b);

/* One line of the token file. */
struct http_token_entry {
    char name[HTTP_TENANT_NAME_MAX + 1];
    char token[HTTP_TOKEN_MAX + 1];
};

/* Parses a token file's text into out (at most max entries), as the
 * contract above says; from names the file in messages.  Returns the
 * number of entries (0: none), or -1 with err naming the line. */
int http_tokens_parse(const char *text, const char *from, struct http_token_entry *out, size_t max,
                      struct nsbox_err *err);

#endif
