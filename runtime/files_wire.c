/* UTF-8 checks shared by both ends of the file operations' wire. */
#include "files_wire.h"

#include <string.h>

/* The length of the UTF-8 sequence starting at s[0] (at most n bytes), or
 * 0 when it is no valid sequence. */
static size_t sequence(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (k == 0 || k > n)
        return 0;
    for (size_t j = 1; j < k; j++)
        if ((s[j] & 0xc0) != 0x80)
            return 0;
    return k;
}

bool nsbox_files_utf8_sanitize(const char *in, char *out, size_t size)
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

bool nsbox_files_utf8_valid(const char *s, size_t n)
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
