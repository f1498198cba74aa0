/* The disk layer's hooks into sandbox creation and removal (disk.c);
 * runtime/ only. */
#ifndef NSBOX_RUNTIME_DISK_INTERNAL_H
#define NSBOX_RUNTIME_DISK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "disk.h"

struct nsbox_sandbox;
struct nsbox_sandbox_config;
struct nsbox_disk_usage;

/* Host side, before the clone: picks sb->disk's kind and limits (slot: the
 * root id-range slot, which names a quota's project), and for a quota puts
 * STATE/upper and STATE/work in it.  Returns 0 or -1. */
int nsbox_disk_plan(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *sb, uint32_t slot,
                    struct nsbox_err *err);

/* The memory cgroup limit that goes with the disk: the asked one, raised
 * by a tmpfs disk's size. */
uint64_t nsbox_disk_memory_limit(const struct nsbox_sandbox_config *cfg,
                                 const struct nsbox_sandbox *sb);

/* Appends "; disk: ..." (what bounds the writable layer) to note. */
void nsbox_disk_note(const struct nsbox_sandbox_config *cfg, const struct nsbox_sandbox *sb,
                     bool memcg, char *note, size_t size);

/* Child side, root in the sandbox's user and mount namespaces: mounts the
 * tmpfs on STATE/disk (state_fd: the state dir, opened with the host's
 * credentials) and makes upper/ and work/ in it.  *root_fd: its root,
 * kept by init for the host.  Returns 0 or -1. */
int nsbox_disk_mount_tmpfs(int state_fd, const struct nsbox_disk *d, int *root_fd,
                           struct nsbox_err *err);

/* Creator and opener of a sandbox with a tmpfs disk: reads the disk's
 * root that init sends first on a new control connection into
 * sb->disk.fd.  Returns 0 or -1. */
int nsbox_disk_fd_recv(struct nsbox_sandbox *sb, struct nsbox_err *err);

/* After removal: a quota's project is left without limits.  Best effort. */
void nsbox_disk_release(const struct nsbox_sandbox *sb);

/* Usage of an unbounded upper layer, by walking it (du.c). */
int nsbox_disk_walk_used(const struct nsbox_sandbox *sb, struct nsbox_disk_usage *u,
                         struct nsbox_err *err);

#endif
