/* HTTP/1.x request heads and chunked bodies as the preview proxy
 * (proxy.c) reads them from a browser: pure, no I/O.
 *
 * Strict, in the manner of runtime/egress/http.c: the proxy relays what
 * it parsed to a server in a sandbox that parses it again, so wherever
 * two parsers could disagree (request smuggling, RFC 9112 section 11) it
 * refuses: CRLF only, no obs-fold, no space before a colon, no control
 * bytes, one Content-Length (digits), Transfer-Encoding only "chunked" and
 * never beside Content-Length.  Bodies may be framed by either; Upgrade is
 * noted (the proxy then relays raw). */
#ifndef NSBOX_MCP_PREVIEW_HEAD_H
#define NSBOX_MCP_PREVIEW_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PREVIEW_HEAD_MAX (16 * 1024) /* bytes of a request head */
#define PREVIEW_HEADERS_MAX 100      /* header lines in one head */

struct preview_span {
    const char *s;
    size_t n;
};

struct preview_head {
    size_t len;                 /* the head's bytes, through the empty line */
    struct preview_span method; /* a token */
    struct preview_span target; /* origin-form: starts with '/' */
    int minor;                  /* HTTP/1.minor: 0 or 1 */
    struct preview_span host;   /* the Host value ("" when none: HTTP/1.0) */
    int64_t content_length;     /* -1: none */
    bool chunked;               /* Transfer-Encoding: chunked */
    bool upgrade;               /* Upgrade given and Connection names "upgrade" */
    /* Every header line (name: value, without CRLF), in order. */
    struct preview_span lines[PREVIEW_HEADERS_MAX];
    size_t name_len[PREVIEW_HEADERS_MAX];
    size_t n_lines;
};

/* Parses the head at the start of buf[0..len): 1 (h filled; h->len bytes
 * are the head), 0 when incomplete (and len < PREVIEW_HEAD_MAX), -1 when
 * malformed or too large (*why says what). */
int preview_head_parse(const char *buf, size_t len, struct preview_head *h, const char **why);

/* Whether header line i of h is named name (case-insensitive). */
bool preview_head_is(const struct preview_head *h, size_t i, const char *name);

/* A chunked body, fed as it arrives. */
struct preview_chunked {
    int state;
    uint64_t left;   /* of the current chunk's data */
    unsigned digits; /* of its size */
    size_t trailer;  /* bytes of trailer section so far */
};

/* Takes buf[0..len) of a chunked body (c zeroed at its start): 1 when the
 * body ended within it (*used: its bytes up to that end), 0 when it goes on
 * (*used = len), -1 when malformed. */
int preview_chunked_feed(struct preview_chunked *c, const char *buf, size_t len, size_t *used);

#endif
