/* A box's life: create (image -> leased, configured, started sandbox),
 * open (a detached one, from its record), destroy, close, list, remove.
 *
 * Contract: box_create() is the only place a struct nsbox_sandbox_config
 * is filled in; everything it takes comes from the spec (which starts as
 * box_spec_init's copy of box_defaults), else from box_defaults (shm,
 * rlimits), else from the image.  On failure nothing is left behind:
 * no sandbox, no lease, no workspace lock. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/log.h"
#include "../runtime/seccomp.h"
#include "../runtime/spawner.h"
#include "forward.h"
#include "internal.h"
#include "nested.h"
#include "net.h"
#include "pause.h"
#include "spec.h"

static void box_init(struct box_ctx *ctx, struct box *box)
{
    memset(box, 0, sizeof(*box));
    box->ctx = ctx;
    box->lease = -1;
    box->workspace_lock = -1;
    box->sb.pidfd = box->sb.ctl = -1;
}

void box_free(struct box *box)
{
    if (box->lease >= 0)
        close(box->lease);
    if (box->workspace_lock >= 0)
        close(box->workspace_lock);
    box->lease = box->workspace_lock = -1;
    nsbox_strvfree(box->env);
    nsbox_strvfree(box->command);
    free(box->workdir);
    free(box->image);
    free(box->workspace);
    free(box->net);
    box->net = NULL;
    if (box->secrets != NULL)
        explicit_bzero(box->secrets, box->n_secrets * sizeof(*box->secrets));
    free(box->secrets);
    box->secrets = NULL;
    box->n_secrets = 0;
    box->env = box->command = NULL;
    box->workdir = box->image = box->workspace = NULL;
    /* The layout stays: a detached box's, closed, still uses it. */
    free(box->nested_dir);
    nsbox_strvfree(box->nested_images);
    box->nested_dir = NULL;
    box->nested_images = NULL;
}

/* The image, pulled first when the spec allows and the store lacks it. */
static int find_image(struct box_ctx *ctx, const struct box_spec *spec, struct images_image *im,
                      struct nsbox_err *err)
{
    if (images_lookup(&ctx->store, spec->image, im, err) == 0)
        return 0;
    if (err->code != ENOENT || !spec->pull)
        return -1;
    struct images_pull_opts po = {.tls_verify = true, .progress_fd = spec->pull_progress_fd};
    return images_pull(&ctx->store, spec->image, &po, im, err);
}

void box_spec_init(struct box_spec *spec)
{
    *spec = (struct box_spec){.limits = box_defaults.limits,
                              .tmp_bytes = box_defaults.tmp_bytes,
                              .disk_bytes = box_defaults.disk_bytes,
                              .workspace_bytes = box_defaults.workspace_bytes,
                              .pull_progress_fd = -1};
}

/* The record's fields from the image and the spec (no sandbox yet). */
static int fill(struct box *box, const struct box_spec *spec, const struct images_image *im,
                struct nsbox_err *err)
{
    const char *name = spec->name                  ? spec->name
                       : im->names && im->names[0] ? im->names[0]
                                                   : im->digest;
    snprintf(box->digest, sizeof(box->digest), "%s", im->digest);
    box->image = strdup(name);
    box->env = box_merge_env_copy(im->config.env, spec->env);
    box->workdir = strdup(spec->workdir ? spec->workdir : box_defaults.workdir);
    box->limits = spec->limits;
    box->disk_bytes = spec->disk_bytes;
    box->created = time(NULL);
    if (box->image == NULL || box->env == NULL || box->workdir == NULL ||
        box_image_command(im->config.entrypoint, im->config.cmd, &box->command) < 0)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (box_secrets_adopt(box, spec, err) < 0)
        return -1;
    return box_resolve_user(im->rootfs, spec->user ? spec->user : im->config.user, &box->uid,
                            &box->gid, err);
}

