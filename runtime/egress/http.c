/* HTTP/1.x request heads, as the broker checks every request of a
 * plain-HTTP connection (inspect.h).
 *
 * Only what every well-behaved client sends passes.  The broker relays
 * the bytes it checked to a server that parses them again; wherever two
 * parsers could disagree (request smuggling: RFC 9112 section 11.2) this
 * one refuses instead:
 * - lines end in CRLF only: a bare LF or CR is refused, not accepted as
 *   some servers do;
 * - no obs-fold (a header line starting with SP or HT), no space before a
 *   header's colon, no control bytes in values;
 * - no body at all (Content-Length other than 0, any Transfer-Encoding),
 *   so the next request starts exactly at head_len;
 * - exactly one Host, a name (no userinfo, no IP literal), and an
 *   absolute-form target must name the same host and port;
 * - no CONNECT, Upgrade (or Connection: upgrade, HTTP2-Settings), or
 *   HTTP/2 preface, which would turn the connection into something else. */
#include "inspect.h"

#include <string.h>
#include <strings.h>

#include "name.h"

struct line {
    const char *s;
    size_t n;
};

/* The line starting at *pos, without its CRLF: 1 and *pos past it, 0 when
 * it is not complete yet, -1 for a bare LF or CR. */
static int next_line(const char *buf, size_t len, size_t *pos, struct line *l, const char **why)
{
    for (size_t i = *pos; i < len; i++) {
        if (buf[i] == '\n') {
            *why = "a line ends in a bare LF (CRLF required)";
            return -1;
        }
        if (buf[i] != '\r')
            continue;
        if (i + 1 == len)
            return 0;
        if (buf[i + 1] != '\n') {
            *why = "a bare CR in the request head";
            return -1;
        }
        l->s = buf + *pos;
        l->n = i - *pos;
        *pos = i + 2;
        return 1;
    }
    return 0;
}

static bool upper_token(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 'A' || s[i] > 'Z')
            return false;
    return n > 0;
}

/* An incomplete first line that cannot become a request line: not HTTP,
 * no need to wait for 16 KiB of it. */
static bool bad_prefix(const char *buf, size_t len)
{
    size_t n = 0;
    while (n < len && buf[n] != ' ')
        n++;
    return n >= 16 || (n > 0 && !upper_token(buf, n)) || (n == 0 && len > 0);
}

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool eq_nocase(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* host[:port] of a Host header or an absolute-form authority. */
static int parse_authority(const char *s, size_t n, char *host, uint16_t *port, const char **why)
{
    if (memchr(s, '@', n)) {
        *why = "userinfo (user@) in the Host or request target";
        return -1;
    }
    if (n > 0 && s[0] == '[') {
        *why = "the Host is not a host name (IP addresses are not allowed there)";
        return -1;
    }
    const char *colon = memchr(s, ':', n);
    size_t hn = colon ? (size_t)(colon - s) : n;
    *port = 0;
    if (colon) {
        unsigned long v = 0;
        size_t pn = n - hn - 1;
        for (size_t i = 0; i < pn; i++) {
            char c = colon[1 + i];
            v = c >= '0' && c <= '9' ? v * 10 + (unsigned long)(c - '0') : 70000;
            if (v > 65535)
                break;
        }
        if (pn == 0 || pn > 5 || v == 0 || v > 65535) {
            *why = "the Host's port is not a number 1-65535";
            return -1;
        }
        *port = (uint16_t)v;
    }
    if (egress_name_normalize(s, hn, host, NULL) < 0) {
        *why = "the Host is not a host name (IP addresses are not allowed there)";
        return -1;
    }
    return 0;
}

static int check_method(const char *m, size_t n, struct egress_http_req *req, const char **why)
{
    if (n == 7 && memcmp(m, "CONNECT", 7) == 0)
        *why = "CONNECT is refused: tunnels are not allowed";
    else if (n == 3 && memcmp(m, "PRI", 3) == 0)
        *why = "HTTP/2 is refused: use HTTP/1.1 (or HTTPS)";
    else if (!(n == 3 && memcmp(m, "GET", 3) == 0) && !(n == 4 && memcmp(m, "HEAD", 4) == 0) &&
             !(n == 7 && memcmp(m, "OPTIONS", 7) == 0))
        *why = "method refused: only GET, HEAD and OPTIONS are allowed";
    else {
        memcpy(req->method, m, n);
        req->method[n] = '\0';
        return 0;
    }
    return -1;
}

/* The request target: origin-form, "*" for OPTIONS, or absolute-form
 * http://AUTHORITY..., whose authority goes to *auth. */
static int check_target(const char *t, size_t n, bool options, struct line *auth, const char **why)
{
    auth->s = NULL;
    auth->n = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] <= 0x20 || t[i] >= 0x7f) {
            *why = "a byte outside visible ASCII in the request target";
            return -1;
        }
    if (n > 0 && t[0] == '/')
        return 0;
    if (n == 1 && t[0] == '*' && options)
        return 0;
    if (n > 7 && strncasecmp(t, "http://", 7) == 0) {
        auth->s = t + 7;
        while (7 + auth->n < n && !strchr("/?#", auth->s[auth->n]))
            auth->n++;
        if (auth->n > 0)
            return 0;
    }
    *why = "the request target must be /PATH or http://HOST/PATH";
    return -1;
}

