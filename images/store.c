/* The own store (store.h, internal.h): opened and closed, work run as its
 * owner, staging cleaned, refs.json loaded and saved, blobs opened and
 * checked, image.json read, leases; and its side of sharing: which shared
 * stores it reads (shared.c reads and imports from them) and, as root,
 * which of its files other users may read. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../common/strset.h"
#include "internal.h"
#include "ref.h"

static const char *const store_dirs[] = {"blobs", "blobs/sha256", "images", "locks", "tmp"};

char *images_store_default_dir(struct nsbox_err *err)
{
    char *dir = NULL;
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");

    if (geteuid() == 0)
        dir = strdup("/var/lib/nsbox");
    else if (xdg != NULL && xdg[0] == '/') {
        if (asprintf(&dir, "%s/nsbox", xdg) < 0)
            dir = NULL;
    } else {
        if (home == NULL || home[0] != '/') {
            struct passwd *pw = getpwuid(geteuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (home == NULL) {
            nsbox_err_set(err, ENOENT, "no home directory: set NSBOX_STORE or use --store");
            return NULL;
        }
        if (asprintf(&dir, "%s/.local/share/nsbox", home) < 0)
            dir = NULL;
    }
    if (dir == NULL)
        nsbox_err_set(err, ENOMEM, "out of memory");
    return dir;
}

int images_store_open(struct images_store *store, const char *dir, struct nsbox_err *err)
{
    _cleanup_free_ char *root = NULL;

    memset(store, 0, sizeof(*store));
    store->root_fd = -1;
    if (dir == NULL || dir[0] == '\0')
        dir = getenv("NSBOX_STORE");
    if (dir != NULL && dir[0] != '\0')
        root = realpath(dir, NULL) ?: strdup(dir);
    else
        root = images_store_default_dir(err);
    if (root == NULL)
        return dir ? nsbox_err_set(err, ENOMEM, "out of memory") : -1;
    if (root[0] != '/')
        return nsbox_err_set(err, EINVAL, "store directory must be absolute: %s", root);
    /* 0700: the store holds setuid binaries and device-free but otherwise
     * exact copies of image trees; no other user needs to reach them.
     * Every run and exec opens the store: the directories are made only
     * when the last of them ("tmp") is missing. */
    int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        if (nsbox_mkdir_p(root, 0700, err) < 0)
            return nsbox_err_prefix(err, "image store");
        fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open image store %s", root);
    size_t n_dirs = sizeof(store_dirs) / sizeof(store_dirs[0]);
    struct stat st;
    if (fstatat(fd, store_dirs[n_dirs - 1], &st, AT_SYMLINK_NOFOLLOW) < 0) {
        for (size_t i = 0; i < n_dirs; i++) {
            if (mkdirat(fd, store_dirs[i], 0700) < 0 && errno != EEXIST) {
                close(fd);
                return nsbox_err_sys(err, "cannot create %s/%s", root, store_dirs[i]);
            }
        }
    }
    store->root_fd = fd;
    store->root = TAKE_PTR(root);
    /* Root in a container's user namespace works as rootless does (userns.h). */
    store->rootless = geteuid() != 0 || nsbox_idmap_nested_root();
    /* Root's default store is the one other users' nsbox looks in; another
     * store of root's is shared only when share-images = true says so. */
    store->share = !store->rootless && strcmp(store->root, "/var/lib/nsbox") == 0;
    if ((store->rootless && nsbox_idmap_for_self(&store->idmap, err) < 0) ||
        store_default_shared(store, err) < 0) {
        images_store_close(store);
        return -1;
    }
    return 0;
}

void images_store_close(struct images_store *store)
{
    if (store->root_fd >= 0)
        close(store->root_fd);
    store_free_shared(store);
    free(store->root);
    memset(store, 0, sizeof(*store));
    store->root_fd = -1;
}