/* binds: the spec's, then its volumes opened (box_volumes_open). */
static int start(struct box *box, const struct box_spec *spec, const char *rootfs,
                 const struct nsbox_seccomp *seccomp, const char *workspace_dir,
                 const struct nsbox_bind *binds, size_t n_binds, struct nsbox_err *err)
{
    struct box_ctx *ctx = box->ctx;
    const struct box_limits *l = &box->limits;
    struct nsbox_sandbox_config cfg = {
        .rootfs = rootfs,
        .state_root = ctx->state_root,
        .env = box->env,
        .workdir = box->workdir,
        .workspace = workspace_dir,
        .binds = binds,
        .n_binds = n_binds,
        .uid = box->uid,
        .gid = box->gid,
        .limits = {.memory_bytes = l->memory_bytes,
                   .pids = l->pids,
                   .cpu_quota_us = (uint64_t)(l->cpus * 100000),
                   .cpu_period_us = 100000},
        .tmp_bytes = spec->tmp_bytes,
        .shm_bytes = box_defaults.shm_bytes,
        .rlimit_nofile = box_defaults.rlimit_nofile,
        .rlimit_fsize = box_defaults.rlimit_fsize,
        .disk_bytes = spec->disk_bytes,
        .disk_backend = ctx->disk_backend,
        .mode = ctx->mode,
        .seccomp = seccomp,
        .rootless_map = ctx->store.rootless ? &ctx->store.idmap : NULL,
        .detach = spec->detach,
        .keep_fd = box->lease,
        .isolation = ctx->isolation,
        .nested = spec->nested,
    };
    box->nested = spec->nested;
    cfg.nested_images = box->nested_dir; /* shown at /run/nsbox/images */
    return nsbox_sandbox_create(&cfg, &box->sb, err);
}

/* The spec's profile through the cache (*owned freed by the caller), else
 * the ctx's default. */
static const struct nsbox_seccomp *seccomp_for(struct box_ctx *ctx, const struct box_spec *spec,
                                               struct nsbox_seccomp **owned, struct nsbox_err *err)
{
    if (spec->nested && spec->seccomp_profile != NULL)
        return nsbox_err_set(err, EINVAL,
                             "--nested takes nsbox's nested seccomp profile: not with "
                             "--seccomp-profile"),
               NULL;
    if (spec->nested && ctx->nested_profile == NULL)
        return nsbox_err_set(err, EINVAL, "nested sandboxes are not available here"), NULL;
    if (spec->nested)
        return box_seccomp_cached(ctx, ctx->nested_profile, ctx->nested_profile_len,
                                  "nsbox's nested profile", owned, err) < 0
                   ? NULL
                   : *owned;
    if (spec->seccomp_profile == NULL)
        return box_ctx_default_seccomp(ctx, err);
    if (box_seccomp_cached(ctx, spec->seccomp_profile, spec->seccomp_profile_len,
                           spec->seccomp_profile_name, owned, err) < 0)
        return NULL;
    return *owned;
}

static int create(struct box_ctx *ctx, const struct box_spec *spec, struct box *box,
                  struct nsbox_err *err)
{
    char ws_dir[PATH_MAX];
    _cleanup_seccomp_ struct nsbox_seccomp *owned = NULL;
    struct images_image im;

    if (spec->workspace != NULL) {
        if ((box->workspace_lock = box_workspace_claim(ctx, spec->workspace, ws_dir, sizeof(ws_dir),
                                                       err)) < 0 ||
            (box->workspace = strdup(spec->workspace)) == NULL)
            return box->workspace_lock < 0 ? -1 : nsbox_err_set(err, ENOMEM, "out of memory");
        if (box_workspace_budget(ctx, spec->workspace, ws_dir, spec->workspace_bytes, &box->ws,
                                 err) < 0)
            return -1;
    }
    /* A refused volume fails before any pull. */
    struct nsbox_bind binds[NSBOX_MAX_BINDS];
    size_t n_binds;
    if (box_volumes_open(ctx, spec, binds, &n_binds, err) < 0)
        return -1;
    if (find_image(ctx, spec, &im, err) < 0) {
        box_volumes_close(binds, n_binds);
        return -1;
    }
    const struct nsbox_seccomp *seccomp = NULL;
    int r = -1;
    if ((box->lease = images_lease(&ctx->store, im.digest, err)) >= 0 &&
        fill(box, spec, &im, err) == 0 && (seccomp = seccomp_for(ctx, spec, &owned, err)) &&
        box_nested_layout(ctx, spec, box, err) == 0)
        r = start(box, spec, im.rootfs, seccomp, spec->workspace ? ws_dir : NULL, binds, n_binds,
                  err);
    box_volumes_close(binds, n_binds);
    images_image_free(&im);
    return r;
}

/* Landlock mode: what it cannot give is refused by name, before anything
 * starts (runtime/landlock.h). */
static int landlock_refusals(const struct box_spec *spec, struct nsbox_err *err)
{
    const char *what = spec->workspace != NULL                 ? "a persistent workspace"
                       : spec->n_volumes > 0                   ? "volumes (-v)"
                       : spec->net != NULL && spec->net->n > 0 ? "network rules (--net)"
                       : spec->n_secrets > 0                   ? "secrets (--secret)"
                       : spec->user != NULL                    ? "another user (--user)"
                                                               : NULL;
    if (what == NULL)
        return 0;
    return nsbox_err_set(err, ENOTSUP,
                         "landlock isolation cannot give %s: it has no user, mount or network "
                         "namespace (use --isolation=namespaces)",
                         what);
}

