/* The sandbox's init: pid 1 of its pid namespace.
 *
 * It reaps every zombie (orphans are reparented to it), runs the commands
 * the host asks for, reports their exit, and kills on request.  When it
 * dies the kernel kills everything else in the namespace, which is how a
 * stop or nsbox's own death takes every process with it, setsid and double
 * forks included.  It holds no capability but the three it needs to start
 * and stop commands as the image's user (SETUID, SETGID, KILL) and the
 * one to make the egress broker's listeners (NET_BIND_SERVICE) -- in
 * nested mode SETFCAP too, for the idmap service (idmap_service.h) -- is not
 * dumpable (so code in the sandbox cannot ptrace it or open its fds through
 * /proc), and runs under the same seccomp filter as everything it starts. */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "caps.h"
#include "files_wire.h"
#include "idmap_service.h"
#include "landlock.h"
#include "proto.h"
#include "sanitizer.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define MAX_CLIENTS 64
#define MAX_EXECS 256

struct running {
    uint64_t id;
    pid_t pid;
    int client; /* fd of the connection that asked */
};

struct init_state {
    const struct nsbox_init_config *cfg;
    int sigfd;
    int clients[MAX_CLIENTS];
    size_t n_clients;
    struct running execs[MAX_EXECS];
    size_t n_execs;
    char buf[NSBOX_PROTO_MAX];
};

static void send_status(int client, uint32_t type, uint64_t id, pid_t pid, int status,
                        const struct rusage *ru, int code, const char *msg)
{
    struct nsbox_msg_status m = {
        .type = type, .pid = pid, .id = id, .wait_status = status, .err_code = code};
    if (ru != NULL) {
        m.utime_us = (uint64_t)ru->ru_utime.tv_sec * 1000000 + (uint64_t)ru->ru_utime.tv_usec;
        m.stime_us = (uint64_t)ru->ru_stime.tv_sec * 1000000 + (uint64_t)ru->ru_stime.tv_usec;
        m.maxrss_kb = (uint64_t)ru->ru_maxrss;
    }
    if (msg != NULL)
        snprintf(m.err, sizeof(m.err), "%s", msg);
    nsbox_proto_send(client, &m, sizeof(m), NULL, 0, NULL);
}

/* Splits n NUL-terminated strings starting at *p, within end, into an
 * array with the NULL and then extra more NULL slots. */
static char **split_strings(char **p, const char *end, uint32_t n, size_t extra)
{
    char **v = calloc((size_t)n + 1 + extra, sizeof(char *));
    if (v == NULL)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        char *nul = memchr(*p, '\0', (size_t)(end - *p));
        if (nul == NULL) {
            free(v);
            return NULL;
        }
        v[i] = *p;
        *p = nul + 1;
    }
    return v;
}

static void track(struct init_state *st, uint64_t id, pid_t pid, int client)
{
    if (st->n_execs < MAX_EXECS)
        st->execs[st->n_execs++] = (struct running){id, pid, client};
}

/* A pty in the sandbox's own devpts (mounted newinstance, /dev/ptmx ->
 * pts/ptmx): never one of the host's.  /dev is the sandbox's to change,
 * so the node is opened without blocking and must be the ptmx device; the
 * slave comes from the master itself (TIOCGPTPEER, Linux 4.13), not from
 * a path.  Returns 0 with both fds, or an errno. */
static int open_pty(const struct nsbox_msg_tty *t, int *master, int *slave)
{
    struct stat sb;
    int unlock = 0;
    struct winsize ws = {.ws_row = t->rows, .ws_col = t->cols};

    *master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (*master < 0)
        return errno;
    if (fstat(*master, &sb) < 0 || !S_ISCHR(sb.st_mode) || sb.st_rdev != makedev(5, 2)) {
        close(*master);
        return ENOTTY;
    }
    *slave = -1;
    if (ioctl(*master, TIOCSPTLCK, &unlock) == 0 && ioctl(*master, TIOCSWINSZ, &ws) == 0)
        *slave = ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*slave < 0) {
        int e = errno;
        close(*master);
        return e;
    }
    return 0;
}

/* The strings' length and whether a struct nsbox_msg_tty follows them, for
 * a request of len bytes; false when it is malformed. */
static bool exec_layout(const struct nsbox_msg_exec *m, size_t len, const int fds[3], bool *tty)
{
    if (len < sizeof(*m) || m->strings_len > len - sizeof(*m) || m->n_args == 0)
        return false;
    size_t tail = len - sizeof(*m) - m->strings_len;
    *tty = tail == sizeof(struct nsbox_msg_tty);
    /* Without a terminal the command's three fds come with the request. */
    return *tty || (tail == 0 && fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0);
}

