/* runtime/seccomp.c: the default profile's real behaviour
 * (seccomp-profiles/default.json).  A child installs it and runs a probe of
 * each kernel surface it must close or leave open (namespaces, the mount
 * API, keys, bpf, io_uring, modules, TIOCSTI, AF_ALG/AF_VSOCK ...); the
 * same with a default errno nothing else returns, so that every denial is
 * the filter's; what CAP_SYS_ADMIN opens; ioctl's and socket's arguments
 * compared on their low 32 bits; the foreign syscall ABIs killing the
 * process; and a microbenchmark as a "#" note.  Parsing, limits and small
 * profiles are in test_seccomp.c, which defines the helpers declared in
 * seccomp_lib.h. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/seccomp.h"
#include "check.h"
#include "seccomp_lib.h"

#define MARK_ERRNO 133 /* EHWPOISON: an errno no probe can get by itself */

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* ---- helpers ---- */

/* default.json with defaultErrnoRet replaced by MARK_ERRNO, so a denial can
 * only have come from the filter. */
static struct nsbox_seccomp *compile_marked_default(const char *const *caps)
{
    json_error_t jerr;
    json_t *root = json_load_file(DEFAULT_PROFILE, 0, &jerr);
    struct nsbox_seccomp *f;
    char *text;

    if (root == NULL)
        return NULL;
    json_object_set_new(root, "defaultErrnoRet", json_integer(MARK_ERRNO));
    text = json_dumps(root, 0);
    json_decref(root);
    f = text ? sc_compile_str(text, caps) : NULL;
    free(text);
    return f;
}

