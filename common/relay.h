/* The splice relay: pairs of connected stream sockets relayed both ways
 * through pipes with splice(2), on one epoll thread per engine.
 *
 * Used by boxes/forward.c (a host listener relayed to a box's port) and
 * the MCP preview proxy (WebSocket and raw phases).  Per connection: two
 * pipes of pipe_size bytes (its whole buffer: a slow reader stops the
 * other side's reads, nothing more is queued), a half-close (EOF read on
 * one side) passed on as shutdown(SHUT_WR) of the other, an idle timeout,
 * and a tag naming its owner so that all of one owner's connections can be
 * closed at once.  A connection ends when both directions have ended, or
 * on an error of either side (then both sockets are closed).
 *
 * Contract: relay_add, relay_close_tag, relay_count and relay_get_stats
 * may be called from any thread; on_close runs on the relay's thread, or
 * on the thread in relay_close_tag or relay_stop, with the engine's lock
 * held: it must not call relay functions.  The process must ignore
 * SIGPIPE (splice into a socket whose peer is gone raises it).  libc only;
 * no printing, no exit. */
#ifndef NSBOX_COMMON_RELAY_H
#define NSBOX_COMMON_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct relay;

struct relay_opts {
    unsigned max_conns; /* 0: 1024 */
    unsigned idle_s;    /* a connection with no byte moved for this long is
                           closed; 0: never */
    size_t pipe_size;   /* each direction's buffer; 0: the kernel's (64 KiB) */
    /* Called on the relay's thread after a connection closed, with its tag
     * (to free a slot).  NULL: none. */
    void (*on_close)(void *ctx, uint64_t tag);
    void *ctx;
};

struct relay_stats {
    uint64_t added, closed, idle_closed; /* connections */
    uint64_t active;
    uint64_t bytes_ab, bytes_ba; /* delivered a->b and b->a */
};

/* Starts the engine's thread.  NULL with err. */
struct relay *relay_start(const struct relay_opts *o, struct nsbox_err *err);

/* Relays a <-> b (connected stream sockets; both made O_NONBLOCK) until
 * done; the relay owns both from now on, also on failure (then closed).
 * 0, or -1 with err (EAGAIN at max_conns, or out of pipes; on_close is
 * not called for a connection refused). */
int relay_add(struct relay *r, int a, int b, uint64_t tag, struct nsbox_err *err);

/* Closes every connection with tag, and returns once they are closed. */
void relay_close_tag(struct relay *r, uint64_t tag);

/* Open connections with tag. */
size_t relay_count(struct relay *r, uint64_t tag);

void relay_get_stats(struct relay *r, struct relay_stats *s);

/* Closes every connection, stops and joins the thread, frees r.  NULL is
 * a no-op. */
void relay_stop(struct relay *r);

#endif