int store_run_as_owner(struct images_store *store, int (*fn)(void *arg, struct nsbox_err *err),
                       void *arg, struct nsbox_err *err)
{
    if (!store->rootless)
        return fn(arg, err);
    return nsbox_userns_run(&store->idmap, fn, arg, err);
}

struct remove_job {
    struct images_store *store;
    const char *dir, *name;
};

static int remove_job_run(void *arg, struct nsbox_err *err)
{
    struct remove_job *job = arg;
    _cleanup_close_ int dfd = openat(job->store->root_fd, job->dir,
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", job->dir);
    return nsbox_rm_rf_at(dfd, job->name, err);
}

int store_remove_tree(struct images_store *store, const char *dir, const char *name,
                      struct nsbox_err *err)
{
    struct remove_job job = {store, dir, name};
    return store_run_as_owner(store, remove_job_run, &job, err);
}

int store_clean_staging(struct images_store *store, size_t *count, struct nsbox_err *err)
{
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(store->root_fd, "tmp", err);
    struct dirent *de;

    if (d == NULL)
        return nsbox_err_prefix(err, "%s", store->root);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (store_remove_tree(store, "tmp", de->d_name, err) < 0)
            return nsbox_err_prefix(err, "cleaning %s/tmp", store->root);
        if (count != NULL)
            (*count)++;
    }
    return 0;
}

/* ---- the reference table ---- */

void refs_free(struct ref_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
    memset(t, 0, sizeof(*t));
}

/* Adds the references of file (refs.json's format) to t; a missing file
 * adds none. */
static int refs_load_file(struct images_store *store, const char *file, struct ref_table *t,
                          struct nsbox_err *err)
{
    size_t len;
    json_error_t jerr;
    const char *name;
    json_t *entry;

    _cleanup_free_ char *text = nsbox_read_file_at(store->root_fd, file, REFS_MAX_BYTES, &len, err);
    if (text == NULL)
        return err->code == ENOENT ? (nsbox_err_clear(err), 0) : -1;
    _cleanup_json_ json_t *root = json_loadb(text, len, 0, &jerr);
    json_t *refs = json_object_get(root, "refs");
    if (!json_is_object(refs))
        return nsbox_err_set(err, EINVAL, "%s/%s is corrupt: %s", store->root, file,
                             root ? "no \"refs\" object" : jerr.text);
    struct ref_entry *v = realloc(t->v, (t->n + json_object_size(refs) + 1) * sizeof(*t->v));
    if (v == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    t->v = v;
    json_object_foreach (refs, name, entry) {
        const char *digest = json_string_value(json_object_get(entry, "digest"));
        if (!oci_digest_valid(digest) || (store->view && images_name_private(name)))
            continue;
        struct ref_entry *r = &t->v[t->n];
        r->name = strdup(name);
        if (r->name == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
        strcpy(r->digest, digest);
        r->pulled = (time_t)json_integer_value(json_object_get(entry, "pulled"));
        t->n++;
    }
    return 0;
}

int refs_load(struct images_store *store, struct ref_table *t, struct nsbox_err *err)
{
    memset(t, 0, sizeof(*t));
    /* A store written before refs-private.json has its private names in
     * refs.json: they are moved at the next save.  Another user's store
     * (a view) is read for its public names only. */
    if (refs_load_file(store, "refs.json", t, err) < 0 ||
        (!store->view && refs_load_file(store, "refs-private.json", t, err) < 0)) {
        refs_free(t);
        return -1;
    }
    return 0;
}

/* The entries of t whose privacy is private as refs.json's text. */
static char *refs_text(const struct ref_table *t, bool private, struct nsbox_err *err)
{
    _cleanup_json_ json_t *refs = json_object();
    _cleanup_json_ json_t *root = json_pack("{s:i,s:O}", "version", 1, "refs", refs);

    if (root == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (images_name_private(t->v[i].name) != private)
            continue;
        json_t *e = json_pack("{s:s,s:I}", "digest", t->v[i].digest, "pulled",
                              (json_int_t)t->v[i].pulled);
        if (e == NULL || json_object_set_new(refs, t->v[i].name, e) < 0) {
            nsbox_err_set(err, ENOMEM, "out of memory");
            return NULL;
        }
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (text == NULL)
        nsbox_err_set(err, ENOMEM, "out of memory");
    return text;
}

int refs_save(struct images_store *store, const struct ref_table *t, struct nsbox_err *err)
{
    /* The private names first: a crash between the two writes leaves a
     * name in both files, never in neither. */
    _cleanup_free_ char *priv = refs_text(t, true, err);
    if (priv == NULL || nsbox_write_file_atomic(store->root_fd, "refs-private.json", priv,
                                                strlen(priv), 0600, err) < 0)
        return -1;
    _cleanup_free_ char *text = refs_text(t, false, err);
    if (text == NULL)
        return -1;
    /* Readable by other users when root shares its images (shared.c). */
    mode_t mode = store->share && !store->rootless ? 0644 : 0600;
    if (nsbox_write_file_atomic(store->root_fd, "refs.json", text, strlen(text), mode, err) < 0)
        return -1;
    store_apply_sharing(store, t);
    return 0;
}

int refs_set(struct ref_table *t, const char *name, const char *digest, struct nsbox_err *err)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i].name, name) == 0) {
            strcpy(t->v[i].digest, digest);
            t->v[i].pulled = time(NULL);
            return 0;
        }
    }
    struct ref_entry *v = realloc(t->v, (t->n + 1) * sizeof(*v));
    if (v == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    t->v = v;
    v[t->n].name = strdup(name);
    if (v[t->n].name == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    strcpy(v[t->n].digest, digest);
    v[t->n].pulled = time(NULL);
    t->n++;
    return 0;
}

int refs_del(struct ref_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i].name, name) == 0) {
            free(t->v[i].name);
            t->v[i] = t->v[--t->n];
            return 1;
        }
    }
    return 0;
}

