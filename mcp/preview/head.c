/* Request heads and chunked bodies for the preview proxy (head.h). */
#include "head.h"

#include <string.h>
#include <strings.h>

static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* The line at *pos without its CRLF: 1, 0 incomplete, -1 bare CR or LF. */
static int next_line(const char *buf, size_t len, size_t *pos, struct preview_span *l,
                     const char **why)
{
    for (size_t i = *pos; i < len; i++) {
        if (buf[i] == '\n') {
            *why = "a bare LF";
            return -1;
        }
        if (buf[i] != '\r')
            continue;
        if (i + 1 == len)
            return 0;
        if (buf[i + 1] != '\n') {
            *why = "a bare CR";
            return -1;
        }
        l->s = buf + *pos;
        l->n = i - *pos;
        *pos = i + 2;
        return 1;
    }
    return 0;
}

static bool span_is(struct preview_span s, const char *word)
{
    return s.n == strlen(word) && strncasecmp(s.s, word, s.n) == 0;
}

/* Whether the comma list v names token (case-insensitive). */
static bool list_has(struct preview_span v, const char *token)
{
    size_t i = 0;
    while (i < v.n) {
        while (i < v.n && (v.s[i] == ' ' || v.s[i] == '\t' || v.s[i] == ','))
            i++;
        size_t start = i;
        while (i < v.n && v.s[i] != ',' && v.s[i] != ' ' && v.s[i] != '\t')
            i++;
        if (span_is((struct preview_span){v.s + start, i - start}, token))
            return true;
    }
    return false;
}

static int request_line(struct preview_span l, struct preview_head *h, const char **why)
{
    const char *sp1 = memchr(l.s, ' ', l.n);
    if (sp1 == NULL || sp1 == l.s)
        return *why = "a malformed request line", -1;
    const char *rest = sp1 + 1, *end = l.s + l.n;
    const char *sp2 = memchr(rest, ' ', (size_t)(end - rest));
    if (sp2 == NULL || sp2 == rest)
        return *why = "a malformed request line", -1;
    h->method = (struct preview_span){l.s, (size_t)(sp1 - l.s)};
    h->target = (struct preview_span){rest, (size_t)(sp2 - rest)};
    for (size_t i = 0; i < h->method.n; i++)
        if (!tchar((unsigned char)h->method.s[i]))
            return *why = "a malformed method", -1;
    if (h->target.s[0] != '/')
        return *why = "the target is not a path", -1;
    for (size_t i = 0; i < h->target.n; i++)
        if ((unsigned char)h->target.s[i] <= 0x20 || h->target.s[i] == 0x7f)
            return *why = "a control byte in the target", -1;
    struct preview_span v = {sp2 + 1, (size_t)(end - sp2 - 1)};
    if (v.n != 8 || memcmp(v.s, "HTTP/1.", 7) != 0 || (v.s[7] != '0' && v.s[7] != '1'))
        return *why = "not HTTP/1.0 or HTTP/1.1", -1;
    h->minor = v.s[7] - '0';
    return 0;
}

static int content_length(struct preview_span v, struct preview_head *h, const char **why)
{
    int64_t n = 0;
    if (v.n == 0 || v.n > 15)
        return *why = "a bad Content-Length", -1;
    for (size_t i = 0; i < v.n; i++) {
        if (v.s[i] < '0' || v.s[i] > '9')
            return *why = "a bad Content-Length", -1;
        n = n * 10 + (v.s[i] - '0');
    }
    if (h->content_length >= 0 && h->content_length != n)
        return *why = "two different Content-Lengths", -1;
    h->content_length = n;
    return 0;
}

static int header(struct preview_span l, struct preview_head *h, bool *conn_upgrade,
                  bool *has_upgrade, const char **why)
{
    const char *colon = memchr(l.s, ':', l.n);
    if (colon == NULL || colon == l.s)
        return *why = "a header line without a name", -1;
    size_t nlen = (size_t)(colon - l.s);
    for (size_t i = 0; i < nlen; i++)
        if (!tchar((unsigned char)l.s[i]))
            return *why = "a malformed header name", -1;
    struct preview_span v = {colon + 1, l.n - nlen - 1};
    for (size_t i = 0; i < v.n; i++)
        if (((unsigned char)v.s[i] < 0x20 && v.s[i] != '\t') || v.s[i] == 0x7f)
            return *why = "a control byte in a header value", -1;
    while (v.n > 0 && (v.s[0] == ' ' || v.s[0] == '\t'))
        v.s++, v.n--;
    while (v.n > 0 && (v.s[v.n - 1] == ' ' || v.s[v.n - 1] == '\t'))
        v.n--;
    struct preview_span name = {l.s, nlen};
    if (h->n_lines == PREVIEW_HEADERS_MAX)
        return *why = "too many header lines", -1;
    h->lines[h->n_lines] = l;
    h->name_len[h->n_lines++] = nlen;
    if (span_is(name, "content-length"))
        return content_length(v, h, why);
    if (span_is(name, "transfer-encoding")) {
        if (h->chunked || !span_is(v, "chunked"))
            return *why = "a Transfer-Encoding other than one chunked", -1;
        h->chunked = true;
    } else if (span_is(name, "host")) {
        if (h->host.s != NULL)
            return *why = "two Host headers", -1;
        h->host = v;
    } else if (span_is(name, "connection")) {
        *conn_upgrade = *conn_upgrade || list_has(v, "upgrade");
    } else if (span_is(name, "upgrade")) {
        *has_upgrade = true;
    }
    return 0;
}

