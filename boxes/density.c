/* How many sandboxes the host's limits allow one server (density.h). */
#include "density.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

unsigned long long box_density_raise_nofile(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) < 0)
        return 0;
    if (r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &r) < 0)
            getrlimit(RLIMIT_NOFILE, &r);
    }
    return r.rlim_cur == RLIM_INFINITY ? ~0ull : (unsigned long long)r.rlim_cur;
}

static unsigned long long read_ull(const char *path)
{
    unsigned long long v = 0;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return ~0ull;
    if (fscanf(f, "%llu", &v) != 1)
        v = ~0ull;
    fclose(f);
    return v;
}

/* Lowers d->cap to n when n is below it, naming the limit and its fix. */
static void cap_at(struct box_density *d, unsigned long long n, const char *limit, const char *fix)
{
    if (n >= d->cap)
        return;
    d->cap = (size_t)n;
    snprintf(d->limit, sizeof(d->limit), "%s", limit);
    snprintf(d->fix, sizeof(d->fix), "%s", fix);
}

void box_density_probe(struct box_density *d)
{
    struct rlimit r = {0, 0};
    memset(d, 0, sizeof(*d));
    getrlimit(RLIMIT_NOFILE, &r);
    d->nofile_soft = r.rlim_cur == RLIM_INFINITY ? ~0ull : r.rlim_cur;
    d->nofile_hard = r.rlim_max == RLIM_INFINITY ? ~0ull : r.rlim_max;
    d->pid_max = read_ull("/proc/sys/kernel/pid_max");
    d->user_ns = read_ull("/proc/sys/user/max_user_namespaces");
    d->net_ns = read_ull("/proc/sys/user/max_net_namespaces");
    d->mnt_ns = read_ull("/proc/sys/user/max_mnt_namespaces");
    d->cap = (size_t)-1;
    snprintf(d->limit, sizeof(d->limit), "none");
    /* The server raises its soft limit to the hard one at start. */
    unsigned long long fds = d->nofile_hard;
    cap_at(d, fds > BOX_DENSITY_SERVER_FDS ? fds - BOX_DENSITY_SERVER_FDS : 0,
           "the hard open-files limit (ulimit -Hn)",
           "raise it for the server: LimitNOFILE= in its unit, or /etc/security/limits.conf");
    /* Each init is a process of the host; leave half the pids to the rest. */
    cap_at(d, d->pid_max / 2, "kernel.pid_max (each sandbox's init is a host process)",
           "sysctl -w kernel.pid_max=4194304");
    cap_at(d, d->user_ns, "user.max_user_namespaces", "sysctl -w user.max_user_namespaces=...");
    cap_at(d, d->net_ns, "user.max_net_namespaces", "sysctl -w user.max_net_namespaces=...");
    cap_at(d, d->mnt_ns, "user.max_mnt_namespaces", "sysctl -w user.max_mnt_namespaces=...");
}
