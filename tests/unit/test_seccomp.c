/* runtime/seccomp.c: Docker-format profiles, parse errors, and the compiled
 * filters' real behaviour.  Behavioural tests fork a child that sets
 * no_new_privs, installs a filter and reports each probe's errno over a
 * pipe: the errno is the oracle (the "deny errno" = blocked by seccomp). */
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/seccomp.h"
#include "check.h"

#define DEFAULT_PROFILE "seccomp-profiles/default.json"
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

static const char *const ALL_CAPS[] = {"CAP_CHOWN",
                                       "CAP_DAC_OVERRIDE",
                                       "CAP_DAC_READ_SEARCH",
                                       "CAP_FOWNER",
                                       "CAP_FSETID",
                                       "CAP_KILL",
                                       "CAP_SETGID",
                                       "CAP_SETUID",
                                       "CAP_SETPCAP",
                                       "CAP_LINUX_IMMUTABLE",
                                       "CAP_NET_BIND_SERVICE",
                                       "CAP_NET_BROADCAST",
                                       "CAP_NET_ADMIN",
                                       "CAP_NET_RAW",
                                       "CAP_IPC_LOCK",
                                       "CAP_IPC_OWNER",
                                       "CAP_SYS_MODULE",
                                       "CAP_SYS_RAWIO",
                                       "CAP_SYS_CHROOT",
                                       "CAP_SYS_PTRACE",
                                       "CAP_SYS_PACCT",
                                       "CAP_SYS_ADMIN",
                                       "CAP_SYS_BOOT",
                                       "CAP_SYS_NICE",
                                       "CAP_SYS_RESOURCE",
                                       "CAP_SYS_TIME",
                                       "CAP_SYS_TTY_CONFIG",
                                       "CAP_MKNOD",
                                       "CAP_LEASE",
                                       "CAP_AUDIT_WRITE",
                                       "CAP_AUDIT_CONTROL",
                                       "CAP_SETFCAP",
                                       "CAP_MAC_OVERRIDE",
                                       "CAP_MAC_ADMIN",
                                       "CAP_SYSLOG",
                                       "CAP_WAKE_ALARM",
                                       "CAP_BLOCK_SUSPEND",
                                       "CAP_AUDIT_READ",
                                       "CAP_PERFMON",
                                       "CAP_BPF",
                                       "CAP_CHECKPOINT_RESTORE",
                                       NULL};

/* ---- helpers ---- */

static struct nsbox_seccomp *compile_str(const char *json, const char *const *caps)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;

    if (nsbox_seccomp_compile(json, strlen(json), caps, &f, &err) < 0)
        printf("# seccomp: unexpected error: %s\n", err.msg);
    return f;
}

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
    f = text ? compile_str(text, caps) : NULL;
    free(text);
    return f;
}

struct outcome {
    long ret;
    int err;
};

typedef void (*child_fn)(int fd, void *arg);

/* Forks a child that sets no_new_privs, installs f (unless NULL) and runs
 * fn, which writes its findings to fd.  Returns the child's wait status
 * and reads at most cap bytes of findings into buf (*got bytes). */
static int run_child(const struct nsbox_seccomp *f, child_fn fn, void *arg, void *buf, size_t cap,
                     size_t *got)
{
    int p[2], status = -1;
    pid_t pid;

    *got = 0;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        struct nsbox_err err;
        close(p[0]);
        alarm(30);
        /* SIGSYS from the bad-arch action would leave core files around. */
        setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            _exit(98);
        if (f != NULL && nsbox_seccomp_install(f, &err) < 0)
            _exit(99);
        fn(p[1], arg);
        _exit(0);
    }
    close(p[1]);
    for (ssize_t n;
         pid > 0 && *got < cap && (n = read(p[0], (char *)buf + *got, cap - *got)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        *got += (size_t)n;
    }
    close(p[0]);
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    return status;
}

static void put(int fd, long ret)
{
    struct outcome o;
    memset(&o, 0, sizeof(o)); /* no uninitialised padding on the pipe */
    o.ret = ret;
    o.err = ret < 0 ? errno : 0;
    if (write(fd, &o, sizeof(o)) != sizeof(o))
        _exit(97);
}

