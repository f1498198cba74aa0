/* The cgroup v1 backend: as root on hybrid hosts whose memory, pids and
 * cpu controllers sit on v1 hierarchies (this CI host, WSL2, older
 * distributions).  One group per controller per sandbox, at
 * /sys/fs/cgroup/<controller>/nsbox/<id>.  Limits: memory.limit_in_bytes
 * (memsw equal where swap accounting exists), pids.max, cpu.cfs_*.
 * Killing: each pid listed in the pids group (v1 has no cgroup.kill).
 * enter_self lets the clone helper be born in the groups, cheaper than
 * moving the child afterwards.
 *
 * Beside the three, where the host mounts them, a freezer group (pause and
 * resume: runtime/freezer.c) and a cpuacct group (the CPU a sandbox used,
 * for auto-pause's idle rule): optional, recorded as bits in v1_extra.  A
 * frozen v1 group keeps SIGKILL pending until it is thawed, so kill
 * signals everything, thaws, then kills again until the group is empty. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_backend.h"

static int v1_probe(char base[PATH_MAX], char *why, size_t why_size, struct nsbox_err *err)
{
    char dir[PATH_MAX];

    if (geteuid() != 0) {
        snprintf(why, why_size, "cgroup v1 controllers can only be used as root");
        return 1;
    }
    for (size_t i = 0; i < 3; i++) {
        const char *ctl = nsbox_cgroup_controllers[i];
        snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s", ctl);
        if (access(dir, W_OK) < 0) {
            snprintf(why, why_size, "no cgroup v1 %s controller at %s", ctl, dir);
            return 1;
        }
        snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s/nsbox", ctl);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
            return 1;
        }
    }
    snprintf(base, PATH_MAX, "/sys/fs/cgroup");
    return 0;
}

/* The optional groups, in the order of their NSBOX_CG_V1_* bits. */
static const char *const extras[] = {"freezer", "cpuacct"};
#define N_EXTRAS 2

int nsbox_cgroup_v1_dir(const struct nsbox_cgroup *cg, const char *ctl, char out[PATH_MAX])
{
    /* cg->pids is BASE/pids/nsbox/NAME. */
    const char *at = strstr(cg->pids, "/pids/nsbox/");
    if (at == NULL || strchr(at + 12, '/') != NULL)
        return -1;
    int n = snprintf(out, PATH_MAX, "%.*s/%s/nsbox/%s", (int)(at - cg->pids), cg->pids, ctl,
                     at + 12);
    return n > 0 && n < PATH_MAX ? 0 : -1;
}

/* Makes the optional groups that this host has; a missing one only
 * leaves its bit clear (the feature then says why it is unavailable). */
static void make_extras(const char *base, struct nsbox_cgroup *cg)
{
    char dir[PATH_MAX];
    for (unsigned i = 0; i < N_EXTRAS; i++) {
        snprintf(dir, sizeof(dir), "%.*s/%s/nsbox", PATH_MAX - 120, base, extras[i]);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            continue;
        if (nsbox_cgroup_v1_dir(cg, extras[i], dir) == 0 && mkdir(dir, 0755) == 0)
            cg->v1_extra |= 1u << i;
    }
}

/* Writes value to file in each optional group cg has.  0 or -1. */
static int write_extras(const struct nsbox_cgroup *cg, const char *file, const char *value,
                        struct nsbox_err *err)
{
    char dir[PATH_MAX];
    for (unsigned i = 0; i < N_EXTRAS; i++)
        if ((cg->v1_extra & (1u << i)) && nsbox_cgroup_v1_dir(cg, extras[i], dir) == 0 &&
            nsbox_cgroup_write(dir, file, value, err) < 0)
            return -1;
    return 0;
}

static int apply_limits(const struct nsbox_cgroup *cg, const struct nsbox_cgroup_limits *l,
                        struct nsbox_err *err)
{
    char v[64];

    if (l->memory_bytes) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_bytes);
        if (nsbox_cgroup_write(cg->mem, "memory.limit_in_bytes", v, err) < 0)
            return -1;
        /* memsw exists only with swap accounting; where it does, equal
         * limits mean no swap. */
        nsbox_cgroup_write(cg->mem, "memory.memsw.limit_in_bytes", v, NULL);
        nsbox_cgroup_write(cg->mem, "memory.swappiness", "0", NULL);
    }
    if (l->pids) {
        snprintf(v, sizeof(v), "%u", l->pids);
        if (nsbox_cgroup_write(cg->pids, "pids.max", v, err) < 0)
            return -1;
    }
    if (l->cpu_quota_us) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->cpu_period_us);
        if (nsbox_cgroup_write(cg->cpu, "cpu.cfs_period_us", v, err) < 0)
            return -1;
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->cpu_quota_us);
        if (nsbox_cgroup_write(cg->cpu, "cpu.cfs_quota_us", v, err) < 0)
            return -1;
    }
    return 0;
}

