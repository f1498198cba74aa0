/* Additional read-only image stores (podman's additionalimagestores) and
 * importing from them.
 *
 * Contract: a shared store is only ever read: no lock is taken in it (a lock
 * file could not be created there, and a reader holding root's lock could
 * stall root's prune), nothing is written.  Its images/ (unpacked trees,
 * 0700 in root's store) is never reached: only refs.json and blobs/, which
 * root makes readable (store_apply_sharing).  An image found only there is
 * imported: its manifest, config and layers are copied into the user's own
 * store, each checked against its digest as it is copied, then unpacked by
 * the ordinary path (unpack.c) with the user's id mapping.  A rootless
 * sandbox could not use root's tree in place: in the user's namespace its
 * files belong to nobody, and every write into them fails with EACCES.
 * The own store stays self-contained: rmi, prune and commit work as after
 * a pull; image.json records where it came from. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "internal.h"
#include "ref.h"

#define COPY_CHUNK (1u << 20)

/* ---- reading a shared store ---- */

/* A read-only view: root and root_fd only (refs_load, blob_open and
 * blob_read_verified need no more).  Close with images_store_close. */
static int shared_open(const char *dir, struct images_store *sh, struct nsbox_err *err)
{
    memset(sh, 0, sizeof(*sh));
    sh->root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sh->root_fd < 0)
        return nsbox_err_sys(err, "image store %s", dir);
    sh->root = strdup(dir);
    if (sh->root == NULL) {
        images_store_close(sh);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    sh->rootless = true;
    sh->view = true; /* its public names only */
    return 0;
}

/* Why a shared store cannot be read, or NULL when it can. */
static const char *shared_problem(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/refs.json", dir);
    if (access(path, R_OK) == 0)
        return NULL;
    if (errno == ENOENT)
        return access(dir, X_OK) == 0 ? "empty" : "absent";
    return "not readable";
}

void images_store_describe(const struct images_store *store, char *buf, size_t size)
{
    size_t len = 0;
    int w = snprintf(buf, size, "your store %s", store->root);
    len = w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < store->n_shared && len < size; i++) {
        const char *why = shared_problem(store->shared[i]);
        w = snprintf(buf + len, size - len, "%s the shared store %s%s%s%s",
                     i + 1 == store->n_shared ? " and" : ",", store->shared[i], why ? " (" : "",
                     why ? why : "", why ? ")" : "");
        len += w > 0 ? (size_t)w : 0;
    }
}

static bool hex_prefix(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return s[n] == '\0' && n >= 12 && n <= OCI_DIGEST_HEX_LEN;
}

/* The manifest digest name designates in a shared store's references: a
 * reference, or a unique digest prefix of a referenced image.  Returns 0,
 * or -1 (ENOENT when absent). */
static int shared_resolve(const struct ref_table *refs, const char *name,
                          char digest[OCI_DIGEST_BUF], struct nsbox_err *err)
{
    const char *hex = strncmp(name, "sha256:", 7) == 0 ? name + 7 : name;
    if (hex_prefix(hex)) {
        for (size_t i = 0; i < refs->n; i++) {
            if (strncmp(oci_digest_hex(refs->v[i].digest), hex, strlen(hex)) == 0) {
                strcpy(digest, refs->v[i].digest);
                return 0;
            }
        }
    }
    struct image_ref ref;
    if (image_ref_parse(name, NULL, &ref, err) < 0)
        return -1;
    int r = nsbox_err_set(err, ENOENT, "not there");
    for (size_t i = 0; i < refs->n; i++) {
        if (strcmp(refs->v[i].name, ref.name) == 0) {
            strcpy(digest, refs->v[i].digest);
            nsbox_err_clear(err);
            r = 0;
            break;
        }
    }
    image_ref_free(&ref);
    return r;
}

/* ---- copying blobs ---- */

