/* Images of the store written out as one OCI image layout (store.h,
 * images_export_layout): what a nested sandbox's engine loads without
 * network (boxes/nested.c, docs/nested.md).
 *
 * The layout is a directory of its own, STORE/nested/RANDOM: oci-layout,
 * index.json (one manifest per name, annotated
 * org.opencontainers.image.ref.name with the name's canonical form) and
 * blobs/sha256/HEX, each a hard link to the store's blob, or a copy when
 * linking fails (another filesystem) or when the blob could not be read
 * through the sandbox's eyes: as root the sandbox's ids are not the
 * store's, so a blob that is not world-readable (a private image's, or a
 * store that does not share) is copied 0644.  Rules: only named images
 * (a docker reference: the name is what `podman run NAME` uses); every
 * manifest read is verified against its digest; the directory is removed
 * on any failure.
 *
 * Its owner: once the sandbox exists, STORE/nested/RANDOM.owner (beside
 * the layout, never in it: the sandbox sees the layout, and the owner is
 * a host path) names the sandbox's state directory.  A sandbox that died
 * without removing its layout (a crash, a kill) leaves both; the sweep
 * (images_export_sweep, from every gc) removes a layout whose owner is
 * gone, and one with no owner older than the grace (a creation that died
 * between the layout and the sandbox). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "internal.h"
#include "ref.h"
#include "store.h"

#define NESTED_DIR "nested"

/* Copies the blob open as src to dfd/name, 0644. */
static int copy_blob(int src, int dfd, const char *name, struct nsbox_err *err)
{
    _cleanup_close_ int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    char buf[65536];
    ssize_t n;
    if (out < 0)
        return nsbox_err_sys(err, "cannot write blob %s", name);
    while ((n = read(src, buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || nsbox_write_all(out, buf, (size_t)n) < 0)
            return nsbox_err_sys(err, "cannot copy blob %s", name);
    }
    if (fchmod(out, 0644) < 0)
        return nsbox_err_sys(err, "cannot chmod blob %s", name);
    return 0;
}

/* One blob into blobs_fd (a second use of the same digest is no error). */
static int put_blob(struct images_store *store, int blobs_fd, const char *digest,
                    struct nsbox_err *err)
{
    const char *hex = oci_digest_hex(digest);
    char path[128];
    struct stat st;
    if (faccessat(blobs_fd, hex, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    _cleanup_close_ int src = blob_open(store, digest, err);
    if (src < 0 || fstat(src, &st) < 0)
        return src < 0 ? -1 : nsbox_err_sys(err, "blob %s", digest);
    bool readable = store->rootless || (st.st_mode & S_IROTH);
    snprintf(path, sizeof(path), "blobs/sha256/%s", hex);
    if (readable && linkat(store->root_fd, path, blobs_fd, hex, 0) == 0)
        return 0;
    return copy_blob(src, blobs_fd, hex, err);
}

/* name's image: its blobs linked, its index entry appended to manifests. */
static int export_one(struct images_store *store, const char *name, int blobs_fd, json_t *manifests,
                      struct nsbox_err *err)
{
    struct image_ref ref = {0};
    struct images_image im;
    struct oci_manifest m = {0};
    size_t len;
    int r = -1;

    if (image_ref_parse(name, NULL, &ref, err) < 0)
        return nsbox_err_prefix(err, "nested image \"%s\"", name);
    if (ref.transport != IMAGE_TRANSPORT_DOCKER) {
        nsbox_err_set(err, EINVAL,
                      "nested image \"%s\": give it a name first (nsbox tag %s NAME), the name "
                      "nested containers run it by",
                      name, name);
        image_ref_free(&ref);
        return -1;
    }
    if (images_lookup(store, name, &im, err) < 0) {
        nsbox_err_prefix(err, "nested image \"%s\"", name);
        image_ref_free(&ref);
        return -1;
    }
    _cleanup_free_ char *text = blob_read_verified(store, im.digest, OCI_MANIFEST_MAX, &len, err);
    if (text != NULL && oci_manifest_parse(text, len, &m, err) == 0 &&
        put_blob(store, blobs_fd, im.digest, err) == 0 &&
        put_blob(store, blobs_fd, m.config.digest, err) == 0) {
        r = 0;
        for (size_t i = 0; r == 0 && i < m.n_layers; i++)
            r = put_blob(store, blobs_fd, m.layers[i].digest, err);
    }
    if (r == 0) {
        const char *type = m.media_type ? m.media_type
                                        : "application/vnd.oci.image.manifest.v1+json";
        json_array_append_new(manifests,
                              json_pack("{s:s,s:s,s:I,s:{s:s}}", "mediaType", type, "digest",
                                        im.digest, "size", (json_int_t)len, "annotations",
                                        "org.opencontainers.image.ref.name", ref.name));
    } else {
        nsbox_err_prefix(err, "nested image \"%s\"", name);
    }
    oci_manifest_free(&m);
    images_image_free(&im);
    image_ref_free(&ref);
    return r;
}

static int write_layout(struct images_store *store, int dfd, const char *const *names, size_t n,
                        struct nsbox_err *err)
{
    static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
    if (mkdirat(dfd, "blobs", 0755) < 0 || mkdirat(dfd, "blobs/sha256", 0755) < 0)
        return nsbox_err_sys(err, "cannot make the layout's blobs");
    _cleanup_close_ int blobs_fd = openat(dfd, "blobs/sha256", O_PATH | O_DIRECTORY | O_CLOEXEC);
    json_t *manifests = json_array();
    if (blobs_fd < 0 || manifests == NULL) {
        json_decref(manifests);
        return nsbox_err_sys(err, "cannot open the layout's blobs");
    }
    for (size_t i = 0; i < n; i++)
        if (export_one(store, names[i], blobs_fd, manifests, err) < 0) {
            json_decref(manifests);
            return -1;
        }
    json_t *index = json_pack("{s:i,s:o}", "schemaVersion", 2, "manifests", manifests);
    _cleanup_free_ char *text = index ? json_dumps(index, JSON_COMPACT) : NULL;
    json_decref(index);
    if (text == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (nsbox_write_file_replace(dfd, "oci-layout", layout, strlen(layout), 0644, err) < 0 ||
        nsbox_write_file_replace(dfd, "index.json", text, strlen(text), 0644, err) < 0)
        return -1;
    return 0;
}

int images_export_layout(struct images_store *store, const char *const *names, size_t n, char **dir,
                         struct nsbox_err *err)
{
    unsigned char r[16];
    char name[sizeof(NESTED_DIR) + 2 * sizeof(r) + 1];

    *dir = NULL;
    if (getrandom(r, sizeof(r), 0) != sizeof(r))
        return nsbox_err_sys(err, "getrandom");
    int len = snprintf(name, sizeof(name), NESTED_DIR "/");
    for (size_t i = 0; i < sizeof(r); i++)
        len += snprintf(name + len, sizeof(name) - (size_t)len, "%02x", r[i]);
    /* 0711: traversed by the sandbox's mount, never listed by others. */
    if (mkdirat(store->root_fd, NESTED_DIR, 0711) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot make %s/" NESTED_DIR, store->root);
    if (mkdirat(store->root_fd, name, 0755) < 0)
        return nsbox_err_sys(err, "cannot make %s/%s", store->root, name);
    _cleanup_close_ int dfd = openat(store->root_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fchmodat(store->root_fd, name, 0755, 0) < 0 ||
        write_layout(store, dfd, names, n, err) < 0) {
        if (dfd < 0)
            nsbox_err_sys(err, "cannot open %s/%s", store->root, name);
        struct nsbox_err ignored;
        nsbox_rm_rf_at(store->root_fd, name, &ignored);
        return -1;
    }
    if (asprintf(dir, "%s/%s", store->root, name) < 0) {
        *dir = NULL;
        struct nsbox_err ignored;
        nsbox_rm_rf_at(store->root_fd, name, &ignored);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    return 0;
}

int images_export_remove(struct images_store *store, const char *dir, struct nsbox_err *err)
{
    size_t root_len = strlen(store->root);
    /* Only a directory this file made: STORE/nested/HEX. */
    if (dir == NULL || strncmp(dir, store->root, root_len) != 0 ||
        strncmp(dir + root_len, "/" NESTED_DIR "/", sizeof(NESTED_DIR) + 1) != 0 ||
        strchr(dir + root_len + sizeof(NESTED_DIR) + 1, '/') != NULL ||
        strstr(dir + root_len, "..") != NULL)
        return nsbox_err_set(err, EINVAL, "not a nested image layout of this store: %s",
                             dir ? dir : "(none)");
    if (nsbox_rm_rf_at(store->root_fd, dir + root_len + 1, err) < 0 && err->code != ENOENT)
        return -1;
    char owner[PATH_MAX];
    snprintf(owner, sizeof(owner), "%s.owner", dir + root_len + 1);
    if (unlinkat(store->root_fd, owner, 0) < 0 && errno != ENOENT)
        return nsbox_err_sys(err, "cannot remove %s/%s", store->root, owner);
    return 0;
}

/* Whether name is one images_export_layout makes: 32 hex digits. */
static bool layout_name(const char *name)
{
    size_t n = strspn(name, "0123456789abcdef");
    return n == 32 && name[n] == '\0';
}

int images_export_set_owner(struct images_store *store, const char *dir, const char *owner,
                            struct nsbox_err *err)
{
    size_t root_len = strlen(store->root);
    const char *base = strrchr(dir, '/');
    char name[48];
    if (strncmp(dir, store->root, root_len) != 0 || base == NULL || !layout_name(base + 1))
        return nsbox_err_set(err, EINVAL, "not a nested image layout of this store: %s", dir);
    _cleanup_close_ int dfd = openat(store->root_fd, NESTED_DIR,
                                     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s/" NESTED_DIR, store->root);
    snprintf(name, sizeof(name), "%s.owner", base + 1);
    return nsbox_write_file_replace(dfd, name, owner, strlen(owner), 0600, err);
}

int images_export_sweep(struct images_store *store, bool (*alive)(const char *owner, void *arg),
                        void *arg, int grace_s, struct nsbox_err *err)
{
    _cleanup_close_ int dfd = openat(store->root_fd, NESTED_DIR,
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : nsbox_err_sys(err, "cannot open %s/" NESTED_DIR, store->root);
    _cleanup_closedir_ DIR *d = fdopendir(dup(dfd));
    if (d == NULL)
        return nsbox_err_sys(err, "cannot read %s/" NESTED_DIR, store->root);
    struct dirent *de;
    int removed = 0;
    time_t now = time(NULL);
    while ((de = readdir(d)) != NULL) {
        char owner_name[64], owner[PATH_MAX];
        struct stat st;
        if (!layout_name(de->d_name) || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        snprintf(owner_name, sizeof(owner_name), "%s.owner", de->d_name);
        _cleanup_close_ int ofd = openat(dfd, owner_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n = ofd >= 0 ? read(ofd, owner, sizeof(owner) - 1) : -1;
        bool gone;
        if (n > 0) {
            owner[n] = '\0';
            gone = !alive(owner, arg);
        } else {
            gone = now - st.st_mtime > grace_s;
        }
        if (!gone)
            continue;
        struct nsbox_err e;
        if (nsbox_rm_rf_at(dfd, de->d_name, &e) < 0 && e.code != ENOENT)
            return nsbox_err_set(err, e.code, "removing the stale layout %s/" NESTED_DIR "/%s: %s",
                                 store->root, de->d_name, e.msg);
        unlinkat(dfd, owner_name, 0);
        removed++;
    }
    return removed;
}
