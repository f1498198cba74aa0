/* A host listening socket whose connections are relayed to a box's port:
 * each accepted client gets a socket made by the box's init inside its
 * network namespace (boxes/ports.h), and the two are relayed with splice
 * (common/relay.h).  Inbound only: the box gains no route out.
 *
 * Used by the CLI's -p (in the `run` process, or in the detached
 * forwarder of `create -p`) and the MCP server's port tools over stdio.
 *
 * Contract: box must stay open until box_forward_stop returns; the other
 * calls may come from any thread.  Nothing here prints or exits. */
#ifndef NSBOX_BOXES_FORWARD_H
#define NSBOX_BOXES_FORWARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

struct box;
struct box_forward;

/* Takes listen_fd (a bound, listening TCP socket; O_NONBLOCK is set); every accepted connection is relayed to
   box's port (box_port_connect) until either side closes; at most max_conns at once (more wait in the backlog),
   idle connections closed after idle_s (0: never).  Runs on its own thread.  NULL with err (listen_fd is then
   still the caller's). */
struct box_forward *box_forward_start(struct box *box, uint16_t port, int listen_fd,
                                      unsigned max_conns, unsigned idle_s, struct nsbox_err *err);
/* Stops accepting, closes every connection, joins the thread, closes listen_fd.  NULL is a no-op. */
void box_forward_stop(struct box_forward *f);
uint64_t box_forward_connections(const struct box_forward *f); /* accepted so far */
unsigned box_forward_open(const struct box_forward *f);        /* open now (NULL: 0) */
/* Connections that could not reach the box's port (nothing listened, ...) and were closed at once. */
uint64_t box_forward_failures(const struct box_forward *f);

/* A forwarder process for a detached box (`nsbox create -p`): forks a
 * child in a session of its own (stdio on /dev/null, every other fd but
 * the listeners and the box's control connection closed) that serves
 * each listen_fds[i] -> ports[i] with box_forward_start until the box's
 * init is gone (its control connection's EOF, or its pidfd), then exits.
 * Its pid and the ports (labels[i], as the user wrote them) are recorded
 * in the box's state directory (forward.json) for box_forward_kill and
 * box_forward_labels.  The caller must be single-threaded; it keeps its
 * copies of the listeners (to close).  Returns the child's pid once every
 * forward runs, or -1 with err (no child left). */
pid_t box_forward_detach(struct box *box, const uint16_t *ports, const int *listen_fds,
                         const char *const *labels, size_t n, unsigned max_conns,
                         struct nsbox_err *err);

/* Stops the forwarder recorded in state_dir, if that very process (pid and
 * start time) still runs.  For box_remove. */
void box_forward_kill(const char *state_dir);

/* The recorded ports of the box in state_dir, comma-separated into buf
 * ("" when none). */
void box_forward_labels(const char *state_dir, char *buf, size_t size);

#endif
