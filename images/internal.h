/* Shared between the files of images/ only. */
#ifndef NSBOX_IMAGES_INTERNAL_H
#define NSBOX_IMAGES_INTERNAL_H

#include <time.h>

#include "store.h"

#define REFS_MAX_BYTES (8u << 20)

struct ref_entry {
    char *name;
    char digest[OCI_DIGEST_BUF];
    time_t pulled;
};

struct ref_table {
    struct ref_entry *v;
    size_t n;
};

int refs_load(struct images_store *store, struct ref_table *t, struct nsbox_err *err);
int refs_save(struct images_store *store, const struct ref_table *t, struct nsbox_err *err);
void refs_free(struct ref_table *t);
/* Points name at digest (replacing an older target).  Returns 0 or -1. */
int refs_set(struct ref_table *t, const char *name, const char *digest, struct nsbox_err *err);
/* Removes name; returns 1 when it was there, else 0. */
int refs_del(struct ref_table *t, const char *name);

/* Runs fn with the store owner's view of file ownership: directly as root,
 * inside the user namespace when rootless. */
int store_run_as_owner(struct images_store *store, int (*fn)(void *arg, struct nsbox_err *err),
                       void *arg, struct nsbox_err *err);

/* Removes STORE/<dir>/<name> as the owner.  Returns 0 or -1. */
int store_remove_tree(struct images_store *store, const char *dir, const char *name,
                      struct nsbox_err *err);

/* Removes everything in STORE/tmp.  Only safe with the store lock held
 * exclusively: then no pull is running and all of it is leftovers.
 * *count (optional) gets the number of entries removed. */
int store_clean_staging(struct images_store *store, size_t *count, struct nsbox_err *err);

/* Loads images/HEX/image.json into out (names left empty).  Returns 0, or
 * -1 (code ENOENT when the image is not in the store). */
int image_load(struct images_store *store, const char *digest, struct images_image *out,
               struct nsbox_err *err);

/* Reads blobs/sha256/HEX, checks its digest, returns it NUL-terminated. */
char *blob_read_verified(struct images_store *store, const char *digest, size_t max, size_t *len,
                         struct nsbox_err *err);

/* An open fd for the blob, or -1. */
int blob_open(struct images_store *store, const char *digest, struct nsbox_err *err);

/* unpack.c: unpacks the image digest (its manifest and config already in
 * the store's blobs) into images/HEX unless present, as a pull does.
 * Returns 0 or -1. */
int ensure_unpacked(struct images_store *store, const char *digest,
                    const struct images_pull_opts *opts, struct nsbox_err *err);

/* pull.c: points name at digest in refs.json (under refs.lock).  Returns 0
 * or -1. */
int update_ref(struct images_store *store, const char *name, const char *digest,
               struct nsbox_err *err);

/* unpack.c: unpacks the image whose blobs are in the store, unless
 * present.  The caller holds locks/HEX.  origin (may be NULL) is recorded in image.json.
 * Returns 0 or -1. */
int store_unpack_locked(struct images_store *store, const char *digest, const char *origin,
                        const struct images_pull_opts *opts, struct nsbox_err *err);

/* unpack.c: unpacks digest, whose layers must be those of base (unpacked in
 * this store) plus one, as a hard-link copy of base's rootfs with the last
 * layer applied on top (hostile-checked like any).  Returns 0, or -1
 * with nothing left behind: the caller then unpacks in full. */
int store_unpack_on_base(struct images_store *store, const char *digest, const char *base,
                         struct nsbox_err *err);

/* linktree.c: fills the empty directory dst_fd with a copy of src_fd's
 * tree: directories made anew (owner, mode, times, xattrs but
 * security.selinux), every other inode hard-linked.  Run as the store
 * owner.  Returns 0 or -1 (dst_fd then partly filled). */
int store_link_tree(int src_fd, int dst_fd, struct nsbox_err *err);

/* unpack.c: whether images/HEX is complete. */
bool store_image_present(struct images_store *store, const char *digest);

/* unpack.c: the store lock a pull (or an import) holds shared.  Returns
 * the fd or -1. */
int store_lock_for_pull(struct images_store *store, struct nsbox_err *err);

/* As root with sharing on: the store root and blobs/ 0711, refs.json and
 * the blobs of images with a public name (refs) 0644, every other blob
 * 0600 (images/, sandboxes, locks, refs-private.json stay 0700/0600);
 * with it off, the root 0700 again.  refs_save calls it after every
 * write.  Failures are logged, not returned. */
void store_apply_sharing(struct images_store *store, const struct ref_table *refs);

/* Sets the default shared stores: root's, for another user. */
int store_default_shared(struct images_store *store, struct nsbox_err *err);
void store_free_shared(struct images_store *store);

#endif
