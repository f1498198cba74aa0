/* The sanitizer build's reporting from inside a sandbox (sanitizer.h).
 * Empty outside a sanitizer build: nothing here reaches the production
 * binary.  clang 14's runtime is the one this was written and tested
 * against (Makefile, `make asan`). */
#include "sanitizer.h"

#ifdef NSBOX_SANITIZER

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>

#include "../common/err.h"
#include "../common/syscalls.h"
#include "caps.h"
#include "files_wire.h"

/* Exit status 99 for every sanitizer, also where ASAN_OPTIONS and
 * UBSAN_OPTIONS never arrive (rootless helpers run under `env -i`): the
 * runtime's own default, 1, is nsbox's "nsbox failed", and a check that
 * expects that failure passed on a sanitizer abort.  The runtime reads
 * these before the environment's options, which still win.  LeakSanitizer
 * inside ASan takes ASan's exitcode. */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);
const char *__asan_default_options(void)
{
    return "exitcode=99";
}
const char *__ubsan_default_options(void)
{
    return "exitcode=99:halt_on_error=1:print_stacktrace=1";
}

/* Whether LeakSanitizer can run in the sandbox that is being created: set
 * on the host side, read in the child (its copy).  Not when this process
 * has other threads: in a fork of a multithreaded process, clang 14's LSan
 * reports "Running thread N was not suspended. False leaks are possible."
 * and takes what only the other threads' stacks held for leaks. */
static bool lsan_ok;
/* In the child: where reports go, and whether this process is a file
 * builtin and may be made dumpable (nsbox_sanitizer_caps_clear). */
static int report_fd = -1;
static bool in_builtin, builtin_guarded, builtin_kill;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int collector_fd = -1, stderr_fd = -1;

static int threads_now(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *t = strstr(buf, "\nThreads:");
    return t != NULL ? atoi(t + 9) : -1;
}

/* REPORT_DIR/report, the prefix of every report file, into out; false
 * when there is no such directory. */
static bool report_prefix(char *out, size_t size)
{
    const char *dir = getenv("NSBOX_SANITIZER_DIR");
    if (dir != NULL && dir[0] == '/') {
        snprintf(out, size, "%s/report", dir);
        return true;
    }
    const char *opts = getenv("ASAN_OPTIONS");
    const char *lp = opts != NULL ? strstr(opts, "log_path=") : NULL;
    if (lp == NULL || (lp != opts && lp[-1] != ':' && lp[-1] != ' ' && lp[-1] != ','))
        return false;
    lp += 9;
    size_t len = strcspn(lp, ": ,");
    if (len == 0 || len >= size || lp[0] != '/')
        return false;
    snprintf(out, size, "%.*s", (int)len, lp);
    return true;
}

/* The collector's command line (ps, pgrep -f) and name: not nsbox's, which
 * tests look for; the argument area is rewritten in place. */
static void rename_collector(void)
{
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
    if (fd >= 0)
        close(fd);
    static const char title[] = "nsbox-sanitizer-collector";
    if (n >= (ssize_t)sizeof(title)) {
        memset(program_invocation_name, 0, (size_t)n);
        memcpy(program_invocation_name, title, sizeof(title));
    }
    prctl(PR_SET_NAME, "nsbox-sancoll", 0, 0, 0);
}

/* The collector: copies what the sandboxes write into the pipe to
 * PATH, made at the first byte (no report, no file), until every writer
 * is gone.  A session of its own (a ^C or a group kill of the caller does
 * not lose a report still to come), nothing of nsbox's open. */
static _Noreturn void collect(int in, const char *path)
{
    char buf[65536];
    int out = -1;

    setsid();
    if (chdir("/") < 0)
        _exit(1);
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0)
        dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
    if (in > 3)
        close_range(3, (unsigned)in - 1, 0);
    close_range((unsigned)in + 1, ~0u, 0);
    signal(SIGPIPE, SIG_IGN);
    rename_collector();
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(0);
        if (out < 0)
            out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
        for (ssize_t off = 0; out >= 0 && off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += w;
        }
    }
}

/* An fd of this process's, CLOEXEC and above 2 (fd is closed). */
static int above_2(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

static int start_collector(const char *prefix)
{
    char path[4096];
    int p[2];

    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    /* This process's pid and a counter: unique.  Formatted before the
     * fork: in a child of a multithreaded process only async-signal-safe
     * calls are safe (another thread may have held a lock). */
    static unsigned serial;
    snprintf(path, sizeof(path), "%s.sandbox.%d.%u", prefix, (int)getpid(), serial++);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]), close(p[1]);
        return -1;
    }
    if (pid == 0)
        collect(p[0], path);
    close(p[0]);
    return above_2(p[1]);
}