static bool exited_ok(int status)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool killed_by(int status, int sig)
{
    return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* ---- parse errors ---- */

struct bad_case {
    const char *json;
    const char *expect; /* a substring of the error message */
};

#define P(s) "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[" s "]}"

static void rejects_malformed_profiles(void)
{
    static const struct bad_case cases[] = {
        {"", "invalid JSON at line"},
        {"{\"defaultAction\":", "invalid JSON"},
        {"[]", "not a JSON object"},
        {"{}", "\"defaultAction\" is missing"},
        {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultAction\":\"SCMP_ACT_ALLOW\"}",
         "duplicate"},
        {"{\"defaultAction\":\"SCMP_ACT_FOO\"}", "unknown action \"SCMP_ACT_FOO\""},
        {"{\"defaultAction\":1}", "\"defaultAction\" is not a string"},
        {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":1}",
         "\"defaultErrnoRet\" is only valid with SCMP_ACT_ERRNO"},
        {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":-1}",
         "\"defaultErrnoRet\" must be an integer from 0 to 4095"},
        {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":{}}", "\"syscalls\" must be an array"},
        {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"
         "\"archMap\":[{\"architecture\":\"SCMP_ARCH_X86_64\"}]}",
         "use one"},
        {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"archMap\":[{\"subArchitectures\":[]}]}",
         "archMap[0]: \"architecture\" must be a string"},
        {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":\"SCMP_ARCH_X86_64\"}",
         "\"architectures\" must be an array"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"},7"), "syscalls[1]: not an object"},
        {P("{\"action\":\"SCMP_ACT_ALLOW\"}"),
         "syscalls[0] (\"?\"): neither \"names\" nor \"name\" is given"},
        {P("{\"names\":[],\"action\":\"SCMP_ACT_ALLOW\"}"), "\"names\" is empty"},
        {P("{\"names\":\"read\",\"action\":\"SCMP_ACT_ALLOW\"}"),
         "\"names\" must be an array of strings"},
        {P("{\"names\":[\"read\",2],\"action\":\"SCMP_ACT_ALLOW\"}"),
         "syscalls[0] (\"read\"): \"names\"[1] must be a non-empty string"},
        {P("{\"names\":[\"read\"],\"name\":\"write\",\"action\":\"SCMP_ACT_ALLOW\"}"),
         "both \"name\" and \"names\""},
        {P("{\"names\":[\"read\"]}"), "syscalls[0] (\"read\"): \"action\" is missing"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"},"
           "{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_DENY\"}"),
         "syscalls[1] (\"mount\"): unknown action \"SCMP_ACT_DENY\""},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_NOTIFY\"}"),
         "SCMP_ACT_NOTIFY is not supported"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"errnoRet\":1}"),
         "\"errnoRet\" is only valid"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":5000}"),
         "\"errnoRet\" must be an integer from 0 to 4095"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":{}}"),
         "\"args\" must be an array"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":6,"
           "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "syscalls[0] (\"read\"): args[0]: \"index\" must be an integer from 0 to 5"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":\"0\","
           "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "\"index\" must be an integer"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{"
           "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "args[0]: \"index\" is missing"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
           "\"value\":1,\"op\":\"SCMP_CMP_SORTA\"}]}"),
         "args[0]: unknown operator \"SCMP_CMP_SORTA\""},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
           "\"value\":1}]}"),
         "\"op\" is missing"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
           "\"value\":-1,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "\"value\" must be an integer"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
           "\"value\":1.5,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "\"value\" must be an integer"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
           "\"value\":18446744073709551615,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "too big integer"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[7]}"),
         "args[0]: not an object"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":[]}"),
         "\"includes\" must be an object"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"caps\":\"CAP_X\"}}"),
         "\"includes.caps\" must be an array"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"arches\":[\"\"]}}"),
         "\"excludes.arches\"[0] must be a non-empty string"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":4.8}}"),
         "\"includes.minKernel\" must be a string"},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"4\"}}"),
         "invalid kernel version \"4\""},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"minKernel\":\"4.8.1\"}}"),
         "invalid kernel version \"4.8.1\""},
        {P("{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"4.256\"}}"),
         "invalid kernel version"},
        /* Rules libseccomp would drop without a word. */
        {P("{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ALLOW\"},"
           "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":13,"
           "\"args\":[{\"index\":1,\"value\":21522,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "syscalls[1] (\"ioctl\"): this conditional rule can never apply: "
         "syscalls[0] already gives"},
        {P("{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ALLOW\"},"
           "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ERRNO\","
           "\"args\":[{\"index\":1,\"value\":21522,\"op\":\"SCMP_CMP_EQ\"}]}"),
         "syscalls[1] (\"ioctl\"): this conditional rule can never apply"},
        {P("{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\"},"
           "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":5}"),
         "syscalls[1] (\"getpid\"): this unconditional rule can never apply"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct nsbox_seccomp *f = (struct nsbox_seccomp *)1;
        struct nsbox_err err = {0};
        int rc = nsbox_seccomp_compile(cases[i].json, strlen(cases[i].json), NULL, &f, &err);
        if (rc == 0 || f != NULL || strstr(err.msg, cases[i].expect) == NULL ||
            strncmp(err.msg, "seccomp profile: ", 17) != 0)
            printf("# case %zu: rc %d, error \"%s\", expected \"%s\"\n", i, rc, err.msg,
                   cases[i].expect);
        CHECK(rc < 0 && f == NULL);
        CHECK(strstr(err.msg, cases[i].expect) != NULL);
        nsbox_seccomp_free(rc == 0 ? f : NULL);
    }
}

static void rejects_oversized_profiles(void)
{
    struct nsbox_seccomp *f;
    struct nsbox_err err;
    size_t big = NSBOX_SECCOMP_MAX_PROFILE_BYTES + 1;
    char *text = malloc(big);

    CHECK(text != NULL);
    if (text == NULL)
        return;
    memset(text, ' ', big);
    CHECK(nsbox_seccomp_compile(text, big, NULL, &f, &err) < 0);
    CHECK(err.code == EFBIG && strstr(err.msg, "too large") != NULL);
    /* One entry past the cap, each entry as small as JSON allows. */
    size_t n = NSBOX_SECCOMP_MAX_ENTRIES + 1, len = 0;
    len += (size_t)sprintf(text, "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, "%s{}", i ? "," : "");
    len += (size_t)sprintf(text + len, "]}");
    CHECK(nsbox_seccomp_compile(text, len, NULL, &f, &err) < 0);
    CHECK(strstr(err.msg, "has 4097 entries (limit 4096)") != NULL);
    free(text);
}

static void reports_file_errors(void)
{
    struct nsbox_seccomp *f;
    struct nsbox_err err;

    CHECK(nsbox_seccomp_compile_file("seccomp-profiles/nope.json", NULL, &f, &err) < 0);
    CHECK(err.code == ENOENT && f == NULL);
    CHECK(strstr(err.msg, "seccomp profile seccomp-profiles/nope.json") != NULL);
    CHECK(nsbox_seccomp_compile_file("seccomp-profiles", NULL, &f, &err) < 0);
    CHECK(strstr(err.msg, "not a regular file") != NULL);
}

static void accepts_docker_forms(void)
{
    /* Unknown syscalls are skipped, "name" works, unknown keys ("comment")
     * are ignored, rules equal to defaultAction are skipped, and several
     * conditions on one argument compile (as runc: one rule each). */
    const char *j =
        "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
        "\"comment\":\"x\",\"flags\":[],\"architectures\":[\"SCMP_ARCH_X86_64\","
        "\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"],\"syscalls\":["
        "{\"names\":[\"no_such_syscall\",\"read\",\"chown32\"],\"action\":\"SCMP_ACT_ALLOW\","
        "\"comment\":\"c\"},"
        "{\"name\":\"write\",\"action\":\"SCMP_ACT_ALLOW\",\"args\":null,\"includes\":{},"
        "\"excludes\":null},"
        "{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\"},"
        "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":["
        "{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"},"
        "{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"},"
        "{\"index\":1,\"value\":3,\"valueTwo\":1,\"op\":\"SCMP_CMP_MASKED_EQ\"}]}]}";
    struct nsbox_seccomp *f = compile_str(j, NULL);

    CHECK(f != NULL);
    CHECK(nsbox_seccomp_instructions(f) > 0);
    nsbox_seccomp_free(f);
}

