/* Landlock, the filters of landlock mode and its kill unit (landlock.h).
 *
 * The Landlock calls are raw syscalls here, not in common/syscalls.h, so
 * that this mode stays one file to read: glibc 2.36 wraps none of them,
 * and the constants of ABIs newer than the build's headers (TRUNCATE 3,
 * network 4, IOCTL_DEV 5, scopes 6) are spelled out below.  Each right is
 * only asked for when the running kernel's ABI knows it: a ruleset that
 * names an unknown right is refused with EINVAL (Documentation/userspace-
 * api/landlock.rst, "Backward and forward compatibility"). */
#include "landlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/syscalls.h"
#include "internal.h"

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

/* Filesystem rights (ABI 1 unless said). */
#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ABI1_ALL ((1ull << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ull << 13)          /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)       /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)      /* ABI 5 */
/* Network rights (ABI 4) and scopes (ABI 6). */
#define LL_NET_BIND_TCP (1ull << 0)
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0)
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4; older kernels accept it zero */
    uint64_t scoped;             /* ABI 6; likewise */
};

struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int nsbox_isolation_parse(const char *s, enum nsbox_isolation *out, struct nsbox_err *err)
{
    if (s != NULL && strcmp(s, "namespaces") == 0)
        *out = NSBOX_ISOLATION_NAMESPACES;
    else if (s != NULL && strcmp(s, "landlock") == 0)
        *out = NSBOX_ISOLATION_LANDLOCK;
    else
        return nsbox_err_set(err, EINVAL, "unknown isolation \"%.40s\": namespaces or landlock",
                             s ? s : "");
    return 0;
}

const char *nsbox_isolation_name(enum nsbox_isolation mode)
{
    return mode == NSBOX_ISOLATION_LANDLOCK ? "landlock" : "namespaces";
}

int nsbox_landlock_abi(const char **why)
{
    long abi = nsbox_landlock_create_ruleset(NULL, 0, LL_CREATE_RULESET_VERSION);
    if (abi > 0)
        return (int)abi;
    if (why != NULL)
        *why = errno == ENOSYS       ? "this kernel has no Landlock (Linux 5.13+ built with "
                                       "CONFIG_SECURITY_LANDLOCK)"
               : errno == EOPNOTSUPP ? "Landlock is built but not enabled (add landlock to the "
                                       "kernel's lsm= boot parameter)"
                                     : "the Landlock system calls are refused here (a seccomp "
                                       "filter around nsbox?)";
    return 0;
}

size_t nsbox_isolation_missing(enum nsbox_isolation mode, int abi, const char **out, size_t max)
{
    static const char *const always[] = {
        "user namespace (commands run as the caller's own uid)",
        "pid namespace (the host's processes are visible in /proc)",
        "mount namespace (no image: the host's /usr, /etc ... read-only)",
        "network namespace (socket() is refused instead: no network at all)",
        "ipc and uts namespaces",
        "cgroup limits (rlimits only: memory, processes; no cpu limit)",
        "overlay (writes go to the sandbox's own directory)",
        "disk quota (RLIMIT_FSIZE per file only)",
    };
    size_t n = 0;
    if (mode != NSBOX_ISOLATION_LANDLOCK)
        return 0;
    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]) && n < max; i++)
        out[n++] = always[i];
    if (abi < 3 && n < max)
        out[n++] = "Landlock truncate control (ABI < 3: truncate(2) is not confined)";
    if (abi < 5 && n < max)
        out[n++] = "Landlock ioctl control on devices (ABI < 5)";
    if (abi < 6 && n < max)
        out[n++] = "signal scoping (Landlock ABI < 6: it can signal the user's other processes)";
    return n;
}

const char *nsbox_landlock_protections(int abi)
{
    if (abi >= 6)
        return "filesystem (read, write, execute, refer, truncate, device ioctl), TCP bind and "
               "connect, abstract unix sockets and signals scoped to the sandbox";
    if (abi == 5)
        return "filesystem (read, write, execute, refer, truncate, device ioctl), TCP bind and "
               "connect";
    if (abi == 4)
        return "filesystem (read, write, execute, refer, truncate), TCP bind and connect";
    if (abi == 3)
        return "filesystem (read, write, execute, refer, truncate)";
    if (abi == 2)
        return "filesystem (read, write, execute, refer)";
    return abi == 1 ? "filesystem (read, write, execute; no cross-directory rename or link)"
                    : "none";
}

static uint64_t fs_rights(int abi)
{
    uint64_t r = LL_FS_ABI1_ALL;
    if (abi >= 2)
        r |= LL_FS_REFER;
    if (abi >= 3)
        r |= LL_FS_TRUNCATE;
    if (abi >= 5)
        r |= LL_FS_IOCTL_DEV;
    return r;
}

/* The rights a regular file (not a directory) may be given. */
static uint64_t file_only(uint64_t r)
{
    return r &
           (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV);
}

/* One path-beneath rule.  A path the host lacks (/lib32, /opt) is no
 * error: there is nothing there to grant.  Opened with O_PATH following
 * symlinks, so /bin -> usr/bin grants /usr/bin. */
