/* A POST body with a size limit (see body.h). */
#include "body.h"

#include <stdlib.h>
#include <string.h>

int http_body_take(struct http_body *b, const char *data, size_t n, size_t max, size_t discard_max)
{
    b->seen += n;
    if (b->too_large)
        return b->seen > max + discard_max ? -1 : 0;
    if (b->len + n > max) {
        b->too_large = true;
        http_body_free(b);
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *nb = realloc(b->data, cap);
        if (nb == NULL)
            return -1;
        b->data = nb;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

void http_body_free(struct http_body *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
