/* `nsbox doctor` inside a container: what the container's own settings
 * (its seccomp profile, its masked /proc) take away from the sandboxes.
 * Each probe runs in a child that first makes its own user namespace, so
 * it holds every capability there: an EPERM then comes from the
 * container's seccomp filter or from the kernel's procfs rule, not from a
 * missing capability.  See docs/container.md. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/syscalls.h"
#include "../common/userns.h"
#include "cli.h"

/* Bits of the child's exit status: what was refused. */
enum {
    NO_USERNS = 1,
    NO_UNSHARE = 2,
    NO_PIVOT = 4,
    NO_HOSTNAME = 8,
    NO_UMOUNT = 16,
    NO_PROC = 32,
    NO_CLONE = 64,
};

/* In a new pid namespace: a fresh procfs, which the kernel refuses while
 * the visible /proc has masked (overmounted) paths (mnt_too_revealing). */
static int proc_child(void)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return 1;
    return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 ? 0 : 1;
}

static int probe(bool in_userns)
{
    int bad = 0;

    if (!in_userns && unshare(CLONE_NEWUSER) < 0)
        return NO_USERNS;
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID) < 0)
        return NO_UNSHARE;
    /* With every capability here the kernel answers EINVAL, EBUSY or
     * ENOENT; EPERM is the container's seccomp filter. */
    if (nsbox_pivot_root("/", "/") < 0 && errno == EPERM)
        bad |= NO_PIVOT;
    if (sethostname("nsbox", 5) < 0 && errno == EPERM)
        bad |= NO_HOSTNAME;
    if (umount2("/nsbox-doctor-none", 0) < 0 && errno == EPERM)
        bad |= NO_UMOUNT;
    pid_t pid = fork();
    if (pid == 0)
        _exit(proc_child());
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bad |= NO_PROC;
    return bad;
}

int cli_doctor_container(char *what, size_t what_size, char *fix, size_t fix_size)
{
    int bad = 0, status;

    if (!nsbox_userns_nested())
        return -1;
    /* A sandbox's init is cloned with CLONE_NEWUSER and the other
     * namespace flags (runtime/namespaces_spawn.c); Docker's default profile refuses clone
     * with any of them unless the container has CAP_SYS_ADMIN. */
    pid_t pid = nsbox_clone(CLONE_NEWUSER | SIGCHLD);
    if (pid == 0)
        _exit(probe(true));
    if (pid < 0) {
        bad |= NO_CLONE;
        pid = fork();
        if (pid == 0)
            _exit(probe(false));
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return snprintf(what, what_size, "the probe failed"), 1;
    bad |= WEXITSTATUS(status);
    fix[0] = '\0';
    if (bad & (NO_USERNS | NO_UNSHARE | NO_CLONE)) {
        snprintf(what, what_size, "the container's seccomp profile or LSM refuses %s%s",
                 bad & NO_CLONE    ? "clone with namespace flags"
                 : bad & NO_USERNS ? "a user namespace"
                                   : "namespaces inside a user namespace",
                 (bad & NO_CLONE) && (bad & NO_USERNS) ? " and unshare" : "");
        snprintf(fix, fix_size,
                 "run the container with deploy/seccomp/nsbox-pod.json "
                 "(Kubernetes: seccompProfile type Localhost; docs/container.md)");
        return 1;
    }
    size_t off = 0;
    if (bad & NO_PROC)
        off += (size_t)snprintf(what + off, what_size - off,
                                "/proc cannot be mounted for sandboxes (the container's /proc "
                                "has masked paths); ");
    if (bad & (NO_PIVOT | NO_HOSTNAME | NO_UMOUNT) && off < what_size)
        off += (size_t)snprintf(
            what + off, what_size - off, "the container's seccomp profile refuses%s%s%s; ",
            bad & NO_PIVOT ? " pivot_root" : "", bad & NO_UMOUNT ? " umount2" : "",
            bad & NO_HOSTNAME ? " sethostname" : "");
    if (bad == 0) {
        snprintf(what, what_size,
                 "in a user namespace (a container): sandboxes can mount /proc, pivot_root, "
                 "umount2 and sethostname");
        return 0;
    }
    if (off >= 2 && off < what_size)
        what[off - 2] = '\0';
    snprintf(fix, fix_size, "%s%s%s",
             bad & NO_PROC ? "Kubernetes: securityContext.procMount: Unmasked (needs "
                             "hostUsers: false); runc/crun: empty linux.maskedPaths and "
                             "readonlyPaths"
                           : "",
             (bad & NO_PROC) && (bad & (NO_PIVOT | NO_HOSTNAME | NO_UMOUNT)) ? "; " : "",
             bad & (NO_PIVOT | NO_HOSTNAME | NO_UMOUNT)
                 ? "use deploy/seccomp/nsbox-pod.json (docs/container.md)"
                 : "");
    return 1;
}
