/* sandbox_create, sandbox_list, sandbox_stop, list_languages, list_images,
 * and the session's sandbox bookkeeping. */
#include <errno.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "../images/spec.h"
#include "pool.h"
#include "sandboxes.h"
#include "server.h"
#include "tool_args.h"

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

/* --image LANG=REF first, then the store's images by their
 * sandbox.language label.  Returns a reference (static storage: the
 * configured one, or a digest kept in buf) or NULL. */
const char *mcp_image_for_language(struct mcp_session *s, const char *language)
{
    static __thread char buf[OCI_DIGEST_BUF];
    struct images_image *v;
    size_t n;
    struct nsbox_err err;

    for (size_t i = 0; i < s->cfg->n_langs; i++)
        if (strcmp(s->cfg->langs[i].language, language) == 0)
            return s->cfg->langs[i].ref;
    if (images_list(&s->cfg->store, &v, &n, &err) < 0)
        return NULL;
    const char *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (found == NULL && has_language(images_image_languages(&v[i]), language)) {
            snprintf(buf, sizeof(buf), "%s", v[i].digest);
            found = buf;
        }
        images_image_free(&v[i]);
    }
    free(v);
    return found;
}

/* The image's env with the caller's on top, owned by the sandbox (the
 * image record it came from is freed right after start). */
static char **copy_env(char **image_env, char **extra)
{
    char **merged = images_merge_env(image_env, extra);
    size_t n = 0;
    while (merged && merged[n])
        n++;
    char **v = merged ? calloc(n + 1, sizeof(char *)) : NULL;
    for (size_t i = 0; v && i < n; i++)
        if ((v[i] = strdup(merged[i])) == NULL) {
            nsbox_strvfree(v);
            v = NULL;
        }
    free(merged);
    return v;
}

static int start(struct mcp_server *cfg, struct mcp_sandbox *m, const struct images_image *im,
                 const char *workspace_dir, struct nsbox_err *err)
{
    struct nsbox_sandbox_config sc = {
        .rootfs = im->rootfs, .state_root = cfg->state_root, .env = m->env,
        .workdir = m->workdir, .uid = m->uid, .gid = m->gid,
        .limits = {.memory_bytes = m->limits.memory_mb << 20, .pids = m->limits.pids,
                   .cpu_quota_us = (uint64_t)(m->limits.cpus * 100000), .cpu_period_us = 100000},
        .tmp_bytes = 256ull << 20, .shm_bytes = 64ull << 20, .rlimit_nofile = 1024,
        .rlimit_fsize = 1ull << 30, .mode = cfg->mode, .seccomp = cfg->seccomp,
        .rootless_map = cfg->store.rootless ? &cfg->store.idmap : NULL, .detach = false,
        .keep_fd = m->lease, .workspace = workspace_dir,
    };
    return nsbox_sandbox_create(&sc, &m->sb, err);
}

/* A started sandbox, not yet in any session. */
/* STORE/workspaces/NAME, created, and locked for this sandbox alone.
 * Returns the lock fd (the path in dir) or -1 with error set. */
static int claim_workspace(struct mcp_server *cfg, const char *name, char *dir, size_t size,
                           char *error, size_t error_size)
{
    struct nsbox_err err = {0};
    if (!mcp_workspace_name_ok(name)) { /* checked by the decoder already */
        snprintf(error, error_size, "workspace names are 1-64 of a-z 0-9 . _ -, not starting "
                                    "with . or -");
        return -1;
    }
    snprintf(dir, size, "%s/workspaces", cfg->store.root);
    mkdir(dir, 0700);
    int wfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char lock[80];
    snprintf(lock, sizeof(lock), "%s.lock", name);
    int lfd = wfd < 0 ? -1 : nsbox_lock_at(wfd, lock, LOCK_EX | LOCK_NB, &err);
    if (lfd < 0) {
        if (wfd >= 0)
            close(wfd);
        snprintf(error, error_size, err.code == EWOULDBLOCK
                                        ? "workspace \"%s\" is in use by another sandbox"
                                        : "cannot use workspace \"%s\": %s",
                 name, err.msg);
        return -1;
    }
    if (mkdirat(wfd, name, 0755) < 0 && errno != EEXIST) {
        snprintf(error, error_size, "cannot create workspace \"%s\": %s", name, strerror(errno));
        close(wfd), close(lfd);
        return -1;
    }
    close(wfd);
    snprintf(dir + strlen(dir), size - strlen(dir), "/%s", name);
    return lfd;
}