int nsbox_sanitizer_report_fd(bool detached)
{
    char prefix[4000];
    int fd;

    lsan_ok = threads_now() == 1;
    pthread_mutex_lock(&lock);
    if (report_prefix(prefix, sizeof(prefix))) {
        if (collector_fd < 0)
            collector_fd = start_collector(prefix);
        fd = collector_fd;
    } else {
        /* A sandbox that outlives this process would hold a pipe on
         * stderr open: `$(nsbox create ...)` would wait for the sandbox. */
        struct stat st;
        bool lasting = detached && fstat(2, &st) == 0 &&
                       (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
        if (stderr_fd < 0 && !lasting)
            stderr_fd = above_2(fcntl(2, F_DUPFD_CLOEXEC, 3));
        fd = lasting ? -1 : stderr_fd;
    }
    pthread_mutex_unlock(&lock);
    return fd;
}

/* No symbolizer inside a sandbox: the runtime would start the path it
 * found at start-up (/usr/bin/llvm-symbolizer-14), resolved in the
 * sandbox's root, from init, and parse what it says.  Reports show
 * module+offset instead (llvm-symbolizer --obj=nsbox turns them into
 * lines; tests/integration/sanitizers.sh does).  clang 14's runtime:
 * symbolize is the first of its common flags, and the symbolizer is made
 * again, without tools, once its singleton is gone. */
#if defined(__clang__) && __clang_major__ == 14
extern bool sanitizer_common_flags __asm__("_ZN11__sanitizer21common_flags_dont_useE")
    __attribute__((weak));
extern void *sanitizer_symbolizer __asm__("_ZN11__sanitizer10Symbolizer11symbolizer_E")
    __attribute__((weak));
static void no_symbolizer(void)
{
    if (&sanitizer_common_flags != NULL && &sanitizer_symbolizer != NULL) {
        sanitizer_common_flags = false;
        sanitizer_symbolizer = NULL;
    }
}
#else
static void no_symbolizer(void)
{
}
#endif

void nsbox_sanitizer_report_to(int fd)
{
    /* The memory map, while /proc/self/maps is still the host's view of
     * this process (the runtime reads it for reports). */
    __sanitizer_sandbox_on_notify(NULL);
    no_symbolizer();
    report_fd = fd;
    if (fd >= 0)
        __sanitizer_set_report_fd((void *)(intptr_t)fd);
}

void nsbox_sanitizer_forked(void)
{
    /* The runtime ties the fd to the pid that set it: a child would
     * reopen log_path, which does not resolve in the sandbox. */
    if (report_fd >= 0)
        __sanitizer_set_report_fd((void *)(intptr_t)report_fd);
}

void nsbox_sanitizer_close_from_3(void)
{
    if (report_fd > 3)
        close_range(3, (unsigned)report_fd - 1, 0);
    close_range(report_fd >= 3 ? (unsigned)report_fd + 1 : 3, ~0u, 0);
}

static bool is_builtin(char **argv)
{
    return argv[0] != NULL && strcmp(argv[0], NSBOX_FILE_OP_MARKER) == 0;
}

void nsbox_sanitizer_builtin_keepcaps(char **argv)
{
    if (lsan_ok && is_builtin(argv))
        prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
}

/* The kernel lets a process ptrace a dumpable one of the same uid only if
 * its permitted set holds all of the target's (commoncap), or it has
 * CAP_SYS_PTRACE over it.  Every process of the sandbox has none, so a
 * builtin holding one, never effective, stays out of their reach while
 * LeakSanitizer's tracer (a clone of it, with the same set) attaches.
 * init itself holds four.  In landlock mode there is nothing to keep:
 * each command is in a Landlock domain of its own, and no process may
 * ptrace one outside its own domain or those nested in it. */
int nsbox_sanitizer_caps_clear(char **argv, bool landlock, struct nsbox_err *err)
{
    if (!lsan_ok || !is_builtin(argv))
        return nsbox_caps_clear(err);
    in_builtin = true;
    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    if (landlock) {
        builtin_guarded = true;
        return nsbox_caps_clear(err);
    }
    /* nsbox_caps_clear, but CAP_KILL stays permitted: kept through the
     * user switch (PR_SET_KEEPCAPS), and a permitted set can only shrink. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return nsbox_err_sys(err, "cannot clear ambient capabilities");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return nsbox_err_sys(err, "cannot set no_new_privs");
    cap_t c = cap_init();
    cap_value_t kill = CAP_KILL;
    int r = c == NULL ? -1 : cap_set_flag(c, CAP_PERMITTED, 1, &kill, CAP_SET);
    if (r == 0)
        r = cap_set_proc(c);
    cap_free(c);
    if (r == 0) {
        builtin_guarded = builtin_kill = true;
        return 0;
    }
    return nsbox_caps_clear(err); /* unguarded: no LeakSanitizer then */
}

static int clone_probe(void *arg)
{
    (void)arg;
    return 0;
}

/* LeakSanitizer's tracer is a clone sharing this process's memory
 * (CLONE_VM).  init made a time namespace for its children (namespaces_spawn.c),
 * and until 5.17 or so the kernel refuses such a clone while the two
 * differ (EINVAL: "Failed spawning a tracer thread", seen with Debian
 * 12's 6.1 in the VM); newer kernels keep the clone in the parent's. */
static bool tracer_can_start(void)
{
    char now[64], children[64];
    ssize_t a = readlink("/proc/self/ns/time", now, sizeof(now));
    ssize_t b = readlink("/proc/self/ns/time_for_children", children, sizeof(children));
    if (a < 0 || b < 0 || (a == b && memcmp(now, children, (size_t)a) == 0))
        return true;
    static char stack[16384] __attribute__((aligned(16)));
    pid_t pid = clone(clone_probe, stack + sizeof(stack), CLONE_VM | SIGCHLD, NULL);
    if (pid < 0)
        return false;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return true;
}

/* LeakSanitizer, where it can run: its tracer attaches with ptrace, which
 * the seccomp profile must allow and which a process that is not dumpable
 * refuses (init and its children are not); it maps memory, which a finite
 * RLIMIT_AS (best-effort limits) refuses an ASan process; its clone must
 * be allowed (tracer_can_start). */
static void leak_check(bool fatal)
{
    struct rlimit rl;

    if (!lsan_ok || (in_builtin && !builtin_guarded))
        return;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        return;
    if (!tracer_can_start())
        return;
    /* pid 0 is no process: ESRCH once seccomp let the call through. */
    if (nsbox_sys_ptrace(PTRACE_ATTACH, 0) == 0 || errno != ESRCH)
        return;
    /* The tracer, a clone with this process's credentials, reads
     * /proc/PID/task (hidepid=invisible: a ptrace check with its
     * effective set against the target's permitted one). */
    if (builtin_kill) {
        cap_t c = cap_init();
        cap_value_t kill = CAP_KILL;
        bool raised = c != NULL && cap_set_flag(c, CAP_PERMITTED, 1, &kill, CAP_SET) == 0 &&
                      cap_set_flag(c, CAP_EFFECTIVE, 1, &kill, CAP_SET) == 0 &&
                      cap_set_proc(c) == 0;
        cap_free(c);
        if (!raised)
            return;
    }
    int was = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (fatal)
        __lsan_do_leak_check(); /* on a leak: the report, then _exit(99) */
    else
        __lsan_do_recoverable_leak_check();
    prctl(PR_SET_DUMPABLE, was > 0 ? was : 0, 0, 0, 0);
}

void nsbox_sanitizer_exit_check(void)
{
    leak_check(true);
}

/* LeakSanitizer's tracer is a clone of init with init's uid, and no pid 1:
 * a process of the sandbox running as that uid could stop it (init then
 * waits for it for good: sandbox/init_not_wedged_by_sigstop) or kill it
 * (LeakSanitizer's fatal error).  So init checks only when it is alone. */
void nsbox_sanitizer_init_exit(bool landlock, bool others_gone)
{
    if (!landlock && !others_gone) {
        /* What the kernel does once init is gone, a moment earlier. */
        kill(-1, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
            ;
        others_gone = true;
    }
    if (others_gone)
        leak_check(true);
}

void nsbox_sanitizer_init_idle(bool landlock)
{
    /* From pid 1, kill(-1, 0) reaches every other process of the namespace
     * (init holds CAP_KILL there): ESRCH when there is none.  In landlock
     * mode it would reach the user's processes outside: no check. */
    if (!landlock && kill(-1, 0) < 0 && errno == ESRCH)
        leak_check(false);
}

#endif