static bool killed_by(int status, int sig)
{
    return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* ---- the default profile ---- */

enum expect { OK, DENY, NOT_DENIED, ERRNO_IS };

struct probe {
    const char *what;
    long (*run)(void);
    enum expect expect;
    int errno_is; /* for ERRNO_IS */
};

static int devnull(void)
{
    static int fd = -1;
    if (fd < 0)
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    return fd;
}

static long closing(long fd)
{
    if (fd >= 0)
        close((int)fd);
    return fd;
}

/* A clone that must fail; if it does not, the new child leaves at once. */
static long clone_flags(unsigned long flags)
{
    long r = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
    if (r == 0)
        _exit(0);
    if (r > 0)
        waitpid((pid_t)r, NULL, 0);
    return r;
}

static void *thread_main(void *arg)
{
    return arg;
}

static long p_getpid(void)
{
    return syscall(SYS_getpid);
}
static long p_unshare_user(void)
{
    return syscall(SYS_unshare, CLONE_NEWUSER);
}
static long p_unshare_ns(void)
{
    return syscall(SYS_unshare, CLONE_NEWNS);
}
static long p_unshare_bad(void)
{
    return syscall(SYS_unshare, ~0UL);
}
static long p_setns(void)
{
    return syscall(SYS_setns, -1, 0);
}
static long p_mount(void)
{
    return mount("none", "/nonexistent-nsbox", "tmpfs", 0, NULL);
}
static long p_umount2(void)
{
    return syscall(SYS_umount2, "/nonexistent-nsbox", 0);
}
static long p_pivot_root(void)
{
    return syscall(SYS_pivot_root, "/nonexistent-nsbox", "/nonexistent-nsbox");
}
static long p_open_tree(void)
{
    return syscall(SYS_open_tree, -1, "", 0);
}
static long p_move_mount(void)
{
    return syscall(SYS_move_mount, -1, "", -1, "", 0);
}
static long p_fsopen(void)
{
    return syscall(SYS_fsopen, "", 0);
}
static long p_fsmount(void)
{
    return syscall(SYS_fsmount, -1, 0, 0);
}
static long p_fsconfig(void)
{
    return syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0);
}
static long p_fspick(void)
{
    return syscall(SYS_fspick, -1, "", 0);
}
static long p_mount_setattr(void)
{
    return syscall(SYS_mount_setattr, -1, "", 0, NULL, 0);
}
static long p_keyctl(void)
{
    return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0);
}
static long p_add_key(void)
{
    return syscall(SYS_add_key, NULL, NULL, NULL, 0, 0);
}
static long p_request_key(void)
{
    return syscall(SYS_request_key, NULL, NULL, NULL, 0);
}
static long p_bpf(void)
{
    return syscall(SYS_bpf, -1, NULL, 0);
}
static long p_perf_event_open(void)
{
    return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
}
static long p_userfaultfd(void)
{
    return closing(syscall(SYS_userfaultfd, O_CLOEXEC));
}
static long p_io_uring_setup(void)
{
    return syscall(SYS_io_uring_setup, 0, NULL);
}
static long p_io_uring_enter(void)
{
    return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
}
static long p_io_uring_register(void)
{
    return syscall(SYS_io_uring_register, -1, 0, NULL, 0);
}
static long p_kexec_load(void)
{
    return syscall(SYS_kexec_load, 0, 0, NULL, 0);
}
static long p_kexec_file_load(void)
{
    return syscall(SYS_kexec_file_load, -1, -1, 0, NULL, 0);
}
static long p_init_module(void)
{
    return syscall(SYS_init_module, NULL, 0, "");
}
static long p_finit_module(void)
{
    return syscall(SYS_finit_module, -1, "", 0);
}
static long p_delete_module(void)
{
    return syscall(SYS_delete_module, "nsbox_none", 0);
}
static long p_open_by_handle_at(void)
{
    return syscall(SYS_open_by_handle_at, -1, NULL, 0);
}
static long p_personality_set(void)
{
    return syscall(SYS_personality, ADDR_NO_RANDOMIZE);
}
static long p_personality_query(void)
{
    return syscall(SYS_personality, 0xffffffffUL);
}
static long p_syslog(void)
{
    return syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0);
}
static long p_acct(void)
{
    return syscall(SYS_acct, NULL);
}
static long p_swapon(void)
{
    return syscall(SYS_swapon, NULL, 0);
}
static long p_swapoff(void)
{
    return syscall(SYS_swapoff, NULL);
}
static long p_reboot(void)
{
    return syscall(SYS_reboot, 0, 0, 0, NULL); /* bad magic */
}
static long p_lookup_dcookie(void)
{
    return syscall(SYS_lookup_dcookie, 0, NULL, 0);
}
static long p_quotactl(void)
{
    return syscall(SYS_quotactl, 0, NULL, 0, NULL);
}
static long p_iopl(void)
{
    return syscall(SYS_iopl, 0);
}
static long p_ioperm(void)
{
    return syscall(SYS_ioperm, 0, 0, 0);
}
static long p_nfsservctl(void)
{
    return syscall(SYS_nfsservctl, 0, NULL, NULL);
}
static long p_chroot(void)
{
    return syscall(SYS_chroot, "/");
}
static long p_sethostname(void)
{
    return syscall(SYS_sethostname, "x", 1);
}
static long p_ptrace(void)
{
    return syscall(SYS_ptrace, 0x7fffffffL, getpid(), 0, 0);
}
static long p_socket_alg(void)
{
    return closing(socket(AF_ALG, SOCK_SEQPACKET, 0));
}
static long p_socket_vsock(void)
{
    return closing(socket(AF_VSOCK, SOCK_STREAM, 0));
}
static long p_socket_alg_hi(void)
{
    return closing(syscall(SYS_socket, (1UL << 32) | AF_ALG, SOCK_SEQPACKET, 0));
}
static long p_socket_vsock_hi(void)
{
    return closing(syscall(SYS_socket, ~0UL << 32 | AF_VSOCK, SOCK_STREAM, 0));
}
static long p_socket_inet(void)
{
    return closing(socket(AF_INET, SOCK_STREAM, 0));
}
static long p_socket_unix(void)
{
    return closing(socket(AF_UNIX, SOCK_STREAM, 0));
}
static long p_socket_netlink(void)
{
    return closing(socket(AF_NETLINK, SOCK_RAW, 0));
}
static long p_ioctl(unsigned long req)
{
    char c = 'x';
    return syscall(SYS_ioctl, devnull(), req, &c);
}
static long p_tiocsti(void)
{
    return ioctl(devnull(), TIOCSTI, "x");
}
static long p_tiocsti_hi(void)
{
    return p_ioctl(0x100005412UL);
}
static long p_tiocsti_allhi(void)
{
    return p_ioctl(0xffffffff00005412UL);
}
static long p_tioclinux(void)
{
    return p_ioctl(TIOCLINUX);
}
static long p_fionread(void)
{
    int n;
    return ioctl(devnull(), FIONREAD, &n);
}
static long p_tiocgwinsz(void)
{
    struct winsize w;
    return ioctl(devnull(), TIOCGWINSZ, &w);
}
static long p_tiocgptn_signext(void)
{
    return p_ioctl(0xffffffff80045430UL);
}
static long p_clone_newns(void)
{
    return clone_flags(CLONE_NEWNS);
}
static long p_clone_newuser(void)
{
    return clone_flags(CLONE_NEWUSER);
}
static long p_clone_newnet(void)
{
    return clone_flags(CLONE_NEWNET);
}
static long p_clone3(void)
{
    return syscall(SYS_clone3, NULL, 0);
}
static long p_cachestat(void)
{
    return syscall(451, -1, NULL, NULL, 0);
}
static long p_fchmodat2(void)
{
    return syscall(452, -1, "", 0, 0);
}
static long p_fork(void)
{
    return clone_flags(0) > 0 ? 0 : -1;
}
static long p_thread(void)
{
    pthread_t t;
    int rc = pthread_create(&t, NULL, thread_main, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pthread_join(t, NULL) == 0 ? 0 : -1;
}

#define PR(fn, e)                                                                                  \
    {                                                                                              \
        &#fn[2], fn, e, 0                                                                          \
    } /* the name without "p_" */

static const struct probe PROBES[] = {
    PR(p_getpid, OK),
    PR(p_unshare_user, DENY),
    PR(p_unshare_ns, DENY),
    PR(p_unshare_bad, DENY),
    PR(p_setns, DENY),
    PR(p_mount, DENY),
    PR(p_umount2, DENY),
    PR(p_pivot_root, DENY),
    PR(p_open_tree, DENY),
    PR(p_move_mount, DENY),
    PR(p_fsopen, DENY),
    PR(p_fsmount, DENY),
    PR(p_fsconfig, DENY),
    PR(p_fspick, DENY),
    PR(p_mount_setattr, DENY),
    PR(p_keyctl, DENY),
    PR(p_add_key, DENY),
    PR(p_request_key, DENY),
    PR(p_bpf, DENY),
    PR(p_perf_event_open, DENY),
    PR(p_userfaultfd, DENY),
    PR(p_io_uring_setup, DENY),
    PR(p_io_uring_enter, DENY),
    PR(p_io_uring_register, DENY),
    PR(p_kexec_load, DENY),
    PR(p_kexec_file_load, DENY),
    PR(p_init_module, DENY),
    PR(p_finit_module, DENY),
    PR(p_delete_module, DENY),
    PR(p_open_by_handle_at, DENY),
    PR(p_personality_set, DENY),
    PR(p_personality_query, OK),
    PR(p_syslog, DENY),
    PR(p_acct, DENY),
    PR(p_swapon, DENY),
    PR(p_swapoff, DENY),
    PR(p_reboot, DENY),
    PR(p_lookup_dcookie, DENY),
    PR(p_quotactl, DENY),
    PR(p_iopl, DENY),
    PR(p_ioperm, DENY),
    PR(p_nfsservctl, DENY),
    PR(p_chroot, DENY),
    PR(p_sethostname, DENY),
    PR(p_ptrace, NOT_DENIED),
    PR(p_socket_alg, DENY),
    PR(p_socket_vsock, DENY),
    PR(p_socket_alg_hi, DENY),
    PR(p_socket_vsock_hi, DENY),
    PR(p_socket_inet, OK),
    PR(p_socket_unix, OK),
    PR(p_socket_netlink, OK),
    PR(p_tiocsti, DENY),
    PR(p_tiocsti_hi, DENY),
    PR(p_tiocsti_allhi, DENY),
    PR(p_tioclinux, DENY),
    PR(p_fionread, NOT_DENIED),
    PR(p_tiocgwinsz, NOT_DENIED),
    PR(p_tiocgptn_signext, NOT_DENIED),
    PR(p_clone_newns, DENY),
    PR(p_clone_newuser, DENY),
    PR(p_clone_newnet, DENY),
    {"clone3", p_clone3, ERRNO_IS, ENOSYS}, /* so glibc falls back to clone */
    /* Newer than the profile (its highest is set_mempolicy_home_node, 450):
     * ENOSYS, not the default errno, so libc falls back. */
    {"cachestat", p_cachestat, ERRNO_IS, ENOSYS},
    {"fchmodat2", p_fchmodat2, ERRNO_IS, ENOSYS},
    PR(p_fork, OK),
    PR(p_thread, OK),
};
#define N_PROBES (sizeof(PROBES) / sizeof(PROBES[0]))

static void child_probes(int fd, void *arg)
{
    (void)arg;
    for (size_t i = 0; i < N_PROBES; i++) {
        errno = 0;
        sc_put(fd, PROBES[i].run());
    }
}

static bool probe_ok(const struct probe *p, const struct outcome *o, int deny)
{
    switch (p->expect) {
    case OK:
        return o->ret >= 0;
    case DENY:
        return o->ret == -1 && o->err == deny;
    case NOT_DENIED:
        return o->ret >= 0 || (o->err != deny && o->err != EPERM);
    case ERRNO_IS:
        return o->ret == -1 && o->err == p->errno_is;
    }
    return false;
}

static void check_probes(struct nsbox_seccomp *f, int deny)
{
    struct outcome o[N_PROBES];
    size_t got = 0;

    CHECK(f != NULL);
    if (f == NULL)
        return;
    int status = sc_run_child(f, child_probes, NULL, o, sizeof(o), &got);
    CHECK(sc_exited_ok(status) && got == sizeof(o));
    for (size_t i = 0; i < got / sizeof(o[0]); i++) {
        if (!probe_ok(&PROBES[i], &o[i], deny))
            printf("# probe %s: ret %ld, errno %d (%s)\n", PROBES[i].what, o[i].ret, o[i].err,
                   strerror(o[i].err));
        CHECK(probe_ok(&PROBES[i], &o[i], deny));
    }
}

static void default_profile_blocks_kernel_surface(void)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;

    CHECK(nsbox_seccomp_compile_file(DEFAULT_PROFILE, NULL, &f, &err) == 0);
    check_probes(f, EPERM);
    nsbox_seccomp_free(f);
}

