/* Server-wide sandbox bookkeeping (pool.h): making sandboxes under the
 * server's cap, removing them off the response's path, and the spares
 * (with their zygotes) for one-shot runs. */
#include "pool.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../boxes/proc.h"
#include "../common/cleanup.h"
#include "../common/clock.h"
#include "preview/terminal.h"
#include "../common/log.h"

/* How long a call at the cap waits for sandboxes being stopped. */
#define REMOVAL_WAIT_S 60

/* A started sandbox, not yet in any session: boxes/ makes it. */
static struct mcp_sandbox *build_counted(struct mcp_server *cfg, const char *image,
                                         const struct mcp_limits *limits, char **env,
                                         const char *workdir, const char *workspace, bool one_shot,
                                         const struct mcp_nested *nested, struct nsbox_err *err)
{
    struct box_spec spec;
    _cleanup_free_ struct mcp_sandbox *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    box_spec_init(&spec);
    spec.image = image;
    spec.env = env;
    spec.workdir = workdir;
    spec.workspace = workspace;
    spec.limits = (struct box_limits){.memory_bytes = limits->memory_mb << 20,
                                      .cpus = limits->cpus,
                                      .pids = limits->pids,
                                      .timeout_s = limits->timeout_s};
    spec.disk_bytes = limits->disk_mb << 20;
    spec.workspace_bytes = limits->workspace_mb << 20;
    if (nested != NULL) {
        spec.nested = nested->nested;
        spec.nested_images = nested->images;
        spec.n_nested_images = nested->n_images;
    }
    /* A kept sandbox may host persistent interpreters: nsbox's drivers,
     * read-only (docs/interpreters.md), copied onto the sandbox's own
     * tmpfs: a bind would show their path in the store in its mountinfo. */
    struct nsbox_bind drivers = {
        .source = cfg->drivers_dir, .target = MCP_DRIVERS_DIR, .copy = true};
    /* Not in landlock mode: no mount namespace to show them in. */
    if (!one_shot && cfg->drivers_dir[0] != '\0' &&
        cfg->boxes.isolation != NSBOX_ISOLATION_LANDLOCK) {
        spec.binds = &drivers;
        spec.n_binds = 1;
    }
    if (box_create(&cfg->boxes, &spec, &m->box, err) < 0)
        return NULL;
    box_trim(&m->box); /* one fd per idle sandbox (docs/density.md) */
    m->one_shot = one_shot;
    mcp_id_compose(cfg->node_id, m->box.sb.id, m->id);
    pthread_mutex_init(&m->exec_lock, NULL);
    return TAKE_PTR(m);
}

/* Takes a slot under --max-total-sandboxes, or says why not (pool_lock
 * held).  A call at the cap while sandboxes are being stopped (a session
 * just ended takes its sandboxes with it; a one-shot's is removed off its
 * response's path) waits for their slots rather than being refused for a
 * removal the client cannot see; an idle spare is removed for it.  It is
 * refused at once when nothing is on its way out, and never waits past
 * REMOVAL_WAIT_S.  The spare's refill never takes the last slot (it stays
 * for calls) and never waits. */
