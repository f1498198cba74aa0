/* A periodic worker thread (ticker.h). */
#include "ticker.h"

#include <time.h>

static void *ticker_main(void *arg)
{
    struct http_ticker *k = arg;

    pthread_mutex_lock(&k->lock);
    while (!k->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += k->tick_s;
        pthread_cond_timedwait(&k->wake, &k->lock, &ts);
        if (k->stopping)
            break;
        pthread_mutex_unlock(&k->lock);
        k->fn(k->ctx);
        pthread_mutex_lock(&k->lock);
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

bool http_ticker_start(struct http_ticker *k, unsigned tick_s, void (*fn)(void *ctx), void *ctx)
{
    pthread_condattr_t attr;

    *k = (struct http_ticker){.fn = fn, .ctx = ctx, .tick_s = tick_s};
    pthread_mutex_init(&k->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&k->wake, &attr);
    pthread_condattr_destroy(&attr);
    k->running = pthread_create(&k->thread, NULL, ticker_main, k) == 0;
    if (!k->running) {
        pthread_cond_destroy(&k->wake);
        pthread_mutex_destroy(&k->lock);
    }
    return k->running;
}

void http_ticker_stop(struct http_ticker *k)
{
    if (!k->running)
        return;
    pthread_mutex_lock(&k->lock);
    k->stopping = true;
    pthread_cond_broadcast(&k->wake);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    k->running = false;
    pthread_cond_destroy(&k->wake);
    pthread_mutex_destroy(&k->lock);
}
