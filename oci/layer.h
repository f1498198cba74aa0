/* Applying one image layer (a possibly compressed tar) onto a rootfs.
 *
 * Layers are hostile archives.  Every entry is created through file
 * descriptors: the parent directory is resolved with openat2 and
 * RESOLVE_IN_ROOT, so symlinks planted by earlier entries or layers resolve
 * inside the rootfs; the last component is never followed; existing inodes
 * are replaced, never written through; ".." components are rejected.
 * Whiteouts (".wh.NAME") and opaque directories (".wh..wh..opq") follow the
 * OCI image spec.  The blob is read once: decompressed, unpacked and hashed
 * in a single pass, and the digest is checked at the end. */
#ifndef NSBOX_OCI_LAYER_H
#define NSBOX_OCI_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

struct oci_layer_opts {
    /* chown entries to the archive's uid/gid (root, or rootless inside a
     * user namespace); false leaves files owned by the unpacking user. */
    bool keep_ownership;
    /* ids >= id_limit cannot be represented (a rootless user namespace
     * without a subordinate range): they become 0.  0 means no limit. */
    uint32_t id_limit;
    /* Bytes of file content the image may still write; decremented.  NULL
     * means unlimited.  Guards against decompression bombs and huge
     * declared sizes. */
    uint64_t *budget;
    /* Receives one line per skipped entry (device nodes, sockets,
     * reserved whiteout names, clamped ids).  May be NULL. */
    void (*note)(void *ctx, const char *msg);
    void *note_ctx;
};

struct oci_layer_stats {
    uint64_t entries;     /* tar entries read */
    uint64_t bytes;       /* file content bytes written */
    uint64_t skipped;     /* entries skipped with a note */
    uint64_t ids_clamped; /* entries whose uid/gid became 0 */
};

/* Applies the layer blob read from blob_fd onto the directory rootfs_fd.
 * gzip, zstd and uncompressed tars are recognized by their magic bytes.
 * expected_digest ("sha256:...") is checked over the raw blob bytes.
 * stats may be NULL.  Returns 0, or -1 with err set; on failure the rootfs
 * is left half-applied and the caller must discard it. */
int oci_layer_apply(int rootfs_fd, int blob_fd, const char *expected_digest,
                    const struct oci_layer_opts *opts, struct oci_layer_stats *stats,
                    struct nsbox_err *err);

/* Cleans an archive entry name into a relative path: leading '/', "." and
 * empty components are dropped (absolute names are confined to the
 * rootfs), ".." is rejected.  out gets "" for the root itself.  Returns 0 or
 * -1.  Exposed for tests. */
int oci_layer_clean_path(const char *name, char *out, size_t size, struct nsbox_err *err);

#endif
