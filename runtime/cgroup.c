#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static const char *const v1_controllers[] = {"memory", "pids", "cpu"};

const char *nsbox_cgroup_kind_name(enum nsbox_cgroup_kind kind)
{
    switch (kind) {
    case NSBOX_CGROUP_V2: return "cgroup v2";
    case NSBOX_CGROUP_V1: return "cgroup v1";
    default: return "none";
    }
}

static int write_file(const char *dir, const char *file, const char *value,
                      struct nsbox_err *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", path);
    if (write(fd, value, strlen(value)) < 0)
        return nsbox_err_sys(err, "cannot write \"%s\" to %s", value, path);
    return 0;
}

static int read_small(const char *dir, const char *file, char *buf, size_t size)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

static bool has_words(const char *list, const char *const *words, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = list;
        size_t len = strlen(words[i]);
        bool found = false;
        while ((p = strstr(p, words[i])) != NULL) {
            if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\n' || p[len] == '\0')) {
                found = true;
                break;
            }
            p += len;
        }
        if (!found)
            return false;
    }
    return true;
}

/* This process's cgroup v2 path ("0::/...") from /proc/self/cgroup. */
static int own_v2_path(char *out, size_t size)
{
    char buf[4096];
    if (read_small("/proc/self", "cgroup", buf, sizeof(buf)) < 0)
        return -1;
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(out, size, "%s", line + 3);
            return 0;
        }
    }
    return -1;
}

static const char *const needed[] = {"memory", "pids", "cpu"};

/* Enables the controllers for children of dir.  A cgroup that holds
 * processes cannot (the "no internal processes" rule): then move this
 * process into a leaf first, as systemd and crun do. */
static int enable_controllers(const char *dir, struct nsbox_err *err)
{
    char buf[256];

    if (read_small(dir, "cgroup.subtree_control", buf, sizeof(buf)) == 0 &&
        has_words(buf, needed, 3))
        return 0;
    if (write_file(dir, "cgroup.subtree_control", "+memory +pids +cpu", err) == 0)
        return 0;
    if (err->code != EBUSY)
        return -1;
    char leaf[PATH_MAX + 16], pid[32];
    snprintf(leaf, sizeof(leaf), "%s/nsbox.self", dir);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    if ((mkdir(leaf, 0755) < 0 && errno != EEXIST) ||
        write_file(leaf, "cgroup.procs", pid, err) < 0)
        return nsbox_err_sys(err, "cannot move nsbox into a leaf cgroup under %s", dir);
    if (write_file(dir, "cgroup.subtree_control", "+memory +pids +cpu", err) == 0)
        return 0;
    if (err->code == EBUSY)
        return nsbox_err_set(err, EBUSY,
                             "%s also holds other processes, so it cannot delegate "
                             "controllers to sandboxes; give nsbox a cgroup of its own "
                             "(systemd-run --user --scope -p Delegate=yes nsbox ...)",
                             dir);
    return -1;
}

static int probe_v2(char base[PATH_MAX], char *why, size_t why_size, struct nsbox_err *err)
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
    snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", strcmp(own, "/") == 0 ? "" : own);
    if (read_small(dir, "cgroup.controllers", buf, sizeof(buf)) < 0 ||
        !has_words(buf, needed, 3)) {
        snprintf(why, why_size,
                 "the memory, pids and cpu controllers are not delegated to %s "
                 "(systemd: run nsbox under `systemd-run --user --scope -p Delegate=yes`, "
                 "or set Delegate=yes for user@.service)",
                 dir);
        return 1;
    }
    if (access(dir, W_OK) < 0 || enable_controllers(dir, err) < 0) {
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
    if (enable_controllers(base, err) < 0)
        return nsbox_err_prefix(err, "cgroup %s", base);
    return 0;
}

static int probe_v1(char base[PATH_MAX], char *why, size_t why_size)
{
    char dir[PATH_MAX];

    if (geteuid() != 0) {
        snprintf(why, why_size, "cgroup v1 controllers can only be used as root");
        return 1;
    }
    for (size_t i = 0; i < 3; i++) {
        snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s", v1_controllers[i]);
        if (access(dir, W_OK) < 0) {
            snprintf(why, why_size, "no cgroup v1 %s controller at %s", v1_controllers[i], dir);
            return 1;
        }
        snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s/nsbox", v1_controllers[i]);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
            return 1;
        }
    }
    snprintf(base, PATH_MAX, "/sys/fs/cgroup");
    return 0;
}

