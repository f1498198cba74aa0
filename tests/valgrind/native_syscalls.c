/* LD_PRELOAD shim for the valgrind suite (tests/integration/valgrind_mcp.sh).
 *
 * valgrind 3.19 (Debian 12) knows none of the newer system calls nsbox is
 * built on -- openat2, open_tree, move_mount, mount_setattr, pidfd_open,
 * pidfd_send_signal, seccomp, quotactl_fd, the three landlock_* calls -- nor
 * setdomainname, and fails them with ENOSYS
 * without asking the kernel, so nsbox cannot make a sandbox under it.
 * nsbox (and the libseccomp linked into it) makes them through glibc's
 * syscall() and setdomainname(); these run those few on the real CPU
 * (VALGRIND_NON_SIMD_CALL1) and every other one as valgrind normally would.  Memcheck does not see the
 * memory those few read (a struct open_how, a mount_attr), and they write
 * none.  clone3 stays unknown: nsbox falls back to clone, which valgrind
 * follows; a clone3 made behind valgrind's back would run a child without
 * it.
 *
 * Forked children (helpers, each sandbox's init and the children init
 * forks) stay under valgrind: their invalid accesses are reported in their
 * own log.  They end with _exit(), and this one ends them on the real CPU,
 * without valgrind's leak check: a fork copies one thread, so whatever only
 * another thread's stack pointed to looks "definitely lost" there, and
 * --error-exitcode would then replace the child's exit status, which nsbox
 * reads.  The process valgrind started keeps its leak check and its exit
 * status.  Outside valgrind the shim only forwards. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#if !defined(__x86_64__)
#error "native_syscalls.c: x86_64 only"
#endif

static long raw_syscall(const long *a)
{
    long ret;
    register long r10 __asm__("r10") = a[4];
    register long r8 __asm__("r8") = a[5];
    register long r9 __asm__("r9") = a[6];
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(a[0]), "D"(a[1]), "S"(a[2]), "d"(a[3]), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/* Called by valgrind on the real CPU: no libc (errno and the TLS would be
 * valgrind's own), only the bare instruction. */
static long on_real_cpu(long tid, long args)
{
    (void)tid;
    return raw_syscall((const long *)args);
}

static int unknown_to_valgrind(long nr)
{
    switch (nr) {
    case 171: /* setdomainname */
    case 317: /* seccomp */
    case 424: /* pidfd_send_signal */
    case 428: /* open_tree */
    case 429: /* move_mount */
    case 434: /* pidfd_open */
    case 437: /* openat2 */
    case 442: /* mount_setattr */
    case 443: /* quotactl_fd: writes only into structs nsbox zeroes first */
    case 444: /* landlock_create_ruleset: reads a ruleset_attr */
    case 445: /* landlock_add_rule: reads a path_beneath_attr */
    case 446: /* landlock_restrict_self */
        return 1;
    default:
        return 0;
    }
}

static long call(const long *a)
{
    long r = RUNNING_ON_VALGRIND && unknown_to_valgrind(a[0])
                 ? (long)VALGRIND_NON_SIMD_CALL1(on_real_cpu, (long)a)
                 : raw_syscall(a);
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

long syscall(long nr, ...)
{
    long a[7] = {nr};
    va_list ap;

    va_start(ap, nr);
    for (int i = 1; i < 7; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    return call(a);
}

int setdomainname(const char *name, size_t len)
{
    long a[7] = {SYS_setdomainname, (long)name, (long)len};
    return (int)call(a);
}

static pid_t started; /* the process valgrind started */

__attribute__((constructor)) static void remember_pid(void)
{
    started = getpid();
}

void _exit(int status)
{
    long a[7] = {SYS_exit_group, status};
    if (RUNNING_ON_VALGRIND && getpid() != started)
        VALGRIND_NON_SIMD_CALL1(on_real_cpu, (long)a);
    raw_syscall(a);
    __builtin_unreachable();
}