static int parse_request_line(const struct line *l, struct egress_http_req *req, struct line *auth,
                              const char **why)
{
    const char *sp1 = memchr(l->s, ' ', l->n);
    if (!sp1) {
        *why = "not an HTTP request line";
        return -1;
    }
    size_t mn = (size_t)(sp1 - l->s);
    if (mn >= sizeof(req->method) || !upper_token(l->s, mn)) {
        *why = "not an HTTP request line";
        return -1;
    }
    if (check_method(l->s, mn, req, why) < 0)
        return -1;
    const char *t = sp1 + 1, *end = l->s + l->n;
    const char *sp2 = memrchr(t, ' ', (size_t)(end - t));
    if (!sp2 || !(end - sp2 - 1 == 8 &&
                  (memcmp(sp2 + 1, "HTTP/1.1", 8) == 0 || memcmp(sp2 + 1, "HTTP/1.0", 8) == 0))) {
        *why = "only HTTP/1.0 and HTTP/1.1 requests are allowed";
        return -1;
    }
    return check_target(t, (size_t)(sp2 - t), strcmp(req->method, "OPTIONS") == 0, auth, why);
}

bool egress_http_names_upgrade(const char *v, size_t n)
{
    while (n > 0) {
        const char *comma = memchr(v, ',', n);
        size_t tn = comma ? (size_t)(comma - v) : n;
        size_t a = 0, b = tn;
        while (a < b && (v[a] == ' ' || v[a] == '\t'))
            a++;
        while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
            b--;
        if (eq_nocase(v + a, b - a, "upgrade"))
            return true;
        if (!comma)
            break;
        n -= tn + 1;
        v += tn + 1;
    }
    return false;
}

struct head_state {
    bool have_host;
    char host[EGRESS_NAME_MAX + 1];
    uint16_t port;
};

/* name: value, checked by name. */
static int check_header(const char *name, size_t nn, const char *v, size_t vn,
                        struct head_state *st, const char **why)
{
    if (eq_nocase(name, nn, "host")) {
        if (st->have_host) {
            *why = "more than one Host header";
            return -1;
        }
        st->have_host = true;
        return parse_authority(v, vn, st->host, &st->port, why);
    }
    if (eq_nocase(name, nn, "content-length") && !(vn == 1 && v[0] == '0'))
        *why = "a request body is refused (Content-Length other than 0)";
    else if (eq_nocase(name, nn, "transfer-encoding"))
        *why = "a request body is refused (Transfer-Encoding)";
    else if (eq_nocase(name, nn, "upgrade") || eq_nocase(name, nn, "http2-settings"))
        *why = "protocol upgrades are refused (Upgrade)";
    else if (eq_nocase(name, nn, "connection") && egress_http_names_upgrade(v, vn))
        *why = "protocol upgrades are refused (Connection: upgrade)";
    else
        return 0;
    return -1;
}

