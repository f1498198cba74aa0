/* Resource limits through cgroups.
 *
 * v2: a cgroup per sandbox below a writable subtree with the memory, pids
 * and cpu controllers (the root cgroup, the cgroup nsbox runs in, or a
 * delegated user slice).  v1: as root on hybrid hosts whose memory/pids/cpu
 * controllers sit on cgroup v1 (this CI host, WSL2, older distributions),
 * one group per controller.  none: no usable cgroup — only with the
 * operator's explicit best-effort consent, and reported as such.
 *
 * Each kind is a backend behind an ops table (cgroup_backend.h):
 * cgroup_v2.c, cgroup_v1.c, cgroup_none.c; cgroup.c probes, picks one and
 * dispatches every call below on cg->kind. */
#ifndef NSBOX_RUNTIME_CGROUP_H
#define NSBOX_RUNTIME_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

enum nsbox_cgroup_kind {
    NSBOX_CGROUP_NONE,
    NSBOX_CGROUP_V2,
    NSBOX_CGROUP_V1,
};

struct nsbox_cgroup_limits {
    uint64_t memory_bytes; /* 0: unlimited */
    uint32_t pids;         /* 0: unlimited */
    uint64_t cpu_quota_us; /* per cpu_period_us; 0: unlimited */
    uint64_t cpu_period_us;
};

/* A sandbox's cgroup directories are short (BASE/nsbox/ID); a server keeps
 * one struct per sandbox, and its size is what every fork of the server
 * copies (docs/density.md): a longer path is refused at creation. */
#define NSBOX_CGROUP_PATH_MAX 512

struct nsbox_cgroup {
    enum nsbox_cgroup_kind kind;
    char v2[NSBOX_CGROUP_PATH_MAX]; /* the sandbox's cgroup directory */
    char mem[NSBOX_CGROUP_PATH_MAX], pids[NSBOX_CGROUP_PATH_MAX],
        cpu[NSBOX_CGROUP_PATH_MAX]; /* v1 */
    /* v1: the groups made beside those three (NSBOX_CG_V1_*), named as
     * they are (BASE/freezer/nsbox/NAME, derived from pids): bits, not
     * paths, so that the record stays its size (runtime/freezer.h). */
    unsigned v1_extra;
};

#define NSBOX_CG_V1_FREEZER 1u /* freezer/nsbox/NAME: pause and resume */
#define NSBOX_CG_V1_CPUACCT 2u /* cpuacct/nsbox/NAME: CPU used (auto-pause) */

/* Where sandboxes' cgroups can go on this host, and why not when they
 * cannot: fills *kind and base (a directory), or kind NONE with why set to
 * a sentence that names the fix.  Creates nothing but the "nsbox" parent
 * group.  Returns 0 (even for NONE) or -1 on unexpected errors. */
int nsbox_cgroup_probe(enum nsbox_cgroup_kind *kind, char base[PATH_MAX], char *why,
                       size_t why_size, struct nsbox_err *err);

/* Creates the cgroup `name` under base and applies limits.  Returns 0 or
 * -1 (nothing left behind). */
int nsbox_cgroup_create(enum nsbox_cgroup_kind kind, const char *base, const char *name,
                        const struct nsbox_cgroup_limits *limits, struct nsbox_cgroup *out,
                        struct nsbox_err *err);

/* Moves pid into the cgroup.  Returns 0 or -1. */
int nsbox_cgroup_add(const struct nsbox_cgroup *cg, pid_t pid, struct nsbox_err *err);

/* v1 only: moves the calling thread, which must be the only thread of its
 * process, into the cgroup, so that the children it then makes are born
 * there.  Unlike nsbox_cgroup_add it takes no global lock and does not wait
 * for an RCU grace period.  Returns 0 or -1 (ENOTSUP for other kinds). */
int nsbox_cgroup_enter_self(const struct nsbox_cgroup *cg, struct nsbox_err *err);

/* OOM kills so far and peak memory (0 when unknown; memory_peak may be
 * NULL when only the OOM count is wanted). */
void nsbox_cgroup_stats(const struct nsbox_cgroup *cg, uint64_t *oom_kills, uint64_t *memory_peak);

/* Kills every process in the cgroup (cgroup.kill on v2; one SIGKILL per
 * listed pid on v1, repeated until empty). */
void nsbox_cgroup_kill(const struct nsbox_cgroup *cg);

/* Kills what is left and removes the cgroup.  Returns 0 or -1. */
int nsbox_cgroup_destroy(const struct nsbox_cgroup *cg, struct nsbox_err *err);

/* Describes the limits in force, e.g. "cgroup v2: memory, pids, cpu". */
const char *nsbox_cgroup_kind_name(enum nsbox_cgroup_kind kind);

#endif
