/* Shared between the files of runtime/ only. */
#ifndef NSBOX_RUNTIME_INTERNAL_H
#define NSBOX_RUNTIME_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

struct nsbox_exec_opts;

/* A process's start time (field 22 of /proc/PID/stat), or 0 when it is
 * gone or a zombie: with the pid, it tells a sandbox's init from a recycled
 * pid. */
unsigned long long nsbox_proc_starttime(pid_t pid);

/* Sends an exec request for o on the control connection ctl, with the
 * command's stdin, stdout and stderr (exec.c); with o->tty, fds is unused
 * (init makes a terminal: proto.h).  Returns 0 or -1. */
int nsbox_exec_send(int ctl, uint64_t id, const struct nsbox_exec_opts *o, const int fds[3],
                    struct nsbox_err *err);

/* A random, nonzero exec id. */
uint64_t nsbox_exec_new_id(void);

#endif
