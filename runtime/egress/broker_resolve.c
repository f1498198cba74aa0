/* Names resolved off the event loop: getaddrinfo blocks, so each lookup
 * runs in a thread of its own (at most one per connection, and
 * connections are capped) and writes its answer, one pointer, into a
 * pipe the loop watches.  The answer names its connection by slot and
 * generation: a connection closed meanwhile is not confused with the
 * next one in its slot. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_internal.h"

struct lookup {
    size_t idx;
    uint32_t gen;
    char name[EGRESS_NAME_MAX + 1];
    char port[8];
    int gai_error;
    struct sockaddr_storage addrs[BROKER_MAX_ADDRS];
    socklen_t lens[BROKER_MAX_ADDRS];
    size_t n;
    int out; /* the pipe's write end */
};

static void *lookup_main(void *arg)
{
    struct lookup *l = arg;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG}, *res = NULL;

    l->gai_error = getaddrinfo(l->name, l->port, &hints, &res);
    for (struct addrinfo *ai = res; l->gai_error == 0 && ai != NULL && l->n < BROKER_MAX_ADDRS;
         ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(l->addrs[0]))
            continue;
        memcpy(&l->addrs[l->n], ai->ai_addr, ai->ai_addrlen);
        l->lens[l->n++] = ai->ai_addrlen;
    }
    if (res != NULL)
        freeaddrinfo(res);
    /* A pointer is far below PIPE_BUF: written whole, never interleaved. */
    if (write(l->out, &l, sizeof(l)) != (ssize_t)sizeof(l))
        free(l);
    return NULL;
}

int broker_resolve_start(struct broker *b, size_t idx, uint32_t gen, const char *name,
                         uint16_t port)
{
    struct lookup *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return -1;
    l->idx = idx;
    l->gen = gen;
    l->out = b->resolver[1];
    snprintf(l->name, sizeof(l->name), "%s", name);
    snprintf(l->port, sizeof(l->port), "%u", port);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int e = pthread_create(&t, &attr, lookup_main, l);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        free(l);
        errno = e;
        return -1;
    }
    return 0;
}

void broker_resolve_drain(struct broker *b)
{
    struct lookup *l;
    while (read(b->resolver[0], &l, sizeof(l)) == (ssize_t)sizeof(l)) {
        broker_conn_resolved(b, l->idx, l->gen, l->addrs, l->lens, l->n, l->gai_error);
        free(l);
    }
}
