/* A sandbox's state file (STATE/state), private to runtime/.
 *
 * Written once the sandbox runs, by the process that created it; read by
 * every later one that opens, removes or collects it (nsbox exec, rm, gc,
 * a restarted MCP server).  It holds everything a struct nsbox_sandbox
 * needs that its id and state directory do not say: init's pid and start
 * time, the cgroup, rootless and the id map (which a rootless removal
 * enters to delete files the sandbox's ids own), the working directory and
 * the persistent workspace mounted there (where the files a run changed
 * live on the host).  Text, one "key=value" a line, '\n' and '\\' in a
 * value escaped; keys unknown to the reader are ignored and missing ones
 * read as empty, so an older file still opens. */
#ifndef NSBOX_RUNTIME_STATE_H
#define NSBOX_RUNTIME_STATE_H

#include "sandbox.h"

/* Writes sb's state into sb->state_dir, replacing the file atomically.
 * Returns 0 or -1. */
int nsbox_state_write(const struct nsbox_sandbox *sb, struct nsbox_err *err);

/* Reads the state in sb->state_dir (sb's id and state_dir set, the rest
 * zero) into sb; *start is init's start time as written.  Returns 0, or -1
 * when there is no state file (a sandbox that died while being created). */
int nsbox_state_read(struct nsbox_sandbox *sb, unsigned long long *start, struct nsbox_err *err);

/* A process's start time (field 22 of /proc/PID/stat), or 0 when it is
 * gone or a zombie: with the pid, it tells a sandbox's init from a recycled
 * pid (the state file keeps init's, nsbox_state_read gives it back). */
unsigned long long nsbox_proc_starttime(pid_t pid);

#endif
