/* sandbox_create, sandbox_list, sandbox_stop, list_languages, list_images,
 * and the session's sandbox bookkeeping.  The sandboxes themselves are
 * made by boxes/ (box_create). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cleanup.h"
#include "../common/log.h"
#include "server.h"
#include "tool_args.h"

struct mcp_sandbox *mcp_sandbox_find(struct mcp_session *s, const char *id)
{
    struct mcp_sandbox *sb;
    pthread_mutex_lock(&s->lock);
    for (sb = s->sandboxes; sb != NULL; sb = sb->next)
        if (id != NULL && strcmp(sb->box.sb.id, id) == 0)
            break;
    pthread_mutex_unlock(&s->lock);
    return sb;
}

/* --image LANG=REF first, then the store's images by their
 * sandbox.language label.  Returns a reference (static storage: the
 * configured one, or a digest kept in buf) or NULL. */
const char *mcp_image_for_language(struct mcp_session *s, const char *language)
{
    static __thread char buf[OCI_DIGEST_BUF];
    struct nsbox_err err;

    for (size_t i = 0; i < s->cfg->n_langs; i++)
        if (strcmp(s->cfg->langs[i].language, language) == 0)
            return s->cfg->langs[i].ref;
    return box_image_for_language(&s->cfg->boxes, language, buf, sizeof(buf), &err) == 0 ? buf
                                                                                       : NULL;
}

/* A started sandbox, not yet in any session: boxes/ makes it. */
static struct mcp_sandbox *build_counted(struct mcp_server *cfg, const char *image,
                                         const struct mcp_limits *limits, char **env,
                                         const char *workdir, const char *workspace,
                                         bool one_shot, char *error, size_t error_size)
{
    struct nsbox_err err = {0};
    struct box_spec spec;
    struct mcp_sandbox *m = calloc(1, sizeof(*m));

    box_spec_init(&spec);
    spec.image = image;
    spec.env = env;
    spec.workdir = workdir;
    spec.workspace = workspace;
    spec.limits = (struct box_limits){.memory_bytes = limits->memory_mb << 20,
                                      .cpus = limits->cpus, .pids = limits->pids,
                                      .timeout_s = limits->timeout_s};
    if (m == NULL || box_create(&cfg->boxes, &spec, &m->box, &err) < 0) {
        snprintf(error, error_size, "%s", m == NULL ? "out of memory" : err.msg);
        free(m);
        return NULL;
    }
    m->one_shot = one_shot;
    pthread_mutex_init(&m->exec_lock, NULL);
    return m;
}

static struct mcp_sandbox *build(struct mcp_server *cfg, const char *image,
                                 const struct mcp_limits *limits, char **env,
                                 const char *workdir, const char *workspace, bool one_shot,
                                 char *error, size_t error_size)
{
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
                                          error, error_size);
    if (m == NULL) {
        pthread_mutex_lock(&cfg->pool_lock);
        cfg->n_live--;
        pthread_mutex_unlock(&cfg->pool_lock);
    }
    return m;
}

/* Frees a sandbox record and what it owns besides the sandbox itself: the
 * image lease, the workspace lock (the workspace stays on disk), the
 * strings (box_free).  The sandbox must be destroyed or never started. */
static void free_record(struct mcp_sandbox *m)
{
    box_free(&m->box);
    pthread_mutex_destroy(&m->exec_lock);
    free(m);
}

struct mcp_sandbox *mcp_sandbox_new(struct mcp_session *s, const char *image,
                                    const struct mcp_limits *limits, char **env,
                                    const char *workdir, const char *workspace, bool one_shot,
                                    char *error, size_t error_size)
{
    /* One-shot sandboxes are bounded by the calls running at once; the
     * session's cap is for the ones it keeps. */
    if (!one_shot) {
        pthread_mutex_lock(&s->lock);
        bool full = s->n_sandboxes >= s->cfg->max_sandboxes;
        if (!full)
            s->n_sandboxes++; /* reserved */
        pthread_mutex_unlock(&s->lock);
        if (full) {
            snprintf(error, error_size, "this session already has %zu sandboxes (the limit); "
                                        "stop one with sandbox_stop",
                     s->cfg->max_sandboxes);
            return NULL;
        }
    }
    struct mcp_sandbox *m = build(s->cfg, image, limits, env, workdir, workspace, one_shot,
                                  error, error_size);
    pthread_mutex_lock(&s->lock);
    if (m == NULL && !one_shot)
        s->n_sandboxes--;
    if (m != NULL && !one_shot) {
        m->next = s->sandboxes;
        s->sandboxes = m;
    }
    pthread_mutex_unlock(&s->lock);
    return m;
}

