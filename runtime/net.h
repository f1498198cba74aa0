/* The sandbox's network: an empty network namespace with only loopback,
 * where every address is local (egress/egress.h). */
#ifndef NSBOX_RUNTIME_NET_H
#define NSBOX_RUNTIME_NET_H

#include "../common/err.h"

/* Brings "lo" up in the calling process's network namespace over rtnetlink
 * (libmnl).  Returns 0 or -1. */
int nsbox_net_loopback_up(struct nsbox_err *err);

/* Adds `local default dev lo` in table local, IPv4 and IPv6, in the
 * calling process's network namespace (lo up first).  Returns 0 or -1. */
int nsbox_net_capture_routes(struct nsbox_err *err);

/* The sandbox's /etc/resolv.conf and /etc/hosts: files of these names,
 * bound read-only over the image's (mounts.c). */
#define NSBOX_NET_RESOLV "etc-resolv.conf"
#define NSBOX_NET_HOSTS "etc-hosts"

/* Writes them into the directory dfd (0644): resolv.conf names 127.0.0.1
 * (the broker's DNS, or nothing when sealed), hosts has localhost and
 * hostname.  Returns 0 or -1. */
int nsbox_net_write_etc(int dfd, const char *hostname, struct nsbox_err *err);

#endif
