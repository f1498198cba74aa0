/* `nsbox commit`: a sandbox's writable layer saved as a new image (see
 * commit.h for the contract, docs/store.md "Commit" for the format).
 *
 * Steps, under the store lock held shared (prune and rmi wait; pulls run
 * beside it):
 *   1. the name is parsed and normalized first, so a bad one costs nothing;
 *   2. the base manifest and config are read back, each checked against
 *      its digest;
 *   3. the layer is written by a child in a user namespace with the
 *      sandbox's id map (there the upper's owners read as the sandbox's
 *      ids, and a rootless user may read its subordinate ids' 0700 dirs)
 *      into an O_TMPFILE in blobs/sha256, linked under its digest when
 *      complete: an interrupted commit leaves nothing behind (on a
 *      filesystem without O_TMPFILE, a file in STORE/tmp for prune);
 *   4. config and manifest blobs are the base's JSON with the new layer
 *      appended (every other field kept as it was);
 *   5. the image is unpacked: when the base is unpacked in this store, as
 *      a hard-link copy of its rootfs with only the new layer applied
 *      (unpack.c: store_unpack_on_base); failing that (another store's base,
 *      EXDEV, EMLINK, ...), like a pulled one (ensure_unpacked).  Either
 *      way the digests are checked again and the new layer is treated as
 *      hostile; then the reference points at it. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../oci/image.h"
#include "commit.h"
#include "internal.h"
#include "ref.h"

#define OCI_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_LAYER_GZIP "application/vnd.docker.image.rootfs.diff.tar.gzip"

/* ---- the layer, written in the sandbox's id map ---- */

struct layer_job {
    int upper_fd, out_fd;
    struct images_layer_out *out; /* shared with the parent (MAP_SHARED) */
};

static int layer_job_run(void *arg, struct nsbox_err *err)
{
    struct layer_job *job = arg;
    if (images_layer_from_upper(job->upper_fd, job->out_fd, job->out, err) < 0)
        return -1;
    if (fsync(job->out_fd) < 0)
        return nsbox_err_sys(err, "cannot write the layer");
    return 0;
}

/* A file for the blob: an O_TMPFILE in blobs/sha256 (*tmp ""), or where
 * the filesystem has none (NFS), a named one in STORE/tmp (*tmp its
 * path, which a failed commit leaves to the next prune). */
static int blob_file(struct images_store *store, int blobs_fd, char tmp[PATH_MAX],
                     struct nsbox_err *err)
{
    tmp[0] = '\0';
    int fd = openat(blobs_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
        return fd >= 0 ? fd : nsbox_err_sys(err, "cannot create the layer's blob");
    snprintf(tmp, PATH_MAX, "%s/tmp/commit-XXXXXX", store->root);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0 || fchmod(fd, 0644) < 0)
        return nsbox_err_sys(err, "cannot create the layer's blob");
    return fd;
}

/* Puts the complete blob under its digest; the same layer committed twice
 * is the same blob. */
static int blob_place(int fd, const char *tmp, int blobs_fd, const char *digest,
                      struct nsbox_err *err)
{
    char path[64];
    int r;
    if (tmp[0] != '\0') {
        r = renameat(AT_FDCWD, tmp, blobs_fd, oci_digest_hex(digest));
    } else {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        r = linkat(AT_FDCWD, path, blobs_fd, oci_digest_hex(digest), AT_SYMLINK_FOLLOW);
        if (r < 0 && errno == EEXIST)
            r = 0;
    }
    return r < 0 ? nsbox_err_sys(err, "cannot store the layer's blob") : 0;
}

int images_layer_write(int upper_fd, const struct nsbox_idmap *map, int out_fd,
                       struct images_layer_out *out, struct nsbox_err *err)
{
    struct images_layer_out *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return nsbox_err_sys(err, "mmap");
    struct layer_job job = {upper_fd, out_fd, shared};
    int r = nsbox_userns_run(map, layer_job_run, &job, err);
    *out = *shared;
    munmap(shared, sizeof(*shared));
    return r < 0 ? nsbox_err_prefix(err, "writing the layer") : 0;
}

