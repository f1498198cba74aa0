/* Server-wide sandbox bookkeeping (pool.h): making sandboxes under the
 * server's cap, removing them off the response's path, and the spare for
 * one-shot runs. */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../boxes/proc.h"
#include "../common/cleanup.h"
#include "preview/terminal.h"
#include "../common/log.h"

/* How long a call at the cap waits for sandboxes being stopped. */
#define REMOVAL_WAIT_S 60

/* A started sandbox, not yet in any session: boxes/ makes it. */
static struct mcp_sandbox *build_counted(struct mcp_server *cfg, const char *image,
                                         const struct mcp_limits *limits, char **env,
                                         const char *workdir, const char *workspace, bool one_shot,
                                         struct nsbox_err *err)
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
        cfg->spare = NULL;
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
                                 struct nsbox_err *err)
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
                                          err);
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
                                      struct nsbox_err *err)
{
    return build(cfg, image, limits, env, workdir, workspace, one_shot, false, err);
}

/* Frees a sandbox record and what it owns besides the sandbox itself: the
 * image lease, the workspace lock (the workspace stays on disk), the
 * strings (box_free).  The sandbox must be destroyed or never started. */
void mcp_sandbox_free_record(struct mcp_sandbox *m)
{
    for (size_t i = 0; i < MCP_INTERP_N; i++)
        mcp_interp_free(m->interp[i]);
    while (m->contexts != NULL) {
        struct mcp_context *c = m->contexts;
        m->contexts = c->next;
        mcp_interp_free(c->interp);
        free(c);
    }
    box_free(&m->box);
    pthread_mutex_destroy(&m->exec_lock);
    free(m);
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
    char image[512];
    struct nsbox_err err;

    pthread_mutex_lock(&cfg->pool_lock);
    snprintf(image, sizeof(image), "%s", cfg->spare_image);
    pthread_mutex_unlock(&cfg->pool_lock);
    struct mcp_sandbox *m = image[0] ? build(cfg, image, &cfg->defaults, NULL, NULL, NULL, true,
                                             true, &err)
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
    if (cfg->refilling || cfg->spare != NULL || cfg->draining || cfg->spare_image[0] == '\0' ||
        mcp_node_draining(cfg))
        return;
    cfg->refilling = true;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, refill_thread, cfg) != 0)
        cfg->refilling = false;
    pthread_attr_destroy(&attr);
}

void mcp_node_drain_begin(struct mcp_server *cfg)
{
    __atomic_store_n(&cfg->node_draining, true, __ATOMIC_SEQ_CST);
}

bool mcp_node_draining(const struct mcp_server *cfg)
{
    return __atomic_load_n(&cfg->node_draining, __ATOMIC_SEQ_CST);
}

struct mcp_sandbox *mcp_pool_take(struct mcp_server *cfg, const char *image)
{
    struct mcp_sandbox *m = NULL;

    if (mcp_node_draining(cfg)) /* the caller's own sandbox is refused then */
        return NULL;
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
