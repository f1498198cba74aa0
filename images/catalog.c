/* Listing, looking up and removing images; garbage collection. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "../common/strset.h"
#include "internal.h"
#include "ref.h"

static bool is_hex(const char *s, size_t min, size_t max)
{
    size_t n = strspn(s, "0123456789abcdef");
    return s[n] == '\0' && n >= min && n <= max;
}

/* Calls fn for each complete image directory (its hex name). */
static int for_each_image(struct images_store *store, int (*fn)(const char *hex, void *ctx),
                          void *ctx, struct nsbox_err *err)
{
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(store->root_fd, "images", err);
    if (d == NULL)
        return nsbox_err_prefix(err, "%s", store->root);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_hex(de->d_name, OCI_DIGEST_HEX_LEN, OCI_DIGEST_HEX_LEN))
            continue;
        int r = fn(de->d_name, ctx);
        if (r != 0)
            return r;
    }
    return 0;
}

static int attach_names(struct images_image *image, const struct ref_table *refs,
                        struct nsbox_err *err)
{
    size_t n = 0;

    image->names = calloc(refs->n + 1, sizeof(char *));
    if (image->names == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < refs->n; i++) {
        if (strcmp(refs->v[i].digest, image->digest) != 0)
            continue;
        image->names[n] = strdup(refs->v[i].name);
        if (image->names[n++] == NULL)
            return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    return 0;
}

/* Whether the caller's view (NULL: everything) has the image digest: one
 * of its names is visible, or it has none. */
static bool digest_in_view(const struct ref_table *refs, const struct images_view *view,
                           const char *digest)
{
    bool named = false;
    for (size_t i = 0; view != NULL && i < refs->n; i++) {
        if (strcmp(refs->v[i].digest, digest) != 0)
            continue;
        if (view->name_visible(refs->v[i].name, view->ctx))
            return true;
        named = true;
    }
    return !named;
}

struct prefix_match {
    const char *prefix;
    const struct ref_table *refs;
    const struct images_view *view;
    char digest[OCI_DIGEST_BUF];
    int matches;
};

static int match_prefix(const char *hex, void *ctx)
{
    struct prefix_match *m = ctx;
    char digest[OCI_DIGEST_BUF];
    if (strncmp(hex, m->prefix, strlen(m->prefix)) != 0)
        return 0;
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    if (digest_in_view(m->refs, m->view, digest) && m->matches++ == 0)
        strcpy(m->digest, digest);
    return 0;
}

/* Maps a reference, digest or unique hex prefix to a manifest digest; what
 * view hides is not there. */
static int resolve_name(struct images_store *store, const struct ref_table *refs, const char *name,
                        const struct images_view *view, char digest[OCI_DIGEST_BUF],
                        bool *by_digest, struct nsbox_err *err)
{
    struct image_ref ref;
    const char *hex = strncmp(name, "sha256:", 7) == 0 ? name + 7 : name;

    *by_digest = false;
    if (is_hex(hex, 12, OCI_DIGEST_HEX_LEN)) {
        struct prefix_match m = {.prefix = hex, .refs = refs, .view = view};
        if (for_each_image(store, match_prefix, &m, err) < 0)
            return -1;
        if (m.matches > 1)
            return nsbox_err_set(err, EINVAL, "%s matches %d images; give more digits", name,
                                 m.matches);
        if (m.matches == 1) {
            strcpy(digest, m.digest);
            *by_digest = true;
            return 0;
        }
    }
    /* A digest is no reference: "docker.io/library/sha256:..." would name
     * nothing the caller said. */
    if (hex != name)
        return nsbox_err_set(err, ENOENT, "no image %s in the store (pull it first)", name);
    if (image_ref_parse(name, NULL, &ref, err) < 0)
        return -1;
    for (size_t i = 0; i < refs->n; i++) {
        if (strcmp(refs->v[i].name, ref.name) == 0 &&
            (view == NULL || view->name_visible(ref.name, view->ctx))) {
            strcpy(digest, refs->v[i].digest);
            image_ref_free(&ref);
            return 0;
        }
    }
    nsbox_err_set(err, ENOENT, "no image %s in the store (pull it first)", ref.name);
    image_ref_free(&ref);
    return -1;
}

static int lookup_own(struct images_store *store, const char *name, const struct images_view *view,
                      struct images_image *out, struct nsbox_err *err)
{
    struct ref_table refs;
    char digest[OCI_DIGEST_BUF];
    bool by_digest;

