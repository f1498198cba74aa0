/* The spawner (spawner.h): a small process, forked from a long-lived
 * caller (the MCP server) while it is still small and single-threaded,
 * from which sandboxes' inits are cloned instead of from the caller.
 *
 * Why: a sandbox's init is born by clone() from a helper that fork()
 * made (namespaces_spawn.c, clone_via_helper).  Each fork copies the
 * caller's address space under its mmap lock, and the clone copies it
 * again into init, which keeps it for life and copies it once more into
 * every command it forks.  A server answering a burst of creates has
 * hundreds of threads (a stack each) and many live inits sharing its
 * pages: docs/burst.md measured fork, exit and the page faults after
 * them at ~60% of the server's CPU in a burst of 100.  From the spawner
 * each of those copies is of a few MiB and under nobody else's lock.
 *
 * Protocol.  The caller holds one end of a SOCK_SEQPACKET pair; per
 * creation it makes a SOCK_STREAM pair and sends one end through it.  The
 * spawner forks a worker for it (and goes back to wait for the next):
 * the worker reads the creation's record (struct spawn, its config and
 * sandbox, flattened: pack() below) and the fds it names, clones init as
 * clone_via_helper's helper would, writes back {pid, placed, errno} and
 * exits.  Init, orphaned, goes to the caller, a child subreaper (set
 * before the spawner was forked, so that the spawner's descendants look
 * for it): nsbox_spawner_clone returns once init is the caller's child.
 * The spawner exits when the caller's end closes (and on its death:
 * PDEATHSIG).  Any failure to reach it makes nsbox_spawner_clone return
 * -2, and the caller clones the old way. */
#include "spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "seccomp_internal.h"
#include "spawn_ns.h"

static int spawner_fd = -1; /* the caller's end; -1: no spawner */
static pid_t spawner_pid = -1;

/* At most this many fds travel with a record: the child's seven and one
 * per bind. */
#define MAX_FDS (8 + NSBOX_MAX_BINDS)

/* ---- flattening ---- */

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

/* Appends n bytes (raw: no alignment); false when out of memory. */
static bool append(struct buf *b, const void *data, size_t n)
{
    if (n == 0)
        return !b->failed;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = true;
            return false;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return true;
}

/* Appends n bytes at the next 8-aligned offset; returns that offset + 1
 * (0 stands for NULL, and for a failure, which b->failed says). */
static uintptr_t put(struct buf *b, const void *data, size_t n)
{
    static const char zeros[8];
    if (!append(b, zeros, (8 - b->len % 8) % 8) || !append(b, data, n))
        return 0;
    return b->len - n + 1;
}

static uintptr_t put_str(struct buf *b, const char *s)
{
    return s ? put(b, s, strlen(s) + 1) : 0;
}

/* What travels: the three records by value, their pointers replaced by
 * offsets into what follows, their fds by indexes into the fds sent. */
struct head {
    struct spawn s;
    struct nsbox_sandbox_config cfg;
    struct nsbox_sandbox sb;
    int flags;
    sigset_t mask; /* the caller's thread's, for the child as fork would give it */
};

/* fds[*n] = fd, the index instead of fd in *slot (-1 stays -1). */
static void put_fd(int *slot, int fds[MAX_FDS], size_t *n)
{
    if (*slot < 0)
        return;
    fds[*n] = *slot;
    *slot = (int)(*n)++;
}