/* The same with a default errno nothing else returns: every DENY above
 * really came from the filter, not from the kernel refusing a root-less
 * call. */
static void default_profile_denials_come_from_the_filter(void)
{
    struct nsbox_seccomp *f = compile_marked_default(NULL);
    check_probes(f, MARK_ERRNO);
    nsbox_seccomp_free(f);
}

/* With CAP_SYS_ADMIN held, moby's rules let the namespace and mount calls
 * through to the kernel (which refuses them for its own reasons). */
static void child_admin(int fd, void *arg)
{
    (void)arg;
    sc_put(fd, p_unshare_bad());
    sc_put(fd, p_mount());
    sc_put(fd, p_clone3());
}

static void capabilities_open_their_syscalls(void)
{
    static const char *const admin[] = {"CAP_SYS_ADMIN", NULL};
    struct nsbox_seccomp *f = compile_marked_default(admin);
    struct outcome o[3];
    size_t got = 0;

    CHECK(f != NULL);
    if (f == NULL)
        return;
    CHECK(sc_exited_ok(sc_run_child(f, child_admin, NULL, o, sizeof(o), &got)));
    CHECK(got == sizeof(o));
    CHECK(sc_denied(&o[0], EINVAL));
    CHECK(o[1].ret == -1 && o[1].err != MARK_ERRNO);
    CHECK(o[2].ret == -1 && o[2].err != MARK_ERRNO && o[2].err != ENOSYS);
    nsbox_seccomp_free(f);
}