static int parse_header_line(const struct line *l, struct head_state *st, const char **why)
{
    if (l->s[0] == ' ' || l->s[0] == '\t') {
        *why = "a folded header line (obs-fold)";
        return -1;
    }
    size_t nn = 0;
    while (nn < l->n && is_tchar(l->s[nn]))
        nn++;
    if (nn == 0 || nn == l->n || l->s[nn] != ':') {
        *why = "a malformed header line (NAME: VALUE, no space before the colon)";
        return -1;
    }
    size_t a = nn + 1, b = l->n;
    while (a < b && (l->s[a] == ' ' || l->s[a] == '\t'))
        a++;
    while (b > a && (l->s[b - 1] == ' ' || l->s[b - 1] == '\t'))
        b--;
    for (size_t i = a; i < b; i++) {
        unsigned char c = (unsigned char)l->s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            *why = "a control byte in a header value";
            return -1;
        }
    }
    return check_header(l->s, nn, l->s + a, b - a, st, why);
}

/* The head is complete: one Host, agreeing with an absolute-form target. */
static int finish(const struct head_state *st, const struct line *auth, struct egress_http_req *req,
                  const char **why)
{
    if (!st->have_host) {
        *why = "no Host header";
        return -1;
    }
    if (auth->s) {
        char host[EGRESS_NAME_MAX + 1];
        uint16_t port;
        if (parse_authority(auth->s, auth->n, host, &port, why) < 0)
            return -1;
        if (strcmp(host, st->host) != 0 || port != st->port) {
            *why = "the request target's host differs from the Host header";
            return -1;
        }
    }
    memcpy(req->host, st->host, sizeof(req->host));
    req->port = st->port;
    return 0;
}

static enum egress_http parse_head(const char *buf, size_t len, struct egress_http_req *req,
                                   const char **why)
{
    struct head_state st = {0};
    struct line l, auth = {0};
    size_t pos = 0;
    int rc = next_line(buf, len, &pos, &l, why);
    if (rc == 0 && bad_prefix(buf, len)) {
        *why = "not an HTTP request line";
        return EGRESS_HTTP_BAD;
    }
    if (rc <= 0)
        return rc < 0 ? EGRESS_HTTP_BAD : EGRESS_HTTP_MORE;
    if (parse_request_line(&l, req, &auth, why) < 0)
        return EGRESS_HTTP_BAD;
    while ((rc = next_line(buf, len, &pos, &l, why)) > 0) {
        if (l.n == 0) {
            if (finish(&st, &auth, req, why) < 0)
                return EGRESS_HTTP_BAD;
            req->head_len = pos;
            return EGRESS_HTTP_OK;
        }
        if (parse_header_line(&l, &st, why) < 0)
            return EGRESS_HTTP_BAD;
    }
    return rc < 0 ? EGRESS_HTTP_BAD : EGRESS_HTTP_MORE;
}

enum egress_http egress_http_parse(const uint8_t *buf, size_t len, struct egress_http_req *req,
                                   const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    *why = "";
    memset(req, 0, sizeof(*req));
    size_t window = len < EGRESS_HEAD_MAX ? len : EGRESS_HEAD_MAX;
    enum egress_http v = parse_head((const char *)buf, window, req, why);
    if (v == EGRESS_HTTP_MORE && len >= EGRESS_HEAD_MAX) {
        *why = "the request head is over 16384 bytes";
        v = EGRESS_HTTP_BAD;
    }
    if (v != EGRESS_HTTP_OK)
        memset(req, 0, sizeof(*req));
    if (v == EGRESS_HTTP_MORE)
        *why = "";
    return v;
}
