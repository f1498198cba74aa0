/* Service URL tokens (see token.h). */
#include "token.h"

#include <string.h>

#include <openssl/crypto.h>

#include "../files/token.h"

#define VERSION 1
#define BODY_LEN 14 /* version, kind, id, expires */
#define MAC_LEN 16
#define RAW_LEN (BODY_LEN + MAC_LEN) /* 30 bytes: 240 bits, 48 base32 digits */

_Static_assert(RAW_LEN * 8 == PREVIEW_TOKEN_LEN * 5, "48 digits hold 30 bytes exactly");

static const char digits[] = "abcdefghijklmnopqrstuvwxyz234567";

static void mac_of(const uint8_t key[PREVIEW_KEY_LEN], const uint8_t body[BODY_LEN],
                   uint8_t mac[MAC_LEN])
{
    unsigned char full[32];
    mcp_file_hmac(key, PREVIEW_KEY_LEN, body, BODY_LEN, full);
    memcpy(mac, full, MAC_LEN);
    OPENSSL_cleanse(full, sizeof(full));
}

static void encode(const uint8_t raw[RAW_LEN], char out[PREVIEW_TOKEN_LEN + 1])
{
    /* 30 bytes are 6 groups of 5 bytes, 8 digits each: no partial group. */
    for (size_t g = 0; g < RAW_LEN / 5; g++) {
        uint64_t v = 0;
        for (size_t i = 0; i < 5; i++)
            v = v << 8 | raw[g * 5 + i];
        for (size_t i = 0; i < 8; i++)
            out[g * 8 + i] = digits[(v >> (35 - 5 * i)) & 31];
    }
    out[PREVIEW_TOKEN_LEN] = '\0';
}

static int digit_value(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= '2' && c <= '7')
        return c - '2' + 26;
    return -1;
}

static int decode(const char *s, uint8_t raw[RAW_LEN])
{
    for (size_t g = 0; g < RAW_LEN / 5; g++) {
        uint64_t v = 0;
        for (size_t i = 0; i < 8; i++) {
            int d = digit_value(s[g * 8 + i]);
            if (d < 0)
                return -1;
            v = v << 5 | (uint64_t)d;
        }
        for (size_t i = 0; i < 5; i++)
            raw[g * 5 + i] = (uint8_t)(v >> (32 - 8 * i));
    }
    return 0;
}

int preview_token_make(const uint8_t key[PREVIEW_KEY_LEN], enum preview_kind kind, uint64_t id,
                       uint32_t expires, char out[PREVIEW_TOKEN_LEN + 1])
{
    uint8_t raw[RAW_LEN];

    if (kind != PREVIEW_PORT && kind != PREVIEW_TERMINAL)
        return -1;
    raw[0] = VERSION;
    raw[1] = (uint8_t)kind;
    for (int i = 0; i < 8; i++)
        raw[2 + i] = (uint8_t)(id >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        raw[10 + i] = (uint8_t)(expires >> (24 - 8 * i));
    mac_of(key, raw, raw + BODY_LEN);
    encode(raw, out);
    return 0;
}

static int refuse(const char **why, const char *reason)
{
    if (why != NULL)
        *why = reason;
    return -1;
}

int preview_token_check(const uint8_t key[PREVIEW_KEY_LEN], const char *s, size_t len,
                        enum preview_kind kind, uint32_t now, uint64_t *id, uint32_t *expires,
                        const char **why)
{
    uint8_t raw[RAW_LEN], mac[MAC_LEN];
    uint64_t v_id = 0;
    uint32_t v_exp = 0;

    /* Every 48-digit string decodes to exactly 30 bytes (no spare bits),
     * so each token has one spelling: a changed digit changes the bytes. */
    if (s == NULL || len != PREVIEW_TOKEN_LEN || decode(s, raw) != 0)
        return refuse(why, "malformed");
    mac_of(key, raw, mac);
    if (CRYPTO_memcmp(mac, raw + BODY_LEN, MAC_LEN) != 0)
        return refuse(why, "bad signature");
    if (raw[0] != VERSION)
        return refuse(why, "malformed");
    if (raw[1] != (uint8_t)kind)
        return refuse(why, "wrong kind");
    for (int i = 0; i < 8; i++)
        v_id = v_id << 8 | raw[2 + i];
    for (int i = 0; i < 4; i++)
        v_exp = v_exp << 8 | raw[10 + i];
    if (now > v_exp)
        return refuse(why, "expired");
    if (id != NULL)
        *id = v_id;
    if (expires != NULL)
        *expires = v_exp;
    return 0;
}
