/* Whether this host lets this process make namespaced sandboxes, and if
 * not, why and the fix: one set of words shared by `nsbox doctor` (its FAIL
 * lines) and by `nsbox run/create/serve` (their refusal), so that what a
 * user reads when refused is what doctor told them (docs/hosts.md).
 *
 * Two gaps are checked, both before any sandbox is made:
 *   - user namespaces: every sandbox, root's too, lives in one.  Blocked by
 *     user.max_user_namespaces=0 (for root as well), by Debian's
 *     kernel.unprivileged_userns_clone=0 and by Ubuntu's
 *     kernel.apparmor_restrict_unprivileged_userns=1 (unprivileged only).
 *   - the kernel: root's sandboxes need idmapped mounts (Linux 5.12),
 *     rootless ones overlayfs inside a user namespace (Linux 5.11).
 *
 * Test hook: NSBOX_SYSCTL_ROOT=DIR reads the three sysctls from DIR
 * (DIR/user/max_user_namespaces, DIR/kernel/unprivileged_userns_clone,
 * DIR/kernel/apparmor_restrict_unprivileged_userns) instead of /proc/sys,
 * and this process's AppArmor label from DIR/apparmor-label when that file
 * exists.  The real probe (creating a user namespace) still runs, and a gap
 * found by either counts: the hook can only add refusals, never lift one. */
#ifndef NSBOX_HOSTCHECK_H
#define NSBOX_HOSTCHECK_H

#include <stdbool.h>

#include "err.h"

/* The weaker mode a user may choose knowingly when namespaces are blocked. */
#define NSBOX_HOST_WEAKER                                                                          \
    "or, knowingly weaker, --isolation=landlock (no pid, mount or network namespace: see "         \
    "`nsbox doctor`)"

struct nsbox_host_gap {
    const char *check; /* doctor's name for it: "user namespaces" or "kernel" */
    char cause[512];   /* what is missing and why, one sentence */
    char fix[768];     /* a command or an action */
    bool weaker_ok;    /* NSBOX_HOST_WEAKER applies (landlock needs no userns) */
};

/* 0 when this process can create a user namespace and unshare a mount
 * namespace in it (what every sandbox does first); 1 with gap filled when
 * not. */
int nsbox_host_userns(struct nsbox_host_gap *gap);

/* 0 when the kernel has what this process's sandboxes need (idmapped
 * mounts as root, overlayfs in a user namespace rootless); 1 with gap
 * filled when not. */
int nsbox_host_kernel(struct nsbox_host_gap *gap);

/* Mounts an overlay inside a fresh user namespace in a child.  Returns 0
 * when it mounts, 1 when the mount is refused, 2 when the namespace itself
 * cannot be made, 3 on a local failure (no temporary directory). */
int nsbox_host_try_overlay(void);

/* Both checks above, as the refusal of a command that would make a
 * namespaced sandbox: 0 when none applies, else -1 with err set to
 * "this host cannot run namespaced sandboxes: CAUSE; fix: FIX" (and
 * NSBOX_HOST_WEAKER when it applies).  probe false skips the user namespace
 * probe (a fork, a few ms): the sysctls and the kernel are still checked,
 * and nsbox_host_explain() gives a failed sandbox the same words. */
int nsbox_host_refuse(struct nsbox_err *err, bool probe);

/* After a sandbox could not be made: when a full nsbox_host_refuse() finds
 * a gap, err is replaced by its refusal.  Returns -1 always. */
int nsbox_host_explain(struct nsbox_err *err);

#endif