    memset(out, 0, sizeof(*out));
    if (refs_load(store, &refs, err) < 0)
        return -1;
    int r = resolve_name(store, &refs, name, view, digest, &by_digest, err);
    if (r == 0 && image_load(store, digest, out, err) < 0) {
        if (err->code == ENOENT)
            nsbox_err_set(err, ENOENT, "%s points at %s, which is not in the store", name, digest);
        r = -1;
    }
    if (r == 0 && attach_names(out, &refs, err) < 0) {
        images_image_free(out);
        r = -1;
    }
    refs_free(&refs);
    return r;
}

int images_find(struct images_store *store, const char *name, struct images_image *out,
                struct nsbox_err *err)
{
    return lookup_own(store, name, NULL, out, err);
}

int images_find_in_view(struct images_store *store, const char *name,
                        const struct images_view *view, struct images_image *out,
                        struct nsbox_err *err)
{
    return lookup_own(store, name, view, out, err);
}

int images_lookup(struct images_store *store, const char *name, struct images_image *out,
                  struct nsbox_err *err)
{
    return images_lookup_in_view(store, name, NULL, out, err);
}

int images_lookup_in_view(struct images_store *store, const char *name,
                          const struct images_view *view, struct images_image *out,
                          struct nsbox_err *err)
{
    if (lookup_own(store, name, view, out, err) == 0)
        return 0;
    if (err->code != ENOENT || store->n_shared == 0)
        return -1;
    /* Only a shared store has it: import it, then it is ours. */
    struct nsbox_err ierr = {0};
    if (images_import(store, name, &ierr) < 0) {
        *err = ierr; /* when absent everywhere: names every store */
        return -1;
    }
    return lookup_own(store, name, view, out, err);
}

struct list_ctx {
    struct images_store *store;
    const struct ref_table *refs;
    struct images_image *v;
    size_t n, cap;
    struct nsbox_err *err;
};

static int list_one(const char *hex, void *arg)
{
    struct list_ctx *c = arg;
    char digest[OCI_DIGEST_BUF];
    struct nsbox_err ignored;

    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct images_image *v = realloc(c->v, cap * sizeof(*v));
        if (v == NULL)
            return nsbox_err_set(c->err, ENOMEM, "out of memory");
        c->v = v;
        c->cap = cap;
    }
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    /* An image being removed right now, or unreadable: not listed. */
    if (image_load(c->store, digest, &c->v[c->n], &ignored) < 0)
        return 0;
    if (attach_names(&c->v[c->n], c->refs, c->err) < 0) {
        images_image_free(&c->v[c->n]);
        return -1;
    }
    c->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const struct images_image *x = a, *y = b;
    const char *nx = x->names[0] ? x->names[0] : x->digest;
    const char *ny = y->names[0] ? y->names[0] : y->digest;
    return strcmp(nx, ny);
}

int images_list(struct images_store *store, struct images_image **out, size_t *n,
                struct nsbox_err *err)
{
    struct ref_table refs;
    struct list_ctx c = {.store = store, .refs = &refs, .err = err};

    *out = NULL;
    *n = 0;
    if (refs_load(store, &refs, err) < 0)
        return -1;
    int r = for_each_image(store, list_one, &c, err);
    refs_free(&refs);
    if (r < 0) {
        for (size_t i = 0; i < c.n; i++)
            images_image_free(&c.v[i]);
        free(c.v);
        return -1;
    }
    /* An empty store has no array: qsort's pointer must not be NULL
     * (UBSan), even for 0 elements. */
    if (c.n > 1)
        qsort(c.v, c.n, sizeof(*c.v), by_name);
    *out = c.v;
    *n = c.n;
    return 0;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int images_names_under(struct images_store *store, const char *prefix, char ***out, size_t *n,
                       struct nsbox_err *err)
{
    struct ref_table refs;
    size_t len = strlen(prefix);