int nsbox_cgroup_probe(enum nsbox_cgroup_kind *kind, char base[PATH_MAX],
                       char *why, size_t why_size, struct nsbox_err *err)
{
    char why_v2[512];

    int r = probe_v2(base, why_v2, sizeof(why_v2), err);
    if (r < 0)
        return -1;
    if (r == 0) {
        *kind = NSBOX_CGROUP_V2;
        return 0;
    }
    char why_v1[256];
    if (probe_v1(base, why_v1, sizeof(why_v1)) == 0) {
        *kind = NSBOX_CGROUP_V1;
        return 0;
    }
    *kind = NSBOX_CGROUP_NONE;
    snprintf(why, why_size, "%s; %s", why_v2, why_v1);
    return 0;
}

static int apply_v2(const char *dir, const struct nsbox_cgroup_limits *l,
                    struct nsbox_err *err)
{
    char v[64];

    if (l->memory_bytes) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_bytes);
        if (write_file(dir, "memory.max", v, err) < 0)
            return -1;
        /* No swap: a memory limit that spills to swap is no limit. */
        write_file(dir, "memory.swap.max", "0", NULL);
    }
    if (l->pids) {
        snprintf(v, sizeof(v), "%u", l->pids);
        if (write_file(dir, "pids.max", v, err) < 0)
            return -1;
    }
    if (l->cpu_quota_us) {
        snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)l->cpu_quota_us,
                 (unsigned long long)l->cpu_period_us);
        if (write_file(dir, "cpu.max", v, err) < 0)
            return -1;
    }
    return 0;
}

static int apply_v1(const struct nsbox_cgroup *cg, const struct nsbox_cgroup_limits *l,
                    struct nsbox_err *err)
{
    char v[64];

    if (l->memory_bytes) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_bytes);
        if (write_file(cg->mem, "memory.limit_in_bytes", v, err) < 0)
            return -1;
        /* memsw exists only with swap accounting; where it does, equal
         * limits mean no swap. */
        write_file(cg->mem, "memory.memsw.limit_in_bytes", v, NULL);
        write_file(cg->mem, "memory.swappiness", "0", NULL);
    }
    if (l->pids) {
        snprintf(v, sizeof(v), "%u", l->pids);
        if (write_file(cg->pids, "pids.max", v, err) < 0)
            return -1;
    }
    if (l->cpu_quota_us) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->cpu_period_us);
        if (write_file(cg->cpu, "cpu.cfs_period_us", v, err) < 0)
            return -1;
        snprintf(v, sizeof(v), "%llu", (unsigned long long)l->cpu_quota_us);
        if (write_file(cg->cpu, "cpu.cfs_quota_us", v, err) < 0)
            return -1;
    }
    return 0;
}

int nsbox_cgroup_create(enum nsbox_cgroup_kind kind, const char *base, const char *name,
                        const struct nsbox_cgroup_limits *limits,
                        struct nsbox_cgroup *out, struct nsbox_err *err)
{
    struct nsbox_err ignored;

    memset(out, 0, sizeof(*out));
    out->kind = kind;
    if (kind == NSBOX_CGROUP_NONE)
        return 0;
    if (kind == NSBOX_CGROUP_V2) {
        snprintf(out->v2, sizeof(out->v2), "%.*s/%s", PATH_MAX - 80, base, name);
        if (mkdir(out->v2, 0755) < 0)
            return nsbox_err_sys(err, "cannot create cgroup %s", out->v2);
        if (apply_v2(out->v2, limits, err) < 0) {
            nsbox_cgroup_destroy(out, &ignored);
            return -1;
        }
        return 0;
    }
    char *dirs[] = {out->mem, out->pids, out->cpu};
    for (size_t i = 0; i < 3; i++) {
        snprintf(dirs[i], PATH_MAX, "%.*s/%s/nsbox/%s", PATH_MAX - 100, base,
                 v1_controllers[i], name);
        if (mkdir(dirs[i], 0755) < 0) {
            nsbox_err_sys(err, "cannot create cgroup %s", dirs[i]);
            nsbox_cgroup_destroy(out, &ignored);
            return -1;
        }
    }
    if (apply_v1(out, limits, err) < 0) {
        nsbox_cgroup_destroy(out, &ignored);
        return -1;
    }
    return 0;
}

