/* A sandbox's state file: the one writer and the one reader (state.h). */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "internal.h"

#define STATE_MAX (64u << 10)

struct text {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void put(struct text *t, const char *s, size_t n)
{
    if (t->failed || t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = t->failed ? NULL : realloc(t->buf, cap);
        if (b == NULL) {
            t->failed = true;
            return;
        }
        t->buf = b, t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

/* key=value\n, the value's '\\' and '\n' escaped. */
static void put_field(struct text *t, const char *key, const char *value)
{
    put(t, key, strlen(key));
    put(t, "=", 1);
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '\n')
            put(t, *p == '\\' ? "\\\\" : "\\n", 2);
        else
            put(t, p, 1);
    }
    put(t, "\n", 1);
}

static void put_num(struct text *t, const char *key, long long v)
{
    char s[32];
    snprintf(s, sizeof(s), "%lld", v);
    put_field(t, key, s);
}

/* "inside:outside:count,..." */
static void put_ranges(struct text *t, const char *key, const struct nsbox_idmap_range *r, size_t n)
{
    char s[NSBOX_IDMAP_MAX * 40] = "";
    size_t o = 0;
    for (size_t i = 0; i < n && i < NSBOX_IDMAP_MAX; i++)
        o += (size_t)snprintf(s + o, sizeof(s) - o, "%s%u:%u:%u", i ? "," : "", r[i].inside,
                              r[i].outside, r[i].count);
    put_field(t, key, s);
}

int nsbox_state_write(const struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    struct text t = {0};
    _cleanup_free_ char *owned = NULL;

    put_num(&t, "pid", sb->pid);
    put_num(&t, "start", (long long)nsbox_proc_starttime(sb->pid));
    put_num(&t, "cgroup", (int)sb->cgroup.kind);
    put_field(&t, "v2", sb->cgroup.v2);
    put_field(&t, "mem", sb->cgroup.mem);
    put_field(&t, "pids", sb->cgroup.pids);
    put_field(&t, "cpu", sb->cgroup.cpu);
    put_num(&t, "v1x", sb->cgroup.v1_extra);
    put_num(&t, "rootless", sb->rootless);
    put_field(&t, "limits", sb->limits_note);
    put_field(&t, "workdir", sb->workdir);
    put_field(&t, "workspace", sb->workspace);
    put_ranges(&t, "uidmap", sb->idmap.uid, sb->idmap.n_uid);
    put_ranges(&t, "gidmap", sb->idmap.gid, sb->idmap.n_gid);
    put_num(&t, "idmap_helpers", sb->idmap.helpers);
    put_num(&t, "disk", (int)sb->disk.kind);
    put_num(&t, "disk_bytes", (long long)sb->disk.limit_bytes);
    put_num(&t, "disk_inodes", (long long)sb->disk.limit_inodes);
    put_num(&t, "disk_projid", (long long)sb->disk.projid);
    put_num(&t, "isolation", (int)sb->isolation);
    put_num(&t, "landlock_abi", sb->landlock_abi);
    put_num(&t, "nested", sb->nested);
    put_num(&t, "nested_tun", sb->nested_tun);
    owned = t.buf;
    if (t.failed || t.len > STATE_MAX)
        return nsbox_err_set(err, ENOMEM, "cannot write the state of %s", sb->state_dir);
    _cleanup_close_ int dfd = open(sb->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", sb->state_dir);
    return nsbox_write_file_replace(dfd, "state", t.buf, t.len, 0600, err);
}

/* The value of key (unescaped, cut to size), or "" when absent. */
static const char *field(const char *text, const char *key, char *out, size_t size)
{
    size_t len = strlen(key), o = 0;
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, key, len) != 0 || p[len] != '=')
            continue;
        for (const char *v = p + len + 1; *v && *v != '\n' && o + 1 < size; v++) {
            if (*v == '\\' && (v[1] == 'n' || v[1] == '\\'))
                out[o++] = *++v == 'n' ? '\n' : '\\';
            else
                out[o++] = *v;
        }
        break;
    }
    out[o] = '\0';
    return out;
}

