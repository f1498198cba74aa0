/* Shared between the files of runtime/ only. */
#ifndef NSBOX_RUNTIME_INTERNAL_H
#define NSBOX_RUNTIME_INTERNAL_H

#include <sys/types.h>

/* A process's start time (field 22 of /proc/PID/stat), or 0 when it is
 * gone or a zombie: with the pid, it tells a sandbox's init from a recycled
 * pid. */
unsigned long long nsbox_proc_starttime(pid_t pid);

#endif
