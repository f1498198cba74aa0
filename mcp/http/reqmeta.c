/* Request metadata header values and the token file (see reqmeta.h). */
#include "reqmeta.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/base64.h"
#include "../../common/cleanup.h"

#define SENTINEL_HEAD "=?base64?"
#define SENTINEL_TAIL "?="

/* RFC 9110 field-value characters: visible ASCII, space and tab (MHD has
 * already taken the surrounding whitespace off). */
static bool header_safe(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 0x20 && *s <= 0x7e) || *s == '\t'))
            return false;
    return true;
}

/* Strict RFC 4648 base64 (standard alphabet, padded to a multiple of 4):
 * one value has one encoding, so a router and nsbox cannot read it
 * differently (common/base64.h). */
static int b64_decode(const char *in, size_t n, char *out, size_t size, size_t *len)
{
    _cleanup_free_ unsigned char *d = nsbox_base64_decode(in, n, size, NSBOX_B64_PADDED, len);
    if (d == NULL)
        return -1;
    memcpy(out, d, *len);
    return 0;
}

int http_meta_decode(const char *raw, char *out, size_t size, size_t *len)
{
    size_t h = strlen(SENTINEL_HEAD), t = strlen(SENTINEL_TAIL);

    if (!header_safe(raw))
        return -1;
    /* Leading and trailing whitespace is no part of a field value (RFC
     * 9110, 5.5): a value that has some must come base64-encoded. */
    raw += strspn(raw, " \t");
    size_t n = strlen(raw);
    while (n > 0 && (raw[n - 1] == ' ' || raw[n - 1] == '\t'))
        n--;
    if (n >= h + t && strncmp(raw, SENTINEL_HEAD, h) == 0 &&
        strncmp(raw + n - t, SENTINEL_TAIL, t) == 0)
        return b64_decode(raw + h, n - h - t, out, size, len);
    if (n > size)
        return -1;
    memcpy(out, raw, n);
    *len = n;
    return 0;
}

/* An integer header value against a number in the body. */
static bool number_matches(const char *v, size_t len, double b)
{
    char buf[64], *end;
    if (len == 0 || len >= sizeof(buf) || memchr(v, '\0', len) != NULL)
        return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    errno = 0;
    double h = strtod(buf, &end);
    return errno == 0 && *end == '\0' && isfinite(h) && h == b && b == floor(b);
}

bool http_meta_matches(const char *v, size_t len, const json_t *b)
{
    if (json_is_string(b))
        return json_string_length(b) == len && memcmp(json_string_value(b), v, len) == 0;
    if (json_is_integer(b))
        return number_matches(v, len, (double)json_integer_value(b));
    if (json_is_real(b))
        return number_matches(v, len, json_real_value(b));
    if (json_is_boolean(b)) {
        const char *s = json_is_true(b) ? "true" : "false";
        return strlen(s) == len && memcmp(s, v, len) == 0;
    }
    return false;
}

/* ---- the token file ---- */

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > HTTP_TENANT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]) ||
            s[i] == '\0')
            return false;
    return true;
}

/* The fields of one line (at most 3 looked at): pointers and lengths. */
static size_t split(const char *line, size_t n, const char *f[3], size_t fl[3])
{
    size_t k = 0, i = 0;
    while (i < n && k < 3) {
        while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            i++;
        if (i == n)
            break;
        f[k] = line + i;
        while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            i++;
        fl[k] = (size_t)(line + i - f[k]);
        k++;
    }
    return k;
}

/* Checks one token; the message when it is not acceptable. */
static const char *token_problem(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0x21 || t[i] > 0x7e)
            return "has a control or non-ASCII character";
    if (n < HTTP_TOKEN_MIN)
        return "is too short (use 16 characters or more, e.g. `openssl rand -hex 32`)";
    if (n > HTTP_TOKEN_MAX)
        return "is too long (512 characters at most)";
    return NULL;
}

/* Adds the entry of one line (fields f) as out[k]; -1 with err. */
static int add_entry(struct http_token_entry *out, size_t k, const char *f[3], size_t fl[3],
                     size_t nf, const char *from, unsigned lineno, struct nsbox_err *err)
{
    const char *tok = f[nf - 1], *why;
    size_t tl = fl[nf - 1];
    if (nf == 3)
        return nsbox_err_set(err, EINVAL, "%s line %u: more than NAME and TOKEN", from, lineno);
    if ((why = token_problem(tok, tl)) != NULL)
        return nsbox_err_set(err, EINVAL, "%s line %u: the token %s", from, lineno, why);
    if (nf == 2 && !name_ok(f[0], fl[0]))
        return nsbox_err_set(
            err, EINVAL, "%s line %u: a tenant name is 1 to 32 of A-Z a-z 0-9 . _ -", from, lineno);
    memcpy(out[k].token, tok, tl);
    out[k].token[tl] = '\0';
    if (nf == 2) {
        memcpy(out[k].name, f[0], fl[0]);
        out[k].name[fl[0]] = '\0';
    } else
        snprintf(out[k].name, sizeof(out[k].name), "tenant-%zu", k + 1);
    for (size_t j = 0; j < k; j++) {
        if (strcmp(out[j].token, out[k].token) == 0)
            return nsbox_err_set(err, EINVAL, "%s line %u: the same token twice", from, lineno);
        if (strcmp(out[j].name, out[k].name) == 0)
            return nsbox_err_set(err, EINVAL, "%s line %u: the tenant name %s twice", from, lineno,
                                 out[k].name);
    }
    return 0;
}

int http_tokens_parse(const char *text, const char *from, struct http_token_entry *out, size_t max,
                      struct nsbox_err *err)
{
    size_t k = 0;
    unsigned lineno = 0;
    bool named = false;

    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        const char *f[3];
        size_t fl[3];
        size_t nf = split(p, n, f, fl);
        lineno++;
        if (nf > 0 && f[0][0] != '#') {
            if (k == max)
                return nsbox_err_set(err, EINVAL, "%s: more than %zu tokens", from, max);
            if (add_entry(out, k, f, fl, nf, from, lineno, err) < 0)
                return -1;
            named |= nf == 2;
            k++;
        }
        p += n + (p[n] == '\n');
    }
    if (k == 1 && !named)
        snprintf(out[0].name, sizeof(out[0].name), "default");
    return (int)k;
}