/* The kernel reads ioctl's request and socket's domain as 32-bit ints, so
 * the filter must look at the low 32 bits only: 0x100005412 is TIOCSTI. */
static void child_sweep(int fd, void *arg)
{
    static const unsigned long highs[] = {0, 1UL << 32, 0xffffffffUL << 32, 1UL << 63,
                                          0x7fffffffUL << 32};
    long wrong = 0, first = -1;
    (void)arg;

    for (size_t h = 0; h < sizeof(highs) / sizeof(highs[0]); h++) {
        for (unsigned long low = 0x5400; low <= 0x54ff; low++) {
            unsigned long req = highs[h] | low;
            bool blocked = p_ioctl(req) == -1 && errno == EPERM;
            if (blocked != (low == 0x5412 || low == 0x541c) && wrong++ == 0)
                first = (long)req;
        }
        for (unsigned long dom = 0; dom <= 70; dom++) {
            /* type -1 makes the kernel fail with EINVAL before it creates
             * anything; only the filter answers EPERM. */
            errno = 0;
            bool blocked = syscall(SYS_socket, highs[h] | dom, -1, 0) == -1 && errno == EPERM;
            if (blocked != (dom == AF_ALG || dom == AF_VSOCK) && wrong++ == 0)
                first = (long)(highs[h] | dom);
        }
    }
    sc_put(fd, wrong);
    sc_put(fd, first);
}