static bool take_slot(struct mcp_server *cfg, bool for_spare)
{
    if (for_spare) {
        if (cfg->n_live + 1 >= cfg->max_total)
            return false;
        cfg->n_live++;
        return true;
    }
    if (cfg->n_live >= cfg->max_total && cfg->spare != NULL) {
        struct mcp_sandbox *spare = cfg->spare;
        cfg->spare = spare->spare_next;
        cfg->n_spares--;
        if (cfg->spares_wanted > cfg->n_spares)
            cfg->spares_wanted = cfg->n_spares; /* not made again at once */
        pthread_mutex_unlock(&cfg->pool_lock);
        mcp_sandbox_free_detached(cfg, spare); /* counted in n_removing now */
        pthread_mutex_lock(&cfg->pool_lock);
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += REMOVAL_WAIT_S;
    while (cfg->n_live >= cfg->max_total && cfg->n_removing > 0 &&
           pthread_cond_timedwait(&cfg->pool_idle, &cfg->pool_lock, &until) != ETIMEDOUT)
        ;
    if (cfg->n_live >= cfg->max_total)
        return false;
    cfg->n_live++;
    return true;
}

static struct mcp_sandbox *build(struct mcp_server *cfg, const char *image,
                                 const struct mcp_limits *limits, char **env, const char *workdir,
                                 const char *workspace, bool one_shot, bool for_spare,
                                 const struct mcp_nested *nested, struct nsbox_err *err)
{
    /* Server-wide: sessions times their caps would be too many for one
     * host; every sandbox, kept, one-shot or spare, counts here. */
    pthread_mutex_lock(&cfg->pool_lock);
    bool got = take_slot(cfg, for_spare);
    pthread_mutex_unlock(&cfg->pool_lock);
    if (!got) {
        nsbox_err_set(err, EAGAIN,
                      "the server runs %zu sandboxes, its limit; try again when "
                      "some have finished",
                      cfg->max_total);
        return NULL;
    }
    struct mcp_sandbox *m = build_counted(cfg, image, limits, env, workdir, workspace, one_shot,
                                          nested, err);
    if (m == NULL) {
        pthread_mutex_lock(&cfg->pool_lock);
        cfg->n_live--;
        pthread_cond_broadcast(&cfg->pool_idle);
        pthread_mutex_unlock(&cfg->pool_lock);
    }
    return m;
}

struct mcp_sandbox *mcp_sandbox_build(struct mcp_server *cfg, const char *image,
                                      const struct mcp_limits *limits, char **env,
                                      const char *workdir, const char *workspace, bool one_shot,
                                      const struct mcp_nested *nested, struct nsbox_err *err)
{
    return build(cfg, image, limits, env, workdir, workspace, one_shot, false, nested, err);
}

/* Frees a sandbox record and what it owns besides the sandbox itself: the
 * image lease, the workspace lock (the workspace stays on disk), the
 * strings (box_free).  The sandbox must be destroyed or never started. */
void mcp_sandbox_free_record(struct mcp_sandbox *m)
{
    mcp_zygote_free(m->zygote);
    for (size_t i = 0; i < MCP_INTERP_N; i++)
        mcp_interp_free(m->interp[i]);
    while (m->contexts != NULL) {
        struct mcp_context *c = m->contexts;
        m->contexts = c->next;
        mcp_interp_free(c->interp);
        free(c);
    }
    free(m->net_once);
    box_free(&m->box);
    pthread_mutex_destroy(&m->exec_lock);
    free(m);
}

/* ---- the spares for one-shot runs (docs/warm.md) ----
 * A long-lived server keeps fresh, never-used sandboxes of the image last
 * asked for ready, so a one-shot execute_code does not wait for a sandbox
 * to be made (and, on cgroup v1, for the RCU grace period of moving it
 * into its cgroup); each holds a zygote, an interpreter already started
 * for the language last asked for (interp/zygote.h), which runs the call's
 * program and ends with it.  Each one-shot run still gets a sandbox of its
 * own, removed afterwards, off the response's path.
 *
 * How many: one, and more while calls come faster than a spare is made
 * (spares wanted = 1 + the time to make one / the mean gap between
 * calls), never more than --spares; back to one after IDLE_TRIM_MS without
 * a call.  One keeper thread makes and trims them, one at a time, so the
 * pool never takes more than one core from the calls; it ends when there
 * is nothing to do (no thread of the pool's is left on an idle server). */

#define IDLE_TRIM_MS 10000
#define BUILD_GUESS_MS 50.0 /* before the first spare was made and timed */

static double ewma(double mean, double sample)
{
    return mean > 0 ? 0.7 * mean + 0.3 * sample : sample;
}

/* The spare that best fits a call in lang (its zygote's language), out of
 * the pool; NULL when there is none (pool_lock held). */
static struct mcp_sandbox *pop_spare(struct mcp_server *cfg, int lang)
{
    struct mcp_sandbox **at = &cfg->spare;
    for (struct mcp_sandbox **p = &cfg->spare; *p != NULL; p = &(*p)->spare_next)
        if ((*p)->zygote != NULL && (int)mcp_zygote_lang((*p)->zygote) == lang) {
            at = p;
            break;
        }
    struct mcp_sandbox *m = *at;
    if (m != NULL) {
        *at = m->spare_next;
        m->spare_next = NULL;
        cfg->n_spares--;
    }
    return m;
}

/* Whether a spare's sandbox died while it waited (its init killed from
 * outside: its control connection hung up).  A never-used sandbox has no
 * traffic on it, so anything there but a hang-up is none. */
static bool spare_dead(const struct mcp_sandbox *m)
{
    struct pollfd p = {.fd = m->box.sb.ctl, .events = POLLRDHUP};
    return m->box.sb.ctl < 0 ||
           (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)));
}

