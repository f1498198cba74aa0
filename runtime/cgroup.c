/* Cgroups: the probe that picks a backend, the public API (cgroup.h), which
 * dispatches on the backend chosen, and the file helpers the backends
 * share.  The backends: cgroup_v2.c (unified hierarchy), cgroup_v1.c
 * (root on hybrid hosts), cgroup_none.c (best effort, no limits). */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "cgroup_backend.h"

const char *const nsbox_cgroup_controllers[3] = {"memory", "pids", "cpu"};

/* Indexed by kind: the value stored in state files, so it never changes. */
static const struct cgroup_ops *const backends[] = {
    [NSBOX_CGROUP_NONE] = &nsbox_cgroup_none_ops,
    [NSBOX_CGROUP_V2] = &nsbox_cgroup_v2_ops,
    [NSBOX_CGROUP_V1] = &nsbox_cgroup_v1_ops,
};

/* An unknown kind (a corrupt state file) gets the backend that touches
 * nothing. */
static const struct cgroup_ops *ops_for(enum nsbox_cgroup_kind kind)
{
    if ((unsigned)kind >= sizeof(backends) / sizeof(backends[0]))
        return &nsbox_cgroup_none_ops;
    return backends[kind];
}

const char *nsbox_cgroup_kind_name(enum nsbox_cgroup_kind kind)
{
    switch (kind) {
    case NSBOX_CGROUP_V2:
        return "cgroup v2";
    case NSBOX_CGROUP_V1:
        return "cgroup v1";
    default:
        return "none";
    }
}

int nsbox_cgroup_probe(enum nsbox_cgroup_kind *kind, char base[PATH_MAX], char *why,
                       size_t why_size, struct nsbox_err *err)
{
    char why_v2[512], why_v1[256];

    int r = nsbox_cgroup_v2_ops.probe(base, why_v2, sizeof(why_v2), err);
    if (r < 0)
        return -1;
    if (r == 0) {
        *kind = NSBOX_CGROUP_V2;
        return 0;
    }
    if (nsbox_cgroup_v1_ops.probe(base, why_v1, sizeof(why_v1), err) == 0) {
        *kind = NSBOX_CGROUP_V1;
        return 0;
    }
    *kind = NSBOX_CGROUP_NONE;
    snprintf(why, why_size, "%s; %s", why_v2, why_v1);
    return 0;
}

int nsbox_cgroup_create(enum nsbox_cgroup_kind kind, const char *base, const char *name,
                        const struct nsbox_cgroup_limits *limits, struct nsbox_cgroup *out,
                        struct nsbox_err *err)
{
    memset(out, 0, sizeof(*out));
    out->kind = kind;
    return ops_for(kind)->create(base, name, limits, out, err);
}

int nsbox_cgroup_add(const struct nsbox_cgroup *cg, pid_t pid, struct nsbox_err *err)
{
    char v[32];

    snprintf(v, sizeof(v), "%d", (int)pid);
    return ops_for(cg->kind)->add(cg, v, err);
}

int nsbox_cgroup_enter_self(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    const struct cgroup_ops *ops = ops_for(cg->kind);
    if (ops->enter_self == NULL)
        return nsbox_err_set(err, ENOTSUP, "only v1 cgroups are entered this way");
    return ops->enter_self(cg, err);
}

void nsbox_cgroup_stats(const struct nsbox_cgroup *cg, uint64_t *oom_kills, uint64_t *memory_peak)
{
    *oom_kills = 0;
    if (memory_peak != NULL)
        *memory_peak = 0;
    ops_for(cg->kind)->stats(cg, oom_kills, memory_peak);
}

void nsbox_cgroup_kill(const struct nsbox_cgroup *cg)
{
    ops_for(cg->kind)->kill(cg);
}

int nsbox_cgroup_destroy(const struct nsbox_cgroup *cg, struct nsbox_err *err)
{
    const struct cgroup_ops *ops = ops_for(cg->kind);
    ops->kill(cg);
    return ops->remove(cg, err);
}

/* ---- helpers shared by the backends ---- */

int nsbox_cgroup_write(const char *dir, const char *file, const char *value, struct nsbox_err *err)
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

int nsbox_cgroup_read(const char *dir, const char *file, char *buf, size_t size)
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

bool nsbox_cgroup_has_words(const char *list, const char *const *words, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = list;
        size_t len = strlen(words[i]);
        bool found = false;
        while ((p = strstr(p, words[i])) != NULL) {
            if ((p == list || p[-1] == ' ') &&
                (p[len] == ' ' || p[len] == '\n' || p[len] == '\0')) {
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

uint64_t nsbox_cgroup_keyed_value(const char *text, const char *key)
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

/* A fork racing the loop is caught by the next pass. */
void nsbox_cgroup_kill_listed(const char *dir)
{
    char buf[65536];
    for (int pass = 0; pass < 100; pass++) {
        if (nsbox_cgroup_read(dir, "cgroup.procs", buf, sizeof(buf)) < 0 || buf[0] == '\0')
            return;
        for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n"))
            kill((pid_t)atoi(line), SIGKILL);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

int nsbox_cgroup_remove_dir(const char *dir, struct nsbox_err *err)
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