/* ---- the spare for one-shot runs ----
 * A long-lived server keeps one fresh, never-used sandbox of the default
 * language's image ready, so a one-shot execute_code does not wait for a
 * sandbox to be made (and, on cgroup v1, for the RCU grace period of moving
 * it into its cgroup).  Each one-shot run still gets a sandbox of its own,
 * removed afterwards, off the response's path. */

static void *refill_thread(void *arg)
{
    struct mcp_server *cfg = arg;
    char image[512], error[256];

    pthread_mutex_lock(&cfg->pool_lock);
    snprintf(image, sizeof(image), "%s", cfg->spare_image);
    pthread_mutex_unlock(&cfg->pool_lock);
    struct mcp_sandbox *m = image[0] ? build(cfg, image, &cfg->defaults, NULL, NULL, NULL, true,
                                             error, sizeof(error))
                                     : NULL;
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->refilling = false;
    if (m != NULL && cfg->spare == NULL && !cfg->draining && strcmp(image, cfg->spare_image) == 0) {
        cfg->spare = m;
        m = NULL;
    }
    pthread_cond_broadcast(&cfg->pool_idle);
    pthread_mutex_unlock(&cfg->pool_lock);
    if (m != NULL)
        mcp_sandbox_free(cfg, m);
    return NULL;
}

static void start_refill(struct mcp_server *cfg)
{
    pthread_t t;
    pthread_attr_t attr;

    /* pool_lock held */
    if (cfg->refilling || cfg->spare != NULL || cfg->draining || cfg->spare_image[0] == '\0')
        return;
    cfg->refilling = true;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, refill_thread, cfg) != 0)
        cfg->refilling = false;
    pthread_attr_destroy(&attr);
}

struct mcp_sandbox *mcp_pool_take(struct mcp_server *cfg, const char *image)
{
    struct mcp_sandbox *m = NULL;

    pthread_mutex_lock(&cfg->pool_lock);
    if (strcmp(cfg->spare_image, image) != 0) {
        /* Another image asked for: the spare follows the demand. */
        snprintf(cfg->spare_image, sizeof(cfg->spare_image), "%s", image);
        if (cfg->spare != NULL) {
            struct mcp_sandbox *old = cfg->spare;
            cfg->spare = NULL;
            pthread_mutex_unlock(&cfg->pool_lock);
            mcp_sandbox_free_detached(cfg, old);
            pthread_mutex_lock(&cfg->pool_lock);
        }
    } else if (cfg->spare != NULL) {
        m = cfg->spare;
        cfg->spare = NULL;
    }
    start_refill(cfg);
    pthread_mutex_unlock(&cfg->pool_lock);
    return m;
}

void mcp_pool_drain(struct mcp_server *cfg)
{
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->draining = true;
    while (cfg->refilling || cfg->n_freeing > 0)
        pthread_cond_wait(&cfg->pool_idle, &cfg->pool_lock);
    struct mcp_sandbox *m = cfg->spare;
    cfg->spare = NULL;
    pthread_mutex_unlock(&cfg->pool_lock);
    if (m != NULL)
        mcp_sandbox_free(cfg, m);
}

void mcp_sandbox_free(struct mcp_server *cfg, struct mcp_sandbox *m)
{
    struct nsbox_err err;
    if (nsbox_sandbox_destroy(&m->box.sb, &err) < 0)
        nsbox_warn("stopping sandbox %s: %s", m->box.sb.id, err.msg);
    /* The slot frees once init is reaped and the state removed, not
     * before: removals run on threads of their own, and on a busy host
     * new sandboxes would otherwise outnumber the cap by every removal
     * still under way (43 live inits under a cap of 36 in
     * tests/load/load_http.py). */
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->n_live--;
    pthread_cond_broadcast(&cfg->pool_idle);
    pthread_mutex_unlock(&cfg->pool_lock);
    free_record(m);
}

