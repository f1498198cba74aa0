/* The 2026-07-28 task that the server decides on (tasks.h): a call from a
 * request that declared io.modelcontextprotocol/tasks answers as usual
 * when it ends within --task-after; past it, this timer makes the task,
 * answers the request with the CreateTaskResult, and the call's end goes
 * to the task.  Why a delay rather than a task for every call: most runs
 * take well under a second, and a task costs such a client a second round
 * trip at least; client SDKs give up on a call at 60 s and intermediaries
 * often sooner, so a few seconds is where a handle starts to help. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "../server.h"
#include "internal.h"

struct mcp_task_defer {
    struct mcp_session *s;
    struct mcp_req *rq;
    size_t slot;
    pthread_t thread;
    pthread_cond_t ended; /* CLOCK_MONOTONIC */
    bool done;            /* the call ended (under s->lock) */
};

static struct timespec deadline(unsigned after_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += after_ms / 1000;
    ts.tv_nsec += (long)(after_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

static void *timer(void *arg)
{
    struct mcp_task_defer *d = arg;
    struct mcp_session *s = d->s;
    struct timespec until = deadline(s->cfg->task_after_ms);
    json_t *created = NULL;

    pthread_mutex_lock(&s->lock);
    while (!d->done && pthread_cond_timedwait(&d->ended, &s->lock, &until) != ETIMEDOUT)
        ;
    /* Not for a call the client cancelled, nor past the session's cap
     * (the call then simply stays an ordinary one). */
    if (!d->done && !s->calls[d->slot].cancelled) {
        struct mcp_task *t = mcp_task_create(s, d->slot, MCP_ERA_MODERN, 0);
        if (t != NULL)
            created = mcp_task_create_result(t, MCP_ERA_MODERN);
    }
    pthread_mutex_unlock(&s->lock);
    /* The task is in the list before its handle goes out (SEP-2663: "MUST
     * NOT return CreateTaskResult until the task is durably created"). */
    if (created != NULL)
        mcp_reply(d->rq, created);
    return NULL;
}

struct mcp_task_defer *mcp_task_defer_start(struct mcp_session *s, struct mcp_req *rq, size_t slot)
{
    struct mcp_task_defer *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    *d = (struct mcp_task_defer){.s = s, .rq = rq, .slot = slot};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->ended, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&d->thread, NULL, timer, d) != 0) {
        pthread_cond_destroy(&d->ended);
        free(d);
        return NULL;
    }
    return d;
}

void mcp_task_defer_end(struct mcp_task_defer *d)
{
    if (d == NULL)
        return;
    pthread_mutex_lock(&d->s->lock);
    d->done = true;
    pthread_cond_broadcast(&d->ended);
    pthread_mutex_unlock(&d->s->lock);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->ended);
    free(d);
}