    *out = NULL;
    *n = 0;
    if (refs_load(store, &refs, err) < 0)
        return -1;
    char **v = calloc(refs.n + 1, sizeof(*v));
    if (v == NULL) {
        refs_free(&refs);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < refs.n; i++) {
        if (strncmp(refs.v[i].name, prefix, len) != 0)
            continue;
        if ((v[*n] = strdup(refs.v[i].name)) == NULL) {
            refs_free(&refs);
            images_names_free(v);
            *n = 0;
            return nsbox_err_set(err, ENOMEM, "out of memory");
        }
        (*n)++;
    }
    refs_free(&refs);
    if (*n > 1)
        qsort(v, *n, sizeof(*v), by_string);
    *out = v;
    return 0;
}

void images_names_free(char **names)
{
    for (char **p = names; p && *p; p++)
        free(*p);
    free(names);
}

int images_tag(struct images_store *store, const char *name, const char *new_name,
               struct nsbox_err *err)
{
    struct ref_table refs;
    struct image_ref ref;
    char digest[OCI_DIGEST_BUF];
    bool by_digest;

    if (image_ref_parse(new_name, NULL, &ref, err) < 0)
        return -1;
    if (ref.transport != IMAGE_TRANSPORT_DOCKER) {
        image_ref_free(&ref);
        return nsbox_err_set(err, EINVAL, "a tag is a Docker-style name, not %s", new_name);
    }
    _cleanup_close_ int rlock = nsbox_lock_at(store->root_fd, "refs.lock", LOCK_EX, err);
    int r = rlock < 0 ? -1 : refs_load(store, &refs, err);
    if (r == 0) {
        r = resolve_name(store, &refs, name, NULL, digest, &by_digest, err);
        if (r == 0)
            r = refs_set(&refs, ref.name, digest, err);
        if (r == 0)
            r = refs_save(store, &refs, err);
        refs_free(&refs);
    }
    image_ref_free(&ref);
    return r;
}

/* Removes an unreferenced image unless a sandbox holds its lease.  Returns
 * 1 when removed, 0 when in use, -1 on error.  The caller holds the store
 * lock exclusively. */
static int drop_image(struct images_store *store, const char *hex, struct nsbox_err *err)
{
    char path[128], grave[128];

    snprintf(path, sizeof(path), "images/%s/lease", hex);
    _cleanup_close_ int lease = nsbox_lock_at(store->root_fd, path, LOCK_EX | LOCK_NB, err);
    if (lease < 0) {
        if (err->code != EWOULDBLOCK)
            return -1;
        nsbox_err_clear(err);
        return 0;
    }
    /* Out of images/ in one rename, then deleted at leisure: a crash in
     * between leaves garbage in tmp/, never a half image. */
    snprintf(path, sizeof(path), "images/%s", hex);
    snprintf(grave, sizeof(grave), "tmp/rm-%.12s-%d", hex, (int)getpid());
    if (renameat(store->root_fd, path, store->root_fd, grave) < 0)
        return nsbox_err_sys(err, "cannot remove %s", path);
    if (store_remove_tree(store, "tmp", grave + 4, err) < 0)
        return -1;
    return 1;
}

static bool digest_referenced(const struct ref_table *refs, const char *digest)
{
    for (size_t i = 0; i < refs->n; i++)
        if (strcmp(refs->v[i].digest, digest) == 0)
            return true;
    return false;
}

int images_remove(struct images_store *store, const char *name, bool *removed,
                  struct nsbox_err *err)
{
    struct ref_table refs;
    char digest[OCI_DIGEST_BUF];
    bool by_digest;
    int r;

