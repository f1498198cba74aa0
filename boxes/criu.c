/* Whether CRIU can checkpoint a sandbox's processes here (checkpoint.h:
 * box_criu_unavailable), for sandbox_checkpoint, sandbox_fork and
 * `nsbox doctor`.
 *
 * Contract: `criu check` runs once per process (pthread_once) with a
 * 20 s bound; its first "Error" line is the reason, word for word (on
 * kernel 6.18 with Debian's CRIU 3.17.1: "vdso: Unexpected rt vDSO area
 * bounds").  Rootless, `criu check --unprivileged` is asked instead, and
 * an unknown option or a missing capability is said as such.  Even where
 * `criu check` passes (kernel 6.1), nsbox does not dump and restore its
 * sandboxes through CRIU (docs/fork.md, "CRIU": CRIU 3.17 cannot dump a
 * sandbox's nested time namespace): the reason then says that, so no result
 * ever claims memory that was not kept. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"

extern char **environ;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char reason[768];

static const char *const criu_paths[] = {"/usr/sbin/criu", "/usr/local/sbin/criu", "/usr/bin/criu",
                                         NULL};

/* Runs criu with args, its stdout and stderr into out (NUL-ended);
 * returns its exit status, or -1. */
static int run_criu(const char *criu, char *const args[], char *out, size_t size)
{
    int p[2];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int r = posix_spawn(&pid, criu, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (r != 0) {
        close(p[0]);
        return -1;
    }
    size_t len = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd pfd = {p[0], POLLIN, 0};
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = 20000 -
                    ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        char buf[1024];
        ssize_t n = read(p[0], buf, sizeof(buf));
        if (n <= 0)
            break;
        size_t k = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
        memcpy(out + len, buf, k);
        len += k;
    }
    out[len] = '\0';
    close(p[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first line of out holding "Error" (or the first line), trimmed. */
static void first_error(const char *out, char *line, size_t size)
{
    const char *e = strstr(out, "Error");
    const char *start = e ? e : out;
    /* "Error (criu/vdso.c:381): vdso: ..." is said without its location. */
    const char *colon = e ? strstr(start, "): ") : NULL;
    const char *nl = strchr(start, '\n');
    if (colon != NULL && (nl == NULL || colon < nl))
        start = colon + 3;
    size_t n = nl ? (size_t)(nl - start) : strlen(start);
    snprintf(line, size, "%.*s", (int)n, start);
}

static void probe(void)
{
    char out[8192], line[256];
    struct utsname u;
    const char *criu = NULL;
    uname(&u);
    for (const char *const *p = criu_paths; *p; p++)
        if (access(*p, X_OK) == 0) {
            criu = *p;
            break;
        }
    if (criu == NULL) {
        snprintf(reason, sizeof(reason),
                 "CRIU is not installed (apt-get install criu): only the filesystem is kept");
        return;
    }
    bool root = geteuid() == 0;
    char *check[] = {(char *)"criu", (char *)"check", root ? NULL : (char *)"--unprivileged", NULL};
    int st = run_criu(criu, check, out, sizeof(out));
    first_error(out, line, sizeof(line));
    if (!root && strstr(out, "unrecognized option") != NULL) {
        snprintf(reason, sizeof(reason),
                 "rootless: %s has no --unprivileged mode (`criu check --unprivileged`: %s); a "
                 "user without root needs a CRIU that has it (3.19 does) with "
                 "CAP_CHECKPOINT_RESTORE and CAP_SYS_PTRACE on the binary (setcap "
                 "cap_checkpoint_restore,cap_sys_ptrace+eip %s) and kernel 5.9 or later "
                 "(this is %s)",
                 criu, line, criu, u.release);
        return;
    }
    if (st != 0) {
        snprintf(reason, sizeof(reason),
                 "CRIU cannot run on this kernel (%s): `criu check` fails with \"%s\"%s", u.release,
                 line,
                 strstr(out, "vDSO") ? " (CRIU 3.17 predates this kernel's vDSO layout; a newer "
                                       "CRIU or an older kernel, e.g. 6.1, is needed)"
                                     : "");
        return;
    }
    char version[64] = "";
    char *vargs[] = {(char *)"criu", (char *)"--version", NULL};
    if (run_criu(criu, vargs, out, sizeof(out)) == 0) {
        const char *v = strstr(out, "Version: ");
        if (v != NULL)
            snprintf(version, sizeof(version), " %.*s", (int)strcspn(v + 9, "\n"), v + 9);
    }
    snprintf(reason, sizeof(reason),
             "`criu check` passes on this kernel (%s), but nsbox does not dump and restore a "
             "sandbox's processes through CRIU%s: a sandbox's init gives its children a time "
             "namespace of their own, and CRIU 3.17's `criu dump` of a sandbox fails with "
             "\"Can't dump nested time namespace\" (docs/fork.md, \"CRIU\"): only the "
             "filesystem is kept",
             u.release, version);
}

const char *box_criu_unavailable(void)
{
    pthread_once(&once, probe);
    return reason[0] ? reason : NULL;
}
