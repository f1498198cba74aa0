/* Ports of a box: what listens in its network namespace, and a socket
 * connected to one, made by its init inside that namespace (the box gains
 * no route out: runtime/ports.h).  The door for the front ends (CLI -p,
 * the MCP server's port tools and preview proxy) and boxes/forward.h.
 *
 * Contract: any thread, concurrently, on a box that stays open for the
 * call.  Nothing here prints or exits. */
#ifndef NSBOX_BOXES_PORTS_H
#define NSBOX_BOXES_PORTS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/cancel.h"
#include "../common/err.h"

struct box;

/* A connected TCP socket (O_NONBLOCK, connect finished) to 127.0.0.1:port, or [::1]:port when only that listens,
   inside box's network namespace, made by its init: the sandbox gains no route out.  -1 with err (ECONNREFUSED
   when nothing listens; ENOTSUP under --isolation landlock, which has no network namespace). */
int box_port_connect(struct box *box, uint16_t port, struct nsbox_err *err);
/* 1 when something listens on TCP port (any or loopback address, v4 or v6) in box's netns, 0 not, -1 error. */
int box_port_listening(struct box *box, uint16_t port, struct nsbox_err *err);
/* Waits up to wait_ms (polling box_port_listening every ~50 ms; cancel may be NULL) for a listener.
   0 listening, -1 with ETIMEDOUT / ECANCELED / other err. */
int box_port_wait(struct box *box, uint16_t port, int wait_ms, struct nsbox_cancel *cancel,
                  struct nsbox_err *err);
/* The listening TCP ports of box (sorted, unique); returns their number or -1. */
int box_ports_listening(struct box *box, uint16_t *ports, size_t max, struct nsbox_err *err);

#endif