static int pack(struct spawn *s, int flags, struct buf *b, int fds[MAX_FDS], size_t *nfds)
{
    struct head h = {.s = *s, .cfg = *s->cfg, .sb = *s->sb, .flags = flags};
    const struct nsbox_sandbox_config *cfg = s->cfg;

    pthread_sigmask(SIG_BLOCK, NULL, &h.mask);
    *nfds = 0;
    /* The parent's ends stay here; the child's travel. */
    h.s.fds.err_r = h.s.sync_w = h.s.fds.state_lock = -1;
    put_fd(&h.s.sync_r, fds, nfds);
    put_fd(&h.s.fds.err_w, fds, nfds);
    put_fd(&h.s.fds.ctl_child, fds, nfds);
    put_fd(&h.s.fds.listen_fd, fds, nfds);
    put_fd(&h.s.slot_fd, fds, nfds);
    put_fd(&h.cfg.keep_fd, fds, nfds);
    NSBOX_SAN(put_fd(&h.s.san_fd, fds, nfds);)
    h.sb.ctl = h.sb.pidfd = h.sb.disk.fd = -1;
    put(b, &h, sizeof(h)); /* pointers patched below, in place */
    struct head *hp = (struct head *)(void *)b->p;
    uintptr_t off;
#define PATCH(field, value)                                                                        \
    do {                                                                                           \
        off = (value);                                                                             \
        hp = (struct head *)(void *)b->p;                                                          \
        if (!b->failed)                                                                            \
            memcpy(&hp->field, &off, sizeof(off));                                                 \
    } while (0)
    PATCH(cfg.rootfs, put_str(b, cfg->rootfs));
    PATCH(cfg.state_root, put_str(b, cfg->state_root));
    PATCH(cfg.workdir, put_str(b, cfg->workdir));
    PATCH(cfg.workspace, put_str(b, cfg->workspace));
    PATCH(cfg.hostname, put_str(b, cfg->hostname));
    PATCH(cfg.nested_images, put_str(b, cfg->nested_images));
    PATCH(cfg.env, 0); /* the commands' environment: not the child's */
    PATCH(cfg.rootless_map,
          cfg->rootless_map ? put(b, cfg->rootless_map, sizeof(*cfg->rootless_map)) : 0);
    PATCH(cfg.seccomp,
          cfg->seccomp ? put(b, cfg->seccomp,
                             sizeof(*cfg->seccomp) + cfg->seccomp->len * sizeof(struct sock_filter))
                       : 0);
    if (cfg->n_binds > NSBOX_MAX_BINDS)
        return -1;
    struct nsbox_bind binds[NSBOX_MAX_BINDS];
    for (size_t i = 0; i < cfg->n_binds; i++) {
        binds[i] = cfg->binds[i];
        put_fd(&binds[i].fd, fds, nfds);
    }
    uintptr_t at = cfg->n_binds ? put(b, binds, cfg->n_binds * sizeof(binds[0])) : 0;
    PATCH(cfg.binds, at);
    for (size_t i = 0; i < cfg->n_binds && !b->failed; i++) {
        uintptr_t src = put_str(b, cfg->binds[i].source), dst = put_str(b, cfg->binds[i].target);
        if (b->failed)
            break;
        struct nsbox_bind *bp = (struct nsbox_bind *)(void *)(b->p + at - 1) + i;
        memcpy(&bp->source, &src, sizeof(src));
        memcpy(&bp->target, &dst, sizeof(dst));
    }
#undef PATCH
    return b->failed ? -1 : 0;
}

/* The offset + 1 in *field back to a pointer into base (checked against
 * len); false when it points outside. */
static bool fix(void *field, char *base, size_t len)
{
    uintptr_t off;
    memcpy(&off, field, sizeof(off));
    char *p = NULL;
    if (off != 0) {
        if (off - 1 >= len)
            return false;
        p = base + off - 1;
    }
    memcpy(field, &p, sizeof(p));
    return true;
}

static bool fix_fd(int *slot, const int *fds, size_t nfds)
{
    if (*slot < 0)
        return true;
    if ((size_t)*slot >= nfds)
        return false;
    *slot = fds[*slot];
    return true;
}

/* In the worker: the record back into h, pointing into b; false when it
 * does not hold together. */