struct free_job {
    struct mcp_server *cfg;
    struct mcp_sandbox *m;
};

static void *free_thread(void *arg)
{
    struct free_job *job = arg;
    struct mcp_server *cfg = job->cfg;
    mcp_sandbox_free(cfg, job->m);
    free(job);
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->n_freeing--;
    pthread_cond_broadcast(&cfg->pool_idle);
    pthread_mutex_unlock(&cfg->pool_lock);
    return NULL;
}

void mcp_sandbox_free_detached(struct mcp_server *cfg, struct mcp_sandbox *m)
{
    struct free_job *job = malloc(sizeof(*job));
    pthread_t t;
    pthread_attr_t attr;

    /* Everything in it dies now; the removal happens on another thread. */
    nsbox_sandbox_kill_all(&m->box.sb);
    if (job == NULL) {
        mcp_sandbox_free(cfg, m);
        return;
    }
    *job = (struct free_job){cfg, m};
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->n_freeing++;
    pthread_mutex_unlock(&cfg->pool_lock);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, free_thread, job) != 0)
        free_thread(job);
    pthread_attr_destroy(&attr);
}

void mcp_sandbox_destroy(struct mcp_session *s, struct mcp_sandbox *m)
{
    pthread_mutex_lock(&s->lock);
    for (struct mcp_sandbox **p = &s->sandboxes; *p != NULL; p = &(*p)->next) {
        if (*p == m) {
            *p = m->next;
            s->n_sandboxes--;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    mcp_sandbox_free(s->cfg, m);
}

static json_t *limits_json(const struct mcp_sandbox *m)
{
    return json_pack("{s:I,s:f,s:i,s:f,s:s}", "memory_mb",
                     (json_int_t)(m->box.limits.memory_bytes >> 20),
                     "cpus", m->box.limits.cpus, "pids", (int)m->box.limits.pids, "timeout_s",
                     m->box.limits.timeout_s, "enforced", m->box.sb.limits_note);
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
    mcp_session_log(s, "info", "sandbox %s created from %s", m->box.sb.id, m->box.image);
    (void)call;
    return json_pack("{s:s,s:s,s:s,s:o,s:s?}", "sandbox_id", m->box.sb.id, "image", m->box.image,
                     "digest", m->box.digest, "limits", limits_json(m), "workspace",
                     m->box.workspace);
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
        if (!m->one_shot)
            json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:I,s:o,s:s?}", "sandbox_id",
                                                  m->box.sb.id, "image", m->box.image, "digest",
                                                  m->box.digest, "created",
                                                  (json_int_t)m->box.created, "limits",
                                                  limits_json(m), "workspace", m->box.workspace));
    pthread_mutex_unlock(&s->lock);
    (void)call;
    return json_pack("{s:o}", "sandboxes", list);
}

json_t *mcp_tool_sandbox_stop(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            char *error, size_t error_size)
{
    struct mcp_stop_args a;
    struct nsbox_err err = {0};

    if (mcp_args_sandbox_stop(args, &a, &err) < 0)
        return mcp_tool_fail(error, error_size, err.msg);
    struct mcp_sandbox *m = mcp_sandbox_find(s, a.sandbox_id);
    if (m == NULL || m->one_shot) {
        snprintf(error, error_size, "no sandbox \"%.64s\" in this session (see sandbox_list)",
                 a.sandbox_id);
        return NULL;
    }
    /* Kill first, so a command running in it ends and frees exec_lock. */
    nsbox_sandbox_kill_all(&m->box.sb);
    pthread_mutex_lock(&m->exec_lock);
    pthread_mutex_unlock(&m->exec_lock);
    char saved[NSBOX_ID_LEN + 1];
    snprintf(saved, sizeof(saved), "%s", m->box.sb.id);
    mcp_sandbox_destroy(s, m);
    (void)call;
    return json_pack("{s:s,s:b}", "sandbox_id", saved, "stopped", 1);
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
    if (images_list(&s->cfg->boxes.store, &v, &n, &err) == 0) {
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
    if (images_list(&s->cfg->boxes.store, &v, &n, &err) < 0) {
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

