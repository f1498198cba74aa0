/* Method and path rules (rules.h, docs/secrets.md): the "METHODS PATHS"
 * part of a rule's text, request paths made unambiguous, and the
 * decisions the request-stream engine (l7.c) and the ceiling ask for.
 *
 * Contract: pure, no I/O, no allocation.  Called by rules.c (parse,
 * format, within) and by l7.c, the broker and boxes/net (decisions).
 * Rules:
 * - METHODS: '*' or a comma list of GET HEAD POST PUT PATCH DELETE
 *   OPTIONS (upper-case); PATHS: up to 4 comma-separated globs of at most
 *   255 bytes in all, each starting with '/'; '*' matches within one
 *   segment, '**' (a whole segment) zero or more segments;
 * - a request path is decided only once it is unambiguous: anything two
 *   servers could read differently (%2f, %5c, %2e, a backslash, an empty,
 *   "." or ".." segment, controls, spaces, non-ASCII) is refused, and
 *   %XX of an unreserved byte is decoded (RFC 3986 6.2.2.2) so that a rule
 *   cannot be dodged by encoding a letter;
 * - matching is by segments with a table, never backtracking. */
#include "rules_l7.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "name.h"

static const char *const method_names[] = {"GET",   "HEAD",   "POST",   "PUT",
                                           "PATCH", "DELETE", "OPTIONS"};
#define N_METHODS (sizeof(method_names) / sizeof(method_names[0]))
#define MAX_GLOBS 4
#define MAX_SEGS 520 /* a 1024-byte path has at most 512 segments */

/* ---- methods ---- */

int egress_method_bit(const char *method)
{
    for (size_t i = 0; i < N_METHODS; i++)
        if (strcmp(method, method_names[i]) == 0)
            return 1 << i;
    return 0;
}

static int parse_methods(const char *text, const char *s, size_t n, uint8_t *out,
                         struct nsbox_err *err)
{
    *out = 0;
    if (n == 1 && s[0] == '*') {
        *out = EGRESS_M_ALL;
        return 0;
    }
    const char *end = s + n;
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        size_t k = comma ? (size_t)(comma - s) : (size_t)(end - s);
        char m[16];
        int bit = 0;
        if (k > 0 && k < sizeof(m)) {
            memcpy(m, s, k);
            m[k] = '\0';
            bit = egress_method_bit(m);
        }
        if (!bit)
            return nsbox_err_set(err, 0,
                                 "network rule '%s': '%.*s' is not a method (GET, HEAD, POST, PUT, "
                                 "PATCH, DELETE, OPTIONS, upper-case, comma-separated, or *)",
                                 text, (int)k, s);
        *out |= (uint8_t)bit;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

static void format_methods(uint8_t m, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    if (m == EGRESS_M_ALL) {
        snprintf(buf, size, "*");
        return;
    }
    for (size_t i = 0; i < N_METHODS && off < size; i++)
        if (m & (1 << i))
            off += (size_t)snprintf(buf + off, size - off, "%s%s", off ? "," : "", method_names[i]);
}

/* ---- paths ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool unreserved(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '~';
}

/* A byte a path (and a glob) may hold as it is: RFC 3986 pchar and '/',
 * but not '%' (handled apart); glob adds '*'. */
static bool path_byte(char c)
{
    return unreserved((unsigned char)c) || c == '.' || c == '/' ||
           (c != '\0' && strchr("!$&'()+,;=:@", c) != NULL);
}

/* Normalizes the n bytes at s (a path, or a glob when glob) into out:
 * %XX of an unreserved byte decoded, other %XX upper-cased; refuses what
 * egress_path_clean documents.  Returns the length, or -1 and *why. */
static int normalize(const char *s, size_t n, bool glob, char *out, size_t size, const char **why)
{
    size_t o = 0, seg_start = 0;
    if (n == 0 || s[0] != '/') {
        *why = "the path does not start with '/'";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (o + 4 > size) {
            *why = "the path is too long";
            return -1;
        }
        if (c == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1, lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                *why = "a '%' not followed by two hex digits";
                return -1;
            }
            int v = hi * 16 + lo;
            if (v == '/' || v == '\\' || v == '.') {
                *why = "an encoded '/', '\\' or '.' (%2F, %5C, %2E)";
                return -1;
            }
            if (unreserved(v)) {
                out[o++] = (char)v;
            } else {
                o += (size_t)snprintf(out + o, size - o, "%%%02X", v);
            }
            i += 2;
            continue;
        }
        if (c == '\\') {
            *why = "a backslash in the path";
            return -1;
        }
        if (glob && c == '*') {
            out[o++] = c;
            continue;
        }
        if (c == '*') {
            *why = "a '*' in the path";
            return -1;
        }
        if (!path_byte(c) || (glob && c == ',')) {
            *why = "a control, space, non-ASCII or reserved byte in the path";
            return -1;
        }
        if (c == '/' && i > 0) {
            /* the segment out[seg_start..o) just ended */
            size_t len = o - seg_start;
            if (len == 0 || (len == 1 && out[seg_start] == '.') ||
                (len == 2 && out[seg_start] == '.' && out[seg_start + 1] == '.')) {
                *why = len == 0 ? "an empty path segment ('//')" : "a '.' or '..' path segment";
                return -1;
            }
        }
        out[o++] = c;
        if (c == '/')
            seg_start = o;
    }
    size_t len = o - seg_start; /* the last segment: empty is a trailing '/' */
    if ((len == 1 && out[seg_start] == '.') ||
        (len == 2 && out[seg_start] == '.' && out[seg_start + 1] == '.')) {
        *why = "a '.' or '..' path segment";
        return -1;
    }
    out[o] = '\0';
    return (int)o;
}

