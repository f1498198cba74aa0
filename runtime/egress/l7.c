/* The request direction of an inspected connection as a stream (l7.h):
 * heads gathered and decided one at a time (l7_head.c), bodies passed on
 * by their framing, every request of a keep-alive connection decided
 * again.
 *
 * Contract: pure, no I/O; one allocation per stream.  Called by nsbox-tls
 * (runtime/egress/tls/) for each inspected connection.  Output never
 * depends on how the input was split (fuzzed: tests/fuzz/
 * fuzz_egress_l7.c).  What the stream refuses, beyond the head's rules:
 * a bare CR or LF anywhere in a head, chunk-size line or trailer; a head
 * over EGRESS_HEAD_MAX; a line before the request line; a chunk size
 * other than 1-16 hex digits, bytes other than CRLF after a chunk's data,
 * a chunk-size line over 1024 bytes (extensions are passed on within
 * that), trailers over EGRESS_HEAD_MAX or naming Host, Content-Length or
 * Transfer-Encoding; a head cut short by the end of the input.  Once
 * refused, a stream stays refused. */
#include "l7.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"

#define CHUNK_LINE_MAX 1024
#define TRAILER_LINE_MAX 8192

enum state { S_HEAD, S_LENGTH, S_CSIZE, S_CDATA, S_CDATA_END, S_TRAILER, S_DEAD };

struct l7_stream {
    struct l7_ctx ctx;
    enum state st;
    char head[EGRESS_HEAD_MAX];
    size_t head_len;
    uint64_t remaining;          /* S_LENGTH, S_CDATA: body bytes left */
    char line[TRAILER_LINE_MAX]; /* S_CSIZE, S_TRAILER: the line so far; S_CDATA_END: CR seen */
    size_t line_len;
    size_t trailers; /* bytes of trailers so far */
    struct l7_event refusal;
    uint8_t pend[L7_HEAD_OUT_MAX]; /* output that did not fit in out yet */
    size_t pend_off, pend_len;
};

struct l7_stream *l7_stream_new(const struct l7_ctx *ctx)
{
    struct l7_stream *s = malloc(sizeof(*s));
    if (!s)
        return NULL;
    s->ctx = *ctx;
    s->st = S_HEAD;
    s->head_len = 0;
    s->line_len = 0;
    s->trailers = 0;
    s->pend_off = s->pend_len = 0;
    memset(&s->refusal, 0, sizeof(s->refusal));
    return s;
}

void l7_stream_free(struct l7_stream *s)
{
    if (!s)
        return;
    explicit_bzero(s, sizeof(*s)); /* rewritten heads held secret values */
    free(s);
}

struct out {
    uint8_t *buf;
    size_t size, len;
};

/* Appends n bytes to out, what does not fit to the pending output. */
static void put(struct l7_stream *s, struct out *o, const void *p, size_t n)
{
    size_t room = o->size - o->len, k = n < room ? n : room;
    if (s->pend_len == 0) {
        memcpy(o->buf + o->len, p, k);
        o->len += k;
    } else {
        k = 0;
    }
    if (k < n) {
        if (s->pend_off > 0) {
            memmove(s->pend, s->pend + s->pend_off, s->pend_len);
            s->pend_off = 0;
        }
        /* bounded: a head or a line at a time, and nothing is read while
         * anything is pending */
        memcpy(s->pend + s->pend_len, (const uint8_t *)p + k, n - k);
        s->pend_len += n - k;
    }
}

static void drain(struct l7_stream *s, struct out *o)
{
    size_t room = o->size - o->len, k = s->pend_len < room ? s->pend_len : room;
    memcpy(o->buf + o->len, s->pend + s->pend_off, k);
    explicit_bzero(s->pend + s->pend_off, k); /* a rewritten head holds values */
    o->len += k;
    s->pend_off += k;
    s->pend_len -= k;
    if (s->pend_len == 0)
        s->pend_off = 0;
}

static enum l7_result refuse(struct l7_stream *s, struct l7_event *ev, const char *why)
{
    if (why) {
        memset(&s->refusal, 0, sizeof(s->refusal));
        snprintf(s->refusal.reason, sizeof(s->refusal.reason), "%s", why);
    }
    s->refusal.allowed = false;
    s->st = S_DEAD;
    *ev = s->refusal;
    return L7_REFUSE;
}

