/* Pause and resume: a sandbox's processes frozen and thawed through its
 * cgroup's freezer (v2 cgroup.freeze, v1 freezer.state), and the CPU it
 * has used (auto-pause's idle rule).  Called by boxes/pause.c only.
 *
 * Contract: the kernel's state is the truth (so the CLI and the server see
 * the same); nothing here keeps state.  A freeze waits, within a bound, for
 * every task to be stopped (v1 FROZEN, not FREEZING; v2 "frozen 1"), and
 * thaws back on failure: a half-frozen sandbox is never left behind. */
#ifndef NSBOX_RUNTIME_FREEZER_H
#define NSBOX_RUNTIME_FREEZER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "sandbox.h"

/* 0 when sb can be frozen; else -1 with why: what is missing and how to
 * fix it (rootless without a delegated cgroup, no freezer hierarchy). */
int nsbox_freezer_usable(const struct nsbox_sandbox *sb, char *why, size_t why_size);

/* 1 when sb's freezer is set (frozen, or freezing), 0 when thawed, -1
 * when it cannot be read (no freezer). */
int nsbox_freezer_state(const struct nsbox_sandbox *sb);

/* Freezes every task of sb and waits, at most wait_ms, until all are
 * stopped.  0, or -1 with err (ETIMEDOUT: thawed again). */
int nsbox_freezer_freeze(const struct nsbox_sandbox *sb, unsigned wait_ms, struct nsbox_err *err);

/* Thaws sb.  0 or -1 with err. */
int nsbox_freezer_thaw(const struct nsbox_sandbox *sb, struct nsbox_err *err);

/* The CPU time sb's processes have used, in microseconds (v2 cpu.stat
 * usage_usec, v1 cpuacct.usage).  0, or -1 when unknown. */
int nsbox_cgroup_cpu_usage(const struct nsbox_sandbox *sb, uint64_t *usec);

/* nsbox_sandbox_open of a paused sandbox leaves the disk's handover (a
 * tmpfs disk's fd from init) for later: once thawed, this takes it.  No-op
 * when there is none pending.  0 or -1 with err. */
int nsbox_sandbox_open_finish(struct nsbox_sandbox *sb, struct nsbox_err *err);

/* Whether this host lets nsbox (as the calling user) freeze sandboxes:
 * 0, or -1 with why (doctor's line). */
int nsbox_freezer_host(char *why, size_t why_size);

#endif
