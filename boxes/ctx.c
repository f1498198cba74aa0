/* The context every box is made in (the store, STORE/sandboxes, the limits
 * mode, the default seccomp filter) and the one table of policy defaults.
 *
 * Contract: box_ctx_open() once per CLI command or per server; the ctx is
 * then shared, read-only but for the default filter, which is compiled on
 * first use under ctx->lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../runtime/seccomp.h"
#include "internal.h"
#include "nested.h"

/* Where the CLI's and the server's defaults differ, the front end sets its
 * own in the spec: the server's commands time out after 30 s (serve
 * --timeout), the CLI's never unless --timeout is given. */
const struct box_policy box_defaults = {
    .limits = {.memory_bytes = 512ull << 20, .cpus = 1, .pids = 256, .timeout_s = 0},
    .tmp_bytes = 256ull << 20,
    .shm_bytes = 64ull << 20,
    .rlimit_nofile = 1024,
    .rlimit_fsize = 1ull << 30,
    .workdir = "/workspace",
    .output_cap = 1u << 20,
    .disk_bytes = 1ull << 30,
    .workspace_bytes = 1ull << 30,
};

int box_disk_backend_from_env(enum nsbox_disk_backend *out, struct nsbox_err *err)
{
    const char *v = getenv("NSBOX_DISK_BACKEND");
    if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0)
        *out = NSBOX_DISK_AUTO;
    else if (strcmp(v, "tmpfs") == 0)
        *out = NSBOX_DISK_USE_TMPFS;
    else if (strcmp(v, "quota") == 0)
        *out = NSBOX_DISK_USE_QUOTA;
    else
        return nsbox_err_set(err, EINVAL,
                             "NSBOX_DISK_BACKEND is \"%.64s\": it takes auto, tmpfs or quota", v);
    return 0;
}

enum nsbox_limits_mode box_limits_mode_from_env(void)
{
    const char *mode = getenv("NSBOX_LIMITS");
    return mode && strcmp(mode, "best-effort") == 0 ? NSBOX_LIMITS_BEST_EFFORT
                                                    : NSBOX_LIMITS_STRICT;
}

int box_parse_limits_mode(const char *s, enum nsbox_limits_mode *mode)
{
    if (strcmp(s, "strict") == 0)
        *mode = NSBOX_LIMITS_STRICT;
    else if (strcmp(s, "best-effort") == 0)
        *mode = NSBOX_LIMITS_BEST_EFFORT;
    else
        return -1;
    return 0;
}

int box_parse_isolation(const char *s, enum nsbox_isolation *mode, struct nsbox_err *err)
{
    return nsbox_isolation_parse(s, mode, err);
}

const char *box_isolation_name(enum nsbox_isolation mode)
{
    return nsbox_isolation_name(mode);
}

int box_ctx_open(struct box_ctx *ctx, const struct box_ctx_opts *opts, struct nsbox_err *err)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->store.root_fd = -1;
    ctx->mode = opts->mode;
    ctx->default_profile = opts->default_profile;
    ctx->default_profile_len = opts->default_profile_len;
    ctx->nested_profile = opts->nested_profile;
    ctx->nested_profile_len = opts->nested_profile_len;
    ctx->version = opts->version;
    ctx->isolation = opts->isolation;
    pthread_mutex_init(&ctx->lock, NULL);
    if (box_disk_backend_from_env(&ctx->disk_backend, err) < 0)
        return -1;
    if (images_store_open(&ctx->store, opts->store_dir, err) < 0 ||
        images_store_configure(&ctx->store, opts->store_cfg, err) < 0)
        return -1;
    if (asprintf(&ctx->state_root, "%s/sandboxes", ctx->store.root) < 0) {
        ctx->state_root = NULL;
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    return 0;
}

void box_ctx_close(struct box_ctx *ctx)
{
    nsbox_seccomp_free(ctx->seccomp);
    ctx->seccomp = NULL;
    free(ctx->state_root);
    ctx->state_root = NULL;
    images_store_close(&ctx->store);
    pthread_mutex_destroy(&ctx->lock);
}