static bool unpack(struct head *h, char *b, size_t len, const int *fds, size_t nfds)
{
    struct nsbox_sandbox_config *cfg = &h->cfg;
    if (!fix(&cfg->rootfs, b, len) || !fix(&cfg->state_root, b, len) ||
        !fix(&cfg->workdir, b, len) || !fix(&cfg->workspace, b, len) ||
        !fix(&cfg->hostname, b, len) || !fix(&cfg->env, b, len) ||
        !fix(&cfg->nested_images, b, len) || !fix(&cfg->rootless_map, b, len) ||
        !fix(&cfg->seccomp, b, len) || !fix(&cfg->binds, b, len) || cfg->n_binds > NSBOX_MAX_BINDS)
        return false;
    struct nsbox_bind *binds = (struct nsbox_bind *)cfg->binds;
    for (size_t i = 0; i < cfg->n_binds; i++)
        if (!fix(&binds[i].source, b, len) || !fix(&binds[i].target, b, len) ||
            !fix_fd(&binds[i].fd, fds, nfds))
            return false;
    h->s.cfg = cfg;
    h->s.sb = &h->sb;
    return fix_fd(&h->s.sync_r, fds, nfds) && fix_fd(&h->s.fds.err_w, fds, nfds) &&
           fix_fd(&h->s.fds.ctl_child, fds, nfds) && fix_fd(&h->s.fds.listen_fd, fds, nfds) &&
           fix_fd(&h->s.slot_fd, fds, nfds) &&
           fix_fd(&cfg->keep_fd, fds, nfds) NSBOX_SAN(&&fix_fd(&h->s.san_fd, fds, nfds));
}

/* ---- moving bytes and fds ---- */

struct reply {
    pid_t pid;
    int placed, err;
};

