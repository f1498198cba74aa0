/* Finding, stopping and cleaning up sandboxes by their state directories. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/syscalls.h"
#include "disk_internal.h"
#include "freezer.h"
#include "internal.h"
#include "landlock.h"
#include "sandbox.h"
#include "state.h"

static bool valid_id(const char *id)
{
    return strlen(id) == NSBOX_ID_LEN && strspn(id, "0123456789abcdef") == NSBOX_ID_LEN;
}

/* Reads a sandbox's state; *alive tells whether its init still runs. */
static int load_state(const char *state_root, const char *id, struct nsbox_sandbox *sb, bool *alive,
                      struct nsbox_err *err)
{
    unsigned long long start;
    struct nsbox_err ignored;

    memset(sb, 0, sizeof(*sb));
    sb->ctl = sb->pidfd = sb->disk.fd = -1;
    if (!valid_id(id))
        return nsbox_err_set(err, EINVAL, "invalid sandbox id \"%.40s\"", id);
    snprintf(sb->id, sizeof(sb->id), "%s", id);
    int n = snprintf(sb->state_dir, sizeof(sb->state_dir), "%s/%s", state_root, id);
    if (n < 0 || n >= (int)sizeof(sb->state_dir))
        return nsbox_err_set(err, ENAMETOOLONG, "the store's path %.200s... is too long",
                             state_root);
    _cleanup_close_ int dfd = open(sb->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_set(err, ENOENT, "no sandbox %s", id);
    if (nsbox_state_read(sb, &start, &ignored) < 0) {
        *alive = false;
        return 0; /* died during creation: only state to remove */
    }
    *alive = sb->pid > 0 && start != 0 && nsbox_proc_starttime(sb->pid) == start;
    /* Landlock mode, init gone (killed from inside, or crashed): what it
     * started lives on in its session, whose id is init's pid.  The kernel
     * keeps that number while the session has members, so a process with
     * it as sid is one of them; unless a new leader holds it (pid == sid,
     * alive): then the old session is over and the number reused. */
    if (!*alive && sb->isolation == NSBOX_ISOLATION_LANDLOCK && sb->pid > 0 &&
        nsbox_proc_starttime(sb->pid) == 0)
        nsbox_session_kill(sb->pid, 0);
    if (*alive)
        sb->pidfd = nsbox_pidfd_open(sb->pid, 0); /* -1 before Linux 5.3: pid only */
    else
        sb->pid = 0; /* perhaps another process's by now: never signalled */
    return 0;
}

int nsbox_sandbox_open(const char *state_root, const char *id, struct nsbox_sandbox *out,
                       struct nsbox_err *err)
{
    bool alive;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};

