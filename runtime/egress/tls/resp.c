/* Where each response ends, in the host -> sandbox bytes of a connection
 * whose responses are scrubbed (tls.h; conn.c).
 *
 * The scrub (l7_scrub_feed) holds back the last (longest needle - 1)
 * bytes in case a value continues in the next read; on a kept-alive
 * connection those bytes are the end of a response the sandbox waits
 * for.  This tracker finds each response's end (its head; then
 * Content-Length, chunked, no body for HEAD, 1xx, 204 and 304, or the
 * connection's end), where conn.c flushes the scrub: a value cannot
 * continue into the next response.
 *
 * Contract: pure, no allocation, never reads past len.  A head it cannot
 * read (over TLS_RESP_HEAD_MAX, not HTTP/1.x, conflicting lengths, a bad
 * chunk size) makes the rest of the connection end-delimited: scrubbed as
 * one stream, flushed when the host closes (never less scrubbing, at
 * worst a response that waits for its last bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tls.h"

enum { R_HEAD, R_BODY, R_CSIZE, R_CDATA, R_CCRLF, R_TRAILER, R_EOF };

void tls_resp_init(struct tls_resp *r)
{
    memset(r, 0, sizeof(*r));
    r->st = R_HEAD;
}

void tls_resp_request(struct tls_resp *r, const char *method)
{
    if (r->q_len == sizeof(r->q_head))
        return; /* 32 pipelined requests unanswered: never in practice */
    r->q_head[(r->q_first + r->q_len++) % sizeof(r->q_head)] = strcmp(method, "HEAD") == 0;
}

/* The value of header name in head (one line each, CRLF), or NULL; *dup
 * set when it appears with two different values. */
static const char *header(const char *head, const char *name, char *val, size_t size, bool *dup)
{
    size_t n = strlen(name);
    const char *found = NULL;
    for (const char *p = strstr(head, "\r\n"); p && p[2];) {
        const char *line = p + 2, *end = strstr(line, "\r\n");
        if (!end)
            break;
        if ((size_t)(end - line) > n && line[n] == ':' && strncasecmp(line, name, n) == 0) {
            const char *v = line + n + 1, *e = end;
            while (*v == ' ' || *v == '\t')
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            char one[128];
            snprintf(one, sizeof(one), "%.*s", (int)(e - v), v);
            if (found && strcasecmp(one, val) != 0)
                *dup = true;
            snprintf(val, size, "%s", one);
            found = val;
        }
        p = end;
    }
    return found;
}

/* A complete head: decides how its body is framed. */
static void decide(struct tls_resp *r)
{
    r->head[r->head_len] = '\0';
    int code = 0;
    if (strncmp(r->head, "HTTP/1.", 7) != 0 || sscanf(r->head + 8, " %3d", &code) != 1 ||
        code < 100 || code > 999) {
        r->st = R_EOF;
        return;
    }
    if (code >= 100 && code < 200) { /* interim: the final response follows */
        r->st = code == 101 ? R_EOF : R_HEAD;
        r->ended = code != 101;
        return;
    }
    bool head_req = false;
    if (r->q_len > 0) {
        head_req = r->q_head[r->q_first];
        r->q_first = (r->q_first + 1) % sizeof(r->q_head);
        r->q_len--;
    }
    char te[128] = "", cl[128] = "";
    bool dup = false;
    bool has_te = header(r->head, "Transfer-Encoding", te, sizeof(te), &dup) != NULL;
    bool has_cl = header(r->head, "Content-Length", cl, sizeof(cl), &dup) != NULL;
    if (head_req || code == 204 || code == 304) {
        r->st = R_HEAD;
        r->ended = true;
        return;
    }
    if (dup) {
        r->st = R_EOF;
        return;
    }
    if (has_te) {
        size_t n = strlen(te);
        r->st = n >= 7 && strcasecmp(te + n - 7, "chunked") == 0 ? R_CSIZE : R_EOF;
        r->line_len = 0;
        return;
    }
    if (has_cl) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (end == cl || *end || cl[0] == '-' || cl[0] == '+') {
            r->st = R_EOF;
            return;
        }
        r->remaining = v;
        r->st = v ? R_BODY : R_HEAD;
        r->ended = v == 0;
        return;
    }
    r->st = R_EOF; /* delimited by the connection's end */
}

/* A chunk-size line (without CRLF): its size, or -1. */
static int chunk_size(const char *line, size_t n, uint64_t *size)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < n && i < 16; i++) {
        char c = line[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            break;
        v = v * 16 + (uint64_t)d;
    }
    if (i == 0 || (i < n && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
        return -1;
    *size = v;
    return 0;
}

size_t tls_resp_scan(struct tls_resp *r, const uint8_t *in, size_t len, bool *end)
{
    size_t pos = 0;
    *end = false;
    r->ended = false;
    while (pos < len && !r->ended) {
        switch (r->st) {
        case R_EOF:
            return len;
        case R_BODY: {
            uint64_t k = len - pos < r->remaining ? len - pos : r->remaining;
            pos += (size_t)k;
            r->remaining -= k;
            if (r->remaining == 0) {
                r->st = R_HEAD;
                r->ended = true;
            }
            break;
        }
        case R_CDATA: {
            uint64_t k = len - pos < r->remaining ? len - pos : r->remaining;
            pos += (size_t)k;
            r->remaining -= k;
            if (r->remaining == 0) {
                r->st = R_CCRLF;
                r->line_len = 0;
            }
            break;
        }
        case R_CCRLF:
            pos++;
            if (++r->line_len == 2) {
                r->st = R_CSIZE;
                r->line_len = 0;
            }
            break;
        case R_HEAD: {
            char c = (char)in[pos++];
            if (r->head_len == TLS_RESP_HEAD_MAX) {
                r->st = R_EOF;
                break;
            }
            r->head[r->head_len++] = c;
            if (r->head_len >= 4 && memcmp(r->head + r->head_len - 4, "\r\n\r\n", 4) == 0) {
                r->head_len -= 2; /* keep one CRLF: the last line's end */
                decide(r);
                r->head_len = 0;
            }
            break;
        }
        case R_CSIZE:
        case R_TRAILER: {
            char c = (char)in[pos++];
            if (c != '\n') {
                if (r->line_len < sizeof(r->line))
                    r->line[r->line_len++] = c;
                else if (r->st == R_CSIZE) /* a chunk-size line over 1 KiB */
                    r->st = R_EOF;
                break;
            }
            size_t n = r->line_len && r->line[r->line_len - 1] == '\r' ? r->line_len - 1
                                                                       : r->line_len;
            r->line_len = 0;
            if (r->st == R_TRAILER) {
                if (n == 0) {
                    r->st = R_HEAD;
                    r->ended = true;
                }
                break;
            }
            uint64_t size;
            if (chunk_size(r->line, n, &size) < 0)
                r->st = R_EOF;
            else if (size == 0)
                r->st = R_TRAILER;
            else {
                r->remaining = size;
                r->st = R_CDATA;
            }
            break;
        }
        }
    }
    *end = r->ended;
    r->ended = false;
    return pos;
}
