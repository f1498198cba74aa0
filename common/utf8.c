/* Strict UTF-8 (utf8.h). */
#include "utf8.h"

#include <string.h>

/* The length of the UTF-8 sequence starting at s[0] (at most n bytes), or
 * 0 when it is no valid sequence.  Valid as RFC 3629 has it (its table 3):
 * no overlong forms, UTF-16 surrogates or code points past U+10FFFF.
 * jansson refuses those in a string, so a listing that let them through
 * would lose the entry (a file named "\xed\xa0\x80" vanished from
 * list_directory) instead of showing it with '?'. */
static size_t sequence(const unsigned char *s, size_t n)
{
    unsigned c = s[0], lo = 0x80, hi = 0xbf;
    size_t k = c < 0x80                 ? 1
               : c >= 0xc2 && c <= 0xdf ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
    if (k == 0 || k > n)
        return 0;
    if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf4)
        hi = 0x8f; /* past U+10FFFF */
    if (k > 1 && (s[1] < lo || s[1] > hi))
        return 0;
    for (size_t j = 2; j < k; j++)
        if ((s[j] & 0xc0) != 0x80)
            return 0;
    return k;
}

bool nsbox_utf8_sanitize(const char *in, char *out, size_t size)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0, n = strlen(in);
    bool changed = false;
    for (size_t i = 0; i < n && o + 5 < size;) {
        size_t k = sequence(s + i, n - i);
        if (k == 0) {
            out[o++] = '?';
            changed = true;
            i++;
            continue;
        }
        memcpy(out + o, s + i, k);
        o += k;
        i += k;
    }
    out[o] = '\0';
    return changed;
}

bool nsbox_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] == 0 ? 0 : sequence(u + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

size_t nsbox_utf8_whole(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned c = u[n - back];
        if ((c & 0xc0) == 0x80)
            continue; /* a continuation byte: its lead is further back */
        /* As sequence(): a byte that can start no sequence waits for none. */
        size_t need = c >= 0xc2 && c <= 0xdf   ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 1;
        return need > back ? n - back : n;
    }
    return n;
}

bool nsbox_utf8_repair(char *s, size_t n)
{
    unsigned char *u = (unsigned char *)s;
    bool changed = false;
    for (size_t i = 0; i < n;) {
        size_t k = sequence(u + i, n - i);
        if (k == 0) {
            u[i++] = '?';
            changed = true;
            continue;
        }
        i += k;
    }
    return changed;
}