    if (removed != NULL)
        *removed = false;
    _cleanup_close_ int lock = nsbox_lock_at(store->root_fd, "lock", LOCK_EX, err);
    _cleanup_close_ int rlock = lock < 0 ? -1
                                         : nsbox_lock_at(store->root_fd, "refs.lock", LOCK_EX, err);
    if (rlock < 0 || refs_load(store, &refs, err) < 0)
        return -1;
    r = resolve_name(store, &refs, name, NULL, digest, &by_digest, err);
    if (r == 0) {
        if (by_digest) {
            for (size_t i = refs.n; i-- > 0;)
                if (strcmp(refs.v[i].digest, digest) == 0)
                    refs_del(&refs, refs.v[i].name);
        } else {
            struct image_ref ref;
            if (image_ref_parse(name, NULL, &ref, err) == 0) {
                refs_del(&refs, ref.name);
                image_ref_free(&ref);
            }
        }
        r = refs_save(store, &refs, err);
    }
    if (r == 0 && !digest_referenced(&refs, digest)) {
        int dropped = drop_image(store, oci_digest_hex(digest), err);
        if (dropped < 0)
            r = -1;
        else if (removed != NULL)
            *removed = dropped == 1;
    }
    refs_free(&refs);
    return r;
}

/* ---- prune ---- */

struct prune_ctx {
    struct images_store *store;
    const struct ref_table *refs;
    struct nsbox_strset keep_blobs;
    struct images_prune_stats *stats;
    struct nsbox_err *err;
};

static int keep_image_blobs(struct prune_ctx *c, const char *hex)
{
    char path[128];
    size_t len, i;
    json_t *layer;
    json_error_t jerr;

    snprintf(path, sizeof(path), "images/%s/image.json", hex);
    _cleanup_free_ char *text = nsbox_read_file_at(c->store->root_fd, path, 1 << 20, &len, c->err);
    if (text == NULL)
        return -1;
    _cleanup_json_ json_t *root = json_loadb(text, len, 0, &jerr);
    if (nsbox_strset_add(&c->keep_blobs, hex) < 0)
        return nsbox_err_set(c->err, ENOMEM, "out of memory");
    const char *config = json_string_value(json_object_get(root, "config_digest"));
    if (oci_digest_valid(config) && nsbox_strset_add(&c->keep_blobs, oci_digest_hex(config)) < 0)
        return nsbox_err_set(c->err, ENOMEM, "out of memory");
    json_array_foreach (json_object_get(root, "layers"), i, layer) {
        const char *d = json_string_value(layer);
        if (oci_digest_valid(d) && nsbox_strset_add(&c->keep_blobs, oci_digest_hex(d)) < 0)
            return nsbox_err_set(c->err, ENOMEM, "out of memory");
    }
    return 0;
}

static int prune_image(const char *hex, void *arg)
{
    struct prune_ctx *c = arg;
    char digest[OCI_DIGEST_BUF];

    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    if (!digest_referenced(c->refs, digest)) {
        int dropped = drop_image(c->store, hex, c->err);
        if (dropped < 0)
            return -1;
        if (dropped == 1) {
            c->stats->images++;
            return 0;
        }
        c->stats->in_use++;
    }
    return keep_image_blobs(c, hex);
}

static int prune_blobs(struct prune_ctx *c)
{
    _cleanup_closedir_ DIR *d = nsbox_opendir_at(c->store->root_fd, "blobs/sha256", c->err);
    if (d == NULL)
        return nsbox_err_prefix(c->err, "%s", c->store->root);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || nsbox_strset_has(&c->keep_blobs, de->d_name))
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT)
            return nsbox_err_sys(c->err, "cannot remove blob %s", de->d_name);
        c->stats->blobs++;
    }
    return 0;
}

int images_prune(struct images_store *store, struct images_prune_stats *stats,
                 struct nsbox_err *err)
{
    struct ref_table refs;
    struct prune_ctx c = {.store = store, .refs = &refs, .stats = stats, .err = err};

    memset(stats, 0, sizeof(*stats));
    /* Exclusive: no pull is running, so tmp/ holds only leftovers and no
     * blob is half-way to being used. */
    _cleanup_close_ int lock = nsbox_lock_at(store->root_fd, "lock", LOCK_EX, err);
    if (lock < 0 || refs_load(store, &refs, err) < 0)
        return -1;
    int r = store_clean_staging(store, &stats->staging, err);
    if (r == 0)
        r = for_each_image(store, prune_image, &c, err);
    if (r == 0)
        r = prune_blobs(&c);
    nsbox_strset_clear(&c.keep_blobs);
    refs_free(&refs);
    return r;
}
