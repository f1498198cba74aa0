/* Raw syscall wrappers for calls glibc 2.36 does not wrap (or wraps only in
 * newer versions).  Every caller checks for ENOSYS and says what it needs. */
#ifndef NSBOX_SYSCALLS_H
#define NSBOX_SYSCALLS_H

#include <errno.h>
#include <linux/openat2.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* openat2(2), Linux 5.6+: the only way to resolve a path as if dirfd were
 * the root, so that "..", absolute symlinks and relative symlinks can never
 * climb out of it (RESOLVE_IN_ROOT). */
static inline int nsbox_openat2(int dirfd, const char *path, int flags,
                                unsigned long long mode,
                                unsigned long long resolve)
{
    struct open_how how = {.flags = (unsigned long long)flags,
                           .mode = mode,
                           .resolve = resolve};
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* The resolve flags for anything that crosses into an image or sandbox
 * tree: confined to dirfd, no /proc magic links, no crossing mounts. */
#define NSBOX_RESOLVE_CONFINED                                                 \
    (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

#endif