/* A new spare's zygote; its failures said once in the log. */
static void start_zygote(struct mcp_server *cfg, struct mcp_sandbox *m, int lang)
{
    struct nsbox_err err;
    char *failed = NULL;
    if (lang < 0 || !mcp_zygote_supported((enum mcp_interp_lang)lang))
        return;
    m->zygote = mcp_zygote_start(&m->box, (enum mcp_interp_lang)lang,
                                 lang == MCP_INTERP_PYTHON ? cfg->warm_import : NULL, &failed,
                                 &err);
    pthread_mutex_lock(&cfg->pool_lock);
    bool say_zygote = m->zygote == NULL && !cfg->zygote_reported;
    bool say_warm = failed != NULL && !cfg->warm_reported;
    cfg->zygote_reported |= say_zygote;
    cfg->warm_reported |= say_warm;
    pthread_mutex_unlock(&cfg->pool_lock);
    if (say_zygote)
        nsbox_warn("one-shot calls start a fresh interpreter: %s (said once)", err.msg);
    if (say_warm)
        nsbox_warn("--warm-import: %s (the spares go on without it; said once)", failed);
    free(failed);
}

/* Makes one spare of image for lang, timed (pool_lock not held). */
static struct mcp_sandbox *make_spare(struct mcp_server *cfg, const char *image, int lang,
                                      double *ms)
{
    struct nsbox_err err;
    int64_t t0 = nsbox_now_ms();
    struct mcp_sandbox *m = build(cfg, image, &cfg->defaults, NULL, NULL, NULL, true, true, NULL,
                                  &err);
    if (m != NULL)
        start_zygote(cfg, m, lang);
    *ms = (double)(nsbox_now_ms() - t0);
    return m;
}

/* Waits for a change (a take, a removal, the drain) or until the idle trim
 * is due (pool_lock held). */
static void keeper_wait(struct mcp_server *cfg)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&cfg->pool_idle, &cfg->pool_lock, &until);
}

static void *keeper_thread(void *arg)
{
    struct mcp_server *cfg = arg;
    char image[512];

    pthread_mutex_lock(&cfg->pool_lock);
    while (!cfg->draining && !mcp_node_draining(cfg)) {
        if (nsbox_now_ms() - cfg->last_take_ms >= IDLE_TRIM_MS && cfg->spares_wanted > 1)
            cfg->spares_wanted = 1;
        if (cfg->n_spares > cfg->spares_wanted && cfg->spare != NULL) {
            struct mcp_sandbox *m = cfg->spare;
            cfg->spare = m->spare_next;
            cfg->n_spares--;
            pthread_mutex_unlock(&cfg->pool_lock);
            mcp_sandbox_free_detached(cfg, m);
            pthread_mutex_lock(&cfg->pool_lock);
            continue;
        }
        if (cfg->n_spares >= cfg->spares_wanted || cfg->spare_image[0] == '\0') {
            /* Nothing to make: the thread ends, unless a trim is to come
             * (the next take starts it again). */
            if (cfg->spares_wanted <= 1 || cfg->n_spares <= 1)
                break;
            keeper_wait(cfg);
            continue;
        }
        snprintf(image, sizeof(image), "%s", cfg->spare_image);
        int lang = cfg->spare_lang;
        pthread_mutex_unlock(&cfg->pool_lock);
        double ms;
        struct mcp_sandbox *m = make_spare(cfg, image, lang, &ms);
        pthread_mutex_lock(&cfg->pool_lock);
        if (m == NULL) {
            /* At the cap, or the image cannot be made: no more until the
             * next call asks (a removal or a take wakes this). */
            cfg->spares_wanted = cfg->n_spares;
            continue;
        }
        cfg->spare_build_ms = ewma(cfg->spare_build_ms, ms);
        if (!cfg->draining && strcmp(image, cfg->spare_image) == 0 &&
            cfg->n_spares < cfg->max_spares) {
            struct mcp_sandbox **tail = &cfg->spare;
            while (*tail != NULL)
                tail = &(*tail)->spare_next;
            *tail = m;
            cfg->n_spares++;
            m = NULL;
        }
        pthread_cond_broadcast(&cfg->pool_idle);
        if (m != NULL) {
            pthread_mutex_unlock(&cfg->pool_lock);
            mcp_sandbox_free_detached(cfg, m);
            pthread_mutex_lock(&cfg->pool_lock);
        }
    }
    cfg->keeper = false;
    pthread_cond_broadcast(&cfg->pool_idle);
    pthread_mutex_unlock(&cfg->pool_lock);
    return NULL;
}