/* Landlock mode: no image.  The host's userland runs, as the caller's own
 * uid (nobody as root: landlock_spawn.c), in the sandbox's own directory,
 * which becomes the working directory once the sandbox exists. */
static int create_landlock(struct box_ctx *ctx, const struct box_spec *spec, struct box *box,
                           struct nsbox_err *err)
{
    static char *host_env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                               "LANG=C.UTF-8", NULL};
    _cleanup_seccomp_ struct nsbox_seccomp *owned = NULL;
    const struct nsbox_seccomp *seccomp;

    if (landlock_refusals(spec, err) < 0)
        return -1;
    box->image = strdup("host");
    box->env = box_merge_env_copy(host_env, spec->env);
    box->workdir = strdup("/");
    box->limits = spec->limits;
    box->disk_bytes = spec->disk_bytes;
    box->created = time(NULL);
    box->uid = geteuid() == 0 ? 65534 : getuid();
    box->gid = geteuid() == 0 ? 65534 : getgid();
    if (box->image == NULL || box->env == NULL || box->workdir == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if ((seccomp = seccomp_for(ctx, spec, &owned, err)) == NULL ||
        start(box, spec, "/", seccomp, NULL, spec->binds, spec->n_binds, err) < 0)
        return -1;
    free(box->workdir);
    if ((box->workdir = strdup(box->sb.workdir)) == NULL) {
        struct nsbox_err ignored;
        nsbox_sandbox_destroy(&box->sb, &ignored);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    return 0;
}

int box_spawner_start(struct box_ctx *ctx, struct nsbox_err *err)
{
    /* NSBOX_SPAWNER=0: the old way, for make bench's side by side. */
    const char *off = getenv("NSBOX_SPAWNER");
    if (ctx->isolation == NSBOX_ISOLATION_LANDLOCK || (off != NULL && strcmp(off, "0") == 0))
        return 0;
    return nsbox_spawner_start(err);
}

void box_spawner_stop(void)
{
    nsbox_spawner_stop();
}

/* A nested box's Docker API (boxes/nested.h), and the record saved again
 * with DOCKER_HOST in its env. */
static int start_nested(struct box *box, const struct box_spec *spec, struct nsbox_err *err)
{
    if (!spec->nested || !box->sb.nested)
        return 0;
    if (box_nested_start(box, err) < 0)
        return -1;
    return spec->detach ? box_record_save(box, err) : 0;
}

int box_create(struct box_ctx *ctx, const struct box_spec *spec, struct box *box,
               struct nsbox_err *err)
{
    box_init(ctx, box);
    if (box_nested_check(ctx, spec, err) < 0)
        return -1;
    if ((ctx->isolation == NSBOX_ISOLATION_LANDLOCK ? create_landlock(ctx, spec, box, err)
                                                    : create(ctx, spec, box, err)) < 0) {
        box_nested_layout_remove(box);
        box_free(box);
        return -1;
    }
    /* The layout's owner, for the sweep after a crash (box_ctx_gc). */
    if (box->nested_dir != NULL &&
        images_export_set_owner(&ctx->store, box->nested_dir, box->sb.state_dir, err) < 0) {
        struct nsbox_err ignored;
        nsbox_sandbox_destroy(&box->sb, &ignored);
        box_nested_layout_remove(box);
        box_free(box);
        return -1;
    }
    /* The allow-list is in force before anything runs, and in the record
     * (box_net_set saves it) so that a later `nsbox exec` knows it. */
    box->recorded = spec->detach;
    if ((spec->net != NULL && spec->net->n > 0
             ? box_net_set(box, spec->net, box->secrets, box->n_secrets, err)
         : spec->detach ? box_record_save(box, err)
                        : 0) < 0 ||
        start_nested(box, spec, err) < 0) {
        struct nsbox_err ignored;
        nsbox_sandbox_destroy(&box->sb, &ignored);
        box_nested_layout_remove(box);
        box_free(box);
        return -1;
    }
    return 0;
}

int box_open(struct box_ctx *ctx, const char *id, struct box *box, struct nsbox_err *err)
{
    box_init(ctx, box);
    if (nsbox_sandbox_open(ctx->state_root, id, &box->sb, err) < 0)
        return -1;
    if (box_record_load(box->sb.state_dir, box, err) < 0) {
        box_close(box);
        return -1;
    }
    box->recorded = true;
    /* The audit is per command: what this process runs is reported from
     * here on, not what earlier `nsbox exec`s already reported. */
    struct nsbox_err ignored;
    json_t *old = box->net_ever ? box_net_take_audit(box, &ignored) : NULL;
    json_decref(old);
    return 0;
}

int box_destroy(struct box *box, struct nsbox_err *err)
{
    int r = nsbox_sandbox_destroy(&box->sb, err);
    box_nested_layout_remove(box);
    box_free(box);
    return r;
}

int box_destroy_detached(struct box *box, struct nsbox_err *err)
{
    /* The workspace is free once nothing of the sandbox runs, not once the
     * removal is done: released before the remover forks (a copy of the
     * lock in it would hold the workspace until it finishes, and the next
     * `run` on it would find it in use). */
    if (box->workspace_lock >= 0) {
        nsbox_sandbox_kill_wait(&box->sb, 2000);
        close(box->workspace_lock);
        box->workspace_lock = -1;
    }
    int r = nsbox_sandbox_destroy_detached(&box->sb, err);
    /* Nothing of the sandbox runs any more: its view of the layout is
     * gone with its mount namespace's last process. */
    box_nested_layout_remove(box);
    box_free(box);
    return r;
}

void box_trim(struct box *box)
{
    if (box->lease >= 0)
        close(box->lease);
    box->lease = -1;
    nsbox_sandbox_trim(&box->sb);
}

void box_close(struct box *box)
{
    nsbox_sandbox_close(&box->sb);
    box_free(box);
}

int box_remove(struct box_ctx *ctx, const char *id, struct nsbox_err *err)
{
    struct nsbox_sandbox sb;

    /* Not running: the state says enough to remove what is left. */
    if (nsbox_sandbox_open(ctx->state_root, id, &sb, err) < 0 && err->code != ESRCH)
        return -1;
    /* The state file carries the id map; one written before it did (or a
     * sandbox that died before writing it) gets the store's. */
    if (ctx->store.rootless && sb.idmap.n_uid == 0)
        sb.idmap = ctx->store.idmap;
    box_forward_kill(sb.state_dir); /* create -p's forwarder (forward.h) */
    /* A nested box's image layout (its record says where) goes with it. */
    struct box rec;
    struct nsbox_err ignored;
    box_init(ctx, &rec);
    bool have = box_record_load(sb.state_dir, &rec, &ignored) == 0;
    int r = nsbox_sandbox_destroy(&sb, err);
    if (have)
        box_nested_layout_remove(&rec);
    box_free(&rec);
    return r;
}

static void info_of(struct box_ctx *ctx, const char *id, struct box_info *out)
{
    struct box b;
    struct nsbox_err ignored;
    char dir[PATH_MAX];

    memset(out, 0, sizeof(*out));
    snprintf(out->id, sizeof(out->id), "%s", id);
    box_init(ctx, &b);
    out->running = nsbox_sandbox_open(ctx->state_root, id, &b.sb, &ignored) == 0;
    out->pid = out->running ? b.sb.pid : 0;
    snprintf(dir, sizeof(dir), "%s/%s", ctx->state_root, id);
    bool have = box_record_load(dir, &b, &ignored) == 0;
    snprintf(out->image, sizeof(out->image), "%s", have ? b.image : "-");
    if (out->running)
        box_forward_labels(dir, out->ports, sizeof(out->ports));
    out->paused = out->running && box_paused(&b);
    if (out->running)
        nsbox_sandbox_close(&b.sb);
    box_free(&b);
}

int box_list(struct box_ctx *ctx, struct box_info **out, size_t *n, struct nsbox_err *err)
{
    _cleanup_strv_ char **ids = nsbox_sandbox_list(ctx->state_root, err);
    size_t count = 0;

    *out = NULL;
    *n = 0;
    if (ids == NULL)
        return err->code == ENOENT ? 0 : -1; /* no sandbox was ever made */
    while (ids[count])
        count++;
    *out = calloc(count + 1, sizeof(**out));
    if (*out == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < count; i++)
        info_of(ctx, ids[i], &(*out)[i]);
    *n = count;
    return 0;
}

void box_exec_defaults(const struct box *box, struct nsbox_exec_opts *eo)
{
    *eo = (struct nsbox_exec_opts){.env = box->env,
                                   .cwd = box->workdir,
                                   .uid = box->uid,
                                   .gid = box->gid,
                                   .timeout_s = box->limits.timeout_s,
                                   .stdin_fd = -1,
                                   .output_cap = box_defaults.output_cap,
                                   .out_fd = -1,
                                   .err_fd = -1};
}
