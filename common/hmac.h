/* HMAC-SHA256 (RFC 2104) over OpenSSL's low-level SHA-256.  Used by the
 * file URL and preview tokens (mcp/) and the checkpoint store's manifest
 * (boxes/checkpoint.c).  HMAC() and EVP would link OpenSSL 3's provider
 * machinery into every nsbox start (its relocations cost each `nsbox exec`
 * 0.3 ms; tests/integration/sandbox.sh binary_links_no_evp). */
#ifndef NSBOX_COMMON_HMAC_H
#define NSBOX_COMMON_HMAC_H

#include <stddef.h>

#define NSBOX_HMAC_LEN 32

void nsbox_hmac_sha256(const unsigned char *key, size_t key_len, const unsigned char *data,
                       size_t len, unsigned char mac[NSBOX_HMAC_LEN]);

#endif
