/* The preview's exposures (internal.h): made and ended by the port tools
 * (preview.h), found by token by the proxy thread, connected to by
 * threads of their own.  A box is touched only by a connect thread of a
 * live exposure; preview_unexpose waits those out, so once it returns
 * the box may be destroyed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../../boxes/ports.h"
#include "internal.h"

struct exposure *exposure_find(struct preview *p, const char *token, size_t len, uint16_t want_port,
                               int *status)
{
    uint64_t id;
    uint32_t expires;
    const char *why;

    *status = 403;
    if (preview_token_check(p->key, token, len, PREVIEW_PORT, (uint32_t)time(NULL), &id, &expires,
                            &why) < 0)
        return NULL;
    *status = 404;
    pthread_mutex_lock(&p->lock);
    struct exposure *ex = p->exposures;
    while (ex != NULL && ex->id != id)
        ex = ex->next;
    if (ex != NULL && (ex->dead || (want_port != 0 && ex->port != want_port)))
        ex = NULL;
    if (ex != NULL)
        ex->refs++;
    pthread_mutex_unlock(&p->lock);
    return ex;
}

static void put_locked(struct exposure *ex)
{
    if (--ex->refs == 0)
        free(ex);
}

void exposure_put(struct preview *p, struct exposure *ex)
{
    pthread_mutex_lock(&p->lock);
    put_locked(ex);
    pthread_mutex_unlock(&p->lock);
}

/* In the job's thread: the connection, then back to the proxy thread. */
static void *connect_main(void *arg)
{
    struct job *j = arg;
    struct preview *p = j->p;
    struct nsbox_err err = {0};

    j->fd = box_port_connect(j->ex->box, j->ex->port, &err);
    j->err = j->fd < 0 ? (err.code ? err.code : EIO) : 0;
    pthread_mutex_lock(&p->lock);
    j->ex->connecting--;
    j->next = p->done;
    p->done = j;
    p->n_threads--;
    /* Woken under the lock: a stopping proxy waits for n_threads to reach 0
     * and preview_stop then frees p, so once the lock is released this
     * thread may touch nothing of p (CI, under ASan: a wake after the
     * unlock wrote to a freed preview as the server stopped). */
    preview_wake(p);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int exposure_connect(struct preview *p, struct conn *c, struct exposure *ex)
{
    struct job *j = calloc(1, sizeof(*j));
    pthread_attr_t a;
    pthread_t t;

    if (j == NULL)
        return -1;
    *j = (struct job){.p = p, .c = c, .ex = ex, .fd = -1};
    pthread_mutex_lock(&p->lock);
    if (ex->dead || ex->connecting >= PREVIEW_CONNECTING_MAX) {
        pthread_mutex_unlock(&p->lock);
        free(j);
        return -1;
    }
    ex->connecting++;
    p->n_threads++;
    pthread_mutex_unlock(&p->lock);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int r = pthread_create(&t, &a, connect_main, j);
    pthread_attr_destroy(&a);
    if (r != 0) {
        pthread_mutex_lock(&p->lock);
        ex->connecting--;
        p->n_threads--;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        free(j);
        return -1;
    }
    return 0;
}

int preview_expose(struct preview *p, struct box *box, uint16_t port, struct preview_grant *g,
                   struct nsbox_err *err)
{
    struct exposure *ex = calloc(1, sizeof(*ex));
    char token[PREVIEW_TOKEN_LEN + 1];

    if (ex == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (getrandom(&ex->id, sizeof(ex->id), 0) != (ssize_t)sizeof(ex->id)) {
        free(ex);
        return nsbox_err_sys(err, "getrandom");
    }
    ex->box = box;
    ex->port = port;
    ex->expires = (uint32_t)(time(NULL) + p->ttl_s);
    ex->refs = 1;
    if (preview_token_make(p->key, PREVIEW_PORT, ex->id, ex->expires, token) < 0) {
        free(ex);
        return nsbox_err_set(err, EINVAL, "cannot make a token");
    }
    *g = (struct preview_grant){.id = ex->id, .expires = ex->expires};
    if (p->domain[0] != '\0')
        snprintf(g->url, sizeof(g->url), "%s://%u-%s.%s%s/", p->scheme, port, token, p->domain,
                 p->host_port);
    else
        snprintf(g->url, sizeof(g->url), "%s" PREVIEW_PREFIX "%s/", p->base, token);
    explicit_bzero(token, sizeof(token));
    pthread_mutex_lock(&p->lock);
    ex->next = p->exposures;
    p->exposures = ex;
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void preview_unexpose(struct preview *p, uint64_t id)
{
    pthread_mutex_lock(&p->lock);
    struct exposure **pp = &p->exposures, *ex;
    while ((ex = *pp) != NULL && ex->id != id)
        pp = &ex->next;
    if (ex == NULL) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    *pp = ex->next;
    __atomic_store_n(&ex->dead, true, __ATOMIC_RELEASE);
    while (ex->connecting > 0)
        pthread_cond_wait(&p->cond, &p->lock);
    put_locked(ex);
    pthread_mutex_unlock(&p->lock);
    preview_wake(p); /* its connections are closed by the proxy thread */
}

unsigned preview_exposure_connections(struct preview *p, uint64_t id)
{
    unsigned n = 0;
    pthread_mutex_lock(&p->lock);
    for (struct exposure *ex = p->exposures; ex != NULL; ex = ex->next)
        if (ex->id == id && !ex->dead)
            n += ex->refs - 1 + ex->connecting; /* the table's own reference is not one */
    pthread_mutex_unlock(&p->lock);
    return n;
}
