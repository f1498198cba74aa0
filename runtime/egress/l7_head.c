/* One request head of an inspected connection (l7.h), decided: read
 * strictly, checked against the connection's host and the policy's method
 * and path rules, the sandbox's secrets put in place of their
 * placeholders, and re-emitted.
 *
 * Contract: pure, no I/O, no allocation; called by l7.c with a complete
 * head.  Strictness (anything two HTTP parsers could read differently is
 * refused, RFC 9112 section 11.2):
 * - request line METHOD SP TARGET SP HTTP/1.1 (or HTTP/1.0), one space
 *   each; GET HEAD POST PUT PATCH DELETE OPTIONS only (CONNECT, PRI and
 *   the rest refused); TARGET origin-form or http(s)://HOST absolute-form;
 * - lines end in CRLF (a bare CR or LF refused), no obs-fold, header names
 *   are tokens with the colon right after, no control byte in a value;
 * - exactly one Host, equal to the connection's host (its port, when
 *   given, the connection's port); an absolute-form target agrees;
 * - one framing: at most one Content-Length (digits only, duplicates
 *   refused even when equal) or one Transfer-Encoding whose value is
 *   exactly "chunked" (not on HTTP/1.0), never both;
 * - no Upgrade, HTTP2-Settings or Connection: upgrade.
 * Substitution (docs/secrets.md): only for secrets bound to the
 * connection's host:port, only in the bound header: a header named as
 * the binding whose whole value is the template around the placeholder,
 * or Authorization: Basic of USER:PLACEHOLDER.  Every other byte of the
 * head is re-emitted as it came. */
#include "l7_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "name.h"
#include "rules_l7.h"

bool l7_eq_nocase(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

int l7_field_line(const char *s, size_t n, size_t *name_len, size_t *va, size_t *vb,
                  const char **why)
{
    if (n > 0 && (s[0] == ' ' || s[0] == '\t')) {
        *why = "a folded header line (obs-fold)";
        return -1;
    }
    size_t nn = 0;
    while (nn < n && is_tchar(s[nn]))
        nn++;
    if (nn == 0 || nn == n || s[nn] != ':') {
        *why = "a malformed header line (NAME: VALUE, a token name, no space before the colon)";
        return -1;
    }
    size_t a = nn + 1, b = n;
    while (a < b && (s[a] == ' ' || s[a] == '\t'))
        a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
        b--;
    for (size_t i = nn + 1; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            *why = "a control byte (NUL, CR, ...) in a header value";
            return -1;
        }
    }
    *name_len = nn;
    *va = a;
    *vb = b;
    return 0;
}

/* host[:port]: equal to the connection's host, its port (when given) the
 * connection's. */
static int check_authority(const struct l7_ctx *ctx, const char *s, size_t n, const char *what,
                           char *why, size_t why_size)
{
    char host[EGRESS_NAME_MAX + 1];
    const char *colon = memchr(s, ':', n);
    size_t hn = colon ? (size_t)(colon - s) : n;
    if (memchr(s, '@', n) || (n > 0 && s[0] == '[') ||
        egress_name_normalize(s, hn, host, NULL) < 0) {
        snprintf(why, why_size, "the %s is not a host name", what);
        return -1;
    }
    if (strcmp(host, ctx->host) != 0) {
        snprintf(why, why_size, "the %s %s is not this connection's host %s", what, host,
                 ctx->host);
        return -1;
    }
    if (colon) {
        size_t pn = n - hn - 1;
        unsigned long v = 0;
        bool ok = pn > 0 && pn <= 5;
        for (size_t i = 0; ok && i < pn; i++) {
            ok = colon[1 + i] >= '0' && colon[1 + i] <= '9';
            v = v * 10 + (unsigned long)(colon[1 + i] - '0');
        }
        if (!ok || v != ctx->port) {
            snprintf(why, why_size, "the %s's port is not this connection's port %u", what,
                     ctx->port);
            return -1;
        }
    }
    return 0;
}

