/* Ports of a sandbox, seen from the host: what listens on TCP in its
 * network namespace, and a socket connected to it made by its init.
 *
 * The sandbox gains no route out: init makes the socket inside the
 * namespace (NSBOX_MSG_CONNECT, init_ports.c) and connects it to the
 * sandbox's own 127.0.0.1 or ::1 only; the host gets the fd and relays.
 * The listening check reads /proc/<init>/net/tcp and tcp6 (the
 * namespace's tables; readable rootless too).
 *
 * Contract: any thread, concurrently (each connect has an answer socket of
 * its own; its request is one datagram on sb->ctl).  Under --isolation
 * landlock (no network namespace) everything fails with ENOTSUP. */
#ifndef NSBOX_RUNTIME_PORTS_H
#define NSBOX_RUNTIME_PORTS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "sandbox.h"

#define NSBOX_PORT_V4 1u /* something listens on 0.0.0.0 or 127.0.0.1 (or ::ffff:127.0.0.1) */
#define NSBOX_PORT_V6 2u /* on :: or ::1 */

/* A TCP socket (O_NONBLOCK, CLOEXEC) connected to 127.0.0.1:port (family
 * 4) or [::1]:port (6) in sb's network namespace, the connect finished
 * within timeout_ms (init's answer included).  -1 with err: ECONNREFUSED
 * when nothing listens, ETIMEDOUT, ENOTSUP under landlock, EPIPE when
 * init is gone. */
int nsbox_port_connect(struct nsbox_sandbox *sb, int family, uint16_t port, int timeout_ms,
                       struct nsbox_err *err);

/* Which families listen on TCP port in sb's netns (NSBOX_PORT_V4 | V6; 0:
 * none), or -1 with err. */
int nsbox_port_listening(const struct nsbox_sandbox *sb, uint16_t port, struct nsbox_err *err);

/* The listening TCP ports (loopback or any address), sorted and unique,
 * up to max of them into ports; returns how many there are in all (may
 * exceed max), or -1. */
int nsbox_ports_listening(const struct nsbox_sandbox *sb, uint16_t *ports, size_t max,
                          struct nsbox_err *err);

#endif