static long long num(const char *text, const char *key)
{
    char v[32];
    return strtoll(field(text, key, v, sizeof(v)), NULL, 10);
}

static size_t read_ranges(const char *text, const char *key, struct nsbox_idmap_range *r)
{
    char v[NSBOX_IDMAP_MAX * 40];
    size_t n = 0;
    const char *p = field(text, key, v, sizeof(v));
    while (*p && n < NSBOX_IDMAP_MAX) {
        int used = 0;
        if (sscanf(p, "%u:%u:%u%n", &r[n].inside, &r[n].outside, &r[n].count, &used) != 3)
            break;
        n++;
        p += used;
        p += *p == ',';
    }
    return n;
}

int nsbox_state_read(struct nsbox_sandbox *sb, unsigned long long *start, struct nsbox_err *err)
{
    size_t len;
    _cleanup_close_ int dfd = open(sb->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", sb->state_dir);
    _cleanup_free_ char *text = nsbox_read_file_at(dfd, "state", STATE_MAX, &len, err);
    if (text == NULL)
        return -1;
    sb->pid = (pid_t)num(text, "pid");
    *start = (unsigned long long)num(text, "start");
    sb->cgroup.kind = (enum nsbox_cgroup_kind)num(text, "cgroup");
    field(text, "v2", sb->cgroup.v2, sizeof(sb->cgroup.v2));
    field(text, "mem", sb->cgroup.mem, sizeof(sb->cgroup.mem));
    field(text, "pids", sb->cgroup.pids, sizeof(sb->cgroup.pids));
    field(text, "cpu", sb->cgroup.cpu, sizeof(sb->cgroup.cpu));
    sb->cgroup.v1_extra = (unsigned)num(text, "v1x");
    field(text, "limits", sb->limits_note, sizeof(sb->limits_note));
    sb->rootless = num(text, "rootless") != 0;
    field(text, "workdir", sb->workdir, sizeof(sb->workdir));
    field(text, "workspace", sb->workspace, sizeof(sb->workspace));
    sb->idmap.n_uid = read_ranges(text, "uidmap", sb->idmap.uid);
    sb->idmap.n_gid = read_ranges(text, "gidmap", sb->idmap.gid);
    sb->idmap.helpers = num(text, "idmap_helpers") != 0;
    long long kind = num(text, "disk");
    sb->disk.kind = kind == NSBOX_DISK_TMPFS || kind == NSBOX_DISK_QUOTA
                        ? (enum nsbox_disk_kind)kind
                        : NSBOX_DISK_NONE;
    sb->disk.limit_bytes = (uint64_t)num(text, "disk_bytes");
    sb->disk.limit_inodes = (uint64_t)num(text, "disk_inodes");
    sb->disk.projid = (uint32_t)num(text, "disk_projid");
    sb->isolation = num(text, "isolation") == NSBOX_ISOLATION_LANDLOCK ? NSBOX_ISOLATION_LANDLOCK
                                                                       : NSBOX_ISOLATION_NAMESPACES;
    sb->landlock_abi = (int)num(text, "landlock_abi");
    sb->nested = num(text, "nested") != 0;
    sb->nested_tun = num(text, "nested_tun") != 0;
    return 0;
}

unsigned long long nsbox_proc_starttime(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long long start = 0;
    char state;
    if (p == NULL || sscanf(p + 2,
                            "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
                            "%*d %*d %*d %*d %*d %llu",
                            &state, &start) != 2)
        return 0;
    /* A zombie is gone too: it only waits for its reaper (pid 1 or a
     * subreaper), which may be slow or, under a pid 1 that is no init (a
     * container's), never come.  Counted as running, a dead init kept its
     * sandbox's state dir and cgroups until then. */
    return state == 'Z' || state == 'X' ? 0 : start;
}