static int copy_verified(int in, int out, const char *digest, struct nsbox_err *err)
{
    char actual[OCI_DIGEST_BUF];
    _cleanup_free_ char *buf = malloc(COPY_CHUNK);
    struct oci_sha256 *h = oci_sha256_new();
    ssize_t n;

    if (buf == NULL || h == NULL) {
        oci_sha256_free(h);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    while ((n = read(in, buf, COPY_CHUNK)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || nsbox_write_all(out, buf, (size_t)n) < 0) {
            oci_sha256_free(h);
            return nsbox_err_sys(err, "copying blob %s", digest);
        }
        oci_sha256_update(h, buf, (size_t)n);
    }
    oci_sha256_finish(h, actual);
    if (strcmp(actual, digest) != 0)
        return nsbox_err_set(err, EBADMSG,
                             "blob %s in the shared store is corrupt: it hashes to %s", digest,
                             actual);
    return 0;
}

/* blobs/sha256/HEX from sh into store, unless there; staged in tmp/ and
 * renamed into place only once its digest matched. */
static int copy_blob(struct images_store *sh, struct images_store *store, const char *digest,
                     struct nsbox_err *err)
{
    char dst[128], tmp[160];
    struct stat st;

    snprintf(dst, sizeof(dst), "blobs/sha256/%s", oci_digest_hex(digest));
    if (fstatat(store->root_fd, dst, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    _cleanup_close_ int in = blob_open(sh, digest, err);
    if (in < 0)
        return -1; /* the caller names the store */
    /* Per thread: the server may import two images sharing a layer at once. */
    snprintf(tmp, sizeof(tmp), "tmp/import-%.12s-%d", oci_digest_hex(digest), (int)gettid());
    _cleanup_close_ int out = openat(store->root_fd, tmp,
                                     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0)
        return nsbox_err_sys(err, "cannot create %s/%s", store->root, tmp);
    if (copy_verified(in, out, digest, err) < 0 ||
        renameat(store->root_fd, tmp, store->root_fd, dst) < 0) {
        int saved = errno;
        unlinkat(store->root_fd, tmp, 0);
        errno = saved;
        return err->code ? -1 : nsbox_err_sys(err, "cannot move blob %s into place", digest);
    }
    return 0;
}

/* The manifest, its config and its layers. */
static int copy_image_blobs(struct images_store *sh, struct images_store *store, const char *digest,
                            struct nsbox_err *err)
{
    struct oci_manifest m;
    size_t len;

    _cleanup_free_ char *text = blob_read_verified(sh, digest, OCI_MANIFEST_MAX, &len, err);
    if (text == NULL || oci_manifest_parse(text, len, &m, err) < 0)
        return -1;
    int r = copy_blob(sh, store, m.config.digest, err);
    for (size_t i = 0; r == 0 && i < m.n_layers; i++)
        r = copy_blob(sh, store, m.layers[i].digest, err);
    if (r == 0)
        r = copy_blob(sh, store, digest, err);
    oci_manifest_free(&m);
    return r;
}

/* Every name sh gives digest that store lacks now points at it. */
static int import_names(struct images_store *store, const struct ref_table *shared_refs,
                        const char *digest, struct nsbox_err *err)
{
    struct ref_table refs;
    _cleanup_close_ int lfd = nsbox_lock_at(store->root_fd, "refs.lock", LOCK_EX, err);
    if (lfd < 0 || refs_load(store, &refs, err) < 0)
        return -1;
    int r = 0;
    for (size_t i = 0; r == 0 && i < shared_refs->n; i++) {
        const struct ref_entry *e = &shared_refs->v[i];
        bool have = false;
        for (size_t k = 0; k < refs.n && !have; k++)
            have = strcmp(refs.v[k].name, e->name) == 0;
        if (!have && strcmp(e->digest, digest) == 0)
            r = refs_set(&refs, e->name, digest, err);
    }
    if (r == 0)
        r = refs_save(store, &refs, err);
    refs_free(&refs);
    return r;
}

static int import_from(struct images_store *store, struct images_store *sh,
                       const struct ref_table *shared_refs, const char *digest,
                       struct nsbox_err *err)
{
    char lock[96];
    struct images_pull_opts opts = {.progress_fd = -1};
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    _cleanup_close_ int slock = store_lock_for_pull(store, err);
    if (slock < 0)
        return -1;
    /* The lock unpack.c takes: a concurrent import (the server's
     * early one and a first call) waits here, then finds it done. */
    snprintf(lock, sizeof(lock), "locks/%s", oci_digest_hex(digest));
    _cleanup_close_ int lfd = nsbox_lock_at(store->root_fd, lock, LOCK_EX, err);
    if (lfd < 0)
        return -1;
    if (!store_image_present(store, digest)) {
        nsbox_info("importing %s from the shared store %s", digest, sh->root);
        if (copy_image_blobs(sh, store, digest, err) < 0 ||
            store_unpack_locked(store, digest, sh->root, &opts, err) < 0)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        nsbox_info("imported %s from %s in %.1f s", digest, sh->root,
                   (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    return import_names(store, shared_refs, digest, err);
}

int images_import(struct images_store *store, const char *name, struct nsbox_err *err)
{
    char digest[OCI_DIGEST_BUF], where[1024];

    for (size_t i = 0; i < store->n_shared; i++) {
        struct images_store sh;
        struct ref_table refs;
        struct nsbox_err ignored;
        if (shared_open(store->shared[i], &sh, &ignored) < 0)
            continue;
        if (refs_load(&sh, &refs, &ignored) < 0) {
            images_store_close(&sh);
            continue;
        }
        int r = shared_resolve(&refs, name, digest, err);
        if (r == 0 && (r = import_from(store, &sh, &refs, digest, err)) < 0)
            nsbox_err_prefix(err, "importing %s from %s", name, sh.root);
        refs_free(&refs);
        images_store_close(&sh);
        if (r == 0)
            return 0;
        if (err->code != ENOENT)
            return -1;
        nsbox_err_clear(err);
    }
    images_store_describe(store, where, sizeof(where));
    return nsbox_err_set(err, ENOENT, "no image %s in %s (pull it first)", name, where);
}

bool images_shared_has(struct images_store *store, const char *name)
{
    char digest[OCI_DIGEST_BUF];
    bool found = false;
    for (size_t i = 0; i < store->n_shared && !found; i++) {
        struct images_store sh;
        struct ref_table refs;
        struct nsbox_err ignored;
        if (shared_open(store->shared[i], &sh, &ignored) < 0)
            continue;
        if (refs_load(&sh, &refs, &ignored) == 0) {
            found = shared_resolve(&refs, name, digest, &ignored) == 0;
            refs_free(&refs);
        }
        images_store_close(&sh);
    }
    return found;
}

/* ---- listing ---- */

struct shared_list {
    struct images_image *v;
    size_t n, cap;
};

static struct images_image *shared_list_add(struct shared_list *l, struct nsbox_err *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct images_image *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL) {
            nsbox_err_set(err, ENOMEM, "out of memory");
            return NULL;
        }
        l->v = v;
        l->cap = cap;
    }
    memset(&l->v[l->n], 0, sizeof(l->v[0]));
    return &l->v[l->n++];
}

/* One image of sh: its manifest and config (verified), its names. */
static int shared_image(struct images_store *sh, const struct ref_table *refs, const char *digest,
                        struct images_image *im, struct nsbox_err *err)
{
    struct oci_manifest m;
    size_t len, n = 0;

    strcpy(im->digest, digest);
    im->origin = strdup(sh->root);
    im->names = calloc(refs->n + 1, sizeof(char *));
    if (im->origin == NULL || im->names == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < refs->n; i++)
        if (strcmp(refs->v[i].digest, digest) == 0 &&
            (im->names[n] = strdup(refs->v[i].name)) != NULL)
            n++;
    _cleanup_free_ char *text = blob_read_verified(sh, digest, OCI_MANIFEST_MAX, &len, err);
    if (text == NULL || oci_manifest_parse(text, len, &m, err) < 0)
        return -1;
    strcpy(im->config_digest, m.config.digest);
    for (size_t i = 0; i < m.n_layers; i++)
        im->size += m.layers[i].size;
    oci_manifest_free(&m);
    _cleanup_free_ char *config = blob_read_verified(sh, im->config_digest, OCI_CONFIG_MAX, &len,
                                                     err);
    if (config == NULL || oci_config_parse(config, len, &im->config, err) < 0)
        return -1;
    return 0;
}

static int list_store(struct images_store *store, const char *dir, struct shared_list *l,
                      struct nsbox_err *err)
{
    struct images_store sh;
    struct ref_table refs;
    struct nsbox_err ignored;

    if (shared_open(dir, &sh, &ignored) < 0)
        return 0;
    if (refs_load(&sh, &refs, &ignored) < 0) {
        images_store_close(&sh);
        return 0;
    }
    int r = 0;
    for (size_t i = 0; r == 0 && i < refs.n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(refs.v[k].digest, refs.v[i].digest) == 0;
        /* Already imported: `nsbox images` lists it as the user's. */
        if (seen || store_image_present(store, refs.v[i].digest))
            continue;
        struct images_image *im = shared_list_add(l, err);
        if (im == NULL) {
            r = -1;
        } else if (shared_image(&sh, &refs, refs.v[i].digest, im, &ignored) < 0) {
            /* Removed under us or damaged: not listed. */
            images_image_free(im);
            l->n--;
        }
    }
    refs_free(&refs);
    images_store_close(&sh);
    return r;
}

int images_list_shared(struct images_store *store, struct images_image **out, size_t *n,
                       struct nsbox_err *err)
{
    struct shared_list l = {0};

    for (size_t i = 0; i < store->n_shared; i++) {
        if (list_store(store, store->shared[i], &l, err) < 0) {
            for (size_t k = 0; k < l.n; k++)
                images_image_free(&l.v[k]);
            free(l.v);
            return -1;
        }
    }
    *out = l.v;
    *n = l.n;
    return 0;
}
