/* RFC 6455 framing, the server's side (see ws.h). */
#include "ws.h"

#include <jansson.h>
/* The low-level SHA-1, as token.c's SHA-256: SHA1() and EVP would link
 * OpenSSL 3's provider machinery into every nsbox start (sandbox suite,
 * binary_links_no_evp). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/base64.h"
#include "../../common/utf8.h"

long ws_frame_parse(uint8_t *buf, size_t len, size_t max, struct ws_frame *f, uint16_t *code)
{
    if (len < 2)
        return 0;
    uint8_t b0 = buf[0], b1 = buf[1];
    uint8_t op = b0 & 0x0F;
    size_t hdr = 2;
    uint64_t plen = b1 & 0x7F;

    *code = WS_CLOSE_PROTOCOL;
    if ((b0 & 0x70) != 0) /* RSV1-3: no extension was agreed */
        return -1;
    if (!(op == WS_CONT || op == WS_TEXT || op == WS_BINARY || op == WS_CLOSE || op == WS_PING ||
          op == WS_PONG))
        return -1;
    if ((b1 & 0x80) == 0) /* a client's frame must be masked */
        return -1;
    bool control = (op & 0x8) != 0;
    if (control && (!(b0 & 0x80) || plen > WS_CONTROL_MAX))
        return -1;
    if (plen == 126) {
        if (len < 4)
            return 0;
        plen = (uint64_t)buf[2] << 8 | buf[3];
        if (plen < 126) /* the shortest form only */
            return -1;
        hdr = 4;
    } else if (plen == 127) {
        if (len < 10)
            return 0;
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | buf[2 + i];
        if (plen >> 63 || plen <= 0xFFFF)
            return -1;
        hdr = 10;
    }
    if (plen > max) {
        *code = WS_CLOSE_TOO_BIG;
        return -1;
    }
    if (len < hdr + 4)
        return 0;
    const uint8_t *mask = buf + hdr;
    hdr += 4;
    if (len - hdr < plen)
        return 0;
    uint8_t *p = buf + hdr;
    for (size_t i = 0; i < plen; i++)
        p[i] ^= mask[i & 3];
    *f = (struct ws_frame){.fin = (b0 & 0x80) != 0, .opcode = op, .payload = p, .len = plen};
    *code = 0;
    return (long)(hdr + plen);
}

int ws_sequence(struct ws_seq *s, struct ws_frame *f, size_t max, uint16_t *code)
{
    *code = WS_CLOSE_PROTOCOL;
    if (f->opcode & 0x8) { /* control frames may come between fragments */
        f->message = f->opcode;
        f->last = true;
        *code = 0;
        return 0;
    }
    if (f->opcode == WS_CONT && !s->in_message)
        return -1;
    if (f->opcode != WS_CONT && s->in_message)
        return -1;
    if (f->opcode != WS_CONT) {
        s->in_message = true;
        s->message = f->opcode;
        s->so_far = 0;
    }
    if (f->len > max - s->so_far) {
        *code = WS_CLOSE_TOO_BIG;
        return -1;
    }
    s->so_far += f->len;
    f->message = s->message;
    f->last = f->fin;
    if (f->fin)
        s->in_message = false;
    *code = 0;
    return 0;
}

int ws_close_payload(const uint8_t *p, size_t len, uint16_t *code)
{
    if (len == 0) {
        *code = 1005;
        return 0;
    }
    if (len == 1)
        return -1;
    uint16_t c = (uint16_t)(p[0] << 8 | p[1]);
    /* 1004-1006 and 1015 are reserved for reports, never sent. */
    bool ok = (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
    if (!ok || !nsbox_utf8_valid((const char *)p + 2, len - 2))
        return -1;
    *code = c;
    return 0;
}

size_t ws_header(uint8_t out[WS_HEADER_MAX], uint8_t opcode, uint64_t len)
{
    out[0] = (uint8_t)(0x80 | (opcode & 0x0F));
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xFFFF) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

size_t ws_close_frame(uint8_t out[4], uint16_t code)
{
    out[0] = 0x80 | WS_CLOSE;
    out[1] = 2;
    out[2] = (uint8_t)(code >> 8);
    out[3] = (uint8_t)code;
    return 4;
}

static bool dimension(json_t *v, unsigned *out)
{
    if (!json_is_integer(v))
        return false;
    json_int_t n = json_integer_value(v);
    if (n < 1 || n > 65535)
        return false;
    *out = (unsigned)n;
    return true;
}

bool ws_resize_parse(const char *s, size_t n, unsigned *cols, unsigned *rows)
{
    /* Cheap first: xterm.js's keystrokes are short and never start so. */
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    if (i == n || s[i] != '{' || n > 256)
        return false;
    json_error_t e;
    json_t *j = json_loadb(s, n, JSON_REJECT_DUPLICATES, &e);
    bool ok = json_is_object(j) && json_object_size(j) == 3 &&
              json_is_string(json_object_get(j, "type")) &&
              strcmp(json_string_value(json_object_get(j, "type")), "resize") == 0 &&
              dimension(json_object_get(j, "cols"), cols) &&
              dimension(json_object_get(j, "rows"), rows);
    json_decref(j);
    return ok;
}

int ws_accept_key(const char *key, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    size_t klen = key ? strlen(key) : 0, dlen = 0;

    if (klen != 24)
        return -1;
    unsigned char *d = nsbox_base64_decode(key, klen, 16, NSBOX_B64_PADDED, &dlen);
    free(d);
    if (d == NULL || dlen != 16)
        return -1;
    unsigned char buf[24 + sizeof(guid)], md[SHA_DIGEST_LENGTH];
    memcpy(buf, key, 24);
    memcpy(buf + 24, guid, sizeof(guid) - 1);
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, buf, 24 + sizeof(guid) - 1);
    SHA1_Final(md, &ctx);
    char *b = nsbox_base64_encode(md, sizeof(md));
    if (b == NULL || strlen(b) != 28) {
        free(b);
        return -1;
    }
    memcpy(out, b, 29);
    free(b);
    return 0;
}
