/* A command's child, from init's fork to its exec (init.h
 * nsbox_init_child_exec).  Runs in the forked child only: it may exit, and
 * it never returns to init's loop. */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "caps.h"
#include "files_wire.h"
#include "landlock.h"
#include "proto.h"
#include "sanitizer.h"

/* Finds argv[0] along the PATH in env, as execvp would with that env. */
static void exec_with_path(char **argv, char **env)
{
    const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    char full[PATH_MAX];
    int saved = ENOENT;

    if (strchr(argv[0], '/') != NULL) {
        execve(argv[0], argv, env);
        return;
    }
    for (char **e = env; *e != NULL; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        /* An empty element is the working directory, as for execvp. */
        int n = end == p ? snprintf(full, sizeof(full), "%s", argv[0])
                         : snprintf(full, sizeof(full), "%.*s/%s", (int)(end - p), p, argv[0]);
        /* A failed execve costs a new mm; looking first is cheaper (three
         * misses before /usr/bin/python3 on Debian's default PATH).  The
         * ids are all the command's by now, so access() asks the right
         * question, and it is the plain access syscall: glibc's faccessat
         * needs faccessat2, which a custom profile may deny with EPERM.
         * An answer other than "not there" or "not allowed" (such a
         * denial) does not skip the candidate: execve decides. */
        if (n > 0 && (size_t)n < sizeof(full)) {
            if (access(full, X_OK) == 0 || (errno != ENOENT && errno != ENOTDIR && errno != EACCES))
                execve(full, argv, env);
            if (errno != ENOENT && errno != ENOTDIR)
                saved = errno;
        }
        if (*end == '\0')
            break;
        p = end;
    }
    errno = saved;
}

/* The home directory of uid in the sandbox's own /etc/passwd, into home;
 * "/" when it has none.  Read as the command's user, after every privilege
 * is gone: the file is the sandbox's to forge, so it is opened without
 * blocking (a FIFO) and only a regular file's first 64 KiB are read. */
