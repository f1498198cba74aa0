/* The local image store.
 *
 *   STORE/lock                 pulls hold it shared, rmi/prune exclusive
 *   STORE/refs.json            reference -> manifest digest (atomic rename)
 *   STORE/refs-private.json    the same for the store's private names (0600)
 *   STORE/blobs/sha256/HEX     content-addressed blobs (skopeo writes here)
 *   STORE/images/HEX/          one per manifest digest, complete or absent:
 *       rootfs/                the unpacked image, shared read-only
 *       image.json             digests, size, notes
 *       lease                  sandboxes hold a shared flock while running
 *   STORE/locks/HEX            serializes unpacking of one image
 *   STORE/tmp/                 staging; whatever is left here is garbage
 *   STORE/nested/RANDOM/       an OCI layout of images handed to a nested
 *                              sandbox (export.c), removed with it
 *
 * See docs/store.md for the rules behind it. */
#ifndef NSBOX_IMAGES_STORE_H
#define NSBOX_IMAGES_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../common/err.h"
#include "../common/userns.h"
#include "../oci/digest.h"
#include "../oci/image.h"

#define IMAGES_MAX_SHARED 8

/* Names private to their store: package caches (boxes/packages.h) and
 * sandbox commits (mcp/tools/commit.c) hold what one session installed or
 * wrote.  They live in refs-private.json (always 0600), their blobs stay
 * 0600 unless a public image uses them too, a shared store's are never
 * listed or imported, and none is ever a language's image: they are used
 * only where they are named.  Everything else is public. */
#define IMAGES_PRIVATE_CACHE_REPO "localhost/nsbox-cache/"
#define IMAGES_PRIVATE_COMMIT_REPO "localhost/nsbox-commit/"
/* A fork's or a restored checkpoint's filesystem (boxes/fork.h), named
 * only while its sandboxes are made from it. */
#define IMAGES_PRIVATE_FORK_REPO "localhost/nsbox-fork/"

/* Whether name (a reference) is private to its store (above). */
bool images_name_private(const char *name);

struct images_store {
    char *root;               /* absolute path */
    int root_fd;              /* O_PATH directory fd */
    bool rootless;            /* not running as host root */
    struct nsbox_idmap idmap; /* rootless only: ids files are unpacked with */
    /* Root only: refs.json and blobs readable by other users, so that their
     * nsbox can import root's images (images/shared.c). */
    bool share;
    /* A read-only view of another user's store (shared.c): its private
     * references (refs-private.json) are not read. */
    bool view;
    /* Read-only stores consulted after this one (absolute paths, owned). */
    char *shared[IMAGES_MAX_SHARED];
    size_t n_shared;
};

/* What the operator configured about stores (config file, --image-store). */
struct images_store_config {
    const char *image_stores[IMAGES_MAX_SHARED];
    size_t n_image_stores;
    bool image_stores_set; /* false: the default (root's store, for other users) */
    bool share_set, share; /* share_set false: the default (share root's
                            * default store /var/lib/nsbox, no other) */
};

/* Opens (creating it 0700 if needed) the store at dir, or at $NSBOX_STORE,
 * or at the default: /var/lib/nsbox as root, $XDG_DATA_HOME/nsbox (or
 * ~/.local/share/nsbox) otherwise.  Returns 0 or -1. */
int images_store_open(struct images_store *store, const char *dir, struct nsbox_err *err);
void images_store_close(struct images_store *store);

/* Replaces the shared stores and the sharing choice with cfg's.  Returns 0
 * or -1 (a relative directory, too many). */
int images_store_configure(struct images_store *store, const struct images_store_config *cfg,
                           struct nsbox_err *err);

/* The stores an image is looked for in, for messages: "your store DIR and
 * the shared store DIR2 (not readable)".  Always terminated. */
void images_store_describe(const struct images_store *store, char *buf, size_t size);

/* The default store directory for this user (malloc'ed), or NULL. */
char *images_store_default_dir(struct nsbox_err *err);

/* How far the unpacking is: bytes of the layers' blobs read so far. */
struct images_pull_progress {
    size_t layer, n_layers;           /* layer counts from 1 */
    uint64_t layer_done, layer_total; /* this layer's blob */
    uint64_t done, total;             /* all layers' blobs */
    bool layer_finished;              /* the last report of this layer */
};

struct images_pull_opts {
    bool tls_verify;          /* false: plain HTTP / unverified TLS */
    const char *authfile;     /* NULL: skopeo's default lookup */
    const char *skopeo;       /* NULL: "skopeo" from PATH */
    int progress_fd;          /* -1: quiet; else skopeo's and our progress */
    uint64_t max_image_bytes; /* 0: the default (32 GiB) */
    /* With progress_fd >= 0: called about ten times a second while a layer
     * unpacks (instead of a line per layer on progress_fd), from a helper
     * thread of the unpacking process (a child when rootless): it may only
     * write to file descriptors. */
    void (*progress)(void *ctx, const struct images_pull_progress *p);
    void *progress_ctx;
};

/* One image in the store, as `nsbox images` shows it. */
struct images_image {
    char digest[OCI_DIGEST_BUF]; /* manifest digest: the image id */
    char config_digest[OCI_DIGEST_BUF];
    char **names;     /* references pointing here */
    uint64_t size;    /* bytes of unpacked file content */
    uint64_t skipped; /* entries skipped while unpacking */
    char **notes;     /* why (the first 50), or NULL */
    time_t created;   /* when it was unpacked */
    char *rootfs;     /* absolute path of the rootfs; NULL in a shared listing */
    char *origin;     /* the shared store it was imported from (or, listed by
                       * images_list_shared, is in), else NULL */
    struct oci_image_config config;
};

void images_image_free(struct images_image *image);

