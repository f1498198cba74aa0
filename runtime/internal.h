/* Shared between the files of runtime/ only. */
#ifndef NSBOX_RUNTIME_INTERNAL_H
#define NSBOX_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

struct nsbox_exec_opts;
struct nsbox_sandbox;

/* Sends an exec request for o on the control connection ctl, with the
 * command's stdin, stdout and stderr (exec.c); with o->tty, fds is unused
 * (init makes a terminal: proto.h).  Returns 0 or -1. */
int nsbox_exec_send(int ctl, uint64_t id, const struct nsbox_exec_opts *o, const int fds[3],
                    struct nsbox_err *err);

/* A new connection to sb's init of the caller's own (NSBOX_MSG_ATTACH on
 * sb->ctl; proc.c), for requests that must not mix with sb->ctl's.
 * Returns the fd, or -1. */
int nsbox_sandbox_attach(struct nsbox_sandbox *sb, struct nsbox_err *err);

/* Asks sb's init for listeners in the sandbox's network namespace: TCP
 * [::]:PORT (v4 and v6) for each of the n ports, then, with dns, UDP and
 * TCP 127.0.0.1:53 (init.c; it alone may bind below 1024).  fds_out gets
 * n (+ 2) fds in that order (nonblocking, CLOEXEC; the caller owns them).
 * Returns 0, or -1 with err (a port in use inside the sandbox named) and
 * no fd open. */
int nsbox_sandbox_net_listen(struct nsbox_sandbox *sb, const uint16_t *ports, size_t n, bool dns,
                             int *fds_out, struct nsbox_err *err);

/* After init died: reaps the sandbox in state_dir's egress broker when it
 * is the caller's child (a subreaper adopts it: the MCP server, whose
 * zombies would pile up), waiting a moment for it to leave; else nothing
 * (egress/egress.c). */
void nsbox_egress_reap(const char *state_dir);

/* A random, nonzero exec id. */
uint64_t nsbox_exec_new_id(void);

#endif
