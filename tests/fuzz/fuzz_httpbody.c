/* libFuzzer target: the HTTP transport's POST body accumulation
 * (mcp/http/body.c), the one part of reading a request that is neither
 * libmicrohttpd's parsing nor a header check (fuzz_http).  The real
 * limits are 16 MiB kept plus 16 MiB drained; here they come from the
 * input, small, so that every path is reached in a few bytes.
 *
 * Input: max (2 bytes, little-endian, up to 4095), discard_max (2 bytes),
 * a flag byte (bit 0: the body was refused up front, as a Content-Length
 * over the limit does), then pieces as MHD hands them over: a length byte
 * and that many bytes (fewer at the end of the input).
 *
 * Checks against a model: what is kept is exactly the pieces so far, NUL
 * terminated, never more than max; once over max nothing is kept and
 * too_large stays set; the hang-up comes exactly when more than
 * max + discard_max bytes have come while too_large was already set. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mcp/http/body.h"

static void must(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz-httpbody: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return -1;
    size_t max = (data[0] | (size_t)data[1] << 8) & 4095;
    size_t discard = (data[2] | (size_t)data[3] << 8) & 4095;
    struct http_body b = {.too_large = data[4] & 1};
    unsigned char *model = malloc(size); /* the pieces, as the model keeps them */
    size_t model_len = 0, seen = 0;
    bool too_large = b.too_large;

    if (model == NULL)
        return 0;
    for (size_t i = 5; i < size;) {
        size_t n = data[i++];
        if (n > size - i)
            n = size - i;
        bool was_too_large = too_large;
        seen += n;
        if (!too_large && model_len + n > max)
            too_large = true, model_len = 0;
        else if (!too_large)
            memcpy(model + model_len, data + i, n), model_len += n;
        int r = http_body_take(&b, (const char *)data + i, n, max, discard);
        i += n;
        must(b.seen == seen, "seen is not the bytes received");
        must(b.too_large == too_large, "too_large is not body > max");
        must(r == 0 || r == -1, "neither read on nor hang up");
        /* The hang-up: over max + discard_max with too_large already set
         * (the piece that crosses max itself is always read on). */
        must((r < 0) == (was_too_large && seen > max + discard), "hang-up at the wrong byte");
        if (too_large)
            must(b.data == NULL && b.len == 0 && b.cap == 0, "kept bytes past the limit");
        else
            must(b.len == model_len && b.len <= max &&
                     (b.len == 0 || (b.data && b.cap > b.len && b.data[b.len] == '\0' &&
                                     memcmp(b.data, model, b.len) == 0)),
                 "kept bytes are not the pieces");
        if (r < 0)
            break; /* MHD stops calling once told to hang up */
    }
    http_body_free(&b);
    must(b.data == NULL && b.len == 0, "free left data");
    free(model);
    return 0;
}
