/* The cgroup freezer, v1 and v2 (see freezer.h). */
#include "freezer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_backend.h"
#include "disk_internal.h"

#define NO_DELEGATION                                                                              \
    "nsbox runs rootless and this host gives its user no delegated cgroup with the freezer "       \
    "(cgroup v2): run the server as root, or on a cgroup v2 host start it in a delegated "         \
    "scope (systemd-run --user --scope -p Delegate=yes nsbox serve, or Delegate=yes on "           \
    "user@.service); see docs/pause.md"
#define NO_V1_FREEZER                                                                              \
    "this host mounts no cgroup v1 freezer hierarchy at /sys/fs/cgroup/freezer (mount -t cgroup "  \
    "-o freezer freezer /sys/fs/cgroup/freezer, then make the sandbox again)"

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* sb's v1 freezer directory, or -1 when it has none. */
static int v1_freezer(const struct nsbox_sandbox *sb, char dir[PATH_MAX])
{
    if (sb->cgroup.kind != NSBOX_CGROUP_V1 || !(sb->cgroup.v1_extra & NSBOX_CG_V1_FREEZER))
        return -1;
    return nsbox_cgroup_v1_dir(&sb->cgroup, "freezer", dir);
}

int nsbox_freezer_usable(const struct nsbox_sandbox *sb, char *why, size_t why_size)
{
    char dir[PATH_MAX];

    switch (sb->cgroup.kind) {
    case NSBOX_CGROUP_V2:
        if (access(sb->cgroup.v2, W_OK) == 0)
            return 0;
        snprintf(why, why_size, "its cgroup %.200s is not writable: %s", sb->cgroup.v2,
                 strerror(errno));
        return -1;
    case NSBOX_CGROUP_V1:
        if (v1_freezer(sb, dir) == 0)
            return 0;
        snprintf(why, why_size, "it has no cgroup v1 freezer group: %s", NO_V1_FREEZER);
        return -1;
    default:
        if (sb->isolation == NSBOX_ISOLATION_LANDLOCK)
            snprintf(why, why_size,
                     "it runs under --isolation landlock, which gives it no cgroup of its own; "
                     "make it with namespace isolation (the default) to pause it");
        else if (sb->rootless)
            snprintf(why, why_size, "it has no cgroup of its own: %s", NO_DELEGATION);
        else
            snprintf(why, why_size,
                     "it has no cgroup of its own (limits best-effort: no usable cgroup on this "
                     "host, see nsbox doctor); give nsbox a cgroup v2 subtree or the v1 "
                     "controllers");
        return -1;
    }
}

int nsbox_freezer_state(const struct nsbox_sandbox *sb)
{
    char dir[PATH_MAX], buf[64];

    if (sb->cgroup.kind == NSBOX_CGROUP_V2)
        return nsbox_cgroup_read(sb->cgroup.v2, "cgroup.freeze", buf, sizeof(buf)) < 0
                   ? -1
                   : buf[0] == '1';
    if (v1_freezer(sb, dir) < 0 || nsbox_cgroup_read(dir, "freezer.state", buf, sizeof(buf)) < 0)
        return -1;
    return strncmp(buf, "THAWED", 6) != 0;
}

/* Whether every task is stopped now. */
static bool settled(const struct nsbox_sandbox *sb, const char *v1dir)
{
    char buf[512];
    if (sb->cgroup.kind == NSBOX_CGROUP_V2)
        return nsbox_cgroup_read(sb->cgroup.v2, "cgroup.events", buf, sizeof(buf)) == 0 &&
               nsbox_cgroup_keyed_value(buf, "frozen") == 1;
    return nsbox_cgroup_read(v1dir, "freezer.state", buf, sizeof(buf)) == 0 &&
           strncmp(buf, "FROZEN", 6) == 0;
}