/* Sends a terminal exec's master to the host, then lets go of both ends:
 * a pty whose master init kept would never hang up. */
static void hand_over_pty(int client, uint64_t id, pid_t pid, int master, int slave)
{
    struct nsbox_msg_status m = {.type = NSBOX_MSG_PTY, .pid = pid, .id = id};
    nsbox_proto_send(client, &m, sizeof(m), &master, 1, NULL);
    close(master);
    close(slave);
}

static void handle_exec(struct init_state *st, int client, size_t len, int fds[3])
{
    struct nsbox_msg_exec *m = (struct nsbox_msg_exec *)st->buf;
    bool tty = false;

    if (!exec_layout(m, len, fds, &tty) || st->n_execs >= MAX_EXECS) {
        send_status(client, NSBOX_MSG_ERROR, len >= sizeof(*m) ? m->id : 0, 0, 0, NULL, EINVAL,
                    "malformed or excess exec request");
        return;
    }
    char *end = m->strings + m->strings_len;
    int master = -1, pty_fds[3];
    if (tty && st->cfg->landlock) {
        send_status(client, NSBOX_MSG_ERROR, m->id, 0, 0, NULL, ENOTSUP,
                    "landlock isolation gives no terminal: a terminal needs a session of its "
                    "own, which this mode refuses");
        return;
    }
    if (tty) {
        struct nsbox_msg_tty t;
        memcpy(&t, end, sizeof(t));
        int e = open_pty(&t, &master, &pty_fds[0]);
        if (e != 0) {
            char msg[128];
            snprintf(msg, sizeof(msg), "cannot open a terminal in the sandbox: %s", strerror(e));
            send_status(client, NSBOX_MSG_ERROR, m->id, 0, 0, NULL, e, msg);
            return;
        }
        pty_fds[1] = pty_fds[2] = pty_fds[0];
        fds = pty_fds;
    }
    char *p = m->strings;
    NSBOX_PLANT("init_leak", nsbox_plant_leak(p));
    char **argv = split_strings(&p, end, m->n_args, 0);
    char **env = argv ? split_strings(&p, end, m->n_env, 1) : NULL;
    const char *cwd = p < end && memchr(p, '\0', (size_t)(end - p)) ? p : NULL;
    if (argv == NULL || env == NULL || cwd == NULL) {
        send_status(client, NSBOX_MSG_ERROR, m->id, 0, 0, NULL, EINVAL, "malformed exec request");
        free(argv);
        free(env);
        if (tty)
            close(master), close(pty_fds[0]);
        return;
    }
    /* fork, not vfork: a vfork parent sleeps until the child execs, and
     * code in the sandbox can stop the child first (kill(-1, SIGSTOP) in
     * a loop; the child is the sandbox's uid).  init then sat frozen: no
     * reaping, no KILL for a timeout, every later exec stuck.  vfork saved
     * 0.23-0.38 ms per exec; an init the sandbox cannot wedge is worth
     * more (sandbox/init_not_wedged_by_sigstop). */
    nsbox_oom_adj_for_child(&st->cfg->oom);
    pid_t pid = fork();
    if (pid == 0)
        nsbox_init_child_exec(st->cfg, m, argv, env, cwd, fds, tty);
    int saved = errno;
    nsbox_oom_adj_restore(&st->cfg->oom);
    free(argv);
    free(env);
    if (tty && pid > 0)
        hand_over_pty(client, m->id, pid, master, pty_fds[0]);
    else if (tty)
        close(master), close(pty_fds[0]);
    if (pid < 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "cannot start a process in the sandbox: %s%s", strerror(saved),
                 saved == EAGAIN ? " (its process limit?)" : "");
        send_status(client, NSBOX_MSG_ERROR, m->id, 0, 0, NULL, saved, msg);
        return;
    }
    /* No STARTED message: nothing waits for it, and waking the host while
     * the command starts cost 0.1 ms of every exec on two cores. */
    track(st, m->id, pid, client);
}

/* Signals a command's process group.  The command makes its group with
 * setsid() right after the fork, so a signal sent at once may find no
 * such group yet: then the command itself, the group's only member. */
static void signal_group(pid_t pid, int sig)
{
    if (kill(-pid, sig) < 0 && errno == ESRCH)
        kill(pid, sig);
}