static void ioctl_and_socket_filters_see_low_32_bits(void)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;
    struct outcome o[2] = {{0, 0}, {0, 0}};
    size_t got = 0;

    CHECK(nsbox_seccomp_compile_file(DEFAULT_PROFILE, NULL, &f, &err) == 0);
    CHECK(sc_exited_ok(sc_run_child(f, child_sweep, NULL, o, sizeof(o), &got)));
    if (o[0].ret != 0)
        printf("# %ld wrong answers, first for 0x%lx\n", o[0].ret, (unsigned long)o[1].ret);
    CHECK(got == sizeof(o) && o[0].ret == 0);
    nsbox_seccomp_free(f);
}

/* ---- foreign syscall ABIs: the bad-arch action kills the process ---- */

static long int80_getpid(void)
{
    long ret;
    /* i386 getpid is 20; int 0x80 reaches the ia32 syscall table. */
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "cc", "r8", "r9", "r10", "r11");
    return ret;
}

static void child_int80(int fd, void *arg)
{
    (void)arg;
    sc_put(fd, int80_getpid() == getpid() ? 1 : 0);
}

static void child_x32(int fd, void *arg)
{
    (void)arg;
    /* x32 getpid: the x86_64 number with __X32_SYSCALL_BIT. */
    sc_put(fd, syscall(0x40000000L | SYS_getpid));
}

static void *x32_thread(void *arg)
{
    (void)arg;
    syscall(0x40000000L | SYS_getpid);
    return NULL;
}

static void child_x32_in_thread(int fd, void *arg)
{
    pthread_t t;
    (void)arg;
    if (pthread_create(&t, NULL, x32_thread, NULL) == 0)
        pthread_join(t, NULL);
    sc_put(fd, 1); /* only reached if just the thread died */
}