int nsbox_freezer_freeze(const struct nsbox_sandbox *sb, unsigned wait_ms, struct nsbox_err *err)
{
    char why[768], dir[PATH_MAX] = "";

    if (nsbox_freezer_usable(sb, why, sizeof(why)) < 0)
        return nsbox_err_set(err, ENOTSUP, "sandbox %s cannot be paused: %s", sb->id, why);
    bool v2 = sb->cgroup.kind == NSBOX_CGROUP_V2;
    if (!v2)
        v1_freezer(sb, dir);
    if (nsbox_cgroup_write(v2 ? sb->cgroup.v2 : dir, v2 ? "cgroup.freeze" : "freezer.state",
                           v2 ? "1" : "FROZEN", err) < 0)
        return -1;
    /* The write only asks: a task in an uninterruptible sleep (I/O, a
     * fault) stops when it leaves it.  v1 says FREEZING until then. */
    for (unsigned waited = 0;; waited++) {
        if (settled(sb, dir))
            return 0;
        if (nsbox_freezer_state(sb) == 0) /* a use thawed it meanwhile */
            return nsbox_err_set(err, EINTR, "sandbox %s was woken while it froze", sb->id);
        if (waited >= wait_ms)
            break;
        sleep_ms(1);
    }
    nsbox_freezer_thaw(sb, NULL);
    return nsbox_err_set(err, ETIMEDOUT,
                         "sandbox %s did not freeze within %u ms (a task stuck in the kernel); "
                         "it was thawed and keeps running",
                         sb->id, wait_ms);
}

int nsbox_freezer_thaw(const struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    char dir[PATH_MAX];

    if (sb->cgroup.kind == NSBOX_CGROUP_V2)
        return nsbox_cgroup_write(sb->cgroup.v2, "cgroup.freeze", "0", err);
    if (v1_freezer(sb, dir) < 0)
        return nsbox_err_set(err, ENOTSUP, "sandbox %s has no freezer", sb->id);
    return nsbox_cgroup_write(dir, "freezer.state", "THAWED", err);
}

int nsbox_cgroup_cpu_usage(const struct nsbox_sandbox *sb, uint64_t *usec)
{
    char buf[1024], dir[PATH_MAX];

    if (sb->cgroup.kind == NSBOX_CGROUP_V2) {
        if (nsbox_cgroup_read(sb->cgroup.v2, "cpu.stat", buf, sizeof(buf)) < 0)
            return -1;
        *usec = nsbox_cgroup_keyed_value(buf, "usage_usec");
        return 0;
    }
    if (sb->cgroup.kind != NSBOX_CGROUP_V1 || !(sb->cgroup.v1_extra & NSBOX_CG_V1_CPUACCT) ||
        nsbox_cgroup_v1_dir(&sb->cgroup, "cpuacct", dir) < 0 ||
        nsbox_cgroup_read(dir, "cpuacct.usage", buf, sizeof(buf)) < 0)
        return -1;
    *usec = strtoull(buf, NULL, 10) / 1000;
    return 0;
}

int nsbox_freezer_host(char *why, size_t why_size)
{
    enum nsbox_cgroup_kind kind;
    char base[PATH_MAX], cgwhy[768];
    struct nsbox_err err;

    if (nsbox_cgroup_probe(&kind, base, cgwhy, sizeof(cgwhy), &err) < 0) {
        snprintf(why, why_size, "cannot probe cgroups: %s", err.msg);
        return -1;
    }
    if (kind == NSBOX_CGROUP_V2)
        return 0; /* cgroup.freeze is in every non-root v2 group (Linux 5.2) */
    if (kind == NSBOX_CGROUP_V1) {
        if (access("/sys/fs/cgroup/freezer", W_OK) == 0)
            return 0;
        snprintf(why, why_size, "%s", NO_V1_FREEZER);
        return -1;
    }
    if (geteuid() != 0)
        snprintf(why, why_size, "%s", NO_DELEGATION);
    else
        snprintf(why, why_size, "no usable cgroup on this host (%.400s)", cgwhy);
    return -1;
}

int nsbox_sandbox_open_finish(struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    /* Only a handover nsbox_sandbox_open left: a disk fd dropped since
     * (nsbox_sandbox_trim) is asked for anew when needed, never sent. */
    if (!sb->disk_pending || sb->ctl < 0)
        return 0;
    sb->disk_pending = false;
    if (sb->disk.fd >= 0)
        return 0;
    return nsbox_disk_fd_recv(sb, err);
}
