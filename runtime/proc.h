/* Long-lived commands: a process in a sandbox that outlives the call that
 * started it (a stateful interpreter), driven by its caller through its
 * stdio.
 *
 * Each has a control connection of its own, handed to init over the
 * sandbox's (NSBOX_MSG_ATTACH), so its exit status never mixes with other
 * execs' and closing it kills the process group (init's rule for a
 * connection that goes away).  It runs exactly as an exec does: same
 * namespaces, uid, capabilities, seccomp filter, rlimits and cgroup.  Its
 * stdin is one end of a socketpair (both ways: the caller's requests in,
 * the driver's replies out), its stdout and stderr are pipes; the caller
 * owns the other ends and reads them non-blocking.  With o->tty instead,
 * all three are the slave of a pty init opened in the sandbox's own devpts
 * (the command's controlling terminal) and the caller gets its master.
 *
 * Contract: one thread drives a proc at a time; the sandbox must stay open
 * while a proc starts (the attach goes over sb->ctl), not after. */
#ifndef NSBOX_RUNTIME_PROC_H
#define NSBOX_RUNTIME_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/err.h"
#include "sandbox.h"

struct nsbox_proc {
    int ctl;      /* its own connection to init, or -1 */
    uint64_t id;  /* its exec id on that connection */
    int chan;     /* the caller's end of the socketpair on its stdin */
    int out, err; /* the read ends of its stdout and stderr (O_NONBLOCK) */
    int pty;      /* o->tty: the pty's master (O_NONBLOCK; chan, out and err
                     are -1), else -1 */
    bool exited;
    int wait_status; /* once exited: as from waitpid() */
    uint64_t cpu_us, maxrss_bytes;
};

/* Starts o->argv (o's env, cwd, uid, gid, rlimits, tty; its stdio fields
 * and timeout are ignored).  Returns 0 with *p filled, or -1 (nothing left
 * behind). */
int nsbox_proc_start(struct nsbox_sandbox *sb, const struct nsbox_exec_opts *o,
                     struct nsbox_proc *p, struct nsbox_err *err);

/* Takes on pid, a process of the sandbox whose parent is init now (an
 * interpreter's fork, reparented by a double fork: mcp/interp/fork.c), as
 * a proc of a connection of its own: p->chan, p->out and p->err are the
 * caller's, set before (the ends of what the fork was given); ctl and id
 * are filled here and the rest is as for a started proc (signals go to
 * its group, closing the connection kills it).  Returns 0, or -1 with p's
 * fds untouched and p->ctl -1 (init refused: not its child, claimed). */
int nsbox_proc_adopt(struct nsbox_sandbox *sb, pid_t pid, struct nsbox_proc *p,
                     struct nsbox_err *err);

/* Sends sig (SIGINT, SIGTERM, SIGKILL, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2:
 * init ignores others) to its process group.  Returns 0
 * or -1. */
int nsbox_proc_signal(struct nsbox_proc *p, int sig, struct nsbox_err *err);

/* Reads its exit status if init has sent it, waiting up to timeout_ms
 * (0: not at all, -1: until it comes).  Returns 1 when it has exited
 * (p->exited, p->wait_status), 0 when not yet, -1 when the connection
 * failed (init gone: the sandbox is dead). */
int nsbox_proc_wait(struct nsbox_proc *p, int timeout_ms, struct nsbox_err *err);

/* Kills it (if it still runs) and closes everything.  Idempotent. */
void nsbox_proc_close(struct nsbox_proc *p);

#endif