int preview_head_parse(const char *buf, size_t len, struct preview_head *h, const char **why)
{
    size_t pos = 0;
    struct preview_span l;
    bool conn_upgrade = false, has_upgrade = false;
    int r;

    memset(h, 0, offsetof(struct preview_head, lines));
    h->n_lines = 0;
    h->content_length = -1;
    if (len > PREVIEW_HEAD_MAX)
        len = PREVIEW_HEAD_MAX;
    if ((r = next_line(buf, len, &pos, &l, why)) <= 0)
        goto short_or_bad;
    if (request_line(l, h, why) < 0)
        return -1;
    for (;;) {
        if ((r = next_line(buf, len, &pos, &l, why)) <= 0)
            goto short_or_bad;
        if (l.n == 0)
            break;
        if (l.s[0] == ' ' || l.s[0] == '\t')
            return *why = "an obs-fold header line", -1;
        if (header(l, h, &conn_upgrade, &has_upgrade, why) < 0)
            return -1;
    }
    if (h->chunked && h->content_length >= 0)
        return *why = "both Content-Length and Transfer-Encoding", -1;
    if (h->minor == 1 && h->host.s == NULL)
        return *why = "no Host header", -1;
    if (h->host.s == NULL)
        h->host = (struct preview_span){"", 0};
    h->upgrade = has_upgrade && conn_upgrade;
    h->len = pos;
    return 1;
short_or_bad:
    if (r < 0)
        return -1;
    if (len >= PREVIEW_HEAD_MAX)
        return *why = "the request head is too large", -1;
    return 0;
}

bool preview_head_is(const struct preview_head *h, size_t i, const char *name)
{
    return span_is((struct preview_span){h->lines[i].s, h->name_len[i]}, name);
}

enum { SIZE, EXT, SIZE_LF, DATA, DATA_CR, DATA_LF, TRAILER, TRAILER_LF, END_LF };

#define TRAILER_MAX (16 * 1024)

static int hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int preview_chunked_feed(struct preview_chunked *c, const char *buf, size_t len, size_t *used)
{
    size_t i = 0;
    while (i < len) {
        char ch = buf[i];
        switch (c->state) {
        case SIZE:
            if (hex(ch) >= 0 && c->digits < 15) {
                c->left = c->left * 16 + (uint64_t)hex(ch);
                c->digits++;
            } else if (c->digits > 0 && (ch == ';' || ch == '\r')) {
                c->state = ch == ';' ? EXT : SIZE_LF;
            } else {
                return -1;
            }
            break;
        case EXT: /* chunk extensions: visible text up to the CR */
            if (ch == '\r')
                c->state = SIZE_LF;
            else if (((unsigned char)ch < 0x20 && ch != '\t') || ch == 0x7f)
                return -1;
            break;
        case SIZE_LF:
            if (ch != '\n')
                return -1;
            c->state = c->left > 0 ? DATA : TRAILER;
            c->trailer = 0;
            break;
        case DATA: {
            size_t n = len - i < c->left ? len - i : (size_t)c->left;
            c->left -= n;
            i += n;
            if (c->left == 0)
                c->state = DATA_CR;
            continue;
        }
        case DATA_CR:
            if (ch != '\r')
                return -1;
            c->state = DATA_LF;
            break;
        case DATA_LF:
            if (ch != '\n')
                return -1;
            c->state = SIZE;
            c->digits = 0;
            c->left = 0;
            break;
        case TRAILER: /* a trailer line, or the empty line that ends the body */
            if (ch == '\r') {
                c->state = c->trailer == 0 ? END_LF : TRAILER_LF;
            } else if (((unsigned char)ch < 0x20 && ch != '\t') || ch == 0x7f || ch == '\n') {
                return -1;
            } else if (++c->trailer > TRAILER_MAX) {
                return -1;
            }
            break;
        case TRAILER_LF:
            if (ch != '\n')
                return -1;
            c->state = TRAILER;
            c->trailer = 0;
            break;
        case END_LF:
            if (ch != '\n')
                return -1;
            *used = i + 1;
            return 1;
        }
        i++;
    }
    *used = len;
    return 0;
}
