/* HMAC-SHA256 (hmac.h). */
#include "hmac.h"

#include <string.h>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>

void nsbox_hmac_sha256(const unsigned char *key, size_t key_len, const unsigned char *data,
                       size_t len, unsigned char mac[NSBOX_HMAC_LEN])
{
    unsigned char k[64] = {0}, pad[64], inner[32];
    SHA256_CTX ctx;

    if (key_len > sizeof(k)) {
        SHA256_Init(&ctx);
        SHA256_Update(&ctx, key, key_len);
        SHA256_Final(k, &ctx);
    } else {
        memcpy(k, key, key_len);
    }
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, pad, 64);
    SHA256_Update(&ctx, data, len);
    SHA256_Final(inner, &ctx);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, pad, 64);
    SHA256_Update(&ctx, inner, sizeof(inner));
    SHA256_Final(mac, &ctx);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
}
