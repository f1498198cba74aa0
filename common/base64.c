/* See base64.h. */
#include "base64.h"

#include <stdlib.h>

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