static void handle_kill(struct init_state *st, int client, size_t len)
{
    const struct nsbox_msg_kill *k = (const struct nsbox_msg_kill *)st->buf;

    if (len != sizeof(*k))
        return;
    if (k->id == 0) {
        /* From pid 1, -1 means every process in the namespace but us:
         * daemons, setsid'd sessions and double-forked orphans alike.  In
         * landlock mode there is no such namespace (-1 would be every
         * process of the user's): the session, which nothing leaves. */
        if (st->cfg->landlock)
            nsbox_session_kill(getpid(), getpid());
        else
            kill(-1, SIGKILL);
        return;
    }
    for (size_t i = 0; i < st->n_execs; i++)
        if (st->execs[i].id == k->id && st->execs[i].client == client)
            signal_group(st->execs[i].pid, SIGKILL);
}

/* A signal for one exec's process group (an interpreter interrupted by a
 * timeout, a background process ended by process_signal): only the
 * connection that started it may send one, and only one that ends or
 * nudges a process (never SIGSTOP: a stopped group would hold its caller). */
static bool signal_allowed(int sig)
{
    return sig == SIGINT || sig == SIGTERM || sig == SIGKILL || sig == SIGHUP || sig == SIGQUIT ||
           sig == SIGUSR1 || sig == SIGUSR2;
}

static void handle_signal(struct init_state *st, int client, size_t len)
{
    const struct nsbox_msg_signal *m = (const struct nsbox_msg_signal *)st->buf;

    if (len != sizeof(*m) || !signal_allowed(m->sig))
        return;
    for (size_t i = 0; i < st->n_execs; i++)
        if (st->execs[i].id == m->id && st->execs[i].client == client)
            signal_group(st->execs[i].pid, m->sig);
}

static void add_client(struct init_state *st, int fd);

/* One listener, nonblocking and CLOEXEC, or -1 and why.  EADDRINUSE means
 * a process of the sandbox holds the port: said so, by number. */
static int make_listener(int family, int type, const void *sa, socklen_t len, uint16_t port,
                         char *why, size_t size)
{
    int one = 1, zero = 0;
    int fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, size, "cannot create a socket in the sandbox: %s", strerror(errno));
        return -1;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        (family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0) ||
        bind(fd, sa, len) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0)) {
        if (errno == EADDRINUSE)
            snprintf(why, size, "port %u is already in use inside the sandbox", port);
        else
            snprintf(why, size, "cannot listen on port %u in the sandbox: %s", port,
                     strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The sockets asked for, in order: TCP [::]:PORT for each port, then UDP
 * and TCP 127.0.0.1:53.  Returns how many were made (all, or the caller
 * closes them). */
static size_t make_listeners(const struct nsbox_msg_listen *m, int *fds, char *why, size_t size)
{
    size_t n = 0;
    for (; n < m->n_ports; n++) {
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(m->ports[n])};
        fds[n] = make_listener(AF_INET6, SOCK_STREAM, &a6, sizeof(a6), m->ports[n], why, size);
        if (fds[n] < 0)
            return n;
    }
    if (!m->dns)
        return n;
    struct sockaddr_in a4 = {
        .sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int type = SOCK_DGRAM;; type = SOCK_STREAM) {
        fds[n] = make_listener(AF_INET, type, &a4, sizeof(a4), 53, why, size);
        if (fds[n] < 0)
            return n;
        n++;
        if (type == SOCK_STREAM)
            return n;
    }
}

/* Listeners for nsbox's egress broker (egress/egress.h), made here in the
 * sandbox's network namespace by the one process of it that keeps
 * CAP_NET_BIND_SERVICE (and runs no code of the sandbox's), sent out one
 * per message and closed: init keeps no copy, so sealing the sandbox
 * again is the broker's close. */
static void handle_listen(struct init_state *st, int client, size_t len)
{
    const struct nsbox_msg_listen *m = (const struct nsbox_msg_listen *)st->buf;
    int fds[NSBOX_LISTEN_MAX_PORTS + 2];
    char why[NSBOX_PROTO_ERR_MAX] = "";

    if (len != sizeof(*m) || m->n_ports > NSBOX_LISTEN_MAX_PORTS) {
        send_status(client, NSBOX_MSG_ERROR, 0, 0, 0, NULL, EINVAL, "malformed listen request");
        return;
    }
    size_t want = m->n_ports + (m->dns ? 2 : 0);
    size_t made = make_listeners(m, fds, why, sizeof(why));
    for (size_t i = 0; i < made; i++) {
        struct nsbox_msg_listener l = {.type = NSBOX_MSG_LISTENER, .index = (uint32_t)i};
        if (made == want)
            nsbox_proto_send(client, &l, sizeof(l), &fds[i], 1, NULL);
        close(fds[i]);
    }
    send_status(client, NSBOX_MSG_ERROR, 0, 0, 0, NULL, made == want ? 0 : EADDRINUSE,
                made == want ? NULL : why);
}

/* A new connection, handed over on an existing one: for a command that
 * outlives the calls that use it (proc.h).  Its execs are its own: when it
 * closes, they are killed. */
static void handle_attach(struct init_state *st, size_t len, int fds[3])
{
    if (len != sizeof(struct nsbox_msg_attach) || fds[0] < 0)
        return;
    int type;
    socklen_t tl = sizeof(type);
    if (st->n_clients >= MAX_CLIENTS || getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
        type != SOCK_SEQPACKET)
        return; /* closed by the caller: the host sees EOF */
    add_client(st, fds[0]);
    fds[0] = -1;
}

static void reap(struct init_state *st)
{
    struct signalfd_siginfo si;
    struct rusage ru;
    int status;
    pid_t pid;

    while (read(st->sigfd, &si, sizeof(si)) == sizeof(si))
        ;
    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        nsbox_idmap_reaped(pid);
        for (size_t i = 0; i < st->n_execs; i++) {
            if (st->execs[i].pid != pid)
                continue;
            if (st->execs[i].client >= 0)
                send_status(st->execs[i].client, NSBOX_MSG_EXITED, st->execs[i].id, pid, status,
                            &ru, 0, NULL);
            st->execs[i] = st->execs[--st->n_execs];
            break;
        }
    }
}

