/* Long-lived processes in a box: a persistent interpreter (mcp/interp/),
 * a command with a terminal (cli/tty.c).  The front ends drive them
 * through these calls and never the runtime's (runtime/proc.h says how a
 * process is attached, runs, and dies with its connection).
 *
 * Contract: as runtime/proc.h's: one thread drives a proc at a time; the
 * box stays open while a proc starts.  A struct nsbox_proc is the
 * caller's to read (its fds, exited, wait_status, cpu_us) and to release
 * with box_proc_close. */
#ifndef NSBOX_BOXES_PROC_H
#define NSBOX_BOXES_PROC_H

#include <stdint.h>

#include "../common/cancel.h"
#include "../runtime/proc.h"
#include "box.h"

/* Starts o->argv in box (o's env, cwd, uid, gid, rlimits, tty; its stdio
 * fields and timeout are ignored).  Returns 0 with *p filled, or -1 with
 * nothing left behind. */
int box_proc_start(struct box *box, const struct nsbox_exec_opts *o, struct nsbox_proc *p,
                   struct nsbox_err *err);

/* Takes on pid, a fork the sandbox made that init now parents, as a proc
 * (runtime/proc.h nsbox_proc_adopt: p's chan, out and err set by the
 * caller first).  Returns 0, or -1 with p->ctl -1. */
int box_proc_adopt(struct box *box, pid_t pid, struct nsbox_proc *p, struct nsbox_err *err);

/* Sends sig (SIGINT, SIGTERM, SIGKILL, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2)
 * to its process group.  Returns 0
 * or -1. */
int box_proc_signal(struct nsbox_proc *p, int sig, struct nsbox_err *err);

/* Its exit status if it came within timeout_ms (0: don't wait, -1: until
 * it comes).  Returns 1 when it has exited, 0 when not yet, -1 when the
 * sandbox is gone. */
int box_proc_wait(struct nsbox_proc *p, int timeout_ms, struct nsbox_err *err);

/* Kills it (if it still runs) and closes everything.  Idempotent. */
void box_proc_close(struct nsbox_proc *p);

/* OOM kills in box so far and its peak memory (0 when unknown;
 * memory_peak may be NULL): a count taken before and after tells whether
 * a process was OOM-killed. */
void box_stats(const struct box *box, uint64_t *oom_kills, uint64_t *memory_peak);

/* Kills every process of box but its init, now (a timeout's way out). */
void box_kill_all(struct box *box);

#endif
