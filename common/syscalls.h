/* The kernel boundary: every raw syscall() of the library, one wrapper each.
 *
 * These are calls glibc 2.36 does not wrap, wraps only in newer versions, or
 * wraps with semantics nsbox cannot use (clone(2) without a stack).  Each
 * wrapper returns what the system call returns (-1 with errno on failure)
 * and says which kernel first has the call: on an older kernel it fails
 * with ENOSYS, and the contract says what the caller does then (a fallback
 * here, a fallback in the caller, or an error naming the kernel needed).
 * The SYS_ numbers below are the ones every architecture but alpha shares
 * for calls added since Linux 5.1 (the unified syscall table); they only
 * matter with libc headers older than the call. */
#ifndef NSBOX_SYSCALLS_H
#define NSBOX_SYSCALLS_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
/* pivot_root, clone and seccomp predate the unified table: their numbers
 * differ per architecture, and every libc that builds nsbox has them. */

/* openat2(2), Linux 5.6+: the only way to resolve a path as if dirfd were
 * the root, so that "..", absolute symlinks and relative symlinks can never
 * climb out of it (RESOLVE_IN_ROOT).  ENOSYS before 5.6; no fallback (a
 * path walk in user space is exactly the race this call exists to close).
 * With RESOLVE_IN_ROOT or RESOLVE_BENEATH the kernel answers EAGAIN when a
 * rename or a mount anywhere on the system raced a ".." of the walk (it
 * cannot prove the walk stayed inside); the man page says to retry, and a
 * busy host (sandboxes starting, layers unpacking) makes it common. */
#define NSBOX_OPENAT2_RETRIES 256
static inline int nsbox_openat2(int dirfd, const char *path, int flags, unsigned long long mode,
                                unsigned long long resolve)
{
    struct open_how how = {.flags = (unsigned long long)flags, .mode = mode, .resolve = resolve};
    int fd, tries = 0;
    do
        fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    while (fd < 0 && errno == EAGAIN && (resolve & (RESOLVE_IN_ROOT | RESOLVE_BENEATH)) &&
           ++tries < NSBOX_OPENAT2_RETRIES);
    return fd;
}

/* The resolve flags for anything that crosses into an image or sandbox
 * tree: confined to dirfd, no /proc magic links, no crossing mounts. */
#define NSBOX_RESOLVE_CONFINED (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* pivot_root(2), every kernel nsbox runs on; glibc has no wrapper.
 * Returns 0 or -1 with errno. */
static inline int nsbox_pivot_root(const char *new_root, const char *put_old)
{
    return (int)syscall(SYS_pivot_root, new_root, put_old);
}

/* ptrace(request, pid, 0, 0) straight to the kernel, past libc's wrapper
 * and a sanitizer's interceptor (runtime/sanitizer.c asks whether seccomp
 * lets the call through at all). */
static inline long nsbox_sys_ptrace(long request, pid_t pid)
{
    return syscall(SYS_ptrace, request, pid, 0, 0);
}

/* pidfd_open(2), Linux 5.3+: a descriptor that names pid itself, immune to
 * pid reuse.  Returns the fd or -1; ENOSYS before 5.3, and then callers
 * keep pidfd == -1 and fall back to kill(pid)/waitpid(pid). */
static inline int nsbox_pidfd_open(pid_t pid, unsigned int flags)
{
    return (int)syscall(SYS_pidfd_open, pid, flags);
}

/* pidfd_send_signal(2), Linux 5.1+: sends sig to the process pidfd names.
 * Returns 0 or -1.  Only called with a pidfd from nsbox_pidfd_open, which
 * exists only on 5.3+, so ENOSYS cannot happen in practice. */
