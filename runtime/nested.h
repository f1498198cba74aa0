/* Nested mode (nsbox_sandbox_config.nested, docs/nested.md): what it
 * changes in a sandbox's filesystem, so that a rootless container engine
 * (podman, buildah) runs inside.
 *
 * Called by namespaces_spawn.c (host side: the checks and the plan; the
 * child: opening what it needs while it still has the host's
 * credentials) and by mounts.c (the child, building the tree: each step a
 * call here).  Nothing here runs without nested.
 *
 * What changes, and why (the spike of issue #31):
 *   /proc              plain: no masked files, no read-only binds (a fresh
 *                      proc cannot be mounted in a nested user namespace
 *                      under a masked one, mount_too_revealing); the
 *                      kernel's own checks still refuse writes to /proc/sys
 *                      and /proc/sysrq-trigger (owned by the host's root);
 *   /sys               the same empty read-only tmpfs, with an empty
 *                      fs/cgroup directory (podman needs it to exist);
 *   /etc/subuid, /etc/subgid  "root:1:N-1" for the sandbox's N ids, bound
 *                      read-only from a tmpfs of nsbox's own;
 *   /var/lib/containers  a directory of the sandbox's disk (disk.h: on the
 *                      tmpfs disk, or STATE/containers in the quota
 *                      project), so the disk bound counts nested images;
 *   /dev/net/tun       the host's node when the sandbox's ids may open it
 *                      (mode o+rw): slirp4netns for published ports;
 *                      without it /etc/containers/containers.conf.d/
 *                      50-nsbox-netns.conf says netns = "host" (podman's
 *                      containers share the sandbox's network);
 *   /run/nsbox         a small tmpfs: the idmap socket (idmap_service.c)
 *                      and, with nested_images, the OCI layout shown
 *                      read-only at /run/nsbox/images (an overlay whose
 *                      layers are named by fd: no host path in mountinfo);
 *   /usr/bin/newuidmap, /usr/bin/newgidmap  nsbox's client (nsbox-newidmap),
 *                      read-only, nosuid, nodev, executable.
 * Rules: every path is resolved in the new root without symlinks; a
 * target the image has as a symlink or other than a regular file is
 * refused, never followed. */
#ifndef NSBOX_RUNTIME_NESTED_H
#define NSBOX_RUNTIME_NESTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

struct nsbox_sandbox_config;
struct nsbox_sandbox;

/* Where the idmap service listens, inside. */
#define NSBOX_IDMAP_SOCK "/run/nsbox/idmap.sock"
/* The client's file name next to nsbox, or in PREFIX/libexec/nsbox. */
#define NSBOX_NEWIDMAP_NAME "nsbox-newidmap"

/* What the child hands mounts.c (mounts.h, nsbox_mount_config.nested). */
struct nsbox_nested_mount {
    bool on;
    bool tun;            /* bind the host's /dev/net/tun */
    uint32_t ids;        /* the sandbox's id count, N */
    const char *storage; /* "/proc/self/fd/N": the disk's directory */
    const char *images;  /* "/proc/self/fd/N": an OCI layout, or NULL */
    int client_fd;       /* nsbox-newidmap, open for reading */
};

/* Host side, before the clone: refuses what cannot work (landlock
 * isolation, a single id, a kernel without overlay in a user namespace),
 * finds the client (client: its path) and decides sb->nested_tun.
 * ids: the sandbox's id count.  Returns 0 or -1 with err. */
int nsbox_nested_plan(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *sb,
                      uint32_t ids, char *client, size_t client_size, struct nsbox_err *err);

/* Host side, with the state dir made, before the disk's plan (which puts
 * it in a quota's project): STATE/containers, the storage when the disk
 * is no tmpfs (owned by the sandbox's root: uid base as root).  Returns 0
 * or -1. */
int nsbox_nested_state_dir(const struct nsbox_sandbox *sb, uint32_t base, struct nsbox_err *err);

/* The child, root in its namespaces: the storage directory, made on the
 * tmpfs disk (disk_fd >= 0) or found in the state dir (state_fd).
 * Returns an O_PATH fd or -1. */
int nsbox_nested_storage_open(int disk_fd, int state_fd, struct nsbox_err *err);

/* mounts.c: /sys with an empty fs/cgroup (root: the new root). */
int nsbox_nested_sys(int root, struct nsbox_err *err);

/* mounts.c: /dev/net/tun in the sandbox's /dev (devfd). */
int nsbox_nested_tun(int devfd, struct nsbox_err *err);

/* mounts.c, after /etc: the rest of the list above.  private_dir: the
 * private tmpfs's path, dfd its root (mounts.c, mount_private). */
int nsbox_nested_setup(int root, const struct nsbox_nested_mount *n, const char *private_dir,
                       int dfd, struct nsbox_err *err);

/* The child, after pivot_root: the idmap service's listening socket at
 * NSBOX_IDMAP_SOCK, mode 0666.  Returns the fd or -1. */
int nsbox_nested_listen(struct nsbox_err *err);

#endif
