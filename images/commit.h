/* `nsbox commit`: a sandbox's writable layer saved as a new image.
 *
 * Contract: images_commit turns an overlay upper directory (the sandbox's,
 * hostile; walked as images_layer_from_upper says, inside a user namespace
 * with the sandbox's id map so that owners come out as the sandbox sees
 * them) into one gzip'd OCI layer blob, writes a config (the base's with
 * the layer's diff_id and a history entry appended) and a manifest (the
 * base's layers plus the new one) into the store's blobs, unpacks the new
 * image the way a pull does (every layer through oci/layer.c), and points
 * the reference at it.  Nothing of the sandbox is needed afterwards.
 * Format, ids and what is dropped: docs/store.md, "Commit". */
#ifndef NSBOX_IMAGES_COMMIT_H
#define NSBOX_IMAGES_COMMIT_H

#include <stdint.h>

#include "../common/err.h"
#include "../common/userns.h"
#include "../oci/digest.h"
#include "store.h"

struct images_layer_out {
    char digest[OCI_DIGEST_BUF];  /* of the gzip blob */
    char diff_id[OCI_DIGEST_BUF]; /* of the uncompressed tar */
    uint64_t size;                /* bytes of the blob */
    uint64_t entries;             /* tar entries written */
    uint64_t bytes;               /* file content in them */
    uint64_t skipped;             /* sockets, devices, entries swapped mid-walk */
};

/* Writes the overlay upper directory upper_fd (borrowed) as a gzip'd pax
 * tar to out_fd: changed files with their modes, owners (as this process
 * sees them), mtimes and security.capability; symlinks as symlinks;
 * hardlinks as hardlinks; whiteouts (char 0:0) as ".wh.NAME"; opaque
 * directories with ".wh..wh..opq".  Returns 0 with *out filled, or -1. */
int images_layer_from_upper(int upper_fd, int out_fd, struct images_layer_out *out,
                            struct nsbox_err *err);

struct images_commit_opts {
    const char *base;    /* manifest digest of the sandbox's image */
    const char *name;    /* reference to point at the new image */
    const char *message; /* the history entry's comment, or NULL */
    int upper_fd;        /* the sandbox's upper directory, borrowed */
    /* Instead of upper_fd (-1): a layer blob written before by
     * images_layer_write (a checkpoint's, boxes/fork.h), borrowed, read
     * from its start, with the diff_id recorded with it.  Its digest is
     * computed while it is copied into the store. */
    int layer_fd;
    const char *layer_diff_id;
    const char *layer_digest;      /* with layer_fd: what it must hash to */
    const struct nsbox_idmap *map; /* its id map (nsbox_sandbox_upper_open) */
    /* Called (when not NULL) as soon as the layer is written, before the
     * image is unpacked: a frozen sandbox may be thawed there. */
    void (*layer_written)(void *ctx);
    void *ctx;
};

/* images_layer_from_upper run in a user namespace with map (as a commit
 * writes its layer): out_fd receives the blob, fsync'ed.  Returns 0 or
 * -1. */
int images_layer_write(int upper_fd, const struct nsbox_idmap *map, int out_fd,
                       struct images_layer_out *out, struct nsbox_err *err);

/* Commits o->upper_fd over o->base as o->name (a Docker-style name,
 * normalized as `nsbox tag` does).  digest (may be NULL) receives the new
 * image id.  Returns 0, or -1 with nothing but unreferenced blobs left. */
int images_commit(struct images_store *store, const struct images_commit_opts *o,
                  char digest[OCI_DIGEST_BUF], struct nsbox_err *err);

#endif
