/* A POST body as it arrives, piece by piece, with a size limit: the pure
 * part of reading a request (core.c feeds it what MHD hands over).  No
 * MHD, no locks; tests/fuzz/fuzz_httpbody.c drives it. */
#ifndef NSBOX_MCP_HTTP_BODY_H
#define NSBOX_MCP_HTTP_BODY_H

#include <stdbool.h>
#include <stddef.h>

struct http_body {
    char *data;      /* owned: the bytes kept, NUL-terminated; NULL before any */
    size_t len, cap; /* bytes in data, bytes allocated */
    size_t seen;     /* body bytes received, kept or not */
    bool too_large;  /* over max (or refused from Content-Length): nothing kept */
};

/* Appends n bytes of the body.  Keeps at most max bytes; past that,
 * drops what it kept, sets too_large and reads on (so the client, still
 * sending, sees the 413 instead of a reset) until discard_max more bytes
 * have come.  Returns 0 to read on, -1 to hang up (that many bytes, or out
 * of memory). */
int http_body_take(struct http_body *b, const char *data, size_t n, size_t max, size_t discard_max);

/* Frees what b holds. */
void http_body_free(struct http_body *b);

#endif