/* Whether the first line so far could still become a request line. */
static bool request_prefix_ok(const char *h, size_t n)
{
    size_t i = 0;
    if (n == 1 && h[0] == '\r')
        return true; /* an empty line: refused as such at its LF */
    while (i < n && h[i] >= 'A' && h[i] <= 'Z')
        i++;
    if (i == n)
        return n < 16;
    return i > 0 && i < 16 && h[i] == ' ';
}

/* One byte of a head.  1: the head is complete; 0: more; -1: refused. */
static int head_byte(struct l7_stream *s, uint8_t c, const char **why)
{
    if (s->head_len == EGRESS_HEAD_MAX) {
        *why = "the request head is over 16384 bytes";
        return -1;
    }
    char prev = s->head_len ? s->head[s->head_len - 1] : 0;
    s->head[s->head_len++] = (char)c;
    if (c == '\n' && prev != '\r') {
        *why = "a bare LF in the request head (CRLF line ends only)";
        return -1;
    }
    if (prev == '\r' && c != '\n') {
        *why = "a bare CR in the request head (CRLF line ends only)";
        return -1;
    }
    if (s->head_len == 2 && c == '\n') {
        *why = "an empty line before the request line";
        return -1;
    }
    if (s->head_len <= 16 && !memchr(s->head, '\n', s->head_len) &&
        !request_prefix_ok(s->head, s->head_len)) {
        *why = "not an HTTP/1.1 request (METHOD SP TARGET SP HTTP/1.1)";
        return -1;
    }
    return s->head_len >= 4 && memcmp(s->head + s->head_len - 4, "\r\n\r\n", 4) == 0;
}

/* One byte of a line (chunk size, trailer): 1 when the line (in s->line,
 * without CRLF) is complete, 0 for more, -1 refused. */
static int line_byte(struct l7_stream *s, uint8_t c, size_t max, const char **why)
{
    char prev = s->line_len ? s->line[s->line_len - 1] : 0;
    if (c == '\n' && prev != '\r') {
        *why = "a bare LF in a chunked body (CRLF line ends only)";
        return -1;
    }
    if (prev == '\r' && c != '\n') {
        *why = "a bare CR in a chunked body";
        return -1;
    }
    if (c == '\n') {
        s->line_len--; /* the CR */
        return 1;
    }
    if (s->line_len == max) {
        *why = max == CHUNK_LINE_MAX ? "a chunk-size line over 1024 bytes"
                                     : "a trailer line over 8192 bytes";
        return -1;
    }
    s->line[s->line_len++] = (char)c;
    return 0;
}

/* "HEX[;ext]" into *size. */
static int chunk_size(const char *l, size_t n, uint64_t *size, const char **why)
{
    size_t d = 0;
    uint64_t v = 0;
    while (d < n && d < 17) {
        char c = l[d];
        int x = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (x < 0)
            break;
        v = v << 4 | (uint64_t)x;
        d++;
    }
    if (d == 0 || d > 16) {
        *why = d == 0 ? "a chunk size that is not hex digits" : "a chunk size over 16 hex digits";
        return -1;
    }
    if (d < n && l[d] != ';') {
        *why = "a chunk size followed by something other than ';' or CRLF";
        return -1;
    }
    for (size_t i = d; i < n; i++)
        if (((unsigned char)l[i] < 0x20 && l[i] != '\t') || l[i] == 0x7f) {
            *why = "a control byte in a chunk extension";
            return -1;
        }
    *size = v;
    return 0;
}

static int trailer_line(struct l7_stream *s, const char **why)
{
    size_t nn, va, vb;
    s->trailers += s->line_len + 2;
    if (s->trailers > EGRESS_HEAD_MAX) {
        *why = "trailers over 16384 bytes";
        return -1;
    }
    if (l7_field_line(s->line, s->line_len, &nn, &va, &vb, why) < 0)
        return -1;
    if (l7_eq_nocase(s->line, nn, "host") || l7_eq_nocase(s->line, nn, "content-length") ||
        l7_eq_nocase(s->line, nn, "transfer-encoding")) {
        *why = "a trailer naming Host, Content-Length or Transfer-Encoding";
        return -1;
    }
    return 0;
}