/* ---- blobs and image records ---- */

int blob_open(struct images_store *store, const char *digest, struct nsbox_err *err)
{
    char path[128];

    if (!oci_digest_valid(digest))
        return nsbox_err_set(err, EINVAL, "invalid digest");
    snprintf(path, sizeof(path), "blobs/sha256/%s", oci_digest_hex(digest));
    int fd = openat(store->root_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "blob %s", digest);
    return fd;
}

char *blob_read_verified(struct images_store *store, const char *digest, size_t max, size_t *len,
                         struct nsbox_err *err)
{
    char path[128], actual[OCI_DIGEST_BUF];

    if (!oci_digest_valid(digest)) {
        nsbox_err_set(err, EINVAL, "invalid digest");
        return NULL;
    }
    snprintf(path, sizeof(path), "blobs/sha256/%s", oci_digest_hex(digest));
    _cleanup_free_ char *data = nsbox_read_file_at(store->root_fd, path, max, len, err);
    if (data == NULL) {
        nsbox_err_prefix(err, "blob %s", digest);
        return NULL;
    }
    oci_digest_buf(data, *len, actual);
    if (strcmp(actual, digest) != 0) {
        nsbox_err_set(err, EBADMSG, "blob %s is corrupt: its content hashes to %s", digest, actual);
        return NULL;
    }
    return TAKE_PTR(data);
}

void images_image_free(struct images_image *image)
{
    nsbox_strvfree(image->names);
    nsbox_strvfree(image->notes);
    free(image->rootfs);
    free(image->origin);
    oci_config_free(&image->config);
    memset(image, 0, sizeof(*image));
}

bool images_name_private(const char *name)
{
    return name != NULL &&
           (strncmp(name, IMAGES_PRIVATE_CACHE_REPO, strlen(IMAGES_PRIVATE_CACHE_REPO)) == 0 ||
            strncmp(name, IMAGES_PRIVATE_COMMIT_REPO, strlen(IMAGES_PRIVATE_COMMIT_REPO)) == 0 ||
            strncmp(name, IMAGES_PRIVATE_FORK_REPO, strlen(IMAGES_PRIVATE_FORK_REPO)) == 0);
}