static void compiles_default_profile(void)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;

    CHECK(nsbox_seccomp_compile_file(DEFAULT_PROFILE, NULL, &f, &err) == 0);
    CHECK(f != NULL && nsbox_seccomp_instructions(f) > 100 &&
          nsbox_seccomp_instructions(f) <= 4096);
    printf("# seccomp: %s compiles to %zu BPF instructions\n", DEFAULT_PROFILE,
           nsbox_seccomp_instructions(f));
    nsbox_seccomp_free(f);
    /* Every capability at once enables every includes.caps rule; none of
     * them may shadow another. */
    f = NULL;
    CHECK(nsbox_seccomp_compile_file(DEFAULT_PROFILE, ALL_CAPS, &f, &err) == 0);
    nsbox_seccomp_free(f);
}

/* ---- install ---- */

static void child_install_null(int fd, void *arg)
{
    struct nsbox_err err = {0};
    (void)arg;
    put(fd, nsbox_seccomp_install(NULL, &err));
}

static void install_needs_no_new_privs(void)
{
    struct nsbox_seccomp *f = compile_str("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}",
                                          NULL);
    int p[2];
    char msg[NSBOX_ERR_MSG_MAX] = "";

    CHECK(f != NULL && pipe2(p, O_CLOEXEC) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* no_new_privs is not set here: the install must refuse, and say
         * why, before asking the kernel. */
        struct nsbox_err err = {0};
        close(p[0]);
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 0)
            _exit(2);
        if (nsbox_seccomp_install(f, &err) == 0)
            _exit(3);
        if (write(p[1], err.msg, strlen(err.msg) + 1) < 0)
            _exit(4);
        _exit(0);
    }
    close(p[1]);
    ssize_t n = read(p[0], msg, sizeof(msg) - 1);
    close(p[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK(exited_ok(status) && n > 0);
    CHECK(strstr(msg, "no_new_privs is not set") != NULL);
    /* And a NULL filter is an error, not a no-op. */
    struct outcome o = {0, 0};
    size_t got;
    run_child(NULL, child_install_null, NULL, &o, sizeof(o), &got);
    CHECK(got == sizeof(o) && o.ret == -1);
    nsbox_seccomp_free(f);
}

/* ---- behaviour of small profiles ---- */

static void child_ids(int fd, void *arg)
{
    (void)arg;
    put(fd, syscall(SYS_getpid));
    put(fd, syscall(SYS_getppid));
    put(fd, syscall(SYS_getuid));
    put(fd, syscall(SYS_getgid));
    put(fd, syscall(SYS_getegid));
    put(fd, syscall(SYS_geteuid));
    put(fd, syscall(SYS_gettid));
    put(fd, syscall(SYS_getpgrp));
    put(fd, syscall(SYS_getpgid, 12345));
    put(fd, syscall(SYS_getpgid, 0));
    put(fd, syscall(SYS_getsid, 111));
    put(fd, syscall(SYS_getsid, 222));
    put(fd, syscall(SYS_getsid, 0));
}

enum {
    ID_PID,
    ID_PPID,
    ID_UID,
    ID_GID,
    ID_EGID,
    ID_EUID,
    ID_TID,
    ID_PGRP,
    ID_PGID_12345,
    ID_PGID_0,
    ID_SID_111,
    ID_SID_222,
    ID_SID_0,
    ID_N
};

static void run_ids(const char *json, const char *const *caps, struct outcome o[ID_N])
{
    struct nsbox_seccomp *f = compile_str(json, caps);
    size_t got = 0;

    memset(o, 0, sizeof(struct outcome) * ID_N);
    CHECK(f != NULL);
    if (f == NULL)
        return;
    int status = run_child(f, child_ids, NULL, o, sizeof(struct outcome) * ID_N, &got);
    CHECK(exited_ok(status) && got == sizeof(struct outcome) * ID_N);
    nsbox_seccomp_free(f);
}

static bool denied(const struct outcome *o, int e)
{
    return o->ret == -1 && o->err == e;
}

static bool worked(const struct outcome *o)
{
    return o->ret >= 0;
}

static void allow_default_with_one_errno_rule(void)
{
    struct outcome o[ID_N];

    run_ids("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":"
            "[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":99}]}",
            NULL, o);
    CHECK(denied(&o[ID_PPID], 99));
    /* getsid (124) is numbered above getppid (110): with a permissive
     * default, a syscall newer than the profile is allowed, not ENOSYS. */
    CHECK(worked(&o[ID_PID]) && worked(&o[ID_UID]) && worked(&o[ID_SID_0]));
}

