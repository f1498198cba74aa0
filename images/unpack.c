/* Unpacking an image whose blobs are in the store (internal.h): its
 * manifest and config read back and checked, its layers applied (hashing
 * each blob as it streams) into a staging directory under STORE/tmp as
 * the store owner, with progress, and renamed into images/HEX only when
 * complete; or, for an image one layer above a base in this store, a
 * hard-link copy of the base's rootfs with that layer on top.  A pull
 * (pull.c), an import from a shared store (shared.c) and a commit
 * (commit.c) all end here; the store lock they hold shared is
 * store_lock_for_pull's. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../oci/layer.h"
#include "internal.h"

#define DEFAULT_MAX_IMAGE_BYTES (32ull << 30)
#define NOTES_KEPT 50

static int load_manifest(struct images_store *store, const char *digest, struct oci_manifest *m,
                         struct oci_image_config *config, struct nsbox_err *err)
{
    size_t len;
    enum oci_compression c;

    _cleanup_free_ char *text = blob_read_verified(store, digest, OCI_MANIFEST_MAX, &len, err);
    if (text == NULL || oci_manifest_parse(text, len, m, err) < 0)
        return -1;
    _cleanup_free_ char *ctext = blob_read_verified(store, m->config.digest, OCI_CONFIG_MAX, &len,
                                                    err);
    if (ctext == NULL || oci_config_parse(ctext, len, config, err) < 0)
        goto fail;
    for (size_t i = 0; i < m->n_layers; i++)
        if (oci_layer_compression(m->layers[i].media_type, &c, err) < 0)
            goto fail;
    if (config->n_diff_ids != m->n_layers) {
        nsbox_err_set(err, EINVAL, "image config lists %zu layers, manifest %zu",
                      config->n_diff_ids, m->n_layers);
        goto fail;
    }
    return 0;
fail:
    oci_manifest_free(m);
    oci_config_free(config);
    return -1;
}

/* ---- unpacking, as the store owner ---- */

struct unpack_job {
    struct images_store *store;
    const struct oci_manifest *manifest;
    const char *digest;
    const char *origin; /* the shared store it came from, or NULL */
    uint64_t budget;
    int progress_fd;
    const struct images_pull_opts *opts; /* its progress callback */
    json_t *notes;
    size_t n_notes;
    /* Set by store_unpack_on_base: the rootfs starts as a hard-link copy
     * of images/BASE_HEX/rootfs, with the counts of its image.json, and
     * only the layers from first_layer on are applied. */
    const char *base_hex;
    size_t first_layer;
    struct oci_layer_stats base_stats;
};

/* ---- progress: a thread that watches how far the blob fd has been read ---- */

struct progress_watch {
    const struct images_pull_opts *opts;
    struct images_pull_progress p;
    int blob_fd;
    bool stop;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
};

/* The layer is read front to back (oci/blobstream.c), so the fd's offset
 * is how much of it is done. */
static void progress_report(struct progress_watch *w)
{
    off_t off = lseek(w->blob_fd, 0, SEEK_CUR);
    if (off >= 0 && (uint64_t)off <= w->p.layer_total)
        w->p.layer_done = (uint64_t)off;
    struct images_pull_progress p = w->p;
    p.done += p.layer_done;
    w->opts->progress(w->opts->progress_ctx, &p);
}

static void *progress_main(void *arg)
{
    struct progress_watch *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        progress_report(w);
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 100000000;
        if (t.tv_nsec >= 1000000000)
            t.tv_sec++, t.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&w->changed, &w->lock, &t);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Starts watching layer i (p's counts set by the caller); false when there
 * is nothing to report to or no thread (the unpacking goes on without). */
static bool progress_start(struct progress_watch *w, const struct unpack_job *job, int blob_fd)
{
    if (job->opts->progress == NULL || job->progress_fd < 0)
        return false;
    w->opts = job->opts;
    w->blob_fd = blob_fd;
    w->stop = false;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
    return pthread_create(&w->thread, NULL, progress_main, w) == 0;
}

/* Stops the thread; reports the layer finished when it was. */
static void progress_stop(struct progress_watch *w, bool finished)
{
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->changed);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
    if (finished) {
        w->p.layer_finished = true;
        w->p.layer_done = w->p.layer_total;
        struct images_pull_progress p = w->p;
        p.done += p.layer_total;
        w->opts->progress(w->opts->progress_ctx, &p);
    }
}

