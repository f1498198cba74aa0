/* The record of one sandbox's creation in namespaces, shared by
 * namespaces_spawn.c (which makes it and walks the child through setup)
 * and spawner.c (which clones the child from a small process of its own
 * instead of from the caller).  runtime/ only. */
#ifndef NSBOX_RUNTIME_SPAWN_NS_H
#define NSBOX_RUNTIME_SPAWN_NS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "oom_adj.h"
#include "sanitizer.h"
#include "sandbox.h"
#include "spawn.h"

struct spawn {
    const struct nsbox_sandbox_config *cfg;
    struct nsbox_sandbox *sb;
    struct spawn_fds fds;     /* the error pipe, control socket, state lock (spawn.h) */
    int sync_r, sync_w;       /* parent -> child: ids mapped, lower ready */
    int slot_fd;              /* root: holds the id range */
    int disk_fd;              /* the child's: a tmpfs disk's root, kept by init */
    struct nsbox_oom_adj oom; /* the child's: init's oom_score_adj (oom_adj.h) */
    /* The sanitizer build: where init reports (sanitizer.h). */
    NSBOX_SAN(int san_fd;)
    pid_t parent;
    char lower[PATH_MAX];
    /* A persistent workspace: its parent directory and its name there, and
     * where the child opens it and its overlay's directories from (as root
     * STATE/ws, the idmapped mount of the parent; rootless the parent
     * itself), or "". */
    char ws_parent[PATH_MAX];
    char ws_name[NAME_MAX + 1];
    char ws_base[PATH_MAX];
    /* Nested mode (nested.h): the newuidmap client's host path, the
     * sandbox's id count, and (the child's) the idmap service's socket. */
    char nested_client[PATH_MAX];
    uint32_t nested_ids;
    int idmap_fd;
};

/* In the process that clones (a helper): clones the child into its
 * cgroup where it can (*placed then true).  Returns the pid, 0 in the
 * child, -1 with errno. */
pid_t nsbox_ns_clone_into_cgroup(struct spawn *s, int flags, bool *placed);

/* The cloned child: its setup, then init.  Never returns. */
_Noreturn void nsbox_ns_child_main(struct spawn *s);

#endif