static void v1_kill(const struct nsbox_cgroup *cg)
{
    char dir[PATH_MAX], buf[65536];

    /* A frozen task takes its SIGKILL only once thawed: signal first (so
     * nothing runs user code after the thaw), thaw, then kill until empty. */
    if ((cg->v1_extra & NSBOX_CG_V1_FREEZER) && nsbox_cgroup_v1_dir(cg, "freezer", dir) == 0) {
        if (nsbox_cgroup_read(cg->pids, "cgroup.procs", buf, sizeof(buf)) == 0)
            for (char *l = strtok(buf, "\n"); l != NULL; l = strtok(NULL, "\n"))
                kill((pid_t)atoi(l), SIGKILL);
        nsbox_cgroup_write(dir, "freezer.state", "THAWED", NULL);
    }
    nsbox_cgroup_kill_listed(cg->pids);
}

static int v1_remove(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    int r = 0;
    const char *dirs[] = {cg->mem, cg->pids, cg->cpu};
    for (size_t i = 0; i < 3; i++)
        if (nsbox_cgroup_remove_dir(dirs[i], err) < 0)
            r = -1;
    char dir[PATH_MAX];
    for (unsigned i = 0; i < N_EXTRAS; i++)
        if ((cg->v1_extra & (1u << i)) && nsbox_cgroup_v1_dir(cg, extras[i], dir) == 0 &&
            nsbox_cgroup_remove_dir(dir, err) < 0)
            r = -1;
    return r;
}

static int v1_create(const char *base, const char *name, const struct nsbox_cgroup_limits *limits,
                     struct nsbox_cgroup *out, struct nsbox_err *err)
{
    struct nsbox_err ignored;
    char *dirs[] = {out->mem, out->pids, out->cpu};
    bool made = true;

    for (size_t i = 0; i < 3 && made; i++) {
        int n = snprintf(dirs[i], NSBOX_CGROUP_PATH_MAX, "%s/%s/nsbox/%s", base,
                         nsbox_cgroup_controllers[i], name);
        if (n < 0 || n >= NSBOX_CGROUP_PATH_MAX) {
            nsbox_err_set(err, ENAMETOOLONG, "the cgroup path under %.200s is too long", base);
            dirs[i][0] = '\0';
            made = false;
        } else if (mkdir(dirs[i], 0755) < 0) {
            nsbox_err_sys(err, "cannot create cgroup %s", dirs[i]);
            dirs[i][0] = '\0'; /* not ours: never removed */
            made = false;
        }
    }
    if (made)
        make_extras(base, out);
    if (made && apply_limits(out, limits, err) == 0)
        return 0;
    v1_kill(out);
    v1_remove(out, &ignored);
    return -1;
}

static int v1_add(const struct nsbox_cgroup *cg, const char *pid, struct nsbox_err *err)
{
    const char *dirs[] = {cg->mem, cg->pids, cg->cpu};
    for (size_t i = 0; i < 3; i++)
        if (nsbox_cgroup_write(dirs[i], "cgroup.procs", pid, err) < 0)
            return -1;
    return write_extras(cg, "cgroup.procs", pid, err);
}

static int v1_enter_self(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    /* "0" names the writing thread; through `tasks` it is one thread, not
     * a thread group, and the kernel then skips the global threadgroup
     * lock (cgroup_procs_write_start), whose write side waits for an RCU
     * grace period, 10-30 ms on this kind of host. */
    const char *dirs[] = {cg->mem, cg->pids, cg->cpu};
    for (size_t i = 0; i < 3; i++)
        if (nsbox_cgroup_write(dirs[i], "tasks", "0", err) < 0)
            return -1;
    return write_extras(cg, "tasks", "0", err);
}

static void v1_stats(const struct nsbox_cgroup *cg, uint64_t *oom_kills, uint64_t *memory_peak)
{
    char buf[1024];

    if (nsbox_cgroup_read(cg->mem, "memory.oom_control", buf, sizeof(buf)) == 0)
        *oom_kills = nsbox_cgroup_keyed_value(buf, "oom_kill");
    if (memory_peak != NULL &&
        nsbox_cgroup_read(cg->mem, "memory.max_usage_in_bytes", buf, sizeof(buf)) == 0)
        *memory_peak = strtoull(buf, NULL, 10);
}

const struct cgroup_ops nsbox_cgroup_v1_ops = {
    .probe = v1_probe,
    .create = v1_create,
    .add = v1_add,
    .enter_self = v1_enter_self,
    .stats = v1_stats,
    .kill = v1_kill,
    .remove = v1_remove,
};
