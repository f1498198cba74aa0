/* The sandbox's network: an empty network namespace with only loopback. */
#ifndef NSBOX_RUNTIME_NET_H
#define NSBOX_RUNTIME_NET_H

#include "../common/err.h"

/* Brings "lo" up in the calling process's network namespace over rtnetlink
 * (libmnl).  Returns 0 or -1. */
int nsbox_net_loopback_up(struct nsbox_err *err);

#endif