/* A syscall numbered above every one the profile names is newer than the
 * profile: ENOSYS, so that libc falls back to an older call, where one the
 * profile merely leaves out keeps the default errno (runc's rule).  The
 * profile's highest name is getrandom (318). */
static void child_newer(int fd, void *arg)
{
    (void)arg;
    put(fd, syscall(SYS_getppid));
    put(fd, syscall(SYS_getuid));
    put(fd, syscall(SYS_getcpu, NULL, NULL, NULL)); /* 309 */
    put(fd, syscall(SYS_getrandom, NULL, 0, 0));    /* 318 */
    put(fd, syscall(SYS_memfd_create, "x", 0));     /* 319 */
    put(fd, syscall(452 /* fchmodat2, Linux 6.6 */, -1, "", 0, 0));
    put(fd, syscall(1000));
}

static void newer_syscalls_get_enosys(void)
{
    struct nsbox_seccomp *f = compile_str(
        "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":77,\"syscalls\":["
        /* what the child needs, sanitizer runtimes included */
        "{\"names\":[\"write\",\"exit_group\",\"exit\",\"getppid\",\"mmap\",\"munmap\","
        "\"mprotect\",\"madvise\",\"brk\",\"rt_sigaction\",\"rt_sigprocmask\","
        "\"sigaltstack\",\"gettid\",\"getpid\",\"futex\",\"sched_yield\",\"prctl\"],"
        "\"action\":\"SCMP_ACT_ALLOW\"},"
        "{\"names\":[\"getrandom\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":55}]}",
        NULL);
    struct outcome o[7];
    size_t got = 0;

    CHECK(f != NULL);
    if (f == NULL)
        return;
    CHECK(exited_ok(run_child(f, child_newer, NULL, o, sizeof(o), &got)) && got == sizeof(o));
    CHECK(worked(&o[0]));
    CHECK(denied(&o[1], 77) && denied(&o[2], 77)); /* left out, older */
    CHECK(denied(&o[3], 55));                      /* the highest named */
    CHECK(denied(&o[4], ENOSYS) && denied(&o[5], ENOSYS) && denied(&o[6], ENOSYS));
    nsbox_seccomp_free(f);
}

