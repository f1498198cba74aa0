/* runtime/seccomp.c: Docker-format profiles and small filters: parse errors
 * and limits, the forms moby accepts, the default profile compiling, the
 * install's preconditions, and small profiles' real behaviour (errno rules,
 * ENOSYS for newer syscalls, includes/excludes).  Behavioural tests fork a
 * child that sets no_new_privs, installs a filter and reports each probe's
 * errno over a pipe: the errno is the oracle (the "deny errno" = blocked by
 * seccomp).  The default profile's behaviour is in test_seccomp_default.c;
 * the helpers both use are declared in seccomp_lib.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/seccomp.h"
#include "check.h"
#include "seccomp_lib.h"

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

struct nsbox_seccomp *sc_compile_str(const char *json, const char *const *caps)
{
    struct nsbox_seccomp *f = NULL;
    struct nsbox_err err;

    if (nsbox_seccomp_compile(json, strlen(json), caps, &f, &err) < 0)
        printf("# seccomp: unexpected error: %s\n", err.msg);
    return f;
}

/* Forks a child that sets no_new_privs, installs f (unless NULL) and runs
 * fn, which writes its findings to fd.  Returns the child's wait status
 * and reads at most cap bytes of findings into buf (*got bytes). */
int sc_run_child(const struct nsbox_seccomp *f, child_fn fn, void *arg, void *buf, size_t cap,
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

void sc_put(int fd, long ret)
{
    struct outcome o;
    memset(&o, 0, sizeof(o)); /* no uninitialised padding on the pipe */
    o.ret = ret;
    o.err = ret < 0 ? errno : 0;
    if (write(fd, &o, sizeof(o)) != sizeof(o))
        _exit(97);
}

bool sc_exited_ok(int status)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
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
    struct nsbox_seccomp *f = sc_compile_str(j, NULL);

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
    sc_put(fd, nsbox_seccomp_install(NULL, &err));
}

static void install_needs_no_new_privs(void)
{
    struct nsbox_seccomp *f = sc_compile_str(
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}", NULL);
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
    CHECK(sc_exited_ok(status) && n > 0);
    CHECK(strstr(msg, "no_new_privs is not set") != NULL);
    /* And a NULL filter is an error, not a no-op. */
    struct outcome o = {0, 0};
    size_t got;
    sc_run_child(NULL, child_install_null, NULL, &o, sizeof(o), &got);
    CHECK(got == sizeof(o) && o.ret == -1);
    nsbox_seccomp_free(f);
}

/* ---- behaviour of small profiles ---- */

static void child_ids(int fd, void *arg)
{
    (void)arg;
    sc_put(fd, syscall(SYS_getpid));
    sc_put(fd, syscall(SYS_getppid));
    sc_put(fd, syscall(SYS_getuid));
    sc_put(fd, syscall(SYS_getgid));
    sc_put(fd, syscall(SYS_getegid));
    sc_put(fd, syscall(SYS_geteuid));
    sc_put(fd, syscall(SYS_gettid));
    sc_put(fd, syscall(SYS_getpgrp));
    sc_put(fd, syscall(SYS_getpgid, 12345));
    sc_put(fd, syscall(SYS_getpgid, 0));
    sc_put(fd, syscall(SYS_getsid, 111));
    sc_put(fd, syscall(SYS_getsid, 222));
    sc_put(fd, syscall(SYS_getsid, 0));
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
    struct nsbox_seccomp *f = sc_compile_str(json, caps);
    size_t got = 0;

    memset(o, 0, sizeof(struct outcome) * ID_N);
    CHECK(f != NULL);
    if (f == NULL)
        return;
    int status = sc_run_child(f, child_ids, NULL, o, sizeof(struct outcome) * ID_N, &got);
    CHECK(sc_exited_ok(status) && got == sizeof(struct outcome) * ID_N);
    nsbox_seccomp_free(f);
}

bool sc_denied(const struct outcome *o, int e)
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
    CHECK(sc_denied(&o[ID_PPID], 99));
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
    sc_put(fd, syscall(SYS_getppid));
    sc_put(fd, syscall(SYS_getuid));
    sc_put(fd, syscall(SYS_getcpu, NULL, NULL, NULL)); /* 309 */
    sc_put(fd, syscall(SYS_getrandom, NULL, 0, 0));    /* 318 */
    sc_put(fd, syscall(SYS_memfd_create, "x", 0));     /* 319 */
    sc_put(fd, syscall(452 /* fchmodat2, Linux 6.6 */, -1, "", 0, 0));
    sc_put(fd, syscall(1000));
}

static void newer_syscalls_get_enosys(void)
{
    struct nsbox_seccomp *f = sc_compile_str(
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
    CHECK(sc_exited_ok(sc_run_child(f, child_newer, NULL, o, sizeof(o), &got)) && got == sizeof(o));
    CHECK(worked(&o[0]));
    CHECK(sc_denied(&o[1], 77) && sc_denied(&o[2], 77)); /* left out, older */
    CHECK(sc_denied(&o[3], 55));                         /* the highest named */
    CHECK(sc_denied(&o[4], ENOSYS) && sc_denied(&o[5], ENOSYS) && sc_denied(&o[6], ENOSYS));
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
    CHECK(worked(&o[ID_PPID]));        /* minKernel 99.0: not this kernel */
    CHECK(sc_denied(&o[ID_UID], 92));  /* minKernel 3.0: applies */
    CHECK(worked(&o[ID_GID]));         /* needs CAP_X and CAP_Y */
    CHECK(sc_denied(&o[ID_EGID], 94)); /* excluded only with CAP_Z or CAP_X */
    CHECK(worked(&o[ID_EUID]));        /* not for amd64 */
    CHECK(worked(&o[ID_TID]));         /* excluded on amd64 */
    CHECK(worked(&o[ID_PGRP]));        /* excluded from 3.0 on */
    CHECK(sc_denied(&o[ID_PGID_12345], 81) && worked(&o[ID_PGID_0]));
    /* Two conditions on one argument: ORed, as runc does. */
    CHECK(sc_denied(&o[ID_SID_111], 82) && sc_denied(&o[ID_SID_222], 82));
    CHECK(worked(&o[ID_SID_0]));
    run_ids(COND_PROFILE, caps_x, o);
    CHECK(worked(&o[ID_GID]) && worked(&o[ID_EGID]));
    run_ids(COND_PROFILE, caps_xy, o);
    CHECK(sc_denied(&o[ID_GID], 93) && worked(&o[ID_EGID]));
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
}