const struct nsbox_seccomp *box_ctx_default_seccomp(struct box_ctx *ctx, struct nsbox_err *err)
{
    pthread_mutex_lock(&ctx->lock);
    if (ctx->seccomp == NULL && ctx->default_profile == NULL)
        nsbox_err_set(err, EINVAL, "no default seccomp profile");
    else if (ctx->seccomp == NULL)
        box_seccomp_cached(ctx, ctx->default_profile, ctx->default_profile_len, NULL, &ctx->seccomp,
                           err);
    const struct nsbox_seccomp *f = ctx->seccomp;
    pthread_mutex_unlock(&ctx->lock);
    return f;
}

/* A layout's owner (images_export_set_owner: the sandbox's state
 * directory) is alive while that directory is there: the gc just removed
 * those of the sandboxes that are gone. */
static bool owner_alive(const char *owner, void *arg)
{
    (void)arg;
    return access(owner, F_OK) == 0 || errno != ENOENT;
}

int box_ctx_gc(struct box_ctx *ctx, struct nsbox_err *err)
{
    if (nsbox_sandbox_gc(ctx->state_root, ctx->store.rootless ? &ctx->store.idmap : NULL, err) < 0)
        return -1;
    /* Nested images' layouts of sandboxes that died without removing
     * them (boxes/nested.h); one without an owner after 10 minutes. */
    return images_export_sweep(&ctx->store, owner_alive, NULL, BOX_NESTED_LAYOUT_GRACE_S, err) < 0
               ? -1
               : 0;
}

/* Whether lang is one of the comma/space separated languages in list. */
static bool has_language(const char *list, const char *lang)
{
    size_t n = strlen(lang);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (strncmp(p, lang, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
        p = strchr(p, ',');
    }
    return false;
}

/* The first image in v serving language: its digest (own store) or its
 * first name (a shared store's, which images_lookup then imports).  A
 * private image (a package cache, a commit: images_name_private) never
 * serves a language: it is used only where it is named.  Frees v. */
static bool pick_language(struct images_image *v, size_t n, const char *language, char *buf,
                          size_t size)
{
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        if (!found && !images_image_private(&v[i]) &&
            has_language(images_image_languages(&v[i]), language)) {
            snprintf(buf, size, "%s", v[i].origin && v[i].names[0] ? v[i].names[0] : v[i].digest);
            found = true;
        }
        images_image_free(&v[i]);
    }
    free(v);
    return found;
}

/* Whether the own store has an image by name (never imports). */
static bool own_has(struct box_ctx *ctx, const char *name)
{
    struct images_image image;
    struct nsbox_err ignored;
    if (images_find(&ctx->store, name, &image, &ignored) < 0)
        return false;
    images_image_free(&image);
    return true;
}

int box_image_for_language(struct box_ctx *ctx, const char *language, const char *preferred,
                           char *buf, size_t size, struct nsbox_err *err)
{
    struct images_image *v;
    size_t n;

    if (preferred != NULL && own_has(ctx, preferred))
        return snprintf(buf, size, "%s", preferred), 0;
    if (images_list(&ctx->store, &v, &n, err) < 0)
        return -1;
    if (pick_language(v, n, language, buf, size))
        return 0;
    /* A shared store in the same order: its preferred image first. */
    if (preferred != NULL && images_shared_has(&ctx->store, preferred))
        return snprintf(buf, size, "%s", preferred), 0;
    if (images_list_shared(&ctx->store, &v, &n, err) < 0)
        return -1;
    if (pick_language(v, n, language, buf, size))
        return 0;
    return nsbox_err_set(err, ENOENT, "no image for language \"%s\"", language);
}

int box_require_namespaces(const struct box *box, const char *what, struct nsbox_err *err)
{
    if (box->sb.isolation != NSBOX_ISOLATION_LANDLOCK)
        return 0;
    return nsbox_err_set(err, ENOTSUP,
                         "%s is not available in a sandbox with landlock isolation: it has no "
                         "image, overlay or network namespace (use --isolation=namespaces)",
                         what);
}