static void start_keeper(struct mcp_server *cfg)
{
    pthread_t t;
    pthread_attr_t attr;

    /* pool_lock held */
    if (cfg->keeper) {
        pthread_cond_broadcast(&cfg->pool_idle);
        return;
    }
    if (cfg->draining || cfg->spare_image[0] == '\0' || mcp_node_draining(cfg))
        return;
    cfg->keeper = true;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, keeper_thread, cfg) != 0)
        cfg->keeper = false;
    pthread_attr_destroy(&attr);
}

/* The spares the call rate asks for (pool_lock held): see above. */
static void count_take(struct mcp_server *cfg)
{
    int64_t now = nsbox_now_ms();
    if (cfg->last_take_ms > 0)
        cfg->take_gap_ms = ewma(cfg->take_gap_ms, (double)(now - cfg->last_take_ms));
    cfg->last_take_ms = now;
    double build = cfg->spare_build_ms > 0 ? cfg->spare_build_ms : BUILD_GUESS_MS;
    double want = cfg->take_gap_ms > 0 ? 1 + build / (cfg->take_gap_ms < 1 ? 1 : cfg->take_gap_ms)
                                       : 1;
    cfg->spares_wanted = want >= (double)cfg->max_spares ? cfg->max_spares : (size_t)want;
}

void mcp_node_drain_begin(struct mcp_server *cfg)
{
    __atomic_store_n(&cfg->node_draining, true, __ATOMIC_SEQ_CST);
}

bool mcp_node_draining(const struct mcp_server *cfg)
{
    return __atomic_load_n(&cfg->node_draining, __ATOMIC_SEQ_CST);
}

struct mcp_sandbox *mcp_pool_take(struct mcp_server *cfg, const char *image, int lang)
{
    struct mcp_sandbox *m = NULL, *old = NULL;

    if (mcp_node_draining(cfg)) /* the caller's own sandbox is refused then */
        return NULL;
    pthread_mutex_lock(&cfg->pool_lock);
    if (cfg->max_spares == 0) {
        pthread_mutex_unlock(&cfg->pool_lock);
        return NULL;
    }
    count_take(cfg);
    cfg->spare_lang = lang; /* the next spares follow the demand */
    if (strcmp(cfg->spare_image, image) != 0) {
        /* Another image asked for: the spares follow the demand. */
        snprintf(cfg->spare_image, sizeof(cfg->spare_image), "%s", image);
        old = cfg->spare;
        cfg->spare = NULL;
        cfg->n_spares = 0;
    } else {
        /* A spare whose sandbox died while it waited never fails a call:
         * removed, and the next one (or a new sandbox) serves it. */
        while ((m = pop_spare(cfg, lang)) != NULL && spare_dead(m)) {
            m->spare_next = old;
            old = m;
        }
    }
    start_keeper(cfg);
    pthread_mutex_unlock(&cfg->pool_lock);
    while (old != NULL) {
        struct mcp_sandbox *next = old->spare_next;
        mcp_sandbox_free_detached(cfg, old);
        old = next;
    }
    /* Another language's interpreter goes; the sandbox never ran anything. */
    if (m != NULL && m->zygote != NULL && (int)mcp_zygote_lang(m->zygote) != lang) {
        mcp_zygote_free(m->zygote);
        m->zygote = NULL;
    }
    return m;
}