/* NSBOX_MSG_ADOPT (proto.h): a fork the sandbox made, reparented to init,
 * becomes an exec of this connection.  Only a child of init's (running,
 * or a zombie not reaped yet: its exit is then reported at once) that no
 * exec claims; never in landlock mode, where the fork could not have
 * made a process group of its own (the group is what a kill takes). */
static void handle_adopt(struct init_state *st, int client, size_t len)
{
    const struct nsbox_msg_adopt *m = (const struct nsbox_msg_adopt *)st->buf;
    siginfo_t si;
    const char *why = NULL;

    if (len != sizeof(*m)) {
        send_status(client, NSBOX_MSG_ERROR, 0, 0, 0, NULL, EINVAL, "malformed adopt request");
        return;
    }
    for (size_t i = 0; i < st->n_execs && why == NULL; i++)
        if (st->execs[i].pid == m->pid)
            why = "the process is another exec's";
    memset(&si, 0, sizeof(si));
    if (why == NULL && st->cfg->landlock)
        why = "landlock isolation: a fork cannot have a process group of its own";
    else if (why == NULL && (m->pid <= 1 || st->n_execs >= MAX_EXECS))
        why = "no such process to take on, or too many";
    else if (why == NULL && waitid(P_PID, (id_t)m->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        why = "no such child of the sandbox's init (it died, or it is not a fork)";
    if (why != NULL) {
        send_status(client, NSBOX_MSG_ERROR, m->id, m->pid, 0, NULL, ESRCH, why);
        return;
    }
    track(st, m->id, m->pid, client);
    send_status(client, NSBOX_MSG_ADOPTED, m->id, m->pid, 0, NULL, 0, NULL);
    if (si.si_pid == m->pid) /* a zombie already: its exit now */
        reap(st);
}

/* The owner's end closed and no one else can connect: init is done. */
static bool init_done(const struct init_state *st)
{
    return st->cfg->ctl_fd >= 0 && st->cfg->listen_fd < 0 && st->n_clients == 0;
}

static void drop_client(struct init_state *st, size_t idx)
{
    int fd = st->clients[idx];

    /* Whoever asked is gone: what it started goes too (its process group;
     * a long-lived sandbox keeps whatever escaped into other sessions). */
    for (size_t i = 0; i < st->n_execs; i++) {
        if (st->execs[i].client == fd) {
            signal_group(st->execs[i].pid, SIGKILL);
            st->execs[i].client = -1;
        }
    }
    close(fd);
    st->clients[idx] = st->clients[--st->n_clients];
    /* Idle, init checks for leaks and goes on; not when this drop ends it
     * (the owner gone, no one else can connect): its exit check follows at
     * once, and the same leak would be reported twice (sanitizers CI: the
     * command reaped just before the owner's end was dropped). */
    NSBOX_SAN(if (!init_done(st)) nsbox_sanitizer_init_idle(st->cfg->landlock);)
}

static void handle_client(struct init_state *st, size_t idx)
{
    int fds[3];
    int fd = st->clients[idx];
    ssize_t n = nsbox_proto_recv(fd, st->buf, sizeof(st->buf), fds, NULL);

    if (n <= 0) {
        drop_client(st, idx);
        return;
    }
    uint32_t type = (size_t)n >= sizeof(uint32_t) ? *(uint32_t *)st->buf : 0;
    if (type == NSBOX_MSG_EXEC)
        handle_exec(st, fd, (size_t)n, fds);
    else if (type == NSBOX_MSG_KILL)
        handle_kill(st, fd, (size_t)n);
    else if (type == NSBOX_MSG_SIGNAL)
        handle_signal(st, fd, (size_t)n);
    else if (type == NSBOX_MSG_ATTACH)
        handle_attach(st, (size_t)n, fds);
    else if (type == NSBOX_MSG_LISTEN)
        handle_listen(st, fd, (size_t)n);
    else if (type == NSBOX_MSG_CONNECT)
        nsbox_init_connect(st->cfg, st->buf, (size_t)n, fds);
    else if (type == NSBOX_MSG_ADOPT)
        handle_adopt(st, fd, (size_t)n);
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* A new client first gets the sandbox's tmpfs disk, if it has one: the
 * host reads its usage and a run's changes there (disk.h). */
static void add_client(struct init_state *st, int fd)
{
    struct nsbox_msg_disk m = {.type = NSBOX_MSG_DISK};
    if (st->cfg->disk_fd >= 0 &&
        nsbox_proto_send(fd, &m, sizeof(m), &st->cfg->disk_fd, 1, NULL) < 0) {
        close(fd);
        return;
    }
    st->clients[st->n_clients++] = fd;
}

static void accept_client(struct init_state *st)
{
    int fd = accept4(st->cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (st->n_clients >= MAX_CLIENTS) {
        close(fd);
        return;
    }
    add_client(st, fd);
}

static int setup_signals(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

_Noreturn void nsbox_init_main(const struct nsbox_init_config *cfg)
{
    static struct init_state st;
    struct pollfd pfd[MAX_CLIENTS + 3];

    st.cfg = cfg;
    st.sigfd = setup_signals();
    if (st.sigfd < 0) {
        NSBOX_SAN(nsbox_sanitizer_init_exit(cfg->landlock, false);)
        _exit(1);
    }
    if (cfg->ctl_fd >= 0)
        add_client(&st, cfg->ctl_fd);
    /* Landlock mode: orphans of commands come back here, not to the
     * host's init, to be reaped (pid 1 of a namespace gets them anyway). */
    if (cfg->landlock)
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    for (;;) {
        size_t n = 0;
        pfd[n++] = (struct pollfd){.fd = st.sigfd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = cfg->listen_fd, .events = POLLIN};
        for (size_t i = 0; i < st.n_clients; i++)
            pfd[n++] = (struct pollfd){.fd = st.clients[i], .events = POLLIN};
        /* Nested mode: the idmap service's socket, last (fd -1: ignored). */
        pfd[n++] = (struct pollfd){.fd = cfg->idmap_fd, .events = POLLIN};
        if (poll(pfd, n, -1) < 0 && errno != EINTR) {
            NSBOX_SAN(nsbox_sanitizer_init_exit(cfg->landlock, false);)
            _exit(1);
        }
        if (pfd[0].revents)
            reap(&st);
        /* Only the clients polled have a pfd entry: one accepted now would
         * read a stale entry (a former client's POLLIN) and block init in
         * its recv until that client speaks, reaping nothing meanwhile. */
        size_t polled = st.n_clients;
        if (pfd[1].revents & POLLIN)
            accept_client(&st);
        if (pfd[2 + polled].revents & POLLIN)
            nsbox_idmap_accept(cfg->idmap_fd);
        /* Backwards: drop_client moves the last client into the hole. */
        for (size_t i = polled; i-- > 0;)
            if (pfd[2 + i].revents & (POLLIN | POLLHUP | POLLERR))
                handle_client(&st, i);
        if (init_done(&st)) {
            /* A namespace's init takes its processes with it; a session
             * leader does not. */
            if (cfg->landlock)
                nsbox_session_kill(getpid(), getpid());
            NSBOX_SAN(nsbox_sanitizer_init_exit(cfg->landlock, cfg->landlock);)
            _exit(0);
        }
    }
}