/* ---- the request line ---- */

struct reqline {
    char method[16];
    const char *target;
    size_t target_n;
    bool http10;
};

static int request_line(const char *s, size_t n, struct reqline *rl, struct l7_event *ev)
{
    const char *sp1 = memchr(s, ' ', n);
    size_t mn = sp1 ? (size_t)(sp1 - s) : n;
    if (!sp1 || mn == 0 || mn >= sizeof(rl->method)) {
        snprintf(ev->reason, sizeof(ev->reason), "not an HTTP request line");
        return -1;
    }
    memcpy(rl->method, s, mn);
    rl->method[mn] = '\0';
    for (size_t i = 0; i < mn; i++)
        if (s[i] < 'A' || s[i] > 'Z') {
            snprintf(ev->reason, sizeof(ev->reason), "not an HTTP request line");
            return -1;
        }
    snprintf(ev->method, sizeof(ev->method), "%s", rl->method);
    if (strcmp(rl->method, "CONNECT") == 0) {
        snprintf(ev->reason, sizeof(ev->reason), "CONNECT is refused: tunnels are not read");
        return -1;
    }
    if (strcmp(rl->method, "PRI") == 0) {
        snprintf(ev->reason, sizeof(ev->reason), "HTTP/2 is refused: only HTTP/1.1 is read");
        return -1;
    }
    if (!egress_method_bit(rl->method)) {
        snprintf(ev->reason, sizeof(ev->reason),
                 "method %s is refused (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS only)",
                 rl->method);
        return -1;
    }
    const char *t = sp1 + 1, *end = s + n;
    const char *sp2 = memchr(t, ' ', (size_t)(end - t));
    if (!sp2 || end - sp2 - 1 != 8 ||
        (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0)) {
        snprintf(ev->reason, sizeof(ev->reason),
                 "not METHOD SP TARGET SP HTTP/1.1 (HTTP/1.0 and 1.1 only, single spaces)");
        return -1;
    }
    rl->target = t;
    rl->target_n = (size_t)(sp2 - t);
    rl->http10 = sp2[8] == '0';
    for (size_t i = 0; i < rl->target_n; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f) {
            snprintf(ev->reason, sizeof(ev->reason),
                     "a byte outside visible ASCII in the request target");
            return -1;
        }
    if (rl->target_n == 0) {
        snprintf(ev->reason, sizeof(ev->reason), "an empty request target");
        return -1;
    }
    return 0;
}

/* ---- secrets ---- */

struct subst {
    size_t line_start, line_end; /* the header line (no CRLF) in the head */
    size_t name_len, value_start;
    const struct egress_secret *secret;
    char user[128]; /* basic: the user, kept */
    size_t user_n;
};

/* "Basic B64": B64 decodes to USER:PLACEHOLDER of s. */
static bool basic_matches(const struct egress_secret *s, const char *v, size_t n, struct subst *sb)
{
    if (n < 7 || strncasecmp(v, "Basic ", 6) != 0)
        return false;
    uint8_t dec[512];
    int dn = l7_b64_decode(v + 6, n - 6, dec, sizeof(dec));
    if (dn < 0)
        return false;
    const uint8_t *colon = memchr(dec, ':', (size_t)dn);
    if (!colon)
        return false;
    size_t un = (size_t)(colon - dec), pn = (size_t)dn - un - 1;
    if (pn != strlen(s->placeholder) || memcmp(colon + 1, s->placeholder, pn) != 0)
        return false;
    if (s->basic_user[0] && (un != strlen(s->basic_user) || memcmp(dec, s->basic_user, un) != 0))
        return false;
    if (un >= sizeof(sb->user))
        return false;
    memcpy(sb->user, dec, un);
    sb->user_n = un;
    return true;
}

