/* Unit tests for the kernel boundary: the syscall wrappers (common/
 * syscalls.h), the cleanup attributes for children and JSON, and the
 * cgroup dispatch for kinds without a hierarchy to touch. */
#include "check.h"
#include "suites.h"

#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/syscalls.h"
#include "../../runtime/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t sleeper(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        pause();
        _exit(0);
    }
    return pid;
}

/* The child is dead and reaped when the scope ends: no zombie left. */
static void cleanup_pid_kills_and_reaps(void)
{
    pid_t seen;
    {
        _cleanup_pid_ pid_t pid = sleeper();
        CHECK(pid > 0);
        seen = pid;
    }
    errno = 0;
    CHECK(waitpid(seen, NULL, WNOHANG) < 0 && errno == ECHILD);
}

/* TAKE_PID hands the child on: still alive after the scope. */
static void take_pid_keeps_the_child(void)
{
    pid_t kept;
    {
        _cleanup_pid_ pid_t pid = sleeper();
        kept = TAKE_PID(pid);
        CHECK(pid == -1);
    }
    CHECK(kept > 0 && waitpid(kept, NULL, WNOHANG) == 0);
    kill(kept, SIGKILL);
    waitpid(kept, NULL, 0);
}

static void cleanup_json_drops_one_reference(void)
{
    json_t *obj = json_object();
    json_incref(obj);
    {
        _cleanup_json_ json_t *ref = obj;
        CHECK(ref->refcount == 2);
    }
    CHECK(obj->refcount == 1);
    json_decref(obj);
}

/* pidfd_open + pidfd_send_signal reach the kernel with the right
 * arguments (this kernel has both); the pidfd turns readable on exit. */
static void pidfd_signals_the_child(void)
{
    int status = 0;
    pid_t pid = sleeper();
    _cleanup_close_ int pidfd = nsbox_pidfd_open(pid, 0);
    if (pidfd < 0 && errno == ENOSYS) {
        SKIP("no pidfd_open in this kernel (ENOSYS)");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return;
    }
    CHECK(pidfd >= 0);
    CHECK(nsbox_pidfd_send_signal(pidfd, SIGKILL) == 0);
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    CHECK(poll(&p, 1, 5000) == 1);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* nsbox_clone behaves like fork: 0 in the child, the pid in the parent,
 * and flags carry the exit signal. */
static void clone_is_a_fork(void)
{
    int status = 0;
    pid_t pid = nsbox_clone(SIGCHLD);
    if (pid == 0)
        _exit(42);
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42);
}

/* The none backend, and a kind no backend knows (a corrupt state file):
 * every call succeeds and touches nothing. */
/* A rename anywhere on the system during a RESOLVE_IN_ROOT walk through
 * ".." makes the kernel answer EAGAIN (openat2(2)); nsbox_openat2 retries.
 * Without the retry, layers failed to unpack and file tools failed on a
 * busy host (seen as a flaky layer/symlink_parent_is_confined). */
static atomic_bool renaming;

static void *rename_loop(void *dir)
{
    char a[96], b[96];
    snprintf(a, sizeof(a), "%s/a", (char *)dir);
    snprintf(b, sizeof(b), "%s/b", (char *)dir);
    while (atomic_load(&renaming)) {
        rename(a, b);
        rename(b, a);
    }
    return NULL;
}

static void openat2_in_root_survives_renames(void)
{
    char dir[] = "/tmp/nsbox-unit-rename-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    char path[96];
    snprintf(path, sizeof(path), "%s/a", dir);
    close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    snprintf(path, sizeof(path), "%s/d", dir);
    mkdir(path, 0700);
    pthread_t t;
    atomic_store(&renaming, true);
    CHECK(pthread_create(&t, NULL, rename_loop, dir) == 0);
    int failed = 0, eagain = 0;
    for (int i = 0; i < 20000; i++) {
        int fd = nsbox_openat2(root, "d/../d/..", O_PATH | O_CLOEXEC, 0, RESOLVE_IN_ROOT);
        if (fd < 0) {
            failed++;
            eagain += errno == EAGAIN;
        } else {
            close(fd);
        }
    }
    atomic_store(&renaming, false);
    pthread_join(t, NULL);
    if (failed)
        printf("# openat2: %d of 20000 walks failed (%d with EAGAIN)\n", failed, eagain);
    CHECK(failed == 0);
    snprintf(path, sizeof(path), "%s/a", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/b", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/d", dir);
    rmdir(path);
    rmdir(dir);
    close(root);
}

static void cgroup_none_does_nothing(void)
{
    struct nsbox_err err = {0};
    struct nsbox_cgroup cg;
    struct nsbox_cgroup_limits limits = {.memory_bytes = 1 << 20, .pids = 8};
    uint64_t oom = 7, peak = 7;

    CHECK(nsbox_cgroup_create(NSBOX_CGROUP_NONE, "/nonexistent", "x", &limits, &cg, &err) == 0);
    CHECK(cg.kind == NSBOX_CGROUP_NONE && cg.v2[0] == '\0' && cg.mem[0] == '\0');
    CHECK(nsbox_cgroup_add(&cg, getpid(), &err) == 0);
    nsbox_cgroup_stats(&cg, &oom, &peak);
    CHECK(oom == 0 && peak == 0);
    CHECK(nsbox_cgroup_enter_self(&cg, &err) < 0 && err.code == ENOTSUP);
    CHECK(nsbox_cgroup_destroy(&cg, &err) == 0);
    CHECK_STR(nsbox_cgroup_kind_name(cg.kind), "none");

    memset(&cg, 0, sizeof(cg));
    cg.kind = (enum nsbox_cgroup_kind)7;
    oom = 7;
    nsbox_cgroup_stats(&cg, &oom, NULL);
    CHECK(oom == 0);
    CHECK(nsbox_cgroup_destroy(&cg, &err) == 0);
}

void suite_kernel(void)
{
    RUN_TEST(cleanup_pid_kills_and_reaps);
    RUN_TEST(take_pid_keeps_the_child);
    RUN_TEST(cleanup_json_drops_one_reference);
    RUN_TEST(pidfd_signals_the_child);
    RUN_TEST(clone_is_a_fork);
    RUN_TEST(cgroup_none_does_nothing);
    RUN_TEST(openat2_in_root_survives_renames);
}
