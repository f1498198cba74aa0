/* What the host can give sandboxes, asked through the door: `nsbox
 * doctor`'s probes (cgroups, seccomp, project quotas, Landlock) and the
 * binary's own re-executions, so that no front end reaches into runtime/
 * for them.  Each is the runtime's probe as it is; the words around them
 * (what to fix, how) are the front end's and common/hostcheck.c's.
 *
 * Contract: probes only read the host (and compile a filter they free);
 * nothing here writes to stdout. */
#ifndef NSBOX_BOXES_HOST_H
#define NSBOX_BOXES_HOST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/err.h"
#include "../runtime/cgroup.h"
#include "../runtime/landlock.h"
#include "../runtime/seccomp.h"

/* For main(), first: when argv asks for one of the runtime's helpers
 * (the egress broker, runtime/egress/egress.h), runs it and never
 * returns; otherwise returns. */
void box_main_hook(int argc, char **argv);

/* The cgroup hierarchy sandboxes would get: its kind and base directory,
 * or NSBOX_CGROUP_NONE with why (nsbox_cgroup_probe).  Returns 0, or -1
 * with err when the probe itself failed. */
int box_host_cgroups(enum nsbox_cgroup_kind *kind, char base[PATH_MAX], char *why, size_t why_size,
                     struct nsbox_err *err);

/* Compiles the Docker-format profile (len bytes) as a sandbox would get
 * it; *instructions is the filter's length.  Returns 0, or -1 with err. */
int box_host_seccomp(const char *profile, size_t len, size_t *instructions, struct nsbox_err *err);

/* Whether sandboxes on dir's filesystem get project quotas (root only);
 * else false with why. */
bool box_host_quota_usable(const char *dir, char *why, size_t why_size);

/* The kernel's Landlock ABI (0: none, with *why), what that ABI enforces,
 * and the layers --isolation=landlock lacks at it (up to max into out,
 * static strings; the count is returned). */
int box_host_landlock_abi(const char **why);
const char *box_host_landlock_protections(int abi);
size_t box_host_landlock_missing(int abi, const char **out, size_t max);

#endif
