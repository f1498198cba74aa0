/* Content digests ("sha256:<64 lowercase hex>"), the only algorithm nsbox
 * accepts: it is what every registry and skopeo produce, and refusing the
 * rest keeps digests usable as file names. */
#ifndef NSBOX_OCI_DIGEST_H
#define NSBOX_OCI_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"

#define OCI_DIGEST_HEX_LEN 64
#define OCI_DIGEST_LEN (7 + OCI_DIGEST_HEX_LEN) /* "sha256:" + hex */
#define OCI_DIGEST_BUF (OCI_DIGEST_LEN + 1)

/* True when s is exactly "sha256:" followed by 64 lowercase hex digits. */
bool oci_digest_valid(const char *s);

/* The hex part of a valid digest (a pointer into s). */
const char *oci_digest_hex(const char *digest);

/* Streaming SHA-256.  oci_sha256_new returns NULL only when out of memory. */
struct oci_sha256;
struct oci_sha256 *oci_sha256_new(void);
void oci_sha256_update(struct oci_sha256 *h, const void *data, size_t len);
/* Writes "sha256:<hex>" into out and frees h. */
void oci_sha256_finish(struct oci_sha256 *h, char out[OCI_DIGEST_BUF]);
void oci_sha256_free(struct oci_sha256 *h);

/* Digest of a memory buffer. */
void oci_digest_buf(const void *data, size_t len, char out[OCI_DIGEST_BUF]);

#endif