/* The comma-separated languages of an image (label sandbox.language), or
 * NULL. */
const char *images_image_languages(const struct images_image *image);

/* Whether image has names and every one is private (images_name_private). */
bool images_image_private(const struct images_image *image);

/* Pulls ref (see images/ref.h) with skopeo into the store, unpacks it once,
 * and points the reference at it.  out (optional) receives the image.
 * Returns 0 or -1. */
int images_pull(struct images_store *store, const char *ref, const struct images_pull_opts *opts,
                struct images_image *out, struct nsbox_err *err);

/* Looks up a reference, a full digest, or a unique hex prefix of at least
 * 12 digits; one only a shared store has is imported first (images_import).
 * Returns 0, or -1 (err->code ENOENT when not found). */
int images_lookup(struct images_store *store, const char *name, struct images_image *out,
                  struct nsbox_err *err);

/* What one caller may see of the store (mcp: a tenant, its own commits):
 * a name name_visible refuses is not there, and neither is an image all of
 * whose names it refuses (an image without names stays). */
struct images_view {
    bool (*name_visible)(const char *name, void *ctx);
    void *ctx;
};

/* As images_lookup, with what view hides absent: its error is exactly the
 * one for an image that does not exist.  view NULL: images_lookup. */
int images_lookup_in_view(struct images_store *store, const char *name,
                          const struct images_view *view, struct images_image *out,
                          struct nsbox_err *err);

/* As images_lookup_in_view, in this store only: never imports. */
int images_find_in_view(struct images_store *store, const char *name,
                        const struct images_view *view, struct images_image *out,
                        struct nsbox_err *err);

/* As images_lookup, in this store only: never imports. */
int images_find(struct images_store *store, const char *name, struct images_image *out,
                struct nsbox_err *err);

/* All complete images, sorted by name.  *out is an array of *n images;
 * free each with images_image_free and the array with free(). */
int images_list(struct images_store *store, struct images_image **out, size_t *n,
                struct nsbox_err *err);

/* The references whose name starts with prefix (e.g. a repository and
 * its ":"), from the reference table alone (no image is read): *out is a
 * NULL-terminated array of *n malloc'ed names, sorted; free with
 * images_names_free.  Returns 0 or -1. */
int images_names_under(struct images_store *store, const char *prefix, char ***out, size_t *n,
                       struct nsbox_err *err);
void images_names_free(char **names);

/* The images of the shared stores this user can read that this store does
 * not have yet, one per manifest digest and store, with origin set and size the layers' compressed bytes;
 * unreadable stores are skipped.  Free as images_list's.  Returns 0 or -1. */
int images_list_shared(struct images_store *store, struct images_image **out, size_t *n,
                       struct nsbox_err *err);

/* Copies the image name designates from the first shared store that has it
 * into this store (blobs verified against their digests, no network), then
 * unpacks it with this user's id mapping and points every name the shared
 * store gives it (that this store lacks) at it.  Returns 0, or -1 (code
 * ENOENT when no shared store has it). */
int images_import(struct images_store *store, const char *name, struct nsbox_err *err);

/* Whether a shared store this user can read has a public image by name
 * (a reference or digest), without importing it. */
bool images_shared_has(struct images_store *store, const char *name);

/* Points the reference new_name (normalized like any reference) at the
 * image that name (reference or digest prefix) designates.  Returns 0 or
 * -1. */
int images_tag(struct images_store *store, const char *name, const char *new_name,
               struct nsbox_err *err);

/* Removes a reference (or, given a digest, every reference to it); the
 * image itself goes when nothing else points at it and no sandbox holds its
 * lease.  *removed tells whether the image went (may be NULL). */
int images_remove(struct images_store *store, const char *name, bool *removed,
                  struct nsbox_err *err);

struct images_prune_stats {
    size_t images;  /* images removed */
    size_t blobs;   /* blobs removed */
    size_t staging; /* leftovers of interrupted pulls removed */
    size_t in_use;  /* unreferenced images kept because a sandbox uses them */
};

/* Removes images no reference points at and no sandbox holds, blobs no
 * image needs, and staging leftovers.  Returns 0 or -1. */
int images_prune(struct images_store *store, struct images_prune_stats *stats,
                 struct nsbox_err *err);

/* Takes a lease on an image for a sandbox's lifetime: prune and rmi leave
 * the image alone while the returned fd is open.  Returns the fd or -1. */
int images_lease(struct images_store *store, const char *digest, struct nsbox_err *err);

/* Writes the images names designate (docker references, looked up as
 * images_lookup does) as one OCI image layout in a new directory
 * STORE/nested/RANDOM (export.c: blobs hard-linked or copied, index.json
 * naming each manifest by the name's canonical form).  *dir is its
 * malloc'ed absolute path.  Returns 0, or -1 with nothing left behind
 * (ENOENT: a name the store lacks, said by name). */
int images_export_layout(struct images_store *store, const char *const *names, size_t n, char **dir,
                         struct nsbox_err *err);

/* Removes a directory images_export_layout made (anything else is
 * refused: EINVAL), and its owner file.  Returns 0 or -1. */
int images_export_remove(struct images_store *store, const char *dir, struct nsbox_err *err);

/* Records owner (the sandbox's state directory) for the layout dir, in
 * STORE/nested/RANDOM.owner, outside the layout the sandbox sees.
 * Returns 0 or -1. */
int images_export_set_owner(struct images_store *store, const char *dir, const char *owner,
                            struct nsbox_err *err);

/* Removes every layout whose owner alive() says is gone, and every layout
 * without an owner last changed more than grace_s ago (its sandbox never
 * came to be).  Returns how many, or -1. */
int images_export_sweep(struct images_store *store, bool (*alive)(const char *owner, void *arg),
                        void *arg, int grace_s, struct nsbox_err *err);

#endif