static void passwd_home(uint32_t uid, char *home, size_t size)
{
    static char text[65536];
    snprintf(home, size, "/");
    /* O_NOCTTY: the command is a session leader without a terminal yet,
     * and the sandbox may have made /etc/passwd a link to a pty. */
    int fd = open("/etc/passwd", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof(text) - 1) : -1;
    close(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    for (char *line = text, *next; line != NULL; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        /* name:password:uid:gid:gecos:home:shell; as nss_files, blank
         * and comment lines are skipped. */
        char *f[7] = {0}, *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\0')
            continue;
        int i = 0;
        for (; i < 7 && p != NULL; i++) {
            f[i] = p;
            if ((p = strchr(p, ':')) != NULL)
                *p++ = '\0';
        }
        char *end;
        if (i >= 6 && f[2][0] != '\0' && strtoul(f[2], &end, 10) == uid && *end == '\0') {
            if (f[5][0] == '/')
                snprintf(home, size, "%s", f[5]);
            return;
        }
    }
}

/* Adds HOME to env when it has none, as Docker does: from the sandbox's
 * /etc/passwd, else "/".  Programs look for it (Python's site module
 * reads the password database without it).  env has a spare slot after
 * its NULL (split_strings' extra). */
static char **with_home(char **env, uint32_t uid)
{
    static char home[PATH_MAX + 8];
    size_t n = 0;
    for (; env[n] != NULL; n++)
        if (strncmp(env[n], "HOME=", 5) == 0)
            return env;
    memcpy(home, "HOME=", 5);
    passwd_home(uid, home + 5, sizeof(home) - 5);
    env[n] = home;
    env[n + 1] = NULL;
    return env;
}

static void set_limit(int resource, uint64_t value)
{
    if (value == 0)
        return;
    struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
    setrlimit(resource, &rl);
}

/* Landlock mode: env with HOME and TMPDIR the sandbox's own directory
 * (the host's /etc/passwd names a home the sandbox may not enter). */
static char **landlock_env(char **env, const char *home)
{
    static char h[PATH_MAX + 8], t[PATH_MAX + 8];
    size_t n = 0, o = 0;
    while (env[n] != NULL)
        n++;
    char **v = calloc(n + 3, sizeof(char *));
    if (v == NULL)
        return env;
    for (size_t i = 0; i < n; i++)
        if (strncmp(env[i], "HOME=", 5) != 0 && strncmp(env[i], "TMPDIR=", 7) != 0)
            v[o++] = env[i];
    snprintf(h, sizeof(h), "HOME=%s", home);
    snprintf(t, sizeof(t), "TMPDIR=%s", home);
    v[o++] = h;
    v[o++] = t;
    return v;
}

/* Landlock mode: the command's process group instead of a session, and a
 * filter so that none of its processes leaves either: the group is what
 * a kill of this exec takes, the session what a timeout or stop takes
 * (there is no pid namespace to end). */
static void landlock_group(const struct nsbox_init_config *cfg)
{
    struct nsbox_err err;
    if (setpgid(0, 0) < 0 || nsbox_landlock_seccomp_pin(&err) < 0) {
        dprintf(2, "nsbox: cannot make the command's process group: %s\n", strerror(errno));
        _exit(126);
    }
    /* The same rules again: a Landlock domain nested in init's, so that
     * with signal scoping (ABI 6) the command cannot signal init (or
     * another command's processes), while init can signal it. */
    if (nsbox_landlock_restrict(cfg->own_fd, cfg->landlock_abi, &err) < 0) {
        dprintf(2, "nsbox: %s\n", err.msg);
        _exit(126);
    }
}

/* Switches to the command's user, as asked.  Not in landlock mode: there
 * every command runs as init's own uid (no user namespace to map). */
static void switch_user(const struct nsbox_msg_exec *m)
{
    /* setgroups is denied in a single-id user namespace; there the only
     * group is the mapped one anyway. */
    if ((setgroups(0, NULL) < 0 && errno != EPERM) || setresgid(m->gid, m->gid, m->gid) < 0 ||
        setresuid(m->uid, m->uid, m->uid) < 0) {
        dprintf(2, "nsbox: cannot switch to uid %u gid %u: %s\n", m->uid, m->gid, strerror(errno));
        _exit(126);
    }
}

#ifdef NSBOX_SANITIZER
/* The sanitizer build: RLIMIT_AS (best-effort and landlock modes) only now,
 * at the execve: ASan's shadow mappings exceed any limit, and the builtins
 * and this child could map nothing after it (the limit is the command's;
 * runtime/sanitizer.h). */
static void exec_limited(const struct nsbox_init_config *cfg, char **argv, char **env, uint32_t uid)
{
    char **e = cfg->landlock ? landlock_env(env, cfg->home) : with_home(env, uid);
    set_limit(RLIMIT_AS, cfg->rlimit_as);
    exec_with_path(argv, e);
}
#endif

/* In init's child: become the command.  Never returns. */
_Noreturn void nsbox_init_child_exec(const struct nsbox_init_config *cfg,
                                     const struct nsbox_msg_exec *m, char **argv, char **env,
                                     const char *cwd, const int fds[3], bool tty)
{
    sigset_t none;

    NSBOX_SAN(nsbox_sanitizer_forked();)
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Every disposition back to the default: an ignored one survives
     * execve, and init inherits nsbox's (SIGPIPE; SIGINT and SIGQUIT when
     * nsbox was started as a background job), so ^C on the sandbox's
     * terminal, or an interpreter's interrupt, would do nothing. */
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    /* Its own session and process group: no controlling terminal, and a
     * group the host can kill as a whole. */
    if (cfg->landlock)
        landlock_group(cfg);
    else
        setsid();
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            _exit(126);
    /* The sandbox's own pty becomes the new session's controlling
     * terminal: its line discipline signals the foreground group (^C). */
    if (tty && ioctl(0, TIOCSCTTY, 0) < 0) {
        dprintf(2, "nsbox: cannot take the terminal: %s\n", strerror(errno));
        _exit(126);
    }
    /* No fd of init's (control sockets) survives into the command. */
    NSBOX_SAN_ELSE(nsbox_sanitizer_close_from_3(), close_range(3, ~0u, 0));
    set_limit(RLIMIT_NOFILE, m->rlimit_nofile);
    set_limit(RLIMIT_FSIZE, m->rlimit_fsize);
    set_limit(RLIMIT_NPROC, m->rlimit_nproc);
    if (cfg->landlock)
        NSBOX_SAN_ELSE((void)0, set_limit(RLIMIT_AS, cfg->rlimit_as));
    /* The bounding set is already empty (init's, inherited); init's
     * four capabilities go after the uid switch that needs them. */
    struct nsbox_err err;
    NSBOX_SAN(nsbox_sanitizer_builtin_keepcaps(argv);)
    if (!cfg->landlock)
        switch_user(m);
    if (NSBOX_SAN_ELSE(nsbox_sanitizer_caps_clear(argv, cfg->landlock, &err),
                       nsbox_caps_clear(&err)) < 0) {
        dprintf(2, "nsbox: %s\n", err.msg);
        _exit(126);
    }
    /* Landlock mode: init sits in the sandbox's own directory already; as
     * root (commands run as nobody) its path may not resolve for them. */
    bool home = cfg->landlock && strcmp(cwd, cfg->home) == 0;
    if (!home && chdir(cwd) < 0) {
        dprintf(2, "nsbox: cannot enter working directory %s: %s\n", cwd, strerror(errno));
        _exit(126);
    }
    nsbox_files_builtin(argv); /* returns only when argv is a real command */
    NSBOX_SAN_ELSE(exec_limited(cfg, argv, env, m->uid),
                   exec_with_path(argv, cfg->landlock ? landlock_env(env, cfg->home)
                                                      : with_home(env, m->uid)));
    int e = errno;
    dprintf(2, "nsbox: cannot execute %s: %s\n", argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}