static inline int nsbox_pidfd_send_signal(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* open_tree(2), Linux 5.2+: a detached copy (OPEN_TREE_CLONE) of the mount
 * at path, as an fd.  Returns the fd or -1; ENOSYS before 5.2, which the
 * caller reports as "idmapped mounts need Linux 5.12+". */
static inline int nsbox_open_tree(int dirfd, const char *path, unsigned int flags)
{
    return (int)syscall(SYS_open_tree, dirfd, path, flags);
}

/* mount_setattr(2), Linux 5.12+ (the first kernel with MOUNT_ATTR_IDMAP):
 * changes the attributes of the mount(s) at dirfd/path.  Returns 0 or -1;
 * ENOSYS before 5.12, which the caller reports as "idmapped mounts need
 * Linux 5.12+" (EINVAL: the filesystem cannot be idmapped). */
static inline int nsbox_mount_setattr(int dirfd, const char *path, unsigned int flags,
                                      struct mount_attr *attr)
{
    return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(*attr));
}

/* move_mount(2), Linux 5.2+: attaches the mount at from to to.  Returns 0
 * or -1; ENOSYS before 5.2 (then open_tree failed first). */
static inline int nsbox_move_mount(int from_dirfd, const char *from_path, int to_dirfd,
                                   const char *to_path, unsigned int flags)
{
    return (int)syscall(SYS_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags);
}

/* quotactl_fd(2), Linux 5.14+: quotactl on the filesystem of an open fd
 * (no block device path to find, and none exists for some filesystems).
 * ENOSYS before 5.14: the caller treats project quotas as unusable (the
 * disk layer then uses a tmpfs, runtime/disk.h). */
static inline int nsbox_quotactl_fd(int fd, unsigned int cmd, int id, void *addr)
{
    return (int)syscall(SYS_quotactl_fd, fd, cmd, id, addr);
}

/* clone3(2), Linux 5.3+ (CLONE_INTO_CGROUP: 5.7+), with fork semantics (no
 * new stack: the child returns 0 here).  Returns the child's pid, 0 in the
 * child, or -1: ENOSYS before 5.3, E2BIG or EINVAL where the kernel does
 * not know a field or flag; callers then fall back to nsbox_clone. */
static inline pid_t nsbox_clone3(struct clone_args *args)
{
    return (pid_t)syscall(SYS_clone3, args, sizeof(*args));
}

/* clone(2) with fork semantics: flags (namespaces | exit signal), no new
 * stack, no tids, no TLS.  glibc's clone() insists on a stack and a
 * function; its fork() takes no flags.  Returns like fork().  Every kernel
 * has it; the argument order is the raw one (s390 swaps flags and stack). */
static inline pid_t nsbox_clone(unsigned long flags)
{
#if defined(__s390__) || defined(__CRIS__)
    return (pid_t)syscall(SYS_clone, NULL, flags, NULL, NULL, NULL);
#else
    return (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
#endif
}

/* Landlock (Linux 5.13+, docs/isolation.md).  The structures are
 * runtime/landlock.c's; here only the calls.  create_ruleset(NULL, 0,
 * LANDLOCK_CREATE_RULESET_VERSION = 1) returns the kernel's ABI. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
static inline int nsbox_landlock_create_ruleset(const void *attr, size_t size, unsigned flags)
{
    return (int)syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static inline int nsbox_landlock_add_rule(int ruleset, int type, const void *attr, unsigned flags)
{
    return (int)syscall(SYS_landlock_add_rule, ruleset, type, attr, flags);
}

static inline int nsbox_landlock_restrict_self(int ruleset, unsigned flags)
{
    return (int)syscall(SYS_landlock_restrict_self, ruleset, flags);
}

/* Installs the seccomp filter prog on the calling thread: seccomp(2)
 * (Linux 3.17+) and, where that is ENOSYS, prctl(PR_SET_SECCOMP), which
 * does the same for one thread.  no_new_privs must be set (or the caller
 * hold CAP_SYS_ADMIN).  Returns 0 or -1 with errno. */
static inline int nsbox_seccomp_set_filter(const struct sock_fprog *prog)
{
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == 0)
        return 0;
    if (errno != ENOSYS)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) == 0 ? 0 : -1;
}

#endif
