/* Signed, expiring file URL tokens (see token.h). */
#include "token.h"

#include "../../common/hmac.h"

#include <stdlib.h>
#include <string.h>

/* HMAC over the low-level SHA-256 (common/hmac.h): no EVP. */
#include <openssl/crypto.h>

#define VERSION 1
#define MAC_LEN 32
#define FIXED_LEN (1 + 1 + 8 + 8)
#define RAW_MAX                                                                                    \
    (FIXED_LEN + 1 + MCP_FILE_OWNER_MAX + 1 + MCP_FILE_ID_MAX + 2 + MCP_FILE_PATH_MAX + MAC_LEN)

void mcp_file_hmac(const unsigned char *key, size_t key_len, const unsigned char *data, size_t len,
                   unsigned char mac[32])
{
    nsbox_hmac_sha256(key, key_len, data, len, mac);
}

bool mcp_file_path_ok(const char *path, size_t len)
{
    if (len < 2 || len > MCP_FILE_PATH_MAX || path[0] != '/' || path[len - 1] == '/' ||
        memchr(path, '\0', len) != NULL)
        return false;
    for (size_t i = 1; i <= len;) {
        size_t n = 0;
        while (i + n < len && path[i + n] != '/')
            n++;
        if (n == 0 || (n == 1 && path[i] == '.') ||
            (n == 2 && path[i] == '.' && path[i + 1] == '.'))
            return false;
        i += n + 1;
    }
    return true;
}

/* ---- base64url, no padding ---- */

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url_encode(const unsigned char *in, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1), *p = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < len ? in[i + 2] : 0);
        *p++ = alphabet[v >> 18];
        *p++ = alphabet[(v >> 12) & 63];
        if (i + 1 < len)
            *p++ = alphabet[(v >> 6) & 63];
        if (i + 2 < len)
            *p++ = alphabet[v & 63];
    }
    *p = '\0';
    return out;
}

static int b64url_value(char c)
{
    const char *p = c ? strchr(alphabet, c) : NULL;
    return p ? (int)(p - alphabet) : -1;
}

/* Strict: only the alphabet, no length that leaves 1 character over, and
 * the unused low bits of the last character zero, so that every byte
 * string has exactly one spelling.  Returns the bytes, or -1. */
static long b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;

    if (len % 4 == 1)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n == cap)
                return -1;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -1;
    return (long)n;
}

/* ---- the fields ---- */

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--)
        *p++ = (unsigned char)(v >> (i * 8));
    return p;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* The owner is a session id, which over HTTP without a token is enough
 * to use the session: it travels masked, XORed with a keystream from the
 * key and the token's other fields, so that a URL handed on does not hand
 * on the session.  (Masking, not a MAC: the MAC covers the masked bytes.) */
static void owner_mask(const unsigned char key[MCP_FILE_KEY_LEN], const unsigned char *expires,
                       const char *sandbox_id, const char *path, unsigned char *owner, size_t n)
{
    static const char tag[] = "nsbox-file-owner";
    unsigned char msg[sizeof(tag) + 1 + 8 + 1 + MCP_FILE_ID_MAX + MCP_FILE_PATH_MAX], block[32];
    size_t li = strlen(sandbox_id), lp = strlen(path), m = 0;

    memcpy(msg, tag, sizeof(tag)), m += sizeof(tag);
    size_t counter_at = m++;
    memcpy(msg + m, expires, 8), m += 8;
    msg[m++] = (unsigned char)li;
    memcpy(msg + m, sandbox_id, li), m += li;
    memcpy(msg + m, path, lp), m += lp;
    for (size_t i = 0; i < n; i++) {
        if (i % 32 == 0) {
            msg[counter_at] = (unsigned char)(i / 32);
            mcp_file_hmac(key, MCP_FILE_KEY_LEN, msg, m, block);
        }
        owner[i] ^= block[i % 32];
    }
}

char *mcp_file_token_sign(const unsigned char key[MCP_FILE_KEY_LEN], const struct mcp_file_token *t)
{
    unsigned char raw[RAW_MAX], *p = raw;
    size_t lo = strlen(t->owner), li = strlen(t->sandbox_id), lp = strlen(t->path);

    if (lo > MCP_FILE_OWNER_MAX || li == 0 || li > MCP_FILE_ID_MAX ||
        !mcp_file_path_ok(t->path, lp) || (t->method != MCP_FILE_GET && t->method != MCP_FILE_PUT))
        return NULL;
    *p++ = VERSION;
    *p++ = (unsigned char)t->method;
    p = put_u64(p, (uint64_t)t->expires);
    p = put_u64(p, t->max_bytes);
    *p++ = (unsigned char)lo;
    memcpy(p, t->owner, lo);
    owner_mask(key, raw + 2, t->sandbox_id, t->path, p, lo);
    p += lo;
    *p++ = (unsigned char)li;
    memcpy(p, t->sandbox_id, li), p += li;
    *p++ = (unsigned char)(lp >> 8), *p++ = (unsigned char)lp;
    memcpy(p, t->path, lp), p += lp;
    mcp_file_hmac(key, MCP_FILE_KEY_LEN, raw, (size_t)(p - raw), p);
    p += MAC_LEN;
    return b64url_encode(raw, (size_t)(p - raw));
}

