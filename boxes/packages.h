/* Packages: install into a box with only the manager's registry reachable,
 * then seal; and the install cache (docs/network.md, "Packages").
 *
 * Contract: box_install runs the package manager (pip, npm or apt) in the
 * box with the policy holding only that manager's registry rule (the
 * operator's mirror, or the public preset) for that one command, and seals
 * the box again before returning, whatever happened.  When the box is
 * pristine (no command or write of anyone else's has run in it since it
 * was created), the result is saved as an image in the store named
 * localhost/nsbox-cache/packages:KEY, KEY the sha256 of the base image's
 * digest, the manager, the exact package specification (sorted) and the
 * registry; a box created with box_spec.packages whose KEY is cached
 * starts from that image with no network at all.  Builds of one KEY are
 * serialized by a lock in the store, so concurrent sessions share them. */
#ifndef NSBOX_BOXES_PACKAGES_H
#define NSBOX_BOXES_PACKAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"
#include "../images/store.h"
#include "../runtime/egress/rules.h"

struct box;
struct box_ctx;
struct json_t;

enum box_pkg_manager { BOX_PKG_PIP, BOX_PKG_NPM, BOX_PKG_APT };

/* Where each manager installs from: a URL set by the operator, or NULL
 * for the public registry (presets pypi, npm, debian). */
struct box_pkg_registries {
    const char *pip_index;    /* --pip-index: a PEP 503 simple index URL */
    const char *npm_registry; /* --npm-registry */
    const char *apt_mirror;   /* --apt-mirror: a Debian archive URL */
    /* --apt-key: the mirror's signing key (armored or binary OpenPGP),
     * apt_key_len bytes; NULL: the image's trusted keys check it. */
    const char *apt_key;
    size_t apt_key_len;
};

struct box_pkg_request {
    enum box_pkg_manager manager;
    char *const *packages; /* specifications as the manager takes them */
    size_t n_packages;
    const char *requirements_file; /* or a file in the box (requirements.txt,
                                      package.json), relative to workdir */
    double timeout_s;
    /* The most cache images the store may hold: an install past it is
     * not saved (0: none is). */
    size_t cache_max;
};

/* "pip", "npm" or "apt" into *out.  Returns 0, or -1 for another name. */
int box_pkg_manager_parse(const char *name, enum box_pkg_manager *out);

/* The manager's name ("pip", "npm", "apt"). */
const char *box_pkg_manager_name(enum box_pkg_manager m);

/* The registry URL the manager installs from: the operator's, or NULL
 * for the public one. */
const char *box_pkg_registry(enum box_pkg_manager m, const struct box_pkg_registries *reg);

/* The policy an install of m may use, into *p (emptied first): for an
 * operator's URL whose host is an IP literal, the ADDR rule IP:PORT; for a
 * name, NAME:PORT with allow_private (the operator named it, a mirror on
 * the LAN is expected); without one, the preset (pypi, npm, debian).
 * Returns 0, or -1 with err (a URL that is not http(s)://HOST[:PORT]/...). */
int box_pkg_policy(enum box_pkg_manager m, const struct box_pkg_registries *reg,
                   struct egress_policy *p, struct nsbox_err *err);

#define BOX_PKG_KEY_LEN 64 /* hex digits of a sha256 */
#define BOX_PKG_CACHE_REPO "localhost/nsbox-cache/packages"

/* The cache key: sha256 over the base image's digest, the working
 * directory (npm installs into it), the manager, the registry URL (""
 * for the public one) and the specification: the packages sorted, or the
 * requirements file's bytes (file, file_len).  key gets 64 hex digits. */
void box_pkg_key(const char *base_digest, const char *workdir, enum box_pkg_manager m,
                 const char *registry, char *const *packages, size_t n_packages, const void *file,
                 size_t file_len, char key[BOX_PKG_KEY_LEN + 1]);

/* BOX_PKG_CACHE_REPO ":" key into buf. */
void box_pkg_cache_ref(const char *key, char *buf, size_t size);

/* Takes the lock of key (STORE/cache/packages/KEY.lock, flock), waiting
 * at most timeout_s (0: for ever).  Returns the fd holding it, or -1 with
 * err (ETIMEDOUT: another session is still building it). */
int box_pkg_lock(struct box_ctx *ctx, const char *key, double timeout_s, struct nsbox_err *err);

/* Whether the store has the cache image of key (its name into ref).
 * Returns 1, 0, or -1 with err. */
int box_pkg_cached(struct box_ctx *ctx, const char *key, char *ref, size_t size,
                   struct nsbox_err *err);

/* The result of one install. */
struct box_pkg_result {
    const char *status;     /* box_result_status of the manager's run */
    int exit_code;          /* box_result_exit_code */
    char *output;           /* the last BOX_PKG_OUTPUT_TAIL bytes of its output, owned */
    struct json_t *network; /* what the box tried meanwhile (box_net_take_audit), owned */
    bool cached;            /* the installed set is in the cache (saved now or before) */
    const char *not_cached; /* why not (static text), or NULL */
    char key[BOX_PKG_KEY_LEN + 1];
    char image[128];                /* cached: the cache image's name */
    uint64_t install_ms, commit_ms; /* the manager's run; saving the layer (0: none) */
};

#define BOX_PKG_OUTPUT_TAIL 4096

void box_pkg_result_free(struct box_pkg_result *r);

/* Installs req into box from the manager's registry (reg) with only that
 * registry reachable, and seals the box again whatever happens.  The
 * manager runs as the box's user with the image's own environment (not
 * the box's: a variable set for the sandbox must not change what a cached
 * install holds) in the box's working directory; cancel (may be NULL)
 * stops it.  When box->touched is false, the box has no workspace and the
 * manager succeeded, the upper layer is saved as the cache image of the
 * key under its lock (lock_fd: the caller holds it already, else -1).
 * Returns 0 with *out filled (a failed install is a result, status
 * "error"), or -1 with err when nsbox failed (the box sealed all the
 * same, or -1 when even that failed: then say so). */
struct nsbox_cancel;
int box_install(struct box *box, const struct box_pkg_registries *reg,
                const struct box_pkg_request *req, int lock_fd, const struct nsbox_cancel *cancel,
                struct box_pkg_result *out, struct nsbox_err *err);

/* One cache image, as `nsbox images` shows it: its key and what
 * STORE/cache/packages/KEY.json says of it. */
struct box_pkg_cache_entry {
    char key[BOX_PKG_KEY_LEN + 1];
    char manager[8];
    char packages[256]; /* the specification, space-separated (cut) */
    char base[128];     /* the base image's name */
    char base_digest[80];
};

/* The cache images the store has, *out malloc'ed (*n).  Returns 0 or -1. */
int box_pkg_cache_list(struct images_store *store, struct box_pkg_cache_entry **out, size_t *n,
                       struct nsbox_err *err);

/* Removes the references of every cache image no sandbox uses, and their
 * notes; images_prune then removes the images.  *removed counts them.
 * Returns 0 or -1. */
int box_pkg_cache_clear(struct images_store *store, size_t *removed, struct nsbox_err *err);

#endif
