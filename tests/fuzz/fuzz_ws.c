/* libFuzzer target: the WebSocket frame codec of terminals
 * (mcp/preview/ws.c), which reads every byte a terminal's client sends.
 *
 * Input: a flag byte (the frame-size limit: small, so that 1009 is
 * reached), then the client's bytes.  Checks: parsing never reads past
 * what it was given, a frame's size is its header plus its payload, a
 * sequence of frames never accepts a continuation outside a message or a
 * message over the limit; a frame made from the input's bytes (masked, as
 * a client would) parses back to the same opcode and payload; the resize
 * parser and the handshake key never crash, and a resize it accepts has
 * dimensions in range. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../mcp/preview/ws.h"

static void must(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz-ws: %s\n", what);
        abort();
    }
}

/* A masked client frame of (op, p, n) into out; returns its size. */
static size_t client_frame(uint8_t *out, uint8_t op, bool fin, const uint8_t *p, size_t n,
                           const uint8_t mask[4])
{
    size_t h = ws_header(out, op, n);
    if (!fin)
        out[0] &= 0x7F;
    out[1] |= 0x80;
    memcpy(out + h, mask, 4);
    h += 4;
    for (size_t i = 0; i < n; i++)
        out[h + i] = p[i] ^ mask[i & 3];
    return h + n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t max = (data[0] & 1) ? 64 : 1u << 20;
    const uint8_t *in = data + 1;
    size_t n = size - 1;

    /* The client's bytes, frame by frame. */
    uint8_t *buf = malloc(n ? n : 1);
    memcpy(buf, in, n);
    struct ws_seq seq = {0};
    size_t off = 0;
    while (off < n) {
        struct ws_frame f;
        uint16_t code = 0;
        long r = ws_frame_parse(buf + off, n - off, max, &f, &code);
        if (r == 0)
            break;
        if (r < 0) {
            must(code == WS_CLOSE_PROTOCOL || code == WS_CLOSE_TOO_BIG, "close code");
            break;
        }
        must((size_t)r <= n - off, "frame past the input");
        must(f.payload >= buf + off && f.payload + f.len == buf + off + (size_t)r,
             "payload is not the frame's tail");
        must(f.len <= max, "payload over the limit");
        bool was_in = seq.in_message;
        if (ws_sequence(&seq, &f, max, &code) < 0) {
            must(code == WS_CLOSE_PROTOCOL || code == WS_CLOSE_TOO_BIG, "sequence code");
            must(f.opcode == WS_CONT ? !was_in || code == WS_CLOSE_TOO_BIG
                                     : was_in || code == WS_CLOSE_TOO_BIG,
                 "sequence refusal reason");
            break;
        }
        must(seq.so_far <= max, "message over the limit");
        if (f.opcode == WS_CLOSE) {
            uint16_t c;
            if (ws_close_payload(f.payload, f.len, &c) == 0)
                must(c == 1005 || (c >= 1000 && c < 5000), "close payload code");
        }
        off += (size_t)r;
    }
    free(buf);

    /* The input as a payload, framed as a client would, parses back. */
    size_t len = n > 200 ? 200 : n;
    uint8_t frame[WS_HEADER_MAX + 200], mask[4] = {1, 2, 3, 4};
    uint8_t op = (data[0] >> 1) & 1 ? WS_TEXT : WS_BINARY;
    size_t fl = client_frame(frame, op, true, in, len, mask);
    struct ws_frame f;
    uint16_t code;
    long r = ws_frame_parse(frame, fl, 1u << 20, &f, &code);
    must(r == (long)fl && f.opcode == op && f.fin && f.len == len &&
             (len == 0 || memcmp(f.payload, in, len) == 0),
         "a client frame does not parse back");

    /* Resize and the handshake key, on the raw bytes. */
    unsigned cols = 0, rows = 0;
    if (ws_resize_parse((const char *)in, n, &cols, &rows))
        must(cols >= 1 && cols <= 65535 && rows >= 1 && rows <= 65535, "resize out of range");
    char key[64], accept[29];
    snprintf(key, sizeof(key), "%.*s", (int)(n < 63 ? n : 63), (const char *)in);
    if (ws_accept_key(key, accept) == 0)
        must(strlen(accept) == 28, "accept length");
    return 0;
}
