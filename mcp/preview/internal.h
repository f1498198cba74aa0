/* What proxy.c (the listener and connections) and table.c (the
 * exposures, tokens and URLs) share.  Private to mcp/preview/. */
#ifndef NSBOX_MCP_PREVIEW_INTERNAL_H
#define NSBOX_MCP_PREVIEW_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "preview.h"
#include "token.h"

#define PREVIEW_CONNECTING_MAX 8 /* connection attempts at once to one exposure */

/* One exposed port.  refs: the table's one while listed, and one per
 * connection holding it; freed at 0, under the preview's lock.  dead is
 * set (under the lock, read atomically by the proxy thread) when it is
 * unexposed; box is used only while !dead, by a connect thread counted in
 * connecting. */
struct exposure {
    uint64_t id;
    struct box *box;
    uint16_t port;
    uint32_t expires;
    bool dead;
    unsigned refs, connecting;
    struct exposure *next;
};

struct conn;

/* A connection attempt (a thread of its own: box_port_connect may wait on
 * a sandbox), handed back to the proxy thread through done. */
struct job {
    struct preview *p;
    struct conn *c;
    struct exposure *ex;
    int fd, err;
    struct job *next;
};

struct preview {
    int lfd, epfd, wakefd;
    uint16_t port;
    pthread_t thread;
    bool started;
    bool stop; /* atomic */
    uint8_t key[PREVIEW_KEY_LEN];
    char base[512];    /* no trailing '/' */
    char domain[256];  /* "" in path mode; lower case */
    char scheme[8];    /* of base: "http" or "https" */
    char host_port[8]; /* host mode: ":PORT" of the URLs, or "" */
    unsigned ttl_s, max_conns, idle_s;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct exposure *exposures; /* under lock */
    struct job *done;           /* under lock */
    unsigned n_threads;         /* connect threads running, under lock */
    /* The proxy thread's own. */
    struct conn *conns, *graveyard;
    unsigned n_conns;
    bool accept_paused;
    uint64_t n_relayed; /* atomic */
    unsigned n_big;     /* connections with a big pipe (proxy.c; its thread only) */
};

/* table.c.  The exposure of a live token: a new reference (put it back
 * with exposure_put), or NULL with *status 403 (bad, expired) or 404
 * (closed, removed, or port not its own: want_port != 0 in host mode). */
struct exposure *exposure_find(struct preview *p, const char *token, size_t len, uint16_t want_port,
                               int *status);
void exposure_put(struct preview *p, struct exposure *ex);
/* Starts a connect thread for c on ex (a reference the job keeps, given
 * back by the proxy thread): 0, or -1 when too many are under way. */
int exposure_connect(struct preview *p, struct conn *c, struct exposure *ex);

/* listen.c: binds o's address (p->lfd, p->port) and makes p's URLs. */
int preview_listen(struct preview *p, const struct preview_options *o, struct nsbox_err *err);

/* proxy.c: wakes the proxy thread. */
void preview_wake(struct preview *p);

#endif