    if (load_state(state_root, id, out, &alive, err) < 0)
        return -1;
    if (!alive)
        return nsbox_err_set(err, ESRCH, "sandbox %s is not running", id);
    _cleanup_close_ int dfd = open(out->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/ctl.sock", dfd);
    out->ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (out->ctl < 0 || connect(out->ctl, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        nsbox_sandbox_close(out);
        return nsbox_err_sys(err, "cannot connect to sandbox %s", id);
    }
    /* A paused sandbox's init cannot hand its disk over until thawed:
     * nsbox_sandbox_open_finish takes it then (runtime/freezer.h). */
    if (out->disk.kind != NSBOX_DISK_TMPFS)
        return 0;
    if (nsbox_freezer_state(out) == 1) {
        out->disk_pending = true;
        return 0;
    }
    if (nsbox_disk_fd_recv(out, err) < 0) {
        nsbox_sandbox_close(out);
        return -1;
    }
    return 0;
}

void nsbox_sandbox_close(struct nsbox_sandbox *sb)
{
    if (sb->ctl >= 0)
        close(sb->ctl);
    if (sb->pidfd >= 0)
        close(sb->pidfd);
    if (sb->disk.fd >= 0)
        close(sb->disk.fd);
    sb->ctl = sb->pidfd = sb->disk.fd = -1;
}

void nsbox_sandbox_trim(struct nsbox_sandbox *sb)
{
    if (sb->disk.fd >= 0)
        close(sb->disk.fd);
    sb->disk.fd = -1;
    if (sb->own_child && sb->pid > 0 && sb->pidfd >= 0) {
        close(sb->pidfd);
        sb->pidfd = -1;
    }
}

/* A dropped pidfd (nsbox_sandbox_trim) back before init is signalled:
 * init is our unreaped child, so sb->pid is still its pid, alive or a
 * zombie.  Without one (pidfd_open failing), the pid-only paths below
 * are as safe for our own child. */
static void pidfd_reopen(struct nsbox_sandbox *sb)
{
    if (sb->pidfd < 0 && sb->own_child && sb->pid > 0)
        sb->pidfd = nsbox_pidfd_open(sb->pid, 0);
}

/* stop_init without a pidfd (kernels before 5.3): the pid was init's when
 * the state was read.  Not our child: wait up to 5 s for it to die; a
 * zombie counts as dead (its reaper may take its time), as for a pidfd. */
static void stop_init_by_pid(pid_t pid)
{
    kill(pid, SIGKILL);
    if (waitpid(pid, NULL, 0) == pid)
        return;
    for (int i = 0; i < 500 && nsbox_proc_starttime(pid) != 0; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
}

/* Landlock mode: no pid namespace ends with init, so its session (its sid
 * is init's pid, held by the kernel while any member lives) is killed
 * first, init included.  Only for an init load_state found alive. */
static void kill_session(const struct nsbox_sandbox *sb)
{
    if (sb->isolation == NSBOX_ISOLATION_LANDLOCK && sb->pid > 0)
        nsbox_session_kill(sb->pid, 0);
}

/* Kills init (the kernel then kills the rest of its pid namespace) and
 * waits until it is gone. */
static void stop_init(struct nsbox_sandbox *sb)
{
    pidfd_reopen(sb);
    kill_session(sb);
    if (sb->pidfd >= 0) {
        nsbox_pidfd_send_signal(sb->pidfd, SIGKILL);
        /* Our child: reap it.  Not ours: the pidfd turns readable on exit. */
        if (waitpid(sb->pid, NULL, 0) < 0) {
            struct pollfd p = {.fd = sb->pidfd, .events = POLLIN};
            poll(&p, 1, 5000);
        }
    } else if (sb->pid > 0) {
        stop_init_by_pid(sb->pid);
    }
}

struct rm_job {
    const char *dir;
};

static int rm_job_run(void *arg, struct nsbox_err *err)
{
    struct rm_job *job = arg;
    return nsbox_rm_rf_at(AT_FDCWD, job->dir, err);
}

/* Removal holds an exclusive lock on the state directory: `run`'s detached
 * remover and the next start's gc would otherwise both remove one sandbox
 * (and the loser report files vanishing under it).  wait: block for a
 * remover at work (rm); else leave the sandbox to it (gc).  Returns 0 with
 * *done set when there is nothing left to do. */
static int lock_for_removal(const struct nsbox_sandbox *sb, bool wait, bool *done,
                            struct nsbox_err *err)
{
    struct stat st;
    *done = false;
    int fd = open(sb->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        *done = true;
        return -1;
    }
    if (fd < 0)
        return nsbox_err_sys(err, "cannot open %s", sb->state_dir);
    if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        /* Busy: someone else's job. */
        *done = e == EWOULDBLOCK;
        return *done ? -1 : nsbox_err_sys(err, "cannot lock %s", sb->state_dir);
    }
    if (fstat(fd, &st) == 0 && st.st_nlink == 0) {
        /* Removed while we waited. */
        close(fd);
        *done = true;
        return -1;
    }
    return fd;
}

static int destroy(struct nsbox_sandbox *sb, bool wait, struct nsbox_err *err)
{
    struct nsbox_err cerr = {0};
    bool done;

    _cleanup_close_ int lock = lock_for_removal(sb, wait, &done, err);
    if (lock < 0) {
        nsbox_sandbox_close(sb);
        return done ? 0 : -1;
    }
    /* A paused sandbox: a frozen v1 task keeps its SIGKILL pending until
     * thawed, so init would never exit.  Kill everything, then thaw. */
    if (nsbox_freezer_state(sb) == 1) {
        nsbox_cgroup_kill(&sb->cgroup);
        nsbox_freezer_thaw(sb, NULL);
    }
    stop_init(sb);
    nsbox_egress_reap(sb->state_dir);
    nsbox_sandbox_close(sb);
    /* As root the idmapped rootfs is mounted on lower/ for a moment during
     * creation; a crash there leaves it behind. */
    static const char *const mounts[] = {"lower", "merged", "ws"};
    for (size_t i = 0; i < 3; i++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", sb->state_dir, mounts[i]);
        umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
    }
    /* And the volumes on vols/N: a rw one left mounted would be emptied. */
    for (size_t i = 0; i < NSBOX_MAX_BINDS; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/vols/%zu", sb->state_dir, i);
        umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
    }
    int r = nsbox_cgroup_destroy(&sb->cgroup, &cerr);
    struct rm_job job = {sb->state_dir};
    /* Rootless, the upper layer holds files of subordinate ids: only the
     * user namespace can remove them. */
    int rr = sb->rootless && sb->idmap.n_uid > 0
                 ? nsbox_userns_run(&sb->idmap, rm_job_run, &job, err)
                 : rm_job_run(&job, err);
    if (rr < 0)
        return nsbox_err_prefix(err, "removing sandbox %s", sb->id);
    nsbox_disk_release(sb);
    if (r < 0) {
        *err = cerr;
        return -1;
    }
    return 0;
}

int nsbox_sandbox_destroy(struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    return destroy(sb, true, err);
}

bool nsbox_sandbox_kill_wait(struct nsbox_sandbox *sb, int timeout_ms)
{
    pidfd_reopen(sb);
    kill_session(sb);
    if (sb->pidfd < 0) {
        if (sb->pid > 0)
            kill(sb->pid, SIGKILL);
        return false;
    }
    nsbox_pidfd_send_signal(sb->pidfd, SIGKILL);
    /* A dying init first kills and reaps every other process of its pid
     * namespace (zap_pid_ns_processes); its pidfd turns readable only
     * after that. */
    struct pollfd p = {.fd = sb->pidfd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) == 1;
}

int nsbox_sandbox_destroy_detached(struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    /* Everything in the sandbox dies now, whatever happens next. */
    pidfd_reopen(sb);
    kill_session(sb);
    if (sb->pidfd >= 0)
        nsbox_pidfd_send_signal(sb->pidfd, SIGKILL);
    else if (sb->pid > 0)
        kill(sb->pid, SIGKILL);
    if (sb->ctl >= 0)
        close(sb->ctl);
    sb->ctl = -1;
    /* One child in a session of its own does the removal, holding none of
     * the caller's stdio (a `$(nsbox run ...)` must not wait for it).  Not
     * waited for: when the caller exits, it is reparented and reaped. */
    pid_t child = fork();
    if (child < 0)
        return nsbox_sandbox_destroy(sb, err);
    if (child == 0) {
        setsid();
        int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nul >= 0)
            dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
        /* Nothing of the caller's but init's pidfd: above all no lock it
         * holds (a workspace's, boxes/), which would stay held until the
         * removal is done, and the next sandbox on that workspace would
         * find it in use.  Everything in the sandbox has its SIGKILL. */
        if (sb->pidfd > 3)
            close_range(3, (unsigned)sb->pidfd - 1, 0);
        close_range(sb->pidfd >= 3 ? (unsigned)sb->pidfd + 1 : 3, ~0u, 0);
        sb->disk.fd = -1;
        struct nsbox_err ignored;
        _exit(nsbox_sandbox_destroy(sb, &ignored) < 0);
    }
    nsbox_sandbox_close(sb);
    return 0;
}

char **nsbox_sandbox_list(const char *state_root, struct nsbox_err *err)
{
    size_t n = 0, cap = 16;
    char **v = calloc(cap + 1, sizeof(char *));
    if (v == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    _cleanup_closedir_ DIR *d = opendir(state_root);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (!valid_id(de->d_name))
            continue;
        if (n == cap) {
            char **nv = realloc(v, (2 * cap + 1) * sizeof(char *));
            if (nv == NULL)
                break;
            v = nv, cap *= 2;
        }
        v[n] = strdup(de->d_name);
        if (v[n] != NULL)
            v[++n] = NULL;
    }
    v[n] = NULL;
    return v;
}

int nsbox_sandbox_gc(const char *state_root, const struct nsbox_idmap *rootless_map,
                     struct nsbox_err *err)
{
    _cleanup_strv_ char **ids = nsbox_sandbox_list(state_root, err);
    struct nsbox_err ignored;
    int removed = 0, failed = 0;

    if (ids == NULL)
        return -1;
    for (char **id = ids; *id != NULL; id++) {
        struct nsbox_sandbox sb;
        bool alive;
        if (load_state(state_root, *id, &sb, &alive, &ignored) < 0 || alive) {
            nsbox_sandbox_close(&sb);
            continue;
        }
        /* A state file from before it held the map. */
        if (rootless_map != NULL && sb.idmap.n_uid == 0)
            sb.idmap = *rootless_map;
        /* One that cannot go (say, a mount still busy) keeps none of the
         * others; the first failure is the one reported. */
        if (destroy(&sb, false, failed ? &ignored : err) < 0)
            failed++;
        else
            removed++;
    }
    return failed ? -1 : removed;
}
