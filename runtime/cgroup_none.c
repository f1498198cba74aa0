/* The "none" cgroup backend: no usable cgroup on this host, and the
 * operator consented to best effort (namespaces_spawn.c refuses otherwise).  Every
 * operation succeeds and does nothing; stats stay zero.  The sandbox is
 * still bounded by its rlimits and its pid namespace, and reported as
 * running without cgroup limits. */
#include "cgroup_backend.h"

static int none_create(const char *base, const char *name, const struct nsbox_cgroup_limits *limits,
                       struct nsbox_cgroup *out, struct nsbox_err *err)
{
    return 0;
}

static int none_add(const struct nsbox_cgroup *cg, const char *pid, struct nsbox_err *err)
{
    return 0;
}

static void none_stats(const struct nsbox_cgroup *cg, uint64_t *oom_kills, uint64_t *memory_peak)
{
}

/* The pid namespace does the killing: init's death ends every process. */
static void none_kill(const struct nsbox_cgroup *cg)
{
}

static int none_remove(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    return 0;
}

const struct cgroup_ops nsbox_cgroup_none_ops = {
    .probe = NULL,
    .create = none_create,
    .add = none_add,
    .enter_self = NULL,
    .stats = none_stats,
    .kill = none_kill,
    .remove = none_remove,
};