/* Copies the finished blob o->layer_fd into fd, hashing it. */
static int copy_layer(const struct images_commit_opts *o, int fd, struct images_layer_out *out,
                      struct nsbox_err *err)
{
    char buf[65536];
    ssize_t n;
    off_t off = 0;
    if (o->layer_diff_id == NULL || !oci_digest_valid(o->layer_diff_id))
        return nsbox_err_set(err, EINVAL, "the layer has no valid diff_id");
    struct oci_sha256 *h = oci_sha256_new();
    if (h == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    memset(out, 0, sizeof(*out));
    while ((n = pread(o->layer_fd, buf, sizeof(buf), off)) > 0) {
        oci_sha256_update(h, buf, (size_t)n);
        if (nsbox_write_all(fd, buf, (size_t)n) < 0) {
            oci_sha256_free(h);
            return nsbox_err_sys(err, "cannot copy the layer");
        }
        off += n;
    }
    if (n < 0) {
        oci_sha256_free(h);
        return nsbox_err_sys(err, "cannot read the layer");
    }
    oci_sha256_finish(h, out->digest);
    if (o->layer_digest != NULL && strcmp(out->digest, o->layer_digest) != 0)
        return nsbox_err_set(err, EBADMSG, "the layer changed since it was verified");
    snprintf(out->diff_id, sizeof(out->diff_id), "%s", o->layer_diff_id);
    out->size = (uint64_t)off;
    if (fsync(fd) < 0)
        return nsbox_err_sys(err, "cannot write the layer");
    return 0;
}

/* Writes the layer blob into blobs/sha256; *out describes it. */
static int write_layer(struct images_store *store, const struct images_commit_opts *o, int blobs_fd,
                       struct images_layer_out *out, struct nsbox_err *err)
{
    char tmp[PATH_MAX];

