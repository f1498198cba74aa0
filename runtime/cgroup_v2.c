/* The cgroup v2 backend: one group per sandbox under <writable>/nsbox,
 * where <writable> is the cgroup nsbox runs in (the root cgroup as root on
 * a pure-v2 host, or a delegated user slice) and the memory, pids and cpu
 * controllers are enabled for children.  Limits: memory.max (and no swap),
 * pids.max, cpu.max.  Killing: cgroup.kill (Linux 5.14), else each listed
 * pid.  namespaces_spawn.c starts init directly in the group with
 * clone3(CLONE_INTO_CGROUP); add() is the fallback. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cgroup_backend.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static const char *const *const needed = nsbox_cgroup_controllers;

/* This process's cgroup v2 path ("0::/...") from /proc/self/cgroup. */
static int own_v2_path(char *out, size_t size)
{
    char buf[4096];
    if (nsbox_cgroup_read("/proc/self", "cgroup", buf, sizeof(buf)) < 0)
        return -1;
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(out, size, "%s", line + 3);
            return 0;
        }
    }
    return -1;
}

/* Moves every process of dir into leaf.  Only for the root of this
 * process's cgroup namespace: a container's own cgroup, whose processes
 * are all the container's (its entrypoint, a shell of `kubectl exec`). */
static void move_all(const char *dir, const char *leaf)
{
    char buf[8192], *save = NULL;
    for (int pass = 0; pass < 10; pass++) {
        if (nsbox_cgroup_read(dir, "cgroup.procs", buf, sizeof(buf)) < 0 || buf[0] == '\0')
            return;
        for (char *line = strtok_r(buf, "\n", &save); line != NULL;
             line = strtok_r(NULL, "\n", &save))
            nsbox_cgroup_write(leaf, "cgroup.procs", line, NULL);
    }
}

/* Enables the controllers for children of dir.  A cgroup that holds
 * processes cannot (the "no internal processes" rule): then move this
 * process into a leaf first, as systemd and crun do; at the root of a
 * container's cgroup namespace (ns_root), every process there. */
static int enable_controllers(const char *dir, bool ns_root, struct nsbox_err *err)
{
    char buf[256];

    if (nsbox_cgroup_read(dir, "cgroup.subtree_control", buf, sizeof(buf)) == 0 &&
        nsbox_cgroup_has_words(buf, needed, 3))
        return 0;
    if (nsbox_cgroup_write(dir, "cgroup.subtree_control", "+memory +pids +cpu", err) == 0)
        return 0;
    if (err->code != EBUSY)
        return -1;
    char leaf[PATH_MAX + 16], pid[32];
    snprintf(leaf, sizeof(leaf), "%s/nsbox.self", dir);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    if ((mkdir(leaf, 0755) < 0 && errno != EEXIST) ||
        nsbox_cgroup_write(leaf, "cgroup.procs", pid, err) < 0)
        return nsbox_err_sys(err, "cannot move nsbox into a leaf cgroup under %s", dir);
    if (ns_root)
        move_all(dir, leaf);
    if (nsbox_cgroup_write(dir, "cgroup.subtree_control", "+memory +pids +cpu", err) == 0)
        return 0;
    if (err->code == EBUSY)
        return nsbox_err_set(err, EBUSY,
                             "%s also holds other processes, so it cannot delegate "
                             "controllers to sandboxes; give nsbox a cgroup of its own "
                             "(systemd-run --user --scope -p Delegate=yes nsbox ...)",
                             dir);
    return -1;
}