/* Body bytes passed on as they are: up to remaining, and what out holds. */
static size_t pass(struct l7_stream *s, struct out *o, const uint8_t *in, size_t n)
{
    size_t room = o->size - o->len, k = n < room ? n : room;
    if (k > s->remaining)
        k = (size_t)s->remaining;
    memcpy(o->buf + o->len, in, k);
    o->len += k;
    s->remaining -= k;
    return k;
}

enum l7_result l7_stream_feed(struct l7_stream *s, const uint8_t *in, size_t len, bool eof,
                              size_t *used, uint8_t *out, size_t out_size, size_t *out_len,
                              struct l7_event *ev)
{
    struct out o = {out, out_size, 0};
    size_t pos = 0;
    const char *why = NULL;
    *used = 0;
    *out_len = 0;
    if (s->st == S_DEAD)
        return refuse(s, ev, NULL);
    drain(s, &o);
    while (s->pend_len == 0 && o.len < o.size) {
        if (s->st == S_LENGTH || s->st == S_CDATA) {
            if (s->remaining > 0) {
                if (pos == len)
                    break;
                pos += pass(s, &o, in + pos, len - pos);
                continue;
            }
            s->st = s->st == S_LENGTH ? S_HEAD : S_CDATA_END;
            s->line_len = 0;
            continue;
        }
        if (pos == len)
            break;
        uint8_t c = in[pos++];
        int r;
        switch (s->st) {
        case S_HEAD: {
            r = head_byte(s, c, &why);
            if (r < 0) {
                *used = pos;
                *out_len = o.len; /* the previous request's, allowed */
                return refuse(s, ev, why);
            }
            if (r == 0)
                continue;
            struct l7_framing fr;
            size_t hn = 0;
            s->pend_off = 0;
            if (l7_head_decide(&s->ctx, s->head, s->head_len, ev, s->pend, sizeof(s->pend), &hn,
                               &fr) < 0) {
                explicit_bzero(s->pend, sizeof(s->pend));
                s->refusal = *ev;
                *used = pos;
                *out_len = o.len;
                return refuse(s, ev, NULL);
            }
            s->pend_len = hn;
            drain(s, &o);
            s->head_len = 0;
            s->line_len = 0;
            s->trailers = 0;
            s->remaining = fr.length;
            s->st = fr.kind == L7_BODY_CHUNKED  ? S_CSIZE
                    : fr.kind == L7_BODY_LENGTH ? S_LENGTH
                                                : S_HEAD;
            *used = pos;
            *out_len = o.len;
            return L7_REQUEST;
        }
        case S_CSIZE:
            r = line_byte(s, c, CHUNK_LINE_MAX, &why);
            if (r == 1 && chunk_size(s->line, s->line_len, &s->remaining, &why) < 0)
                r = -1;
            if (r < 0)
                break;
            if (r == 1) {
                put(s, &o, s->line, s->line_len);
                put(s, &o, "\r\n", 2);
                s->st = s->remaining ? S_CDATA : S_TRAILER;
                s->line_len = 0;
            }
            continue;
        case S_CDATA_END:
            if (c != (s->line_len == 0 ? '\r' : '\n')) {
                why = "a chunk's data not followed by CRLF";
                r = -1;
                break;
            }
            put(s, &o, &c, 1);
            if (++s->line_len == 2) {
                s->st = S_CSIZE;
                s->line_len = 0;
            }
            continue;
        case S_TRAILER:
            r = line_byte(s, c, TRAILER_LINE_MAX, &why);
            if (r == 1 && s->line_len > 0 && trailer_line(s, &why) < 0)
                r = -1;
            if (r < 0)
                break;
            if (r == 1) {
                put(s, &o, s->line, s->line_len);
                put(s, &o, "\r\n", 2);
                if (s->line_len == 0)
                    s->st = S_HEAD;
                s->line_len = 0;
            }
            continue;
        default:
            why = "internal: a bad state";
            r = -1;
            break;
        }
        *used = pos;
        *out_len = o.len;
        return refuse(s, ev, why);
    }
    *used = pos;
    *out_len = o.len;
    if (eof && pos == len && s->pend_len == 0 && s->st == S_HEAD && s->head_len > 0) {
        *out_len = o.len;
        return refuse(s, ev, "the request head was cut short");
    }
    return L7_MORE;
}