static void collect_note(void *ctx, const char *msg)
{
    struct unpack_job *job = ctx;
    if (job->n_notes++ < NOTES_KEPT)
        json_array_append_new(job->notes, json_string(msg));
    if (job->progress_fd >= 0)
        dprintf(job->progress_fd, "note: %s\n", msg);
}

static int write_image_json(struct unpack_job *job, int staging_fd,
                            const struct oci_layer_stats *total, struct nsbox_err *err)
{
    _cleanup_json_ json_t *layers = json_array();
    const struct oci_manifest *m = job->manifest;

    for (size_t i = 0; i < m->n_layers; i++)
        json_array_append_new(layers, json_string(m->layers[i].digest));
    _cleanup_json_ json_t *root = json_pack(
        "{s:i,s:s,s:s,s:O,s:I,s:I,s:I,s:I,s:O}", "version", 1, "digest", job->digest,
        "config_digest", m->config.digest, "layers", layers, "size", (json_int_t)total->bytes,
        "skipped", (json_int_t)total->skipped, "ids_clamped", (json_int_t)total->ids_clamped,
        "created", (json_int_t)time(NULL), "notes", job->notes);
    if (root != NULL && job->origin != NULL)
        json_object_set_new(root, "origin", json_string(job->origin));
    _cleanup_free_ char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (nsbox_write_file_atomic(staging_fd, "image.json", text, strlen(text), 0600, err) < 0)
        return -1;
    int fd = openat(staging_fd, "lease", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot create lease file");
    close(fd);
    return 0;
}

static int apply_layers(struct unpack_job *job, int rootfs_fd, struct oci_layer_stats *total,
                        struct nsbox_err *err)
{
    const struct oci_manifest *m = job->manifest;
    uint32_t id_limit = job->store->rootless ? nsbox_idmap_uid_count(&job->store->idmap) : 0;
    struct oci_layer_opts opts = {
        .keep_ownership = true,
        .id_limit = id_limit,
        .budget = &job->budget,
        .note = collect_note,
        .note_ctx = job,
    };

    struct progress_watch w = {.p = {.n_layers = m->n_layers}};
    for (size_t i = job->first_layer; i < m->n_layers; i++)
        w.p.total += m->layers[i].size > 0 ? (uint64_t)m->layers[i].size : 0;
    for (size_t i = job->first_layer; i < m->n_layers; i++) {
        const struct oci_descriptor *l = &m->layers[i];
        if (job->progress_fd >= 0 && job->opts->progress == NULL)
            dprintf(job->progress_fd, "Unpacking layer %zu/%zu %.19s (%.1f MB)\n", i + 1,
                    m->n_layers, l->digest, (double)l->size / 1e6);
        _cleanup_close_ int blob = blob_open(job->store, l->digest, err);
        w.p.layer = i + 1;
        w.p.layer_done = 0;
        w.p.layer_finished = false;
        w.p.layer_total = l->size > 0 ? (uint64_t)l->size : 0;
        bool watching = blob >= 0 && progress_start(&w, job, blob);
        int r = blob < 0 ? -1 : oci_layer_apply(rootfs_fd, blob, l->digest, &opts, total, err);
        if (watching)
            progress_stop(&w, r == 0);
        if (r < 0)
            return nsbox_err_prefix(err, "layer %zu/%zu (%s)", i + 1, m->n_layers, l->digest);
        w.p.done += w.p.layer_total;
    }
    if (total->ids_clamped > 0)
        collect_note(job, "some files belong to ids outside this user's "
                          "namespace and now belong to root in the sandbox "
                          "(grant a range in /etc/subuid and /etc/subgid to keep them)");
    return 0;
}

/* The base's rootfs, linked into the new (empty) one. */
static int link_base(struct unpack_job *job, int rootfs_fd, struct nsbox_err *err)
{
    char path[128];
    snprintf(path, sizeof(path), "images/%s/rootfs", job->base_hex);
    _cleanup_close_ int base = openat(job->store->root_fd, path,
                                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (base < 0)
        return nsbox_err_sys(err, "cannot open the base rootfs");
    return store_link_tree(base, rootfs_fd, err);
}

static int unpack_into(struct unpack_job *job, const char *staging, struct nsbox_err *err)
{
    struct oci_layer_stats total = job->base_stats;
    int root = job->store->root_fd;
    char final[128];

    _cleanup_close_ int sfd = openat(root, staging, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0 || mkdirat(sfd, "rootfs", 0755) < 0)
        return nsbox_err_sys(err, "cannot create %s/rootfs", staging);
    _cleanup_close_ int rootfs = openat(sfd, "rootfs",
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rootfs < 0)
        return nsbox_err_sys(err, "cannot open %s/rootfs", staging);
    if (job->base_hex != NULL && link_base(job, rootfs, err) < 0)
        return -1;
    if (apply_layers(job, rootfs, &total, err) < 0 || write_image_json(job, sfd, &total, err) < 0)
        return -1;
    snprintf(final, sizeof(final), "images/%s", oci_digest_hex(job->digest));
    if (renameat(root, staging, root, final) < 0)
        return nsbox_err_sys(err, "cannot move the unpacked image into place");
    return 0;
}

static int unpack_job_run(void *arg, struct nsbox_err *err)
{
    struct unpack_job *job = arg;
    char staging[96];
    struct nsbox_err ignored;

    snprintf(staging, sizeof(staging), "tmp/unpack-%.12s-%d", oci_digest_hex(job->digest),
             (int)getpid());
    if (mkdirat(job->store->root_fd, staging, 0700) < 0)
        return nsbox_err_sys(err, "cannot create %s", staging);
    if (unpack_into(job, staging, err) == 0)
        return 0;
    /* Leave nothing half-unpacked behind. */
    nsbox_rm_rf_at(job->store->root_fd, staging, &ignored);
    return -1;
}

bool store_image_present(struct images_store *store, const char *digest)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof(path), "images/%s/image.json", oci_digest_hex(digest));
    return fstatat(store->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int store_unpack_locked(struct images_store *store, const char *digest, const char *origin,
                        const struct images_pull_opts *opts, struct nsbox_err *err)
{
    struct oci_manifest manifest;
    struct oci_image_config config;

    if (store_image_present(store, digest))
        return 0;
    if (load_manifest(store, digest, &manifest, &config, err) < 0)
        return -1;
    _cleanup_json_ json_t *notes = json_array();
    struct unpack_job job = {
        .store = store,
        .manifest = &manifest,
        .digest = digest,
        .origin = origin,
        .budget = opts->max_image_bytes ? opts->max_image_bytes : DEFAULT_MAX_IMAGE_BYTES,
        .progress_fd = opts->progress_fd,
        .opts = opts,
        .notes = notes,
    };
    int r = store_run_as_owner(store, unpack_job_run, &job, err);
    oci_manifest_free(&manifest);
    oci_config_free(&config);
    return r;
}

int ensure_unpacked(struct images_store *store, const char *digest,
                    const struct images_pull_opts *opts, struct nsbox_err *err)
{
    char lock[96];

    if (store_image_present(store, digest))
        return 0;
    /* Concurrent pulls of one image: the first unpacks, the rest wait and
     * then find it complete. */
    snprintf(lock, sizeof(lock), "locks/%s", oci_digest_hex(digest));
    _cleanup_close_ int lfd = nsbox_lock_at(store->root_fd, lock, LOCK_EX, err);
    if (lfd < 0)
        return -1;
    return store_unpack_locked(store, digest, NULL, opts, err);
}

/* Whether base's layers are the first of m's, and m has one more. */
static bool extends_base(const struct oci_manifest *m, const struct oci_manifest *base)
{
    if (m->n_layers != base->n_layers + 1)
        return false;
    for (size_t i = 0; i < base->n_layers; i++)
        if (strcmp(m->layers[i].digest, base->layers[i].digest) != 0)
            return false;
    return true;
}

/* The job's starting point: base's counts and notes, and the budget
 * left after its bytes. */
static int seed_from_base(struct unpack_job *job, const char *base, struct nsbox_err *err)
{
    struct images_image img;
    if (image_load(job->store, base, &img, err) < 0)
        return -1;
    job->base_stats.bytes = img.size;
    job->base_stats.skipped = img.skipped;
    job->budget = job->budget > img.size ? job->budget - img.size : 0;
    for (char **n = img.notes; n != NULL && *n != NULL; n++)
        collect_note(job, *n);
    images_image_free(&img);
    return 0;
}

static int unpack_on_base_locked(struct images_store *store, const char *digest, const char *base,
                                 struct nsbox_err *err)
{
    /* Zeroed: the free functions are then safe on a manifest that did
     * not load (they zero what they free). */
    struct oci_manifest m = {0}, bm = {0};
    struct oci_image_config cfg = {0}, bcfg = {0};

    int r = load_manifest(store, digest, &m, &cfg, err);
    if (r == 0)
        r = load_manifest(store, base, &bm, &bcfg, err);
    if (r == 0 && !extends_base(&m, &bm))
        r = nsbox_err_set(err, EINVAL, "the image is not its base plus one layer");
    _cleanup_json_ json_t *notes = json_array();
    struct images_pull_opts opts = {.progress_fd = -1};
    struct unpack_job job = {
        .store = store,
        .manifest = &m,
        .digest = digest,
        .budget = DEFAULT_MAX_IMAGE_BYTES,
        .progress_fd = -1,
        .opts = &opts,
        .notes = notes,
        .base_hex = oci_digest_hex(base),
        .first_layer = r == 0 ? bm.n_layers : 0,
    };
    if (r == 0)
        r = seed_from_base(&job, base, err);
    if (r == 0)
        r = store_run_as_owner(store, unpack_job_run, &job, err);
    oci_manifest_free(&m);
    oci_config_free(&cfg);
    oci_manifest_free(&bm);
    oci_config_free(&bcfg);
    return r;
}

int store_unpack_on_base(struct images_store *store, const char *digest, const char *base,
                         struct nsbox_err *err)
{
    char lock[96];

    if (store_image_present(store, digest))
        return 0;
    if (!store_image_present(store, base))
        return nsbox_err_set(err, ENOENT, "the base image is not unpacked in this store");
    snprintf(lock, sizeof(lock), "locks/%s", oci_digest_hex(digest));
    _cleanup_close_ int lfd = nsbox_lock_at(store->root_fd, lock, LOCK_EX, err);
    if (lfd < 0)
        return -1;
    if (store_image_present(store, digest))
        return 0;
    return unpack_on_base_locked(store, digest, base, err);
}

/* Shared store lock for the pull; cleans staging first when no one else
 * is in the store. */
int store_lock_for_pull(struct images_store *store, struct nsbox_err *err)
{
    int fd = nsbox_lock_at(store->root_fd, "lock", LOCK_EX | LOCK_NB, err);
    if (fd >= 0) {
        struct nsbox_err cerr;
        if (store_clean_staging(store, NULL, &cerr) < 0)
            nsbox_warn("%s", cerr.msg);
        if (flock(fd, LOCK_SH) == 0)
            return fd;
        close(fd);
    }
    nsbox_err_clear(err);
    return nsbox_lock_at(store->root_fd, "lock", LOCK_SH, err);
}