static int v2_probe(char base[PATH_MAX], char *why, size_t why_size, struct nsbox_err *err)
{
    struct statfs sfs;
    char own[PATH_MAX], dir[2 * PATH_MAX], buf[256];

    if (statfs("/sys/fs/cgroup", &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC) {
        snprintf(why, why_size, "/sys/fs/cgroup is not a cgroup v2 (unified) hierarchy");
        return 1;
    }
    if (own_v2_path(own, sizeof(own)) < 0) {
        snprintf(why, why_size, "cannot read this process's cgroup");
        return 1;
    }
    /* Already in the leaf an nsbox made (enable_controllers): a child of
     * a process nsbox moved there.  The delegated cgroup is its parent. */
    char *slash = strrchr(own, '/');
    if (slash != NULL && strcmp(slash, "/nsbox.self") == 0)
        slash == own ? (void)snprintf(own, sizeof(own), "/") : (void)(*slash = '\0');
    snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", strcmp(own, "/") == 0 ? "" : own);
    if (nsbox_cgroup_read(dir, "cgroup.controllers", buf, sizeof(buf)) < 0 ||
        !nsbox_cgroup_has_words(buf, needed, 3)) {
        snprintf(why, why_size,
                 "the memory, pids and cpu controllers are not delegated to %s "
                 "(systemd: run nsbox under `systemd-run --user --scope -p Delegate=yes`, "
                 "or set Delegate=yes for user@.service)",
                 dir);
        return 1;
    }
    /* A container's cgroupfs is read-only unless the runtime is told
     * otherwise: then no sandbox can get limits (docs/container.md). */
    struct statvfs svfs;
    if (statvfs(dir, &svfs) == 0 && (svfs.f_flag & ST_RDONLY)) {
        snprintf(why, why_size,
                 "cgroups degraded: %s is mounted read-only (a container's cgroupfs; make it "
                 "writable: containerd 2.1+ cgroup_writable = true, CRI-O annotation "
                 "io.kubernetes.cri-o.cgroup2-mount-hierarchy-rw, runc/crun: an rw cgroup mount)",
                 dir);
        return 1;
    }
    if (access(dir, W_OK) < 0 || enable_controllers(dir, strcmp(own, "/") == 0, err) < 0) {
        snprintf(why, why_size, "%s is not writable by this user (%s)", dir,
                 err->msg[0] ? err->msg : strerror(errno));
        nsbox_err_clear(err);
        return 1;
    }
    /* One parent for every sandbox: its own subtree_control enables the
     * controllers for each sandbox's group. */
    snprintf(base, PATH_MAX, "%.*s/nsbox", PATH_MAX - 8, dir);
    if (mkdir(base, 0755) < 0 && errno != EEXIST)
        return nsbox_err_sys(err, "cannot create %s", base);
    if (enable_controllers(base, false, err) < 0)
        return nsbox_err_prefix(err, "cgroup %s", base);
    return 0;
}

static int apply_limits(const char *dir, const struct nsbox_cgroup_limits *l, struct nsbox_err *err)
{
    char v[64];

    if (l->memory_bytes) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_bytes);
        if (nsbox_cgroup_write(dir, "memory.max", v, err) < 0)
            return -1;
        /* No swap: a memory limit that spills to swap is no limit. */
        nsbox_cgroup_write(dir, "memory.swap.max", "0", NULL);
    }
    if (l->pids) {
        snprintf(v, sizeof(v), "%u", l->pids);
        if (nsbox_cgroup_write(dir, "pids.max", v, err) < 0)
            return -1;
    }
    if (l->cpu_quota_us) {
        snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)l->cpu_quota_us,
                 (unsigned long long)l->cpu_period_us);
        if (nsbox_cgroup_write(dir, "cpu.max", v, err) < 0)
            return -1;
    }
    return 0;
}

static void v2_kill(const struct nsbox_cgroup *cg)
{
    if (nsbox_cgroup_write(cg->v2, "cgroup.kill", "1", NULL) < 0)
        nsbox_cgroup_kill_listed(cg->v2);
}

static int v2_remove(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    return nsbox_cgroup_remove_dir(cg->v2, err);
}

static int v2_create(const char *base, const char *name, const struct nsbox_cgroup_limits *limits,
                     struct nsbox_cgroup *out, struct nsbox_err *err)
{
    struct nsbox_err ignored;

    int n = snprintf(out->v2, sizeof(out->v2), "%s/%s", base, name);
    if (n < 0 || n >= (int)sizeof(out->v2)) {
        out->v2[0] = '\0';
        return nsbox_err_set(err, ENAMETOOLONG, "the cgroup path under %.200s is too long", base);
    }
    if (mkdir(out->v2, 0755) < 0)
        return nsbox_err_sys(err, "cannot create cgroup %s", out->v2);
    if (apply_limits(out->v2, limits, err) < 0) {
        v2_kill(out);
        v2_remove(out, &ignored);
        return -1;
    }
    return 0;
}

static int v2_add(const struct nsbox_cgroup *cg, const char *pid, struct nsbox_err *err)
{
    return nsbox_cgroup_write(cg->v2, "cgroup.procs", pid, err);
}

static void v2_stats(const struct nsbox_cgroup *cg, uint64_t *oom_kills, uint64_t *memory_peak)
{
    char buf[1024];

    if (nsbox_cgroup_read(cg->v2, "memory.events", buf, sizeof(buf)) == 0)
        *oom_kills = nsbox_cgroup_keyed_value(buf, "oom_kill");
    if (memory_peak != NULL && nsbox_cgroup_read(cg->v2, "memory.peak", buf, sizeof(buf)) == 0)
        *memory_peak = strtoull(buf, NULL, 10);
}

const struct cgroup_ops nsbox_cgroup_v2_ops = {
    .probe = v2_probe,
    .create = v2_create,
    .add = v2_add,
    .enter_self = NULL, /* clone3(CLONE_INTO_CGROUP) does better */
    .stats = v2_stats,
    .kill = v2_kill,
    .remove = v2_remove,
};