int egress_path_clean(const char *target, char *path, size_t size, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    if (size == 0)
        return -1;
    path[0] = '\0';
    const char *s = target;
    if (strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0) {
        s += s[4] == ':' ? 7 : 8;
        s += strcspn(s, "/?#");
        if (*s != '/') {
            if (*s == '\0' || *s == '?') { /* "http://host" and "http://host?q": the root */
                snprintf(path, size, "/");
                return 0;
            }
            *why = "a fragment in the request-target";
            return -1;
        }
    }
    size_t n = strcspn(s, "?#");
    if (s[n] == '#') {
        *why = "a fragment in the request-target";
        return -1;
    }
    if (strcmp(s, "*") == 0) {
        *why = "the '*' request-target";
        return -1;
    }
    if (normalize(s, n, false, path, size, why) < 0) {
        path[0] = '\0';
        return -1;
    }
    /* The query goes upstream untouched but must hold no byte a server
     * could split on. */
    for (const char *q = s + n; *q; q++)
        if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f || *q == '#') {
            *why = "a control, space, non-ASCII byte or '#' in the query";
            path[0] = '\0';
            return -1;
        }
    return 0;
}

/* Glob segments: a '*' alone or inside a segment matches within it; "**"
 * must be a whole segment. */
static int check_glob(const char *g, size_t n, const char **why)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (g[i] == '*' && g[i + 1] == '*') {
            bool start = g[i - 1] == '/', end = i + 2 == n || g[i + 2] == '/';
            if (!start || !end) {
                *why = "'**' must be a whole segment ('/a/**/b'; '*' matches within one)";
                return -1;
            }
        }
    return 0;
}