int nsbox_cgroup_add(const struct nsbox_cgroup *cg, pid_t pid, struct nsbox_err *err)
{
    char v[32];

    snprintf(v, sizeof(v), "%d", (int)pid);
    if (cg->kind == NSBOX_CGROUP_V2)
        return write_file(cg->v2, "cgroup.procs", v, err);
    if (cg->kind == NSBOX_CGROUP_V1) {
        const char *dirs[] = {cg->mem, cg->pids, cg->cpu};
        for (size_t i = 0; i < 3; i++)
            if (write_file(dirs[i], "cgroup.procs", v, err) < 0)
                return -1;
    }
    return 0;
}

int nsbox_cgroup_enter_self(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    if (cg->kind != NSBOX_CGROUP_V1)
        return nsbox_err_set(err, ENOTSUP, "only v1 cgroups are entered this way");
    /* "0" names the writing thread; through `tasks` it is one thread, not
     * a thread group, and the kernel then skips the global threadgroup
     * lock (cgroup_procs_write_start), whose write side waits for an RCU
     * grace period, 10-30 ms on this kind of host. */
    const char *dirs[] = {cg->mem, cg->pids, cg->cpu};
    for (size_t i = 0; i < 3; i++)
        if (write_file(dirs[i], "tasks", "0", err) < 0)
            return -1;
    return 0;
}

static uint64_t keyed_value(const char *text, const char *key)
{
    const char *p = text;
    size_t len = strlen(key);
    while ((p = strstr(p, key)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[len] == ' ')
            return strtoull(p + len + 1, NULL, 10);
        p += len;
    }
    return 0;
}

void nsbox_cgroup_stats(const struct nsbox_cgroup *cg, uint64_t *oom_kills,
                        uint64_t *memory_peak)
{
    char buf[1024];

    *oom_kills = 0;
    if (memory_peak != NULL)
        *memory_peak = 0;
    if (cg->kind == NSBOX_CGROUP_V2) {
        if (read_small(cg->v2, "memory.events", buf, sizeof(buf)) == 0)
            *oom_kills = keyed_value(buf, "oom_kill");
        if (memory_peak != NULL && read_small(cg->v2, "memory.peak", buf, sizeof(buf)) == 0)
            *memory_peak = strtoull(buf, NULL, 10);
    } else if (cg->kind == NSBOX_CGROUP_V1) {
        if (read_small(cg->mem, "memory.oom_control", buf, sizeof(buf)) == 0)
            *oom_kills = keyed_value(buf, "oom_kill");
        if (memory_peak != NULL &&
            read_small(cg->mem, "memory.max_usage_in_bytes", buf, sizeof(buf)) == 0)
            *memory_peak = strtoull(buf, NULL, 10);
    }
}

/* v1 has no cgroup.kill: signal every listed pid until none is left
 * (a fork racing the loop is caught by the next pass). */
static void kill_listed(const char *dir)
{
    char buf[65536];
    for (int pass = 0; pass < 100; pass++) {
        if (read_small(dir, "cgroup.procs", buf, sizeof(buf)) < 0 || buf[0] == '\0')
            return;
        for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n"))
            kill((pid_t)atoi(line), SIGKILL);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

void nsbox_cgroup_kill(const struct nsbox_cgroup *cg)
{
    if (cg->kind == NSBOX_CGROUP_V2) {
        if (write_file(cg->v2, "cgroup.kill", "1", NULL) < 0)
            kill_listed(cg->v2);
    } else if (cg->kind == NSBOX_CGROUP_V1) {
        kill_listed(cg->pids);
    }
}

static int remove_dir(const char *dir, struct nsbox_err *err)
{
    /* rmdir succeeds once the last process is gone, which takes the kernel
     * a moment after SIGKILL. */
    for (int i = 0; i < 500; i++) {
        if (dir[0] == '\0' || rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            break;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return nsbox_err_sys(err, "cannot remove cgroup %s", dir);
}

int nsbox_cgroup_destroy(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    if (cg->kind == NSBOX_CGROUP_NONE)
        return 0;
    nsbox_cgroup_kill(cg);
    if (cg->kind == NSBOX_CGROUP_V2)
        return remove_dir(cg->v2, err);
    int r = 0;
    const char *dirs[] = {cg->mem, cg->pids, cg->cpu};
    for (size_t i = 0; i < 3; i++)
        if (remove_dir(dirs[i], err) < 0)
            r = -1;
    return r;
}
