/* User namespaces for unprivileged callers.
 *
 * A rootless nsbox owns files whose ids only make sense inside a user
 * namespace: the caller's own uid is root there, and a subordinate range
 * from /etc/subuid (granted through the setuid newuidmap/newgidmap helpers)
 * covers the image's other ids.  The image store unpacks, and later removes,
 * rootfs trees inside such a namespace so that files get the ownership the
 * sandbox will see. */
#ifndef NSBOX_USERNS_H
#define NSBOX_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define NSBOX_IDMAP_MAX 4

struct nsbox_idmap_range {
    uint32_t inside;
    uint32_t outside;
    uint32_t count;
};

struct nsbox_idmap {
    struct nsbox_idmap_range uid[NSBOX_IDMAP_MAX];
    struct nsbox_idmap_range gid[NSBOX_IDMAP_MAX];
    size_t n_uid, n_gid;
    /* true when the map goes beyond the caller's own ids, so it must be
     * written by newuidmap/newgidmap rather than by the caller. */
    bool helpers;
    /* true when root inside a user namespace writes it (a container's
     * ids, nsbox_idmap_for_self): setgroups stays allowed. */
    bool by_root;
};

/* Fills map for the calling user: its uid/gid become 0 and, when /etc/subuid
 * and /etc/subgid grant it ranges and the newuidmap/newgidmap helpers exist,
 * ids 1..N map onto those ranges.  For root inside a user namespace (see
 * nsbox_idmap_nested_root): every id of that namespace onto itself, written
 * without helpers.  Returns 0 or -1. */
int nsbox_idmap_for_self(struct nsbox_idmap *map, struct nsbox_err *err);

/* True when this process runs in a user namespace other than the initial
 * one (its uid_map is not the identity over all ids). */
bool nsbox_userns_nested(void);

/* True for root inside a user namespace (a container or a pod with
 * hostUsers: false): nsbox then works as it does rootless, with the
 * namespace's ids shared by its sandboxes (no per-sandbox id ranges). */
bool nsbox_idmap_nested_root(void);

/* True when a process in a namespace that map was written into may call
 * setgroups() (to drop the groups it inherited). */
bool nsbox_idmap_may_setgroups(const struct nsbox_idmap *map);

/* Number of ids mapped (ids 0..n-1 inside are usable when contiguous). */
uint32_t nsbox_idmap_uid_count(const struct nsbox_idmap *map);

/* Writes map into the user namespace of pid (a child that has just
 * unshared CLONE_NEWUSER).  Returns 0 or -1. */
int nsbox_idmap_apply(pid_t pid, const struct nsbox_idmap *map, struct nsbox_err *err);

/* Runs fn(arg, err) in a forked child inside a new user namespace with map
 * applied, where the child is root.  The child's error travels back to err.
 * Returns fn's result (0 or -1); -1 too when the namespace could not be set
 * up or the child died. */
int nsbox_userns_run(const struct nsbox_idmap *map, int (*fn)(void *arg, struct nsbox_err *err),
                     void *arg, struct nsbox_err *err);

#endif