static int parse_paths(const char *text, const char *s, struct egress_rule *r,
                       struct nsbox_err *err)
{
    size_t off = 0, count = 0;
    if (!*s)
        return nsbox_err_set(err, 0, "network rule '%s': an empty path list", text);
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        char g[256];
        const char *why = "";
        int len = normalize(s, n, true, g, sizeof(g), &why);
        if (len >= 0 && check_glob(g, (size_t)len, &why) < 0)
            len = -1;
        if (len < 0)
            return nsbox_err_set(err, 0, "network rule '%s': path '%.*s': %s", text, (int)n, s,
                                 why);
        if (++count > MAX_GLOBS)
            return nsbox_err_set(err, 0, "network rule '%s': more than %d paths", text, MAX_GLOBS);
        if (off + (off ? 1 : 0) + (size_t)len >= sizeof(r->paths))
            return nsbox_err_set(err, 0, "network rule '%s': the paths are over %zu bytes", text,
                                 sizeof(r->paths) - 1);
        off += (size_t)snprintf(r->paths + off, sizeof(r->paths) - off, "%s%s", off ? "," : "", g);
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

int egress_l7_parse(const char *text, const char *l7, struct egress_rule *r, struct nsbox_err *err)
{
    const char *sp = strchr(l7, ' ');
    size_t mn = sp ? (size_t)(sp - l7) : strlen(l7);
    if (mn == 0 || (sp && (sp[1] == '\0' || sp[1] == ' ' || strchr(sp + 1, ' '))))
        return nsbox_err_set(err, 0,
                             "network rule '%s': write HOST[:PORTS] [METHODS [PATHS]] with single "
                             "spaces (METHODS: GET,POST or *; PATHS: /a/**,/b/*)",
                             text);
    if (r->kind == EGRESS_RULE_ADDR)
        return nsbox_err_set(err, 0,
                             "network rule '%s': methods and paths need a host name: name the "
                             "host (NAME=IP:PORT) ",
                             text);
    if (parse_methods(text, l7, mn, &r->methods, err) < 0)
        return -1;
    r->l7 = true;
    if (!sp) {
        snprintf(r->paths, sizeof(r->paths), "/**");
        return 0;
    }
    return parse_paths(text, sp + 1, r, err);
}

void egress_l7_format(const struct egress_rule *r, char *buf, size_t size)
{
    char m[64];
    if (!r->l7 || size == 0)
        return;
    format_methods(r->methods, m, sizeof(m));
    size_t off = strlen(buf);
    if (off < size)
        snprintf(buf + off, size - off, " %s %s", m, r->paths);
}

/* ---- matching ---- */

/* Whether the n bytes of segment s match the glob segment g (m bytes, its
 * '*' matching any run of bytes): the classic two-pointer walk, linear
 * but for the last '*' it retries from. */
static bool seg_match(const char *g, size_t m, const char *s, size_t n)
{
    size_t gi = 0, si = 0, star = (size_t)-1, mark = 0;
    while (si < n) {
        if (gi < m && g[gi] == '*') {
            star = gi++;
            mark = si;
        } else if (gi < m && g[gi] == s[si]) {
            gi++;
            si++;
        } else if (star != (size_t)-1) {
            gi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (gi < m && g[gi] == '*')
        gi++;
    return gi == m;
}

struct seg {
    const char *s;
    size_t n;
};

/* The segments of a path or glob ("/a/b/" -> "a", "b", ""). */
static size_t split(const char *p, size_t len, struct seg *out, size_t max)
{
    size_t k = 0;
    const char *s = p + 1, *end = p + len;
    for (;;) {
        const char *slash = memchr(s, '/', (size_t)(end - s));
        if (k == max)
            return max + 1;
        out[k].s = s;
        out[k].n = slash ? (size_t)(slash - s) : (size_t)(end - s);
        k++;
        if (!slash)
            return k;
        s = slash + 1;
    }
}

/* dp[j]: the glob's first i segments match the path's first j. */
static bool glob_match(const char *g, size_t glen, const char *path)
{
    struct seg gs[130], ps[MAX_SEGS];
    bool dp[MAX_SEGS + 1], nx[MAX_SEGS + 1];
    size_t ng = split(g, glen, gs, 129), np = split(path, strlen(path), ps, MAX_SEGS);
    if (ng > 129 || np > MAX_SEGS)
        return false;
    memset(dp, 0, sizeof(dp));
    dp[0] = true;
    for (size_t i = 0; i < ng; i++) {
        bool any = gs[i].n == 2 && gs[i].s[0] == '*' && gs[i].s[1] == '*';
        bool seen = false;
        for (size_t j = 0; j <= np; j++) {
            if (any) {
                seen |= dp[j];
                nx[j] = seen;
            } else {
                nx[j] = j > 0 && dp[j - 1] && seg_match(gs[i].s, gs[i].n, ps[j - 1].s, ps[j - 1].n);
            }
        }
        memcpy(dp, nx, sizeof(bool) * (np + 1));
    }
    return dp[np];
}

bool egress_rule_l7_allows(const struct egress_rule *r, const char *method, const char *path)
{
    if (!r->l7)
        return true;
    int bit = egress_method_bit(method);
    if (!bit || !(r->methods & bit) || path[0] != '/')
        return false;
    for (const char *g = r->paths; *g;) {
        size_t n = strcspn(g, ",");
        if (glob_match(g, n, path))
            return true;
        g += n + (g[n] == ',');
    }
    return false;
}

static bool has_port(const struct egress_rule *r, uint16_t port)
{
    for (size_t i = 0; i < r->n_ports; i++)
        if (r->ports[i] == port)
            return true;
    return false;
}

static bool rule_matches(const struct egress_rule *r, const char *host, uint16_t port)
{
    if (r->kind == EGRESS_RULE_ADDR || !has_port(r, port))
        return false;
    return r->kind == EGRESS_RULE_WILDCARD ? egress_name_below(host, r->host)
                                           : strcmp(host, r->host) == 0;
}

bool egress_policy_inspects(const struct egress_policy *p, const char *host, uint16_t port)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->rules[i].l7 && rule_matches(&p->rules[i], host, port))
            return true;
    return false;
}

bool egress_policy_allows_request(const struct egress_policy *p, const char *host, uint16_t port,
                                  const char *method, const char *path, char *why, size_t why_size)
{
    const struct egress_rule *first = NULL;
    for (size_t i = 0; i < p->n; i++) {
        const struct egress_rule *r = &p->rules[i];
        if (!rule_matches(r, host, port))
            continue;
        if (!r->l7 || egress_rule_l7_allows(r, method, path))
            return true;
        if (!first)
            first = r;
    }
    if (why && why_size) {
        if (!first) {
            snprintf(why, why_size, "no rule allows %s:%u", host, port);
        } else {
            char m[64];
            format_methods(first->methods, m, sizeof(m));
            snprintf(why, why_size, "%s %s is not allowed on %s:%u (allowed: %s %s)", method, path,
                     host, port, m, first->paths);
        }
    }
    return false;
}

/* ---- within a ceiling ---- */

/* Whether the requested glob g lies within the ceiling glob c: equal, or
 * c is LITERAL followed by "/" and "**" (no other star) and g is LITERAL
 * or below it. */
static bool glob_within(const char *g, size_t gn, const char *c, size_t cn)
{
    if (gn == cn && memcmp(g, c, gn) == 0)
        return true;
    if (cn < 3 || memcmp(c + cn - 3, "/**", 3) != 0)
        return false;
    size_t lit = cn - 3;
    if (memchr(c, '*', lit))
        return false;
    if (lit == 0)
        return true; /* the glob of every path */
    return gn >= lit && memcmp(g, c, lit) == 0 && (gn == lit || g[lit] == '/');
}

bool egress_l7_within(const struct egress_rule *c, const struct egress_rule *r)
{
    if (!c->l7)
        return true;
    if (!r->l7 || (r->methods & ~c->methods))
        return false;
    for (const char *g = r->paths; *g;) {
        size_t gn = strcspn(g, ",");
        bool ok = false;
        for (const char *h = c->paths; *h && !ok;) {
            size_t hn = strcspn(h, ",");
            ok = glob_within(g, gn, h, hn);
            h += hn + (h[hn] == ',');
        }
        if (!ok)
            return false;
        g += gn + (g[gn] == ',');
    }
    return true;
}