/* The template with "{}" replaced by with, into out (0: does not fit). */
static size_t fill_template(const char *tmpl, const char *with, char *out, size_t size)
{
    const char *hole = strstr(tmpl, "{}");
    if (!hole)
        return 0;
    int n = snprintf((char *)out, size, "%.*s%s%s", (int)(hole - tmpl), tmpl, with, hole + 2);
    return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

/* Whether the header (name, value) carries secret s's placeholder where
 * s's binding says (sb->user filled for basic). */
static bool try_secret(const struct egress_secret *s, const char *name, size_t nn, const char *v,
                       size_t vn, struct subst *sb)
{
    if (!s->placeholder[0])
        return false;
    if (s->basic)
        return l7_eq_nocase(name, nn, "authorization") && basic_matches(s, v, vn, sb);
    char want[512];
    size_t wn = fill_template(s->template_, s->placeholder, want, sizeof(want));
    return l7_eq_nocase(name, nn, s->header) && wn > 0 && wn == vn && memcmp(want, v, vn) == 0;
}

/* Whether s's value (and template) can stand in a header: the parser
 * (secret.c) refuses others, but the helper gets secrets over a socket. */
static bool header_safe(const struct egress_secret *s)
{
    const char *parts[] = {s->value, s->basic ? "" : s->template_};
    for (size_t k = 0; k < 2; k++)
        for (const unsigned char *c = (const unsigned char *)parts[k]; *c; c++)
            if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
                return false;
    return s->value[0] != '\0';
}

/* The new value of sb's header into out: 0 when it does not fit. */
static size_t new_value(const char *head, const struct subst *sb, uint8_t *out, size_t size)
{
    const struct egress_secret *s = sb->secret;
    size_t vl = strlen(s->value);
    if (!s->basic)
        return fill_template(s->template_, s->value, (char *)out, size);
    char plain[128 + 1 + EGRESS_SECRET_VALUE_MAX];
    size_t pn = sb->user_n + 1 + vl;
    if (6 + (pn + 2) / 3 * 4 > size)
        return 0;
    memcpy(plain, sb->user, sb->user_n);
    plain[sb->user_n] = ':';
    memcpy(plain + sb->user_n + 1, s->value, vl);
    memcpy(out, head + sb->value_start, 6); /* the scheme as the client spelled it */
    size_t n = 6 + l7_b64_encode((const uint8_t *)plain, pn, (char *)out + 6);
    explicit_bzero(plain, sizeof(plain));
    return n;
}

/* ---- the head ---- */

struct fields {
    int hosts, lengths, encodings;
    uint64_t length;
    bool chunked;
};

static int check_field(const struct l7_ctx *ctx, const char *s, size_t nn, const char *v, size_t vn,
                       struct fields *f, struct l7_event *ev)
{
    char *why = ev->reason;
    size_t ws = sizeof(ev->reason);
    if (l7_eq_nocase(s, nn, "host")) {
        if (++f->hosts > 1) {
            snprintf(why, ws, "more than one Host header");
            return -1;
        }
        return check_authority(ctx, v, vn, "Host", why, ws);
    }
    if (l7_eq_nocase(s, nn, "content-length")) {
        if (++f->lengths > 1) {
            snprintf(why, ws, "more than one Content-Length (request smuggling)");
            return -1;
        }
        bool ok = vn > 0 && vn <= 18;
        f->length = 0;
        for (size_t i = 0; ok && i < vn; i++) {
            ok = v[i] >= '0' && v[i] <= '9';
            f->length = f->length * 10 + (uint64_t)(v[i] - '0');
        }
        if (!ok) {
            snprintf(why, ws, "a Content-Length that is not 1-18 digits");
            return -1;
        }
        return 0;
    }
    if (l7_eq_nocase(s, nn, "transfer-encoding")) {
        if (++f->encodings > 1 || !l7_eq_nocase(v, vn, "chunked")) {
            snprintf(why, ws, "a Transfer-Encoding other than one 'chunked' (request smuggling)");
            return -1;
        }
        f->chunked = true;
        return 0;
    }
    if (l7_eq_nocase(s, nn, "upgrade") || l7_eq_nocase(s, nn, "http2-settings") ||
        (l7_eq_nocase(s, nn, "connection") && egress_http_names_upgrade(v, vn))) {
        snprintf(why, ws, "protocol upgrades are refused (Upgrade, HTTP/2, WebSocket)");
        return -1;
    }
    return 0;
}

static void add_secret_name(struct l7_event *ev, const char *name)
{
    for (size_t i = 0; i < ev->n_secrets; i++)
        if (strcmp(ev->secrets[i], name) == 0)
            return;
    if (ev->n_secrets < EGRESS_SECRET_MAX)
        snprintf(ev->secrets[ev->n_secrets++], sizeof(ev->secrets[0]), "%s", name);
}

/* The head into out: every byte as it came, but the values of the
 * substituted lines ("NAME: " and the new value). */
static int emit(const char *head, size_t n, const struct subst *subs, size_t n_subs, uint8_t *out,
                size_t out_size, size_t *out_len)
{
    size_t o = 0, pos = 0;
    for (size_t i = 0; i <= n_subs; i++) {
        size_t upto = i < n_subs ? subs[i].line_start : n;
        if (o + (upto - pos) > out_size)
            return -1;
        memcpy(out + o, head + pos, upto - pos);
        o += upto - pos;
        if (i == n_subs)
            break;
        const struct subst *sb = &subs[i];
        if (o + sb->name_len + 2 > out_size)
            return -1;
        memcpy(out + o, head + sb->line_start, sb->name_len);
        o += sb->name_len;
        memcpy(out + o, ": ", 2);
        o += 2;
        size_t vn = new_value(head, sb, out + o, out_size - o);
        if (vn == 0)
            return -1;
        o += vn;
        pos = sb->line_end;
    }
    *out_len = o;
    return 0;
}

int l7_head_decide(const struct l7_ctx *ctx, const char *head, size_t n, struct l7_event *ev,
                   uint8_t *out, size_t out_size, size_t *out_len, struct l7_framing *fr)
{
    struct reqline rl;
    struct fields f = {0};
    struct subst subs[EGRESS_SECRET_MAX];
    size_t n_subs = 0;
    const char *why = "";
    memset(ev, 0, sizeof(*ev));
    *out_len = 0;
    if (!ctx->policy) {
        snprintf(ev->reason, sizeof(ev->reason), "no network policy for this connection");
        return -1;
    }
    const char *crlf = memmem(head, n, "\r\n", 2);
    size_t first = (size_t)(crlf - head);
    for (size_t i = 0; i + 2 < n; i++)
        if ((head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) ||
            (head[i] == '\r' && head[i + 1] != '\n')) {
            snprintf(ev->reason, sizeof(ev->reason),
                     "a bare CR or LF in the request head (CRLF line ends only)");
            return -1;
        }
    if (request_line(head, first, &rl, ev) < 0)
        return -1;
    size_t pos = first + 2;
    while (pos + 2 < n) {
        const char *e = memmem(head + pos, n - pos, "\r\n", 2);
        size_t ln = (size_t)(e - (head + pos)), nn, va, vb;
        const char *s = head + pos;
        if (l7_field_line(s, ln, &nn, &va, &vb, &why) < 0) {
            snprintf(ev->reason, sizeof(ev->reason), "%s", why);
            return -1;
        }
        if (check_field(ctx, s, nn, s + va, vb - va, &f, ev) < 0)
            return -1;
        for (size_t k = 0; k < ctx->n_secrets; k++) {
            const struct egress_secret *sec = &ctx->secrets[k];
            if (!egress_secret_bound(sec, ctx->host, ctx->port))
                continue;
            struct subst sb = {0};
            if (!try_secret(sec, s, nn, s + va, vb - va, &sb))
                continue;
            if (!header_safe(sec)) {
                snprintf(ev->reason, sizeof(ev->reason),
                         "secret %s's value is empty or holds a control byte", sec->name);
                return -1;
            }
            for (size_t j = 0; j < ev->n_secrets; j++)
                if (strcmp(ev->secrets[j], sec->name) == 0) {
                    snprintf(ev->reason, sizeof(ev->reason),
                             "secret %s's placeholder in two headers", sec->name);
                    return -1;
                }
            if (n_subs == EGRESS_SECRET_MAX) {
                snprintf(ev->reason, sizeof(ev->reason), "too many substituted headers");
                return -1;
            }
            sb.line_start = pos;
            sb.line_end = pos + ln;
            sb.name_len = nn;
            sb.value_start = pos + va;
            sb.secret = sec;
            subs[n_subs++] = sb;
            add_secret_name(ev, sec->name);
            break;
        }
        pos += ln + 2;
    }
    if (f.hosts == 0) {
        snprintf(ev->reason, sizeof(ev->reason), "no Host header");
        return -1;
    }
    if (f.lengths && f.encodings) {
        snprintf(ev->reason, sizeof(ev->reason),
                 "both Content-Length and Transfer-Encoding (request smuggling)");
        return -1;
    }
    if (f.encodings && rl.http10) {
        snprintf(ev->reason, sizeof(ev->reason), "Transfer-Encoding on an HTTP/1.0 request");
        return -1;
    }
    /* the target: absolute-form must name this host; then the path */
    const char *t = rl.target;
    size_t tn = rl.target_n;
    if (t[0] != '/') {
        size_t skip = tn > 7 && strncasecmp(t, "http://", 7) == 0    ? 7
                      : tn > 8 && strncasecmp(t, "https://", 8) == 0 ? 8
                                                                     : 0;
        if (skip == 0) {
            snprintf(ev->reason, sizeof(ev->reason),
                     "the request target must be /PATH or http(s)://HOST/PATH");
            return -1;
        }
        size_t an = 0; /* the target is not NUL-terminated: bounded */
        while (skip + an < tn && !strchr("/?#", t[skip + an]))
            an++;
        if (check_authority(ctx, t + skip, an, "request target's host", ev->reason,
                            sizeof(ev->reason)) < 0)
            return -1;
    }
    char target[EGRESS_HEAD_MAX];
    memcpy(target, t, tn);
    target[tn] = '\0';
    if (egress_path_clean(target, ev->path, sizeof(ev->path), &why) < 0) {
        snprintf(ev->reason, sizeof(ev->reason), "an ambiguous path: %s", why);
        return -1;
    }
    if (!egress_policy_allows_request(ctx->policy, ctx->host, ctx->port, rl.method, ev->path,
                                      ev->reason, sizeof(ev->reason)))
        return -1;
    if (emit(head, n, subs, n_subs, out, out_size, out_len) < 0) {
        snprintf(ev->reason, sizeof(ev->reason), "the rewritten head is too long");
        return -1;
    }
    fr->kind = f.chunked ? L7_BODY_CHUNKED : f.lengths ? L7_BODY_LENGTH : L7_BODY_NONE;
    fr->length = f.length;
    ev->allowed = true;
    return 0;
}

/* ---- base64 (RFC 4648, standard alphabet, padded) ---- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t l7_b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64_alphabet[(v >> 18) & 63];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    return o;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(b64_alphabet, c) : NULL;
    return p ? (int)(p - b64_alphabet) : -1;
}

int l7_b64_decode(const char *in, size_t n, uint8_t *out, size_t out_size)
{
    size_t o = 0;
    if (n == 0 || n % 4 != 0)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=') : 0;
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = b64_val(in[i + k])) < 0)
                return -1;
        for (int k = 4 - pad; k < 4; k++)
            v[k] = 0;
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
                     (uint32_t)v[3];
        /* canonical: the bits under the padding are zero */
        if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
            return -1;
        if (o + 3 - (size_t)pad > out_size)
            return -1;
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(w >> 8);
        if (pad < 1)
            out[o++] = (uint8_t)w;
    }
    return (int)o;
}