    _cleanup_close_ int fd = blob_file(store, blobs_fd, tmp, err);
    if (fd < 0)
        return -1;
    int r = o->upper_fd >= 0 ? images_layer_write(o->upper_fd, o->map, fd, out, err)
                             : copy_layer(o, fd, out, err);
    if (r < 0)
        return -1;
    return blob_place(fd, tmp, blobs_fd, out->digest, err);
}

/* ---- config and manifest ---- */

static int write_blob(int blobs_fd, json_t *doc, char digest[OCI_DIGEST_BUF], size_t *size,
                      struct nsbox_err *err)
{
    _cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    *size = strlen(text);
    oci_digest_buf(text, *size, digest);
    return nsbox_write_file_atomic(blobs_fd, oci_digest_hex(digest), text, *size, 0644, err);
}

static json_t *load_json(struct images_store *store, const char *digest, size_t max,
                         struct nsbox_err *err)
{
    size_t len;
    json_error_t jerr;
    _cleanup_free_ char *text = blob_read_verified(store, digest, max, &len, err);
    if (text == NULL)
        return NULL;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    if (!json_is_object(doc)) {
        json_decref(doc);
        nsbox_err_set(err, EINVAL, "blob %s is not a JSON object", digest);
    }
    return json_is_object(doc) ? doc : NULL;
}

/* RFC 3339, UTC, as docker writes "created". */
static json_t *now_rfc3339(void)
{
    char buf[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

/* The base config with the layer's diff_id and a history entry. */
static int new_config(json_t *cfg, const struct images_layer_out *layer, const char *message,
                      struct nsbox_err *err)
{
    json_t *rootfs = json_object_get(cfg, "rootfs");
    json_t *diff_ids = json_object_get(rootfs, "diff_ids");
    if (!json_is_array(diff_ids))
        return nsbox_err_set(err, EINVAL, "the base image's config has no rootfs.diff_ids");
    json_t *history = json_object_get(cfg, "history");
    if (!json_is_array(history)) {
        history = json_array();
        json_object_set_new(cfg, "history", history);
    }
    json_t *entry = json_pack("{s:o,s:s}", "created", now_rfc3339(), "created_by", "nsbox commit");
    if (entry != NULL && message != NULL)
        json_object_set_new(entry, "comment", json_string(message));
    if (entry == NULL || json_array_append_new(history, entry) < 0 ||
        json_array_append_new(diff_ids, json_string(layer->diff_id)) < 0 ||
        json_object_set_new(cfg, "created", now_rfc3339()) < 0)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    return 0;
}

/* The base manifest with the new config and the layer appended. */
static int new_manifest(json_t *m, const char *cfg_digest, size_t cfg_size,
                        const struct images_layer_out *layer, struct nsbox_err *err)
{
    json_t *config = json_object_get(m, "config");
    json_t *layers = json_object_get(m, "layers");
    if (!json_is_object(config) || !json_is_array(layers))
        return nsbox_err_set(err, EINVAL, "the base image's manifest has no config or layers");
    const char *mt = json_string_value(json_object_get(m, "mediaType"));
    bool docker = mt != NULL && strcmp(mt, DOCKER_MANIFEST) == 0;
    json_t *desc = json_pack("{s:s,s:s,s:I}", "mediaType",
                             docker ? DOCKER_LAYER_GZIP : OCI_LAYER_GZIP, "digest", layer->digest,
                             "size", (json_int_t)layer->size);
    if (desc == NULL || json_array_append_new(layers, desc) < 0 ||
        json_object_set_new(config, "digest", json_string(cfg_digest)) < 0 ||
        json_object_set_new(config, "size", json_integer((json_int_t)cfg_size)) < 0)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    return 0;
}

/* ---- the whole ---- */

/* The fast path's failure is no error: the full unpack gives the same
 * tree, only slower. */
static int unpack_committed(struct images_store *store, const char *base, const char *digest,
                            struct nsbox_err *err)
{
    struct nsbox_err fast;
    if (store_unpack_on_base(store, digest, base, &fast) == 0)
        return 0;
    nsbox_debug("commit: no hard-link copy of the base (%s); unpacking in full", fast.msg);
    struct images_pull_opts unpack = {.progress_fd = -1};
    if (ensure_unpacked(store, digest, &unpack, err) < 0)
        return nsbox_err_prefix(err, "unpacking the committed image");
    return 0;
}

static int commit_locked(struct images_store *store, const struct images_commit_opts *o,
                         const char *name, char digest[OCI_DIGEST_BUF], struct nsbox_err *err)
{
    struct images_layer_out layer;
    char cfg_digest[OCI_DIGEST_BUF];
    size_t cfg_size, m_size;

    _cleanup_json_ json_t *m = load_json(store, o->base, OCI_MANIFEST_MAX, err);
    const char *base_cfg = json_string_value(
        json_object_get(json_object_get(m, "config"), "digest"));
    if (m == NULL || base_cfg == NULL || !oci_digest_valid(base_cfg))
        return m == NULL ? -1 : nsbox_err_set(err, EINVAL, "the base manifest names no config");
    _cleanup_json_ json_t *cfg = load_json(store, base_cfg, OCI_CONFIG_MAX, err);
    _cleanup_close_ int blobs = openat(store->root_fd, "blobs/sha256",
                                       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cfg == NULL)
        return -1;
    if (blobs < 0)
        return nsbox_err_sys(err, "cannot open the store's blobs");
    if (write_layer(store, o, blobs, &layer, err) < 0)
        return -1;
    if (o->layer_written != NULL)
        o->layer_written(o->ctx);
    if (new_config(cfg, &layer, o->message, err) < 0 ||
        write_blob(blobs, cfg, cfg_digest, &cfg_size, err) < 0 ||
        new_manifest(m, cfg_digest, cfg_size, &layer, err) < 0 ||
        write_blob(blobs, m, digest, &m_size, err) < 0)
        return -1;
    return unpack_committed(store, o->base, digest, err) < 0 ? -1
                                                             : update_ref(store, name, digest, err);
}

int images_commit(struct images_store *store, const struct images_commit_opts *o,
                  char digest[OCI_DIGEST_BUF], struct nsbox_err *err)
{
    struct image_ref ref;
    char buf[OCI_DIGEST_BUF];

    if (image_ref_parse(o->name, NULL, &ref, err) < 0)
        return -1;
    int r = 0;
    if (ref.transport != IMAGE_TRANSPORT_DOCKER)
        r = nsbox_err_set(err, EINVAL, "an image name is a Docker-style name, not %s", o->name);
    else if (ref.digest != NULL)
        r = nsbox_err_set(err, EINVAL, "%s carries a digest; name the image with a tag", o->name);
    if (r == 0) {
        _cleanup_close_ int lock = nsbox_lock_at(store->root_fd, "lock", LOCK_SH, err);
        r = lock < 0 ? -1 : commit_locked(store, o, ref.name, digest ? digest : buf, err);
    }
    if (r < 0)
        nsbox_err_prefix(err, "committing as %s", ref.name ? ref.name : o->name);
    image_ref_free(&ref);
    return r;
}
