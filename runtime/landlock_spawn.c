/* Starting a landlock-mode sandbox: the landlock backend of
 * nsbox_sandbox_create (spawn.h; create.c picks it; landlock.h,
 * docs/isolation.md).
 *
 * The same init as a namespaced sandbox (init.c), the same control socket
 * and state directory, but no clone flag, no mount and no id map:
 *   parent: state dir; STATE/upper is the sandbox's own directory (its
 *           HOME, TMPDIR and working directory; du and changes read it
 *           as they read an overlay's upper layer)
 *   parent: fork (glibc's: the MCP server is multithreaded)
 *   child:  setsid: a session of its own, the sandbox's kill unit
 *   child:  rlimits; as root, uid and gid 65534; not dumpable; every
 *           capability gone and no_new_privs
 *   child:  Landlock; the no-socket filter; the sandbox's seccomp profile
 *   child:  every other fd closed; "ready" over the error pipe; init loop
 * No PR_SET_PDEATHSIG: it fires when the forking *thread* exits, and the
 * MCP server creates sandboxes from threads that come and go.  As in
 * namespaces mode, init leaves (killing its session) when the owner's end
 * of the control socket closes. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/syscalls.h"
#include "caps.h"
#include "init.h"
#include "internal.h"
#include "landlock.h"
#include "sandbox.h"
#include "sanitizer.h"
#include "seccomp.h"
#include "spawn.h"
#include "state.h"

/* Root's landlock sandboxes run as nobody: uid 0 without a capability
 * could still signal (before Landlock ABI 6) and own every root process
 * and file the rules let it reach. */
#define NOBODY 65534u

struct ll_spawn {
    const struct nsbox_sandbox_config *cfg;
    struct nsbox_sandbox *sb;
    struct spawn_fds fds;     /* the error pipe, control socket, state lock (spawn.h) */
    int own_fd;               /* the child's: STATE/upper, kept by init */
    struct nsbox_oom_adj oom; /* the child's: init's oom_score_adj (oom_adj.h) */
    /* The sanitizer build: where init reports (sanitizer.h). */
    NSBOX_SAN(int san_fd;)
    bool root;
};

static void set_rlimit(int resource, uint64_t value)
{
    struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
    setrlimit(resource, &rl);
}

/* Tasks (threads count) of uid now: RLIMIT_NPROC counts them per user
 * across the host, so the sandbox's bound is this plus its pids limit. */
static uint64_t user_tasks(uid_t uid)
{
    _cleanup_closedir_ DIR *d = opendir("/proc");
    struct dirent *de;
    uint64_t n = 0;
    while (d != NULL && (de = readdir(d)) != NULL) {
        struct stat st;
        char path[300], buf[1024];
        if (atoi(de->d_name) <= 0 || fstatat(dirfd(d), de->d_name, &st, 0) < 0 || st.st_uid != uid)
            continue;
        snprintf(path, sizeof(path), "%s/stat", de->d_name);
        _cleanup_close_ int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
        ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        long threads = 1;
        char *p = len > 0 ? (buf[len] = '\0', strrchr(buf, ')')) : NULL;
        if (p != NULL)
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld",
                   &threads);
        n += threads > 0 ? (uint64_t)threads : 1;
    }
    return n;
}

static void limits(const struct nsbox_sandbox_config *cfg, uid_t uid)
{
    set_rlimit(RLIMIT_CORE, 0);
    if (cfg->rlimit_nofile)
        set_rlimit(RLIMIT_NOFILE, cfg->rlimit_nofile);
    uint64_t fsize = cfg->rlimit_fsize;
    if (cfg->disk_bytes && (fsize == 0 || cfg->disk_bytes < fsize))
        fsize = cfg->disk_bytes;
    if (fsize)
        set_rlimit(RLIMIT_FSIZE, fsize);
    /* RLIMIT_AS is the commands' (init.c sets it after the fork): init's
     * own allocations are not the sandbox's payload. */
    if (cfg->limits.pids)
        set_rlimit(RLIMIT_NPROC, user_tasks(uid) + cfg->limits.pids);
}