static void foreign_abis_kill_the_process(void)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;
    struct outcome o = {0, 0};
    size_t got;
    int status;

    CHECK(nsbox_seccomp_compile_file(DEFAULT_PROFILE, NULL, &f, &err) == 0);
    if (f == NULL)
        return;
    /* Without a filter int 0x80 works here (CONFIG_IA32_EMULATION) or
     * faults (no ia32 support: the ABI is absent anyway). */
    status = sc_run_child(NULL, child_int80, NULL, &o, sizeof(o), &got);
    bool ia32 = sc_exited_ok(status) && got == sizeof(o) && o.ret == 1;
    if (!ia32)
        printf("# seccomp: no ia32 syscall ABI on this kernel\n");
    status = sc_run_child(f, child_int80, NULL, &o, sizeof(o), &got);
    CHECK(got == 0 && killed_by(status, ia32 ? SIGSYS : SIGSEGV));
    /* x32 numbers hit the bad-arch action whether or not the kernel has
     * CONFIG_X86_X32_ABI: the filter runs before the syscall table. */
    status = sc_run_child(f, child_x32, NULL, &o, sizeof(o), &got);
    CHECK(got == 0 && killed_by(status, SIGSYS));
    /* KILL_PROCESS, not KILL_THREAD: the other threads die too. */
    status = sc_run_child(f, child_x32_in_thread, NULL, &o, sizeof(o), &got);
    CHECK(got == 0 && killed_by(status, SIGSYS));
    nsbox_seccomp_free(f);
}

/* ---- numbers for the report: a "#" note, not a test (it cannot fail) ---- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#define BENCH_CALLS 200000

static void child_bench(int fd, void *arg)
{
    const struct nsbox_seccomp *f = arg;
    struct nsbox_err err;
    double t0, t1, best = 1e9;

    t0 = now_us();
    for (int i = 0; i < BENCH_CALLS; i++)
        syscall(SYS_getppid);
    t1 = now_us();
    sc_put(fd, (long)((t1 - t0) * 1000 / BENCH_CALLS)); /* ns per call */
    if (nsbox_seccomp_install(f, &err) < 0)
        _exit(5);
    t0 = now_us();
    for (int i = 0; i < BENCH_CALLS; i++)
        syscall(SYS_getppid);
    t1 = now_us();
    sc_put(fd, (long)((t1 - t0) * 1000 / BENCH_CALLS));
    /* Filters stack; the kernel caps the chain at 32768 instructions. */
    for (int i = 0; i < 8; i++) {
        t0 = now_us();
        if (nsbox_seccomp_install(f, &err) < 0)
            _exit(6);
        t1 = now_us();
        best = t1 - t0 < best ? t1 - t0 : best;
    }
    sc_put(fd, (long)(best * 1000)); /* ns */
}

/* Prints the compile, install and per-call cost as one "#" line; on an
 * error, a "#" line saying it could not measure.  Not a RUN_TEST: a
 * measurement proves nothing about nsbox, so it is not counted. */
static void microbenchmark(void)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;
    struct outcome o[3] = {{0, 0}, {0, 0}, {0, 0}};
    double t0 = now_us();
    size_t got, runs = 20;

    for (size_t i = 0; i < runs; i++) {
        nsbox_seccomp_free(f);
        f = NULL;
        if (nsbox_seccomp_compile_file(DEFAULT_PROFILE, NULL, &f, &err) < 0) {
            printf("# seccomp: microbenchmark not measured: %s\n", err.msg);
            return;
        }
    }
    double compile_us = (now_us() - t0) / (double)runs;
    if (!sc_exited_ok(sc_run_child(NULL, child_bench, f, o, sizeof(o), &got))) {
        printf("# seccomp: microbenchmark not measured: its child failed\n");
        nsbox_seccomp_free(f);
        return;
    }
    printf("# seccomp: compile default.json %.0f us; install %.1f us; getppid "
           "%ld ns bare, %ld ns filtered\n",
           compile_us, (double)o[2].ret / 1000, o[0].ret, o[1].ret);
    nsbox_seccomp_free(f);
}

void suite_seccomp_default(void)
{
    RUN_TEST(default_profile_blocks_kernel_surface);
    RUN_TEST(default_profile_denials_come_from_the_filter);
    RUN_TEST(capabilities_open_their_syscalls);
    RUN_TEST(ioctl_and_socket_filters_see_low_32_bits);
    RUN_TEST(foreign_abis_kill_the_process);
    microbenchmark();
}