static ssize_t send_fds(int sock, const void *data, size_t len, const int *fds, size_t n)
{
    char ctl[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    struct iovec iov = {(void *)data, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n > 0) {
        memset(ctl, 0, sizeof(ctl));
        m.msg_control = ctl;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    }
    ssize_t r;
    while ((r = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return r;
}

/* Reads up to len bytes and the fds that came with them (*n of them). */
static ssize_t recv_fds(int sock, void *data, size_t len, int *fds, size_t *n)
{
    char ctl[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    struct iovec iov = {data, len};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    ssize_t r;
    *n = 0;
    while ((r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); r >= 0 && c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(fds + *n, CMSG_DATA(c), k * sizeof(int));
            *n += k;
        }
    return r;
}

static bool read_all(int fd, void *p, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t r = read(fd, (char *)p + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *p, size_t len)
{
    for (size_t put_ = 0; put_ < len;) {
        ssize_t r = write(fd, (const char *)p + put_, len - put_);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        put_ += (size_t)r;
    }
    return true;
}

/* ---- the spawner's side ---- */

/* One creation, in a worker the spawner forked: never returns. */
static _Noreturn void worker(int req)
{
    struct reply rep = {-1, 0, EPROTO};
    int fds[MAX_FDS];
    size_t nfds;
    uint64_t len;

    if (recv_fds(req, &len, sizeof(len), fds, &nfds) != (ssize_t)sizeof(len) ||
        len < sizeof(struct head) || len > (64u << 20)) {
        (void)!write_all(req, &rep, sizeof(rep));
        _exit(1);
    }
    char *b = malloc(len);
    struct head *h = (struct head *)(void *)b;
    if (b == NULL || !read_all(req, b, len) || !unpack(h, b, len, fds, nfds)) {
        (void)!write_all(req, &rep, sizeof(rep));
        _exit(1);
    }
    /* As a fork of the caller's thread would be: its signal mask, and
     * SIGCHLD as it was before the spawner ignored it (init waits). */
    signal(SIGCHLD, SIG_DFL);
    pthread_sigmask(SIG_SETMASK, &h->mask, NULL);
    bool placed = false;
    pid_t pid = nsbox_ns_clone_into_cgroup(&h->s, h->flags, &placed);
    if (pid == 0) {
        close(req); /* the caller's EOF means: the worker is gone */
        nsbox_ns_child_main(&h->s);
    }
    rep = (struct reply){pid, placed, errno};
    _exit(write_all(req, &rep, sizeof(rep)) ? 0 : 1);
}

static _Noreturn void spawner_main(int sock)
{
    /* Workers are reaped by the kernel; each resets SIGCHLD. */
    signal(SIGCHLD, SIG_IGN);
    for (;;) {
        int fds[MAX_FDS], one;
        size_t n;
        ssize_t r = recv_fds(sock, &one, sizeof(one), fds, &n);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
            _exit(0); /* the caller is gone */
        for (size_t i = 1; i < n; i++)
            close(fds[i]);
        if (n < 1)
            continue;
        pid_t w = fork();
        if (w == 0) {
            close(sock);
            worker(fds[0]);
        }
        close(fds[0]); /* a failed fork: the caller reads EOF */
    }
}

int nsbox_spawner_start(struct nsbox_err *err)
{
    int sv[2];

    if (spawner_fd >= 0)
        return 0;
    /* Before the fork: the spawner's descendants look for a subreaper
     * among their ancestors only if one was set when they were forked. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return nsbox_err_sys(err, "prctl(PR_SET_CHILD_SUBREAPER)");
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return nsbox_err_sys(err, "socketpair");
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]), close(sv[1]);
        return nsbox_err_sys(err, "cannot start the spawner");
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent)
            _exit(0);
        prctl(PR_SET_NAME, "nsbox-spawner", 0, 0, 0);
        int keep[] = {sv[1]};
        nsbox_close_all_but(keep, 1); /* nothing of the caller's but stderr */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, 0), dup2(null, 1);
            close(null);
        }
        spawner_main(sv[1]);
    }
    close(sv[1]);
    spawner_fd = sv[0];
    spawner_pid = pid;
    return 0;
}

void nsbox_spawner_stop(void)
{
    int fd = __atomic_exchange_n(&spawner_fd, -1, __ATOMIC_SEQ_CST);
    if (fd < 0)
        return;
    close(fd); /* the spawner reads EOF and exits */
    while (waitpid(spawner_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    spawner_pid = -1;
}

bool nsbox_spawner_running(void)
{
    return __atomic_load_n(&spawner_fd, __ATOMIC_SEQ_CST) >= 0;
}

/* Waits (briefly) until pid is our child: the worker exited and the
 * kernel handed init to us, the subreaper. */
static void await_adoption(pid_t pid)
{
    for (int i = 0; i < 2000; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
            return;
        if (errno != ECHILD)
            return;
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    nsbox_warn("sandbox init %d was not handed to nsbox within 100 ms", (int)pid);
}

pid_t nsbox_spawner_clone(struct spawn *s, int flags, bool *placed)
{
    int fd = __atomic_load_n(&spawner_fd, __ATOMIC_SEQ_CST);
    if (fd < 0)
        return -2;
    struct buf b = {0};
    int fds[MAX_FDS];
    size_t nfds;
    if (pack(s, flags, &b, fds, &nfds) < 0) {
        free(b.p);
        return -2;
    }
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
        free(b.p);
        return -2;
    }
    int one = 1;
    uint64_t len = b.len;
    struct reply rep;
    bool sent = send_fds(fd, &one, sizeof(one), &pair[1], 1) == (ssize_t)sizeof(one);
    close(pair[1]);
    if (!sent) {
        close(pair[0]);
        free(b.p);
        return -2; /* the spawner is gone: the old way */
    }
    bool ok = send_fds(pair[0], &len, sizeof(len), fds, nfds) == (ssize_t)sizeof(len) &&
              write_all(pair[0], b.p, b.len) && read_all(pair[0], &rep, sizeof(rep));
    free(b.p);
    if (!ok) {
        close(pair[0]);
        errno = EIO;
        return -1;
    }
    /* EOF: the worker has exited (init closed its copy first). */
    char c;
    while (read(pair[0], &c, 1) < 0 && errno == EINTR)
        ;
    close(pair[0]);
    if (rep.pid < 0) {
        errno = rep.err ? rep.err : EIO;
        return -1;
    }
    await_adoption(rep.pid);
    *placed = rep.placed;
    return rep.pid;
}
