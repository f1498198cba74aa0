/* A live sandbox's writable layer, read from the host (see upper.h). */
#include "upper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "cgroup_backend.h"

/* Parses "inside outside count" lines of /proc/PID/{uid,gid}_map. */
static int read_map(pid_t pid, const char *which, struct nsbox_idmap_range *v, size_t *n,
                    struct nsbox_err *err)
{
    char path[64], line[128];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (f == NULL)
        return nsbox_err_sys(err, "cannot read the sandbox's %s", which);
    *n = 0;
    while (fgets(line, sizeof(line), f) != NULL && *n < NSBOX_IDMAP_MAX) {
        unsigned int in, out, count;
        if (sscanf(line, "%u %u %u", &in, &out, &count) == 3)
            v[(*n)++] = (struct nsbox_idmap_range){in, out, count};
    }
    if (*n == 0)
        return nsbox_err_set(err, EIO, "the sandbox's %s is empty", which);
    return 0;
}

int nsbox_sandbox_upper_open(const struct nsbox_sandbox *sb, struct nsbox_idmap *map,
                             struct nsbox_err *err)
{
    memset(map, 0, sizeof(*map));
    if (sb->rootless) {
        *map = sb->idmap;
    } else if (read_map(sb->pid, "uid_map", map->uid, &map->n_uid, err) < 0 ||
               read_map(sb->pid, "gid_map", map->gid, &map->n_gid, err) < 0) {
        return -1;
    }
    if (map->n_uid == 0)
        return nsbox_err_set(err, EIO, "sandbox %s has no id map on record", sb->id);
    int fd;
    if (sb->disk.kind == NSBOX_DISK_TMPFS) {
        _cleanup_close_ int disk = nsbox_sandbox_disk_open(sb, err);
        if (disk < 0)
            return -1;
        fd = openat(disk, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
        _cleanup_close_ int dfd = open(sb->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        fd = dfd < 0 ? -1 : openat(dfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open sandbox %s's writable layer", sb->id);
    return fd;
}

int nsbox_sandbox_freeze(const struct nsbox_sandbox *sb, bool frozen, struct nsbox_err *err)
{
    char events[512];

    if (sb->cgroup.kind != NSBOX_CGROUP_V2)
        return 0;
    if (nsbox_cgroup_write(sb->cgroup.v2, "cgroup.freeze", frozen ? "1" : "0", err) < 0)
        return -1;
    if (!frozen)
        return 1;
    /* The write only asks; cgroup.events says "frozen 1" once every task
     * is stopped (a task in an uninterruptible sleep takes its time). */
    for (int i = 0; i < 500; i++) {
        if (nsbox_cgroup_read(sb->cgroup.v2, "cgroup.events", events, sizeof(events)) == 0 &&
            nsbox_cgroup_keyed_value(events, "frozen") == 1)
            return 1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    nsbox_cgroup_write(sb->cgroup.v2, "cgroup.freeze", "0", NULL);
    return nsbox_err_set(err, ETIMEDOUT, "sandbox %s did not freeze within 5 s", sb->id);
}
