/* See cancel.h. */
#include "cancel.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int nsbox_cancel_init(struct nsbox_cancel *c, struct nsbox_err *err)
{
    c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return c->fd < 0 ? nsbox_err_sys(err, "eventfd") : 0;
}

void nsbox_cancel_fire(struct nsbox_cancel *c)
{
    uint64_t one = 1;
    /* The counter only grows: readers poll, nobody reads it down. */
    if (c->fd >= 0 && write(c->fd, &one, sizeof(one)) < 0)
        (void)0; /* EAGAIN at 2^64-2 fires: fired already */
}

bool nsbox_cancel_fired(const struct nsbox_cancel *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return c->fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

void nsbox_cancel_close(struct nsbox_cancel *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}