/* includes/excludes as moby evaluates them, against uname and caps. */
static const char *const COND_PROFILE =
    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":91,"
    "\"includes\":{\"minKernel\":\"99.0\"}},"
    "{\"names\":[\"getuid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":92,"
    "\"includes\":{\"minKernel\":\"3.0\"}},"
    "{\"names\":[\"getgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":93,"
    "\"includes\":{\"caps\":[\"CAP_X\",\"CAP_Y\"]}},"
    "{\"names\":[\"getegid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":94,"
    "\"excludes\":{\"caps\":[\"CAP_Z\",\"CAP_X\"]}},"
    "{\"names\":[\"geteuid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":95,"
    "\"includes\":{\"arches\":[\"arm64\",\"x86\",\"x32\"]}},"
    "{\"names\":[\"gettid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":96,"
    "\"excludes\":{\"arches\":[\"amd64\"]}},"
    "{\"names\":[\"getpgrp\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":97,"
    "\"excludes\":{\"minKernel\":\"3.0\"}},"
    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":81,"
    "\"args\":[{\"index\":0,\"value\":12345,\"op\":\"SCMP_CMP_EQ\"}]},"
    "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":82,"
    "\"args\":[{\"index\":0,\"value\":111,\"op\":\"SCMP_CMP_EQ\"},"
    "{\"index\":0,\"value\":222,\"op\":\"SCMP_CMP_EQ\"}]}]}";

static void includes_and_excludes(void)
{
    static const char *const caps_x[] = {"CAP_X", NULL};
    static const char *const caps_xy[] = {"CAP_Y", "CAP_X", NULL};
    struct outcome o[ID_N];

    run_ids(COND_PROFILE, NULL, o);
    CHECK(worked(&o[ID_PPID]));     /* minKernel 99.0: not this kernel */
    CHECK(denied(&o[ID_UID], 92));  /* minKernel 3.0: applies */
    CHECK(worked(&o[ID_GID]));      /* needs CAP_X and CAP_Y */
    CHECK(denied(&o[ID_EGID], 94)); /* excluded only with CAP_Z or CAP_X */
    CHECK(worked(&o[ID_EUID]));     /* not for amd64 */
    CHECK(worked(&o[ID_TID]));      /* excluded on amd64 */
    CHECK(worked(&o[ID_PGRP]));     /* excluded from 3.0 on */
    CHECK(denied(&o[ID_PGID_12345], 81) && worked(&o[ID_PGID_0]));
    /* Two conditions on one argument: ORed, as runc does. */
    CHECK(denied(&o[ID_SID_111], 82) && denied(&o[ID_SID_222], 82));
    CHECK(worked(&o[ID_SID_0]));
    run_ids(COND_PROFILE, caps_x, o);
    CHECK(worked(&o[ID_GID]) && worked(&o[ID_EGID]));
    run_ids(COND_PROFILE, caps_xy, o);
    CHECK(denied(&o[ID_GID], 93) && worked(&o[ID_EGID]));
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
        put(fd, PROBES[i].run());
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
    int status = run_child(f, child_probes, NULL, o, sizeof(o), &got);
    CHECK(exited_ok(status) && got == sizeof(o));
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
    put(fd, p_unshare_bad());
    put(fd, p_mount());
    put(fd, p_clone3());
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
    CHECK(exited_ok(run_child(f, child_admin, NULL, o, sizeof(o), &got)));
    CHECK(got == sizeof(o));
    CHECK(denied(&o[0], EINVAL));
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
    put(fd, wrong);
    put(fd, first);
}

