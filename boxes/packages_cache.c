/* The install cache as the store's owner sees it: `nsbox images` lists
 * the cache images (with the note box_install wrote next to each), and
 * `nsbox prune` drops them (packages.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/cleanup_json.h"
#include "../common/fsutil.h"
#include "packages.h"

/* The key of a cache reference, or NULL for another name. */
static const char *cache_key(const char *name)
{
    size_t n = strlen(BOX_PKG_CACHE_REPO);
    if (strncmp(name, BOX_PKG_CACHE_REPO ":", n + 1) != 0 ||
        strlen(name + n + 1) != BOX_PKG_KEY_LEN ||
        strspn(name + n + 1, "0123456789abcdef") != BOX_PKG_KEY_LEN)
        return NULL;
    return name + n + 1;
}

void box_pkg_cache_ref(const char *key, char *buf, size_t size)
{
    snprintf(buf, size, "%s:%s", BOX_PKG_CACHE_REPO, key);
}

/* What STORE/cache/packages/KEY.json says, into e (left as "?" when it
 * cannot be read: the image is listed all the same). */
static void read_note(struct images_store *store, struct box_pkg_cache_entry *e)
{
    char name[sizeof("cache/packages/.json") + BOX_PKG_KEY_LEN];
    size_t len, at = 0;
    struct nsbox_err ignored;

    snprintf(e->manager, sizeof(e->manager), "?");
    snprintf(e->base, sizeof(e->base), "?");
    snprintf(name, sizeof(name), "cache/packages/%s.json", e->key);
    _cleanup_free_ char *text = nsbox_read_file_at(store->root_fd, name, 1 << 20, &len, &ignored);
    _cleanup_json_ json_t *j = text ? json_loadb(text, len, 0, NULL) : NULL;
    json_t *v;
    size_t i;
    if (j == NULL)
        return;
    snprintf(e->manager, sizeof(e->manager), "%s",
             json_string_value(json_object_get(j, "manager")) ?: "?");
    snprintf(e->base, sizeof(e->base), "%s", json_string_value(json_object_get(j, "base")) ?: "?");
    snprintf(e->base_digest, sizeof(e->base_digest), "%s",
             json_string_value(json_object_get(j, "base_digest")) ?: "");
    json_array_foreach (json_object_get(j, "packages"), i, v)
        if (at < sizeof(e->packages))
            at += (size_t)snprintf(e->packages + at, sizeof(e->packages) - at, "%s%s",
                                   at ? " " : "", json_string_value(v) ?: "");
    if (at == 0)
        snprintf(e->packages, sizeof(e->packages), "-r %s",
                 json_string_value(json_object_get(j, "requirements_file")) ?: "?");
}

int box_pkg_cache_list(struct images_store *store, struct box_pkg_cache_entry **out, size_t *n,
                       struct nsbox_err *err)
{
    char **names;
    size_t nn;

    *out = NULL;
    *n = 0;
    if (images_names_under(store, BOX_PKG_CACHE_REPO ":", &names, &nn, err) < 0)
        return -1;
    *out = calloc(nn ? nn : 1, sizeof(**out));
    if (*out == NULL) {
        images_names_free(names);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    for (char **p = names; *p; p++) {
        const char *key = cache_key(*p);
        if (key == NULL)
            continue;
        struct box_pkg_cache_entry *e = &(*out)[(*n)++];
        snprintf(e->key, sizeof(e->key), "%s", key);
        read_note(store, e);
    }
    images_names_free(names);
    return 0;
}

int box_pkg_cache_clear(struct images_store *store, size_t *removed, struct nsbox_err *err)
{
    struct box_pkg_cache_entry *v;
    size_t n;
    char ref[160], name[sizeof("cache/packages/.lock") + BOX_PKG_KEY_LEN];

    *removed = 0;
    if (box_pkg_cache_list(store, &v, &n, err) < 0)
        return -1;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        /* One being built or read under its lock is left to that session. */
        snprintf(name, sizeof(name), "cache/packages/%s.lock", v[i].key);
        struct nsbox_err lerr;
        _cleanup_close_ int lock = nsbox_lock_at(store->root_fd, name, LOCK_EX | LOCK_NB, &lerr);
        if (lock < 0)
            continue;
        box_pkg_cache_ref(v[i].key, ref, sizeof(ref));
        if (images_remove(store, ref, NULL, err) < 0) {
            r = -1;
            break;
        }
        snprintf(name, sizeof(name), "cache/packages/%s.json", v[i].key);
        unlinkat(store->root_fd, name, 0); /* the lock file stays: a waiter may hold it open */
        (*removed)++;
    }
    free(v);
    return r;
}