static struct mcp_sandbox *build_counted(struct mcp_server *cfg, const char *image,
                                         const struct mcp_limits *limits, char **env,
                                         const char *workdir, const char *workspace,
                                         bool one_shot, char *ws_dir_buf, int *ws_lock_out,
                                         char *error, size_t error_size);

struct mcp_sandbox *mcp_sandbox_build(struct mcp_server *cfg, const char *image,
                                      const struct mcp_limits *limits, char **env,
                                      const char *workdir, const char *workspace, bool one_shot,
                                      char *error, size_t error_size)
{
    char ws_dir[PATH_MAX];
    int ws_lock = -1;

    /* Server-wide: sessions times their caps would be too many for one
     * host; every sandbox, kept, one-shot or spare, counts here. */
    pthread_mutex_lock(&cfg->pool_lock);
    bool full = cfg->n_live >= cfg->max_total;
    if (!full)
        cfg->n_live++;
    pthread_mutex_unlock(&cfg->pool_lock);
    if (full) {
        snprintf(error, error_size, "the server runs %zu sandboxes, its limit; try again when "
                                    "some have finished",
                 cfg->max_total);
        return NULL;
    }
    struct mcp_sandbox *m = build_counted(cfg, image, limits, env, workdir, workspace, one_shot,
                                          ws_dir, &ws_lock, error, error_size);
    if (m == NULL) {
        pthread_mutex_lock(&cfg->pool_lock);
        cfg->n_live--;
        pthread_mutex_unlock(&cfg->pool_lock);
    }
    return m;
}

/* Frees a sandbox record and what it owns besides the sandbox itself: the
 * image lease, the workspace lock (the workspace stays on disk), the
 * strings.  The sandbox must be destroyed or never started. */
void mcp_sandbox_free_record(struct mcp_sandbox *m)
{
    if (m->lease >= 0)
        close(m->lease);
    if (m->workspace_lock >= 0)
        close(m->workspace_lock);
    free(m->workspace);
    nsbox_strvfree(m->env);
    free(m->workdir);
    free(m->image);
    pthread_mutex_destroy(&m->exec_lock);
    free(m);
}

static struct mcp_sandbox *build_counted(struct mcp_server *cfg, const char *image,
                                         const struct mcp_limits *limits, char **env,
                                         const char *workdir, const char *workspace,
                                         bool one_shot, char *ws_dir_buf, int *ws_lock_out,
                                         char *error, size_t error_size)
{
    char *ws_dir = ws_dir_buf;
    int ws_lock = -1;
    (void)ws_lock_out;

    if (workspace != NULL &&
        (ws_lock = claim_workspace(cfg, workspace, ws_dir, PATH_MAX, error, error_size)) < 0)
        return NULL;
    struct images_image im;
    struct nsbox_err err = {0};

    struct mcp_sandbox *m = calloc(1, sizeof(*m));
    if (m == NULL || images_lookup(&cfg->store, image, &im, &err) < 0) {
        if (m != NULL)
            snprintf(error, error_size, "%s", err.msg);
        free(m);
        if (ws_lock >= 0)
            close(ws_lock);
        return NULL;
    }
    m->workspace = workspace ? strdup(workspace) : NULL;
    m->workspace_lock = ws_lock;
    m->lease = images_lease(&cfg->store, im.digest, &err);
    m->env = copy_env(im.config.env, env);
    m->workdir = strdup(workdir ? workdir : "/workspace");
    m->image = strdup(im.names && im.names[0] ? im.names[0] : im.digest);
    snprintf(m->digest, sizeof(m->digest), "%s", im.digest);
    m->limits = *limits;
    m->one_shot = one_shot;
    m->created = time(NULL);
    pthread_mutex_init(&m->exec_lock, NULL);
    if (m->lease < 0 || m->env == NULL ||
        images_resolve_user(im.rootfs, im.config.user, &m->uid, &m->gid, &err) < 0 ||
        start(cfg, m, &im, workspace ? ws_dir : NULL, &err) < 0) {
        snprintf(error, error_size, "%s", err.msg);
        images_image_free(&im);
        mcp_sandbox_free_record(m);
        return NULL;
    }
    images_image_free(&im);
    return m;
}

static json_t *limits_json(const struct mcp_sandbox *m)
{
    return json_pack("{s:I,s:f,s:i,s:f,s:s}", "memory_mb", (json_int_t)m->limits.memory_mb,
                     "cpus", m->limits.cpus, "pids", (int)m->limits.pids, "timeout_s",
                     m->limits.timeout_s, "enforced", m->sb.limits_note);
}

/* ---- the tools ---- */

