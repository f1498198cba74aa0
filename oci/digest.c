#include "digest.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct oci_sha256 {
    EVP_MD_CTX *ctx;
};

bool oci_digest_valid(const char *s)
{
    if (s == NULL || strncmp(s, "sha256:", 7) != 0)
        return false;
    s += 7;
    for (int i = 0; i < OCI_DIGEST_HEX_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[OCI_DIGEST_HEX_LEN] == '\0';
}

const char *oci_digest_hex(const char *digest)
{
    return digest + 7;
}

struct oci_sha256 *oci_sha256_new(void)
{
    struct oci_sha256 *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->ctx = EVP_MD_CTX_new();
    if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        oci_sha256_free(h);
        return NULL;
    }
    return h;
}

void oci_sha256_update(struct oci_sha256 *h, const void *data, size_t len)
{
    EVP_DigestUpdate(h->ctx, data, len);
}

void oci_sha256_finish(struct oci_sha256 *h, char out[OCI_DIGEST_BUF])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[32];
    unsigned int n = 0;

    EVP_DigestFinal_ex(h->ctx, md, &n);
    memcpy(out, "sha256:", 7);
    for (unsigned int i = 0; i < 32; i++) {
        out[7 + 2 * i] = hex[md[i] >> 4];
        out[8 + 2 * i] = hex[md[i] & 15];
    }
    out[OCI_DIGEST_LEN] = '\0';
    oci_sha256_free(h);
}

void oci_sha256_free(struct oci_sha256 *h)
{
    if (h == NULL)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

void oci_digest_buf(const void *data, size_t len, char out[OCI_DIGEST_BUF])
{
    struct oci_sha256 *h = oci_sha256_new();
    if (h == NULL) {
        out[0] = '\0';
        return;
    }
    oci_sha256_update(h, data, len);
    oci_sha256_finish(h, out);
}