static int allow_fd(int ruleset, int fd, const char *path, uint64_t rights, struct nsbox_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return nsbox_err_sys(err, "landlock: cannot stat %s", path);
    struct ll_path_beneath pb = {.allowed_access = S_ISDIR(st.st_mode) ? rights : file_only(rights),
                                 .parent_fd = fd};
    if (nsbox_landlock_add_rule(ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
        return nsbox_err_sys(err, "landlock: cannot add a rule for %s", path);
    return 0;
}

static int allow(int ruleset, const char *path, uint64_t rights, struct nsbox_err *err)
{
    _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
        return 0;
    if (fd < 0)
        return nsbox_err_sys(err, "landlock: cannot open %s", path);
    return allow_fd(ruleset, fd, path, rights, err);
}

static int add_rules(int ruleset, int own_fd, uint64_t all, struct nsbox_err *err)
{
    /* The host's userland, read and execute: what a command needs to run
     * at all.  /etc holds no secret a non-root user may read (shadow is
     * 0640 root:shadow; DAC still applies under Landlock). */
    static const char *const system[] = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                                         "/lib64", "/libx32", "/etc",  "/opt"};
    /* Plain device nodes, read and write; no tty: a sandbox has none. */
    static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                          "/dev/urandom"};
    const uint64_t rx = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;

    for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++)
        if (allow(ruleset, system[i], rx, err) < 0)
            return -1;
    for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
        if (allow(ruleset, devices[i], LL_FS_READ_FILE | LL_FS_WRITE_FILE, err) < 0)
            return -1;
    /* /proc read-only: /proc/self is what programs use; other processes'
     * memory, environment and fds stay closed (Landlock denies ptrace
     * access to a process outside the domain). */
    if (allow(ruleset, "/proc", LL_FS_READ_FILE | LL_FS_READ_DIR, err) < 0)
        return -1;
    return allow_fd(ruleset, own_fd, "the sandbox's own directory", all, err);
}

int nsbox_landlock_restrict(int own_fd, int abi, struct nsbox_err *err)
{
    if (abi < 1)
        return nsbox_err_set(err, ENOTSUP,
                             "Landlock is not available: landlock mode refuses "
                             "to start without it");
    struct ll_ruleset_attr attr = {.handled_access_fs = fs_rights(abi)};
    if (abi >= 4)
        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP; /* no rule: none */
    if (abi >= 6)
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    _cleanup_close_ int ruleset = nsbox_landlock_create_ruleset(&attr, sizeof(attr), 0);
    if (ruleset < 0)
        return nsbox_err_sys(err, "landlock: cannot create a ruleset (ABI %d)", abi);
    if (add_rules(ruleset, own_fd, attr.handled_access_fs, err) < 0)
        return -1;
    if (nsbox_landlock_restrict_self(ruleset, 0) < 0)
        return nsbox_err_sys(err, "landlock: cannot restrict the sandbox");
    return 0;
}

#define ARCH_NR AUDIT_ARCH_X86_64
#if !defined(__x86_64__)
#error "landlock.c: the hand-written filters check the x86_64 audit arch"
#endif

static int install(struct sock_filter *insns, unsigned short len, struct nsbox_err *err)
{
    struct sock_fprog prog = {.len = len, .filter = insns};
    if (nsbox_seccomp_set_filter(&prog) < 0)
        return nsbox_err_sys(err, "cannot install landlock mode's seccomp filter");
    return 0;
}

/* Load the arch (any other ABI is killed: x32 numbers, int 0x80), then the
 * number. */
#define FILTER_HEAD                                                                                \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),                       \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH_NR, 1, 0),                                        \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),                                       \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),                     \
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),                                    \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

int nsbox_landlock_seccomp_nonet(struct nsbox_err *err)
{
    struct sock_filter f[] = {
        FILTER_HEAD,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 2, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    return install(f, sizeof(f) / sizeof(f[0]), err);
}

int nsbox_landlock_seccomp_pin(struct nsbox_err *err)
{
    struct sock_filter f[] = {
        FILTER_HEAD,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setsid, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setpgid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    return install(f, sizeof(f) / sizeof(f[0]), err);
}

/* The session and start time of /proc/PID, or false when it is gone or a
 * zombie (nothing left to kill). */
static bool proc_session(int dfd, const char *pid, pid_t *sid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "%s/stat", pid);
    _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'), state;
    int s;
    if (p == NULL || sscanf(p + 2,
                            "%c %*d %*d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                            "%*d %*d %llu",
                            &state, &s, start) != 3)
        return false;
    *sid = s;
    return state != 'Z' && state != 'X';
}

static size_t kill_pass(pid_t sid, pid_t except, bool *found)
{
    _cleanup_closedir_ DIR *d = opendir("/proc");
    struct dirent *de;
    size_t sent = 0;
    pid_t s;
    unsigned long long start;

    *found = false;
    while (d != NULL && (de = readdir(d)) != NULL) {
        pid_t pid = (pid_t)atoi(de->d_name);
        if (pid <= 0 || pid == except || !proc_session(dirfd(d), de->d_name, &s, &start) ||
            s != sid)
            continue;
        *found = true;
        if (kill(pid, SIGKILL) == 0)
            sent++;
    }
    return sent;
}

size_t nsbox_session_kill(pid_t sid, pid_t except)
{
    size_t sent = 0;
    bool found = true;
    /* setsid() is refused in the sandbox, so nothing started there leaves
     * the session; a process forked during a pass is found by the next. */
    for (int pass = 0; found && pass < 200; pass++) {
        sent += kill_pass(sid, except, &found);
        if (found) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return sent;
}
