/* The response direction of an inspected connection (l7.h): every
 * occurrence of a secret's value, and of its forms in HTTP basic auth's
 * base64, overwritten with '*' of the same length, so that a server
 * echoing a credential (an error page, a debug endpoint) does not hand
 * it to the sandbox.
 *
 * Contract: pure, allocation at l7_scrub_new only (and growth when a
 * caller gives less room than documented).  Called by nsbox-tls for each
 * response byte of a connection that carried a secret.  Occurrences are
 * found on the bytes as received (marks, not overwrites, so that
 * overlapping needles are all found) and output never depends on how the
 * input was split.  Needles per secret: the value; for a basic-auth
 * secret also its base64 at each of the three alignments a "USER:" prefix
 * can give it, without the characters that also encode the neighbours
 * (so a basic-auth header of any user is scrubbed but for at most 2
 * characters at each end, which carry under a byte of the value each),
 * when 8 characters or more, and the whole base64 of BASIC_USER:VALUE
 * when the user is set.  Not
 * scrubbed: compressed or otherwise encoded bodies (docs/secrets.md). */
#include "l7.h"

#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"

#define NEEDLES_PER_SECRET 5
#define CHUNK 65536
#define B64_CORE_MIN 8

struct needle {
    uint8_t *p;
    size_t n;
};

struct l7_scrub {
    struct needle needles[EGRESS_SECRET_MAX * NEEDLES_PER_SECRET];
    size_t n_needles, maxlen;
    uint8_t *buf; /* the held bytes, then the chunk being scanned */
    uint8_t *mark;
    size_t cap, held;
};

static int add_needle(struct l7_scrub *z, const void *p, size_t n)
{
    if (n == 0 || z->n_needles == sizeof(z->needles) / sizeof(z->needles[0]))
        return 0;
    uint8_t *c = malloc(n);
    if (!c)
        return -1;
    memcpy(c, p, n);
    z->needles[z->n_needles].p = c;
    z->needles[z->n_needles++].n = n;
    if (n > z->maxlen)
        z->maxlen = n;
    return 0;
}

/* The base64 of value after k bytes of anything: the characters that
 * encode value's bytes alone. */
static int add_b64_core(struct l7_scrub *z, const char *value, size_t vn, size_t k)
{
    size_t m = k + vn;
    uint8_t *plain = calloc(1, m + 3);
    char *enc = malloc((m + 2) / 3 * 4 + 4);
    int rc = -1;
    if (plain && enc) {
        memcpy(plain + k, value, vn);
        l7_b64_encode(plain, m, enc);
        size_t skip = (k * 8 + 5) / 6, end = m / 3 * 4;
        rc = end > skip && end - skip >= B64_CORE_MIN ? add_needle(z, enc + skip, end - skip) : 0;
    }
    if (plain)
        explicit_bzero(plain, m + 3);
    if (enc)
        explicit_bzero(enc, (m + 2) / 3 * 4 + 4);
    free(plain);
    free(enc);
    return rc;
}

static int add_secret(struct l7_scrub *z, const struct egress_secret *s)
{
    size_t vn = strlen(s->value);
    if (vn == 0)
        return 0;
    if (add_needle(z, s->value, vn) < 0)
        return -1;
    if (!s->basic)
        return 0;
    for (size_t k = 0; k < 3; k++)
        if (add_b64_core(z, s->value, vn, k) < 0)
            return -1;
    if (s->basic && s->basic_user[0]) {
        size_t un = strlen(s->basic_user), pn = un + 1 + vn;
        char *plain = malloc(pn), *enc = malloc((pn + 2) / 3 * 4 + 1);
        int rc = -1;
        if (plain && enc) {
            memcpy(plain, s->basic_user, un);
            plain[un] = ':';
            memcpy(plain + un + 1, s->value, vn);
            rc = add_needle(z, enc, l7_b64_encode((const uint8_t *)plain, pn, enc));
            explicit_bzero(plain, pn);
            explicit_bzero(enc, (pn + 2) / 3 * 4 + 1);
        }
        free(plain);
        free(enc);
        return rc;
    }
    return 0;
}

void l7_scrub_free(struct l7_scrub *z)
{
    if (!z)
        return;
    for (size_t i = 0; i < z->n_needles; i++) {
        explicit_bzero(z->needles[i].p, z->needles[i].n);
        free(z->needles[i].p);
    }
    if (z->buf)
        explicit_bzero(z->buf, z->cap);
    free(z->buf);
    free(z->mark);
    free(z);
}

struct l7_scrub *l7_scrub_new(const struct egress_secret *secrets, size_t n)
{
    struct l7_scrub *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (add_secret(z, &secrets[i]) < 0) {
            l7_scrub_free(z);
            return NULL;
        }
    if (z->n_needles == 0) {
        l7_scrub_free(z);
        return NULL;
    }
    z->cap = z->maxlen + CHUNK;
    z->buf = malloc(z->cap);
    z->mark = calloc(1, z->cap);
    if (!z->buf || !z->mark) {
        l7_scrub_free(z);
        return NULL;
    }
    return z;
}

static void mark_all(struct l7_scrub *z, size_t total)
{
    for (size_t i = 0; i < z->n_needles; i++) {
        const struct needle *nd = &z->needles[i];
        const uint8_t *p = z->buf, *end = z->buf + total;
        while ((size_t)(end - p) >= nd->n) {
            const uint8_t *hit = memmem(p, (size_t)(end - p), nd->p, nd->n);
            if (!hit)
                break;
            memset(z->mark + (hit - z->buf), 1, nd->n);
            p = hit + 1;
        }
    }
}

/* The first n bytes of the buffer out (marked ones as '*'), the rest
 * moved to the front. */
static size_t give(struct l7_scrub *z, size_t total, size_t n, uint8_t *out)
{
    if (memchr(z->mark, 1, n) == NULL) {
        memcpy(out, z->buf, n); /* the common case: nothing to scrub */
    } else {
        for (size_t i = 0; i < n; i++)
            out[i] = z->mark[i] ? '*' : z->buf[i];
    }
    memmove(z->buf, z->buf + n, total - n);
    memmove(z->mark, z->mark + n, total - n);
    memset(z->mark + (total - n), 0, n);
    z->held = total - n;
    return n;
}

size_t l7_scrub_feed(struct l7_scrub *z, const uint8_t *in, size_t len, uint8_t *out,
                     size_t out_size)
{
    size_t written = 0;
    while (len > 0) {
        if (z->cap - z->held < CHUNK) { /* only when out was smaller than documented */
            size_t cap = z->held + CHUNK;
            uint8_t *b = realloc(z->buf, cap), *m = b ? realloc(z->mark, cap) : NULL;
            if (b)
                z->buf = b;
            if (!b || !m)
                return written; /* out of memory: the rest is dropped */
            z->mark = m;
            memset(z->mark + z->cap, 0, cap - z->cap);
            z->cap = cap;
        }
        size_t c = len < CHUNK ? len : CHUNK;
        memcpy(z->buf + z->held, in, c);
        size_t total = z->held + c;
        in += c;
        len -= c;
        mark_all(z, total);
        size_t keep = z->maxlen - 1 < total ? z->maxlen - 1 : total;
        size_t n = total - keep;
        if (n > out_size - written)
            n = out_size - written;
        written += give(z, total, n, out + written);
    }
    return written;
}

size_t l7_scrub_flush(struct l7_scrub *z, uint8_t *out, size_t out_size)
{
    size_t n = z->held < out_size ? z->held : out_size;
    return give(z, z->held, n, out);
}
