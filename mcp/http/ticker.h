/* A thread that runs one function every few seconds until it is stopped:
 * the reapers of http/ (sessions.c ends sessions left unused,
 * tenants.c stops the idle sandboxes of stateless tenants).  The function
 * runs on the ticker's thread, holding no lock of the ticker's; a stop
 * waits for a run in progress to return. */
#ifndef NSBOX_MCP_HTTP_TICKER_H
#define NSBOX_MCP_HTTP_TICKER_H

#include <pthread.h>
#include <stdbool.h>

struct http_ticker {
    void (*fn)(void *ctx);
    void *ctx;
    unsigned tick_s;
    bool running; /* the thread was started and not yet joined */
    pthread_t thread;
    pthread_mutex_t lock; /* stopping */
    pthread_cond_t wake;  /* stopping was set */
    bool stopping;
};

/* Starts k's thread: fn(ctx) every tick_s seconds (CLOCK_MONOTONIC), the
 * first run one tick from now.  Returns false, with nothing started, when
 * no thread could be made. */
bool http_ticker_start(struct http_ticker *k, unsigned tick_s, void (*fn)(void *ctx), void *ctx);

/* Stops k's thread and joins it; nothing when it is not running. */
void http_ticker_stop(struct http_ticker *k);

#endif