bool images_image_private(const struct images_image *image)
{
    if (image->names == NULL || image->names[0] == NULL)
        return false;
    for (char **n = image->names; *n; n++)
        if (!images_name_private(*n))
            return false;
    return true;
}

const char *images_image_languages(const struct images_image *image)
{
    return oci_config_label(&image->config, "sandbox.language");
}

static int load_notes(json_t *notes, struct images_image *out, struct nsbox_err *err)
{
    size_t i, n = 0;
    json_t *note;

    if (!json_is_array(notes) || json_array_size(notes) == 0)
        return 0;
    out->notes = calloc(json_array_size(notes) + 1, sizeof(char *));
    if (out->notes == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    json_array_foreach (notes, i, note) {
        if (json_is_string(note) && (out->notes[n] = strdup(json_string_value(note))) != NULL)
            n++;
    }
    return 0;
}

int image_load(struct images_store *store, const char *digest, struct images_image *out,
               struct nsbox_err *err)
{
    char path[128];
    size_t len;
    json_error_t jerr;

    memset(out, 0, sizeof(*out));
    snprintf(path, sizeof(path), "images/%s/image.json", oci_digest_hex(digest));
    _cleanup_free_ char *text = nsbox_read_file_at(store->root_fd, path, 1 << 20, &len, err);
    if (text == NULL)
        return -1;
    _cleanup_json_ json_t *root = json_loadb(text, len, 0, &jerr);
    const char *config_digest = json_string_value(json_object_get(root, "config_digest"));
    if (!oci_digest_valid(config_digest))
        return nsbox_err_set(err, EINVAL, "%s/%s is corrupt", store->root, path);
    strcpy(out->digest, digest);
    strcpy(out->config_digest, config_digest);
    out->size = (uint64_t)json_integer_value(json_object_get(root, "size"));
    out->skipped = (uint64_t)json_integer_value(json_object_get(root, "skipped"));
    out->created = (time_t)json_integer_value(json_object_get(root, "created"));
    if (load_notes(json_object_get(root, "notes"), out, err) < 0)
        return -1;
    const char *origin = json_string_value(json_object_get(root, "origin"));
    if (origin != NULL && (out->origin = strdup(origin)) == NULL) {
        images_image_free(out);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    if (asprintf(&out->rootfs, "%s/images/%s/rootfs", store->root, oci_digest_hex(digest)) < 0) {
        out->rootfs = NULL;
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    _cleanup_free_ char *config = blob_read_verified(store, config_digest, OCI_CONFIG_MAX, &len,
                                                     err);
    if (config == NULL || oci_config_parse(config, len, &out->config, err) < 0) {
        images_image_free(out);
        return -1;
    }
    return 0;
}

int images_lease(struct images_store *store, const char *digest, struct nsbox_err *err)
{
    char path[128];
    struct stat st;

    if (!oci_digest_valid(digest))
        return nsbox_err_set(err, EINVAL, "invalid digest");
    snprintf(path, sizeof(path), "images/%s/lease", oci_digest_hex(digest));
    _cleanup_close_ int fd = nsbox_lock_at(store->root_fd, path, LOCK_SH, err);
    if (fd < 0)
        return -1;
    /* rmi may have moved the image away while we waited for the lock. */
    snprintf(path, sizeof(path), "images/%s/image.json", oci_digest_hex(digest));
    if (fstatat(store->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return nsbox_err_set(err, ENOENT, "image %s was removed", digest);
    return TAKE_FD(fd);
}

/* ---- which shared stores this one reads (shared.c reads them) ---- */

#define ROOT_STORE "/var/lib/nsbox"

void store_free_shared(struct images_store *store)
{
    for (size_t i = 0; i < store->n_shared; i++)
        free(store->shared[i]);
    store->n_shared = 0;
}

static int add_shared(struct images_store *store, const char *dir, struct nsbox_err *err)
{
    if (dir[0] != '/')
        return nsbox_err_set(err, EINVAL, "image store %s: must be an absolute path", dir);
    if (store->n_shared == IMAGES_MAX_SHARED)
        return nsbox_err_set(err, E2BIG, "at most %d image stores", IMAGES_MAX_SHARED);
    char *real = realpath(dir, NULL) ?: strdup(dir);
    if (real == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (store->root != NULL && strcmp(real, store->root) == 0) {
        free(real); /* the own store is looked in first anyway */
        return 0;
    }
    store->shared[store->n_shared++] = real;
    return 0;
}

int store_default_shared(struct images_store *store, struct nsbox_err *err)
{
    store_free_shared(store);
    if (!store->rootless)
        return 0;
    return add_shared(store, ROOT_STORE, err);
}

int images_store_configure(struct images_store *store, const struct images_store_config *cfg,
                           struct nsbox_err *err)
{
    if (cfg == NULL)
        return 0;
    if (cfg->share_set)
        store->share = cfg->share && !store->rootless;
    if (!cfg->image_stores_set)
        return 0;
    store_free_shared(store);
    for (size_t i = 0; i < cfg->n_image_stores; i++)
        if (add_shared(store, cfg->image_stores[i], err) < 0)
            return -1;
    return 0;
}

/* ---- making root's store shareable ---- */

static void chmod_at(int dirfd, const char *name, mode_t mode)
{
    if (fchmodat(dirfd, name, mode, 0) < 0 && errno != ENOENT)
        nsbox_warn("cannot chmod %s: %s", name, strerror(errno));
}

/* Adds the blobs of the image digest (its manifest, config and layers, read
 * from the manifest blob) to set.  An unreadable manifest adds only itself. */
static void add_image_blobs(struct images_store *store, const char *digest,
                            struct nsbox_strset *set)
{
    struct nsbox_err ignored;
    struct oci_manifest m;
    size_t len;
    nsbox_strset_add(set, oci_digest_hex(digest));
    _cleanup_free_ char *text = blob_read_verified(store, digest, OCI_MANIFEST_MAX, &len, &ignored);
    if (text == NULL || oci_manifest_parse(text, len, &m, &ignored) < 0)
        return;
    nsbox_strset_add(set, oci_digest_hex(m.config.digest));
    for (size_t i = 0; i < m.n_layers; i++)
        nsbox_strset_add(set, oci_digest_hex(m.layers[i].digest));
    oci_manifest_free(&m);
}

void store_apply_sharing(struct images_store *store, const struct ref_table *refs)
{
    if (store->rootless)
        return;
    /* Through /proc/self/fd: fchmodat cannot act on an O_PATH fd itself. */
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", store->root_fd);
    if (!store->share) {
        chmod_at(AT_FDCWD, self, 0700);
        return;
    }
    /* 0711: other users reach refs.json and blobs by name but cannot list
     * the store; images/ (setuid binaries, whole trees), sandboxes/,
     * locks/ and tmp/ stay 0700 (docs/store.md). */
    chmod_at(AT_FDCWD, self, 0711);
    chmod_at(store->root_fd, "blobs", 0711);
    chmod_at(store->root_fd, "blobs/sha256", 0711);
    chmod_at(store->root_fd, "refs.json", 0644);
    /* Only the blobs of images with a public name are readable: a package
     * cache's or a commit's own layers (what a session installed or wrote)
     * stay root's (images_name_private). */
    struct nsbox_strset public = {0};
    for (size_t i = 0; i < refs->n; i++)
        if (!images_name_private(refs->v[i].name))
            add_image_blobs(store, refs->v[i].digest, &public);
    struct nsbox_err err;
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(store->root_fd, "blobs/sha256", &err);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            chmod_at(dirfd(d), de->d_name, nsbox_strset_has(&public, de->d_name) ? 0644 : 0600);
    nsbox_strset_clear(&public);
}