#define WARM_MAX 32       /* modules */
#define WARM_NAME_MAX 128 /* characters of one */

/* A python module name: identifiers (ASCII) joined by dots.  Anything else
 * (a space, a quote, a leading '-') never reaches python's command line. */
static bool module_name_ok(const char *s, size_t len)
{
    bool start = true;
    if (len == 0 || len > WARM_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (start)
                return false;
            start = true;
            continue;
        }
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(c >= '0' && c <= '9' && !start))
            return false;
        start = false;
    }
    return !start;
}

int mcp_pool_warm_parse(const char *list, char ***out, struct nsbox_err *err)
{
    *out = NULL;
    if (list == NULL || *list == '\0')
        return 0;
    char **v = calloc(WARM_MAX + 1, sizeof(char *));
    if (v == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    size_t n = 0;
    for (const char *p = list;; p++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!module_name_ok(p, len) || n == WARM_MAX || (v[n] = strndup(p, len)) == NULL) {
            for (size_t i = 0; i < n; i++)
                free(v[i]);
            free(v);
            if (n == WARM_MAX)
                return nsbox_err_set(err, EINVAL, "--warm-import names at most %d modules",
                                     WARM_MAX);
            return nsbox_err_set(err, EINVAL,
                                 "--warm-import takes python module names (letters, digits, '_' "
                                 "and dots between names, at most %d characters) separated by "
                                 "commas, not \"%.*s\"",
                                 WARM_NAME_MAX, (int)(len > 160 ? 160 : len), p);
        }
        n++;
        if (end == NULL)
            break;
        p = end;
    }
    *out = v;
    return 0;
}

void mcp_pool_drain(struct mcp_server *cfg)
{
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->draining = true;
    pthread_cond_broadcast(&cfg->pool_idle);
    while (cfg->keeper || cfg->n_freeing > 0)
        pthread_cond_wait(&cfg->pool_idle, &cfg->pool_lock);
    struct mcp_sandbox *m = cfg->spare;
    cfg->spare = NULL;
    cfg->n_spares = 0;
    pthread_mutex_unlock(&cfg->pool_lock);
    while (m != NULL) {
        struct mcp_sandbox *next = m->spare_next;
        mcp_sandbox_free(cfg, m);
        m = next;
    }
}

/* Stops a sandbox counted in n_removing, and frees its slot. */
static void remove_counted(struct mcp_server *cfg, struct mcp_sandbox *m)
{
    struct nsbox_err err;
    mcp_terminals_close_sandbox(cfg->terminals, m); /* its shells, before the box goes */
    if (box_destroy(&m->box, &err) < 0)
        nsbox_warn("stopping sandbox %s: %s", m->box.sb.id, err.msg);
    /* The slot frees once init is reaped and the state removed, not
     * before: removals run on threads of their own, and on a busy host
     * new sandboxes would otherwise outnumber the cap by every removal
     * still under way (43 live inits under a cap of 36 in
     * tests/load/load_http.py). */
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->n_live--;
    cfg->n_removing--;
    pthread_cond_broadcast(&cfg->pool_idle);
    pthread_mutex_unlock(&cfg->pool_lock);
    mcp_sandbox_free_record(m);
}

void mcp_sandbox_free(struct mcp_server *cfg, struct mcp_sandbox *m)
{
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->n_removing++;
    pthread_mutex_unlock(&cfg->pool_lock);
    remove_counted(cfg, m);
}

struct free_job {
    struct mcp_server *cfg;
    struct mcp_sandbox *m;
};

static void *free_thread(void *arg)
{
    struct free_job *job = arg;
    struct mcp_server *cfg = job->cfg;
    remove_counted(cfg, job->m);
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
    box_kill_all(&m->box);
    if (job == NULL) {
        mcp_sandbox_free(cfg, m);
        return;
    }
    *job = (struct free_job){cfg, m};
    pthread_mutex_lock(&cfg->pool_lock);
    cfg->n_freeing++;
    cfg->n_removing++; /* from now: a call at the cap waits for this slot */
    pthread_mutex_unlock(&cfg->pool_lock);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, free_thread, job) != 0)
        free_thread(job);
    pthread_attr_destroy(&attr);
}