static int child_setup(struct ll_spawn *s, struct nsbox_err *err)
{
    const struct nsbox_sandbox_config *cfg = s->cfg;

    if (setsid() < 0)
        return nsbox_err_sys(err, "setsid");
    /* Opened and entered with nsbox's own credentials: as root, nobody
     * may not traverse a store that is 0700 (its HOME path then does not
     * resolve, but its working directory and the rule hold). */
    int own = s->own_fd = open(s->sb->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (own < 0 || fchdir(own) < 0)
        return nsbox_err_sys(err, "cannot enter %s", s->sb->workdir);
    if (s->root && (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0))
        return nsbox_err_sys(err, "cannot switch to uid %u", NOBODY);
    limits(cfg, getuid());
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return nsbox_err_sys(err, "cannot make init undumpable");
    if (nsbox_caps_clear(err) < 0 || nsbox_landlock_restrict(own, s->sb->landlock_abi, err) < 0 ||
        nsbox_landlock_seccomp_nonet(err) < 0)
        return -1;
    return nsbox_seccomp_install(cfg->seccomp, err);
}

static _Noreturn void child_main(struct ll_spawn *s)
{
    struct nsbox_err err = {0};

    NSBOX_SAN(nsbox_sanitizer_report_to(s->san_fd);)
    nsbox_spawn_close_fd(&s->fds.err_r);
    /* First, with nsbox's own credentials: any change of them makes the
     * process undumpable and its /proc files root's (oom_adj.h). */
    nsbox_oom_adj_open(&s->oom);
    int r = child_setup(s, &err);
    int keep[] = {s->fds.err_w,    s->fds.ctl_child, s->fds.listen_fd,
                  s->cfg->keep_fd, s->own_fd,        s->oom.fd NSBOX_SAN(, s->san_fd)};
    nsbox_close_all_but(keep, sizeof(keep) / sizeof(keep[0]));
    nsbox_spawn_child_ready(s->fds.err_w, &err, r == 0);
    struct nsbox_init_config ic = {.ctl_fd = s->fds.ctl_child,
                                   .listen_fd = s->fds.listen_fd,
                                   .disk_fd = -1,
                                   .idmap_fd = -1,
                                   .landlock = true,
                                   .home = s->sb->workdir,
                                   .own_fd = s->own_fd,
                                   .landlock_abi = s->sb->landlock_abi,
                                   .oom = s->oom,
                                   .rlimit_as = s->cfg->limits.memory_bytes};
    nsbox_init_main(&ic);
}

static int start_child(struct ll_spawn *s, struct nsbox_err *err)
{
    if (nsbox_spawn_fds_open(&s->fds, s->sb, s->cfg->detach, err) < 0)
        return -1;
    NSBOX_SAN(s->san_fd = nsbox_sanitizer_report_fd(s->cfg->detach);)
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return nsbox_err_sys(err, "fork");
    if (pid == 0)
        child_main(s);
    s->sb->pid = pid;
    s->sb->pidfd = nsbox_pidfd_open(pid, 0);
    s->sb->own_child = true; /* fork()ed here: ours until the stop reaps it */
    nsbox_spawn_close_fd(&s->fds.err_w);
    nsbox_spawn_close_fd(&s->fds.ctl_child);
    return nsbox_spawn_await(s->fds.err_r, err);
}

/* What a config asks for that this mode cannot give: refused by name. */
static int refuse_unsupported(const struct nsbox_sandbox_config *cfg, struct nsbox_err *err)
{
    if (cfg->workspace != NULL)
        return nsbox_err_set(err, ENOTSUP,
                             "landlock isolation: a persistent workspace needs a mount "
                             "namespace (use --isolation=namespaces)");
    if (cfg->n_binds > 0)
        return nsbox_err_set(err, ENOTSUP,
                             "landlock isolation: volumes and bind mounts need a mount "
                             "namespace (use --isolation=namespaces)");
    return 0;
}

static void note(struct nsbox_sandbox *sb, const struct nsbox_sandbox_config *cfg)
{
    snprintf(sb->limits_note, sizeof(sb->limits_note),
             "landlock mode, rlimits only: memory as RLIMIT_AS per process, processes as "
             "RLIMIT_NPROC (per user), files as RLIMIT_FSIZE (%s); no cpu limit; timeouts "
             "enforced",
             cfg->disk_bytes ? "--disk bounds each file, not the total" : "no disk bound");
}

int nsbox_landlock_create(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                          struct nsbox_err *err)
{
    struct ll_spawn s = {.cfg = cfg,
                         .sb = out,
                         .fds = SPAWN_FDS_NONE,
                         .own_fd = -1,
                         .oom = {.fd = -1},
                         .root = geteuid() == 0};
    const char *why = "";

    out->isolation = NSBOX_ISOLATION_LANDLOCK;
    out->rootless = false;
    out->workspace[0] = '\0';
    out->landlock_abi = nsbox_landlock_abi(&why);
    if (out->landlock_abi == 0)
        return nsbox_err_set(err, ENOTSUP, "cannot start a sandbox with --isolation=landlock: %s",
                             why);
    if (refuse_unsupported(cfg, err) < 0 || nsbox_sandbox_random_id(out->id, err) < 0 ||
        nsbox_mkdir_p(cfg->state_root, 0700, err) < 0)
        return -1;
    /* As root, nobody must reach STATE/upper by its path (HOME): the
     * sandboxes' directory lets it pass, not list (ids are 128 random
     * bits; each state dir is 0711, each upper/ 0700). */
    if (s.root && chmod(cfg->state_root, 0711) < 0)
        return nsbox_err_sys(err, "cannot chmod %s", cfg->state_root);
    int r = nsbox_sandbox_make_state_dir(out, cfg->state_root, s.root, NOBODY, &s.fds.state_lock,
                                         err);
    snprintf(out->workdir, sizeof(out->workdir), "%s/upper", out->state_dir);
    /* Its own, and no one else's: 0700 (owned by nobody as root). */
    if (r == 0 && chmod(out->workdir, 0700) < 0)
        r = nsbox_err_sys(err, "cannot chmod %s", out->workdir);
    note(out, cfg);
    if (r == 0)
        r = start_child(&s, err);
    if (r == 0)
        r = nsbox_state_write(out, err);
    nsbox_spawn_fds_close(&s.fds);
    if (r < 0) {
        struct nsbox_err ignored;
        if (out->state_dir[0] != '\0')
            nsbox_sandbox_destroy(out, &ignored);
        return nsbox_err_prefix(err, "creating sandbox");
    }
    return 0;
}
