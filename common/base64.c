/* See base64.h. */
#include "base64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cleanup.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *nsbox_base64_encode(const unsigned char *in, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1), *p = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < len ? in[i + 2] : 0);
        *p++ = b64[v >> 18];
        *p++ = b64[(v >> 12) & 63];
        *p++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
        *p++ = i + 2 < len ? b64[v & 63] : '=';
    }
    *p = '\0';
    return out;
}

static int digit(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static bool newline(char c)
{
    return c == '\n' || c == '\r';
}

unsigned char *nsbox_base64_decode(const char *in, size_t n, size_t max, unsigned flags,
                                   size_t *len)
{
    bool nl = flags & NSBOX_B64_NEWLINES;
    size_t pad = 0, digits = 0, o = 0;
    while (n > 0 && nl && newline(in[n - 1]))
        n--;
    while (n > 0 && in[n - 1] == '=')
        n--, pad++;
    if (pad > 2 || n / 4 * 3 > max + 3)
        return NULL;
    _cleanup_free_ unsigned char *out = malloc(n / 4 * 3 + 4);
    uint32_t v = 0;
    int bits = 0;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (nl && newline(in[i]))
            continue;
        int c = digit((unsigned char)in[i]);
        if (c < 0)
            return NULL;
        digits++;
        v = v << 6 | (uint32_t)c;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    /* A dangling digit holds no whole byte; padding, when there is some
     * (always, PADDED), makes whole quads; the left-over bits are zero. */
    bool quads = (digits + pad) % 4 == 0;
    if (digits % 4 == 1 || ((pad > 0 || (flags & NSBOX_B64_PADDED)) && !quads) ||
        (v & ((1u << bits) - 1)) != 0 || o > max)
        return NULL;
    out[o] = 0;
    *len = o;
    return TAKE_PTR(out);
}