static void ioctl_and_socket_filters_see_low_32_bits(void)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;
    struct outcome o[2] = {{0, 0}, {0, 0}};
    size_t got = 0;

    CHECK(nsbox_seccomp_compile_file(DEFAULT_PROFILE, NULL, &f, &err) == 0);
    CHECK(exited_ok(run_child(f, child_sweep, NULL, o, sizeof(o), &got)));
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
    put(fd, int80_getpid() == getpid() ? 1 : 0);
}

static void child_x32(int fd, void *arg)
{
    (void)arg;
    /* x32 getpid: the x86_64 number with __X32_SYSCALL_BIT. */
    put(fd, syscall(0x40000000L | SYS_getpid));
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
    put(fd, 1); /* only reached if just the thread died */
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
    status = run_child(NULL, child_int80, NULL, &o, sizeof(o), &got);
    bool ia32 = exited_ok(status) && got == sizeof(o) && o.ret == 1;
    if (!ia32)
        printf("# seccomp: no ia32 syscall ABI on this kernel\n");
    status = run_child(f, child_int80, NULL, &o, sizeof(o), &got);
    CHECK(got == 0 && killed_by(status, ia32 ? SIGSYS : SIGSEGV));
    /* x32 numbers hit the bad-arch action whether or not the kernel has
     * CONFIG_X86_X32_ABI: the filter runs before the syscall table. */
    status = run_child(f, child_x32, NULL, &o, sizeof(o), &got);
    CHECK(got == 0 && killed_by(status, SIGSYS));
    /* KILL_PROCESS, not KILL_THREAD: the other threads die too. */
    status = run_child(f, child_x32_in_thread, NULL, &o, sizeof(o), &got);
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
    put(fd, (long)((t1 - t0) * 1000 / BENCH_CALLS)); /* ns per call */
    if (nsbox_seccomp_install(f, &err) < 0)
        _exit(5);
    t0 = now_us();
    for (int i = 0; i < BENCH_CALLS; i++)
        syscall(SYS_getppid);
    t1 = now_us();
    put(fd, (long)((t1 - t0) * 1000 / BENCH_CALLS));
    /* Filters stack; the kernel caps the chain at 32768 instructions. */
    for (int i = 0; i < 8; i++) {
        t0 = now_us();
        if (nsbox_seccomp_install(f, &err) < 0)
            _exit(6);
        t1 = now_us();
        best = t1 - t0 < best ? t1 - t0 : best;
    }
    put(fd, (long)(best * 1000)); /* ns */
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
    if (!exited_ok(run_child(NULL, child_bench, f, o, sizeof(o), &got))) {
        printf("# seccomp: microbenchmark not measured: its child failed\n");
        nsbox_seccomp_free(f);
        return;
    }
    printf("# seccomp: compile default.json %.0f us; install %.1f us; getppid "
           "%ld ns bare, %ld ns filtered\n",
           compile_us, (double)o[2].ret / 1000, o[0].ret, o[1].ret);
    nsbox_seccomp_free(f);
}

void suite_seccomp(void)
{
    RUN_TEST(rejects_malformed_profiles);
    RUN_TEST(rejects_oversized_profiles);
    RUN_TEST(reports_file_errors);
    RUN_TEST(accepts_docker_forms);
    RUN_TEST(compiles_default_profile);
    RUN_TEST(install_needs_no_new_privs);
    RUN_TEST(allow_default_with_one_errno_rule);
    RUN_TEST(newer_syscalls_get_enosys);
    RUN_TEST(includes_and_excludes);
    RUN_TEST(default_profile_blocks_kernel_surface);
    RUN_TEST(default_profile_denials_come_from_the_filter);
    RUN_TEST(capabilities_open_their_syscalls);
    RUN_TEST(ioctl_and_socket_filters_see_low_32_bits);
    RUN_TEST(foreign_abis_kill_the_process);
    microbenchmark();
}
