/* Server-wide sandbox bookkeeping (pool.h): the removal of sandboxes off
 * the response's path, and the spare for one-shot runs. */
#include "pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "sandboxes.h"

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
    struct mcp_sandbox *m = image[0] ? mcp_sandbox_build(cfg, image, &cfg->defaults, NULL, NULL,
                                                         NULL, true, &err)
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
    mcp_sandbox_free_record(m);
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