json_t *mcp_tool_sandbox_create(struct mcp_session *s, struct mcp_call *call, json_t *args,
                              char *error, size_t error_size)
{
    _cleanup_(mcp_create_args_free) struct mcp_create_args a = {0};
    struct nsbox_err err = {0};

    if (mcp_args_sandbox_create(s->cfg, args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    const char *image = a.image ? a.image : mcp_image_for_language(s, a.language);
    if (image == NULL) {
        snprintf(error, error_size, "no image for language \"%s\" (see list_languages)",
                 a.language);
        return NULL;
    }
    struct mcp_sandbox *m = mcp_sandbox_new(s, image, &a.limits.limits, a.env, a.workdir,
                                            a.workspace, false, error, error_size);
    if (m == NULL)
        return NULL;
    mcp_session_log(s, "info", "sandbox %s created from %s", m->sb.id, m->image);
    (void)call;
    json_t *r = json_pack("{s:s,s:s,s:s,s:o,s:s?}", "sandbox_id", m->sb.id, "image", m->image,
                          "digest", m->digest, "limits", limits_json(m), "workspace",
                          m->workspace);
    mcp_sandbox_put(s, m); /* a stop may free it from here on */
    return r;
}

json_t *mcp_tool_sandbox_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            char *error, size_t error_size)
{
    struct nsbox_err err = {0};

    if (mcp_args_none(args, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    json_t *list = json_array();
    pthread_mutex_lock(&s->lock);
    for (struct mcp_sandbox *m = s->sandboxes; m != NULL; m = m->next)
        if (!m->one_shot && !m->stopping)
            json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:I,s:o,s:s?}", "sandbox_id",
                                                  m->sb.id, "image", m->image, "digest",
                                                  m->digest, "created", (json_int_t)m->created,
                                                  "limits", limits_json(m), "workspace",
                                                  m->workspace));
    pthread_mutex_unlock(&s->lock);
    (void)call;
    return json_pack("{s:o}", "sandboxes", list);
}

json_t *mcp_tool_sandbox_stop(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            char *error, size_t error_size)
{
    struct mcp_stop_args a;
    struct nsbox_err err = {0};

    if (mcp_args_sandbox_stop(args, &a, &err) < 0 || mcp_sandbox_stop(s, a.sandbox_id, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    (void)call;
    return json_pack("{s:s,s:b}", "sandbox_id", a.sandbox_id, "stopped", 1);
}

/* The sandbox.language label ("python, python3") as a list. */
static json_t *languages_of(const struct images_image *im)
{
    json_t *langs = json_array();
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", images_image_languages(im) ?: "");
    for (char *save, *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
        json_array_append_new(langs, json_string(tok));
    return langs;
}

json_t *mcp_tool_list_languages(struct mcp_session *s, struct mcp_call *call, json_t *args,
                              char *error, size_t error_size)
{
    struct images_image *v;
    size_t n;
    struct nsbox_err err = {0};

    if (mcp_args_none(args, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    json_t *langs = json_array();
    for (size_t i = 0; i < s->cfg->n_langs; i++)
        json_array_append_new(langs, json_pack("{s:s,s:s}", "language", s->cfg->langs[i].language,
                                               "image", s->cfg->langs[i].ref));
    if (images_list(&s->cfg->store, &v, &n, &err) == 0) {
        for (size_t i = 0; i < n; i++) {
            json_t *own = languages_of(&v[i]), *l;
            size_t k;
            json_array_foreach(own, k, l)
                json_array_append_new(langs, json_pack("{s:O,s:s,s:s}", "language", l, "image",
                                                       v[i].names[0] ? v[i].names[0]
                                                                     : v[i].digest,
                                                       "digest", v[i].digest));
            json_decref(own);
            images_image_free(&v[i]);
        }
        free(v);
    }
    (void)call;
    return json_pack("{s:o}", "languages", langs);
}

json_t *mcp_tool_list_images(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           char *error, size_t error_size)
{
    struct images_image *v;
    size_t n;
    struct nsbox_err err = {0};

    if (mcp_args_none(args, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    if (images_list(&s->cfg->store, &v, &n, &err) < 0) {
        snprintf(error, error_size, "%s", err.msg);
        return NULL;
    }
    json_t *images = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *names = json_array();
        for (char **p = v[i].names; p && *p; p++)
            json_array_append_new(names, json_string(*p));
        json_array_append_new(images, json_pack("{s:o,s:s,s:I,s:o}", "names", names, "digest",
                                                v[i].digest, "size", (json_int_t)v[i].size,
                                                "languages", languages_of(&v[i])));
        images_image_free(&v[i]);
    }
    free(v);
    (void)call;
    return json_pack("{s:o}", "images", images);
}

