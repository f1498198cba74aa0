/* Density: how many sandboxes the host's limits let one long-lived server
 * (nsbox serve) hold, and which limit caps it (docs/density.md).  Called
 * by the server at its start (it raises its own open-files limit and warns
 * when --max-total-sandboxes is beyond the cap) and by `nsbox doctor`.
 *
 * Contract: reads /proc and the process's rlimits only; nothing here
 * writes to stdout or exits. */
#ifndef NSBOX_BOXES_DENSITY_H
#define NSBOX_BOXES_DENSITY_H

#include <stddef.h>

/* What one sandbox takes of each limit: the server holds 1 fd per idle
 * sandbox (box_trim) and about 64 fds of its own; each sandbox is at least
 * one process (its init) and one user, pid, network, mount, ipc, uts,
 * cgroup and time namespace. */
#define BOX_DENSITY_SERVER_FDS 64

struct box_density {
    unsigned long long nofile_soft, nofile_hard; /* RLIMIT_NOFILE now */
    unsigned long long pid_max;                  /* kernel.pid_max */
    unsigned long long user_ns;                  /* user.max_user_namespaces */
    unsigned long long net_ns;                   /* user.max_net_namespaces */
    unsigned long long mnt_ns;                   /* user.max_mnt_namespaces */
    size_t cap;                                  /* the sandboxes these allow one server */
    char limit[96];                              /* the limit that caps it (its name) */
    char fix[160];                               /* how to raise it */
};

/* Raises the soft open-files limit to the hard one (a server holds one fd
 * per idle sandbox).  Returns the soft limit in force. */
unsigned long long box_density_raise_nofile(void);

/* Reads the limits into *d (a limit that cannot be read counts as no
 * bound) and says which one caps a server first. */
void box_density_probe(struct box_density *d);

#endif