/* One length-prefixed string (width 1 or 2 bytes) from *p into dst
 * (NUL-terminated); false when it overruns end or max, or (unless binary)
 * holds a NUL. */
static bool take_string(const unsigned char **p, const unsigned char *end, int width, size_t max,
                        bool binary, char *dst)
{
    if (end - *p < width)
        return false;
    size_t n = width == 1 ? (*p)[0] : (size_t)(*p)[0] << 8 | (*p)[1];
    *p += width;
    if (n > max || (size_t)(end - *p) < n || (!binary && memchr(*p, '\0', n) != NULL))
        return false;
    memcpy(dst, *p, n);
    dst[n] = '\0';
    *p += n;
    return true;
}

/* The signed fields of raw[0..n) (the MAC already checked) into out. */
static bool parse(const unsigned char *raw, size_t n, struct mcp_file_token *out)
{
    const unsigned char *p = raw + FIXED_LEN, *end = raw + n;

    if (n < FIXED_LEN || raw[0] != VERSION || (raw[1] != MCP_FILE_GET && raw[1] != MCP_FILE_PUT))
        return false;
    out->method = (enum mcp_file_method)raw[1];
    uint64_t expires = get_u64(raw + 2);
    if (expires > INT64_MAX)
        return false;
    out->expires = (int64_t)expires;
    out->max_bytes = get_u64(raw + 10);
    if (!take_string(&p, end, 1, MCP_FILE_OWNER_MAX, true, out->owner) ||
        !take_string(&p, end, 1, MCP_FILE_ID_MAX, false, out->sandbox_id) ||
        !take_string(&p, end, 2, MCP_FILE_PATH_MAX, false, out->path) || p != end ||
        out->sandbox_id[0] == '\0')
        return false;
    return true;
}

enum mcp_file_verdict mcp_file_token_verify(const unsigned char key[MCP_FILE_KEY_LEN],
                                            const char *text, size_t len, enum mcp_file_method want,
                                            int64_t now, struct mcp_file_token *out)
{
    unsigned char raw[RAW_MAX], mac[MAC_LEN];

    memset(out, 0, sizeof(*out));
    if (len > MCP_FILE_TOKEN_MAX)
        return MCP_FILE_TOKEN_MALFORMED;
    long n = b64url_decode(text, len, raw, sizeof(raw));
    if (n < FIXED_LEN + 1 + 1 + 2 + MAC_LEN)
        return MCP_FILE_TOKEN_MALFORMED;
    size_t body = (size_t)n - MAC_LEN;
    mcp_file_hmac(key, MCP_FILE_KEY_LEN, raw, body, mac);
    /* Constant time: how much of a forged MAC matched must not show. */
    if (CRYPTO_memcmp(mac, raw + body, MAC_LEN) != 0)
        return MCP_FILE_TOKEN_BAD_MAC;
    if (!parse(raw, body, out))
        return MCP_FILE_TOKEN_MALFORMED;
    size_t lo = raw[FIXED_LEN];
    owner_mask(key, raw + 2, out->sandbox_id, out->path, (unsigned char *)out->owner, lo);
    if (memchr(out->owner, '\0', lo) != NULL)
        return MCP_FILE_TOKEN_MALFORMED;
    if (out->expires <= now)
        return MCP_FILE_TOKEN_EXPIRED;
    if (out->method != want)
        return MCP_FILE_TOKEN_WRONG_METHOD;
    if (!mcp_file_path_ok(out->path, strlen(out->path)))
        return MCP_FILE_TOKEN_BAD_PATH;
    return MCP_FILE_TOKEN_OK;
}

const char *mcp_file_verdict_text(enum mcp_file_verdict v)
{
    switch (v) {
    case MCP_FILE_TOKEN_OK:
        return "ok";
    case MCP_FILE_TOKEN_MALFORMED:
        return "malformed file token";
    case MCP_FILE_TOKEN_BAD_MAC:
        return "invalid file token (not signed by this server, altered, or the server restarted)";
    case MCP_FILE_TOKEN_EXPIRED:
        return "this file URL has expired: ask for a new one";
    case MCP_FILE_TOKEN_WRONG_METHOD:
        return "this file URL is for another method";
    case MCP_FILE_TOKEN_BAD_PATH:
        return "the path in this file URL is not absolute and normalized";
    }
    return "invalid file token";
}
