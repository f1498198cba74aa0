/* A layer blob, read once on a thread of its own.
 *
 * The thread reads the blob, hashes every raw byte, and decompresses
 * (gzip, zstd, or nothing: recognized by magic bytes) into a small ring of
 * buffers that the unpacker consumes.  Decompression and hashing thus run
 * on one core while file creation runs on another; nothing is buffered
 * beyond the ring, and no temporary copy of the layer is made. */
#ifndef NSBOX_OCI_BLOBSTREAM_H
#define NSBOX_OCI_BLOBSTREAM_H

#include <stddef.h>
#include <sys/types.h>

#include "../common/err.h"
#include "digest.h"

struct oci_blobstream;

/* Starts reading fd (which must stay open until finish/free).
 * Returns 0 or -1. */
int oci_blobstream_start(int fd, struct oci_blobstream **out, struct nsbox_err *err);

/* The next chunk of decompressed data: returns its length (the chunk stays
 * valid until the next call), 0 at the end, -1 on error. */
ssize_t oci_blobstream_next(struct oci_blobstream *s, const void **data, struct nsbox_err *err);

/* Waits until the whole blob has been read and hashed (decompression stops
 * once the consumer is done) and writes the digest of its raw bytes.
 * Returns 0, or -1 when reading failed. */
int oci_blobstream_finish(struct oci_blobstream *s, char digest[OCI_DIGEST_BUF],
                          struct nsbox_err *err);

/* Stops the thread (if running) and frees everything. */
void oci_blobstream_free(struct oci_blobstream *s);

#endif
