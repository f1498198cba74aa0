/* Ports of a box (see ports.h): the runtime's, with the family picked. */
#include "ports.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "../runtime/egress/rules.h"
#include "../runtime/ports.h"
#include "box.h"
#include "pause.h"

/* init's answer and a loopback connect: a second at most, but the
 * server's accept queue may be full (a SYN dropped is retried in 1 s). */
#define CONNECT_TIMEOUT_MS 5000

/* A port the egress broker listens on in box's namespace (its --net
 * rules' ports; 53 for names): a connection there would reach the broker,
 * with the box's egress allowance, never a server of the box's (which
 * could not bind it).  Refused, and not listed. */
static bool broker_port(const struct box *box, uint16_t port)
{
    uint16_t ports[EGRESS_MAX_RULES * EGRESS_MAX_PORTS];
    const struct egress_policy *p = box->net;
    if (p == NULL || p->n == 0)
        return false;
    if (port == 53)
        return true;
    size_t n = egress_policy_ports(p, ports, sizeof(ports) / sizeof(ports[0]));
    for (size_t i = 0; i < n; i++)
        if (ports[i] == port)
            return true;
    return false;
}

static int connect_inside(struct box *box, uint16_t port, struct nsbox_err *err)
{
    if (broker_port(box, port))
        return nsbox_err_set(err, EACCES,
                             "port %u in the sandbox is its egress broker's (--net), not a server "
                             "of the sandbox's",
                             port);
    /* 127.0.0.1 first: the common case costs no read of the tables. */
    int fd = nsbox_port_connect(&box->sb, 4, port, CONNECT_TIMEOUT_MS, err);
    if (fd >= 0 || err->code != ECONNREFUSED)
        return fd;
    struct nsbox_err e2;
    int fam = nsbox_port_listening(&box->sb, port, &e2);
    if (fam < 0 || !(fam & NSBOX_PORT_V6))
        return -1; /* err says refused */
    return nsbox_port_connect(&box->sb, 6, port, CONNECT_TIMEOUT_MS, err);
}

/* A connection is a use: a paused box is woken for it (boxes/pause.h). */
int box_port_connect(struct box *box, uint16_t port, struct nsbox_err *err)
{
    struct nsbox_err local;
    if (err == NULL)
        err = &local;
    if (box_use_begin(box, NULL, err) < 0)
        return -1;
    int fd = connect_inside(box, port, err);
    box_use_end(box);
    return fd;
}

int box_port_listening(struct box *box, uint16_t port, struct nsbox_err *err)
{
    int fam = nsbox_port_listening(&box->sb, port, err);
    return fam < 0 ? -1 : fam != 0 && !broker_port(box, port);
}

int box_port_wait(struct box *box, uint16_t port, int wait_ms, struct nsbox_cancel *cancel,
                  struct nsbox_err *err)
{
    if (broker_port(box, port))
        return box_port_connect(box, port, err); /* its refusal, at once */
    for (int waited = 0;; waited += 50) {
        int r = box_port_listening(box, port, err);
        if (r < 0)
            return -1;
        if (r == 1)
            return 0;
        if (waited >= wait_ms)
            return nsbox_err_set(err, ETIMEDOUT, "nothing listens on port %u in the sandbox", port);
        struct pollfd pfd = {.fd = cancel ? cancel->fd : -1, .events = POLLIN};
        if (poll(&pfd, 1, 50) > 0 || (cancel && nsbox_cancel_fired(cancel)))
            return nsbox_err_set(err, ECANCELED, "cancelled while waiting for port %u", port);
    }
}

int box_ports_listening(struct box *box, uint16_t *ports, size_t max, struct nsbox_err *err)
{
    uint16_t *all = malloc(65536 * sizeof(*all));
    if (all == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    int n = nsbox_ports_listening(&box->sb, all, 65536, err);
    size_t k = 0;
    for (size_t i = 0; i < (size_t)(n > 0 ? n : 0); i++)
        if (!broker_port(box, all[i])) {
            if (k < max)
                ports[k] = all[i];
            k++;
        }
    free(all);
    return n < 0 ? -1 : (int)k;
}
