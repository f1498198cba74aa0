/* Long-lived commands (see proc.h). */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "disk.h"
#include "internal.h"
#include "proto.h"

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* A new control connection: one end to init over the sandbox's, the other
 * ours.  init first sends a tmpfs disk's fd on it, as on any connection:
 * *disk gets it when asked for (else it is closed). */
static int attach(const struct nsbox_sandbox *sb, int *disk, struct nsbox_err *err)
{
    int sp[2];
    struct nsbox_msg_attach m = {.type = NSBOX_MSG_ATTACH};

    if (sb->ctl < 0)
        return nsbox_err_set(err, EBADF, "sandbox %s is not connected", sb->id);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return nsbox_err_sys(err, "socketpair");
    int r = nsbox_proto_send(sb->ctl, &m, sizeof(m), &sp[1], 1, err);
    close(sp[1]);
    if (r < 0) {
        close(sp[0]);
        return -1;
    }
    if (sb->disk.kind == NSBOX_DISK_TMPFS) {
        struct nsbox_msg_disk d;
        int fds[3] = {-1, -1, -1};
        struct pollfd pfd = {.fd = sp[0], .events = POLLIN};
        ssize_t n = 0;
        if (poll(&pfd, 1, 10000) == 1)
            n = nsbox_proto_recv(sp[0], &d, sizeof(d), fds, NULL);
        bool ok = n == (ssize_t)sizeof(d) && d.type == NSBOX_MSG_DISK && fds[0] >= 0;
        for (int i = disk != NULL && ok ? 1 : 0; n > 0 && i < 3; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        if (!ok) {
            close(sp[0]);
            return nsbox_err_set(err, EPIPE, "sandbox %s refused a new connection", sb->id);
        }
        if (disk != NULL)
            *disk = fds[0];
    }
    return sp[0];
}

int nsbox_sandbox_attach(struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    return attach(sb, NULL, err);
}

int nsbox_sandbox_disk_open(const struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    if (sb->disk.kind != NSBOX_DISK_TMPFS)
        return nsbox_err_set(err, EINVAL, "sandbox %s has no tmpfs disk", sb->id);
    if (sb->disk.fd >= 0) {
        int fd = fcntl(sb->disk.fd, F_DUPFD_CLOEXEC, 3);
        return fd >= 0 ? fd : nsbox_err_sys(err, "cannot open the disk of sandbox %s", sb->id);
    }
    int disk = -1;
    int c = attach(sb, &disk, err);
    if (c < 0)
        return -1;
    close(c); /* init forgets the connection; the disk's fd stays ours */
    return disk;
}

/* The master of a terminal exec: init sends it (NSBOX_MSG_PTY) right
 * after the fork, or an ERROR when it could not open one. */
static int receive_pty(struct nsbox_proc *p, struct nsbox_err *err)
{
    struct pollfd pfd = {.fd = p->ctl, .events = POLLIN};
    struct nsbox_msg_status m;
    int fds[3];
    struct stat st;

    for (;;) {
        if (poll(&pfd, 1, 10000) != 1)
            return nsbox_err_set(err, ETIMEDOUT, "the sandbox sent no terminal");
        ssize_t n = nsbox_proto_recv(p->ctl, &m, sizeof(m), fds, err);
        if (n <= 0)
            return n == 0 ? nsbox_err_set(err, EPIPE, "the sandbox died (its init is gone)") : -1;
        if ((size_t)n == sizeof(m) && m.id == p->id && m.type == NSBOX_MSG_ERROR) {
            for (int i = 0; i < 3; i++)
                close_fd(&fds[i]);
            return nsbox_err_set(err, m.err_code, "sandbox: %.*s", NSBOX_PROTO_ERR_MAX, m.err);
        }
        if ((size_t)n == sizeof(m) && m.id == p->id && m.type == NSBOX_MSG_PTY && fds[0] >= 0)
            break;
        for (int i = 0; i < 3; i++)
            close_fd(&fds[i]);
    }
    close_fd(&fds[1]);
    close_fd(&fds[2]);
    /* We only read, write and resize it; still, it must be a pty master. */
    if (fstat(fds[0], &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2)) {
        close_fd(&fds[0]);
        return nsbox_err_set(err, ENOTTY, "the sandbox sent something other than a terminal");
    }
    p->pty = fds[0];
    fcntl(p->pty, F_SETFL, O_NONBLOCK);
    return 0;
}

static int start_tty(struct nsbox_proc *p, const struct nsbox_exec_opts *o, struct nsbox_err *err)
{
    p->id = nsbox_exec_new_id();
    if (nsbox_exec_send(p->ctl, p->id, o, NULL, err) < 0 || receive_pty(p, err) < 0) {
        close_fd(&p->ctl); /* init kills what the connection started */
        return -1;
    }
    return 0;
}

int nsbox_proc_start(struct nsbox_sandbox *sb, const struct nsbox_exec_opts *o,
                     struct nsbox_proc *p, struct nsbox_err *err)
{
    int sp[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};

    memset(p, 0, sizeof(*p));
    p->ctl = p->chan = p->out = p->err = p->pty = -1;
    p->ctl = nsbox_sandbox_attach(sb, err);
    if (p->ctl < 0)
        return -1;
    if (o->tty)
        return start_tty(p, o, err);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(po, O_CLOEXEC) < 0 ||
        pipe2(pe, O_CLOEXEC) < 0) {
        nsbox_err_sys(err, "cannot make the pipes of a process");
        goto fail;
    }
    p->id = nsbox_exec_new_id();
    int fds[3] = {sp[1], po[1], pe[1]};
    if (nsbox_exec_send(p->ctl, p->id, o, fds, err) < 0)
        goto fail;
    close(sp[1]), close(po[1]), close(pe[1]);
    p->chan = sp[0], p->out = po[0], p->err = pe[0];
    fcntl(p->out, F_SETFL, O_NONBLOCK);
    fcntl(p->err, F_SETFL, O_NONBLOCK);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&sp[i]);
        close_fd(&po[i]);
        close_fd(&pe[i]);
    }
    close_fd(&p->ctl);
    return -1;
}

int nsbox_proc_adopt(struct nsbox_sandbox *sb, pid_t pid, struct nsbox_proc *p,
                     struct nsbox_err *err)
{
    p->exited = false;
    p->wait_status = 0;
    p->pty = -1;
    p->ctl = nsbox_sandbox_attach(sb, err);
    if (p->ctl < 0)
        return -1;
    p->id = nsbox_exec_new_id();
    struct nsbox_msg_adopt m = {.type = NSBOX_MSG_ADOPT, .pid = pid, .id = p->id};
    if (nsbox_proto_send(p->ctl, &m, sizeof(m), NULL, 0, err) < 0) {
        close_fd(&p->ctl);
        return -1;
    }
    for (;;) {
        struct pollfd pfd = {.fd = p->ctl, .events = POLLIN};
        struct nsbox_msg_status st;
        int fds[3];
        if (poll(&pfd, 1, 10000) != 1) {
            close_fd(&p->ctl);
            return nsbox_err_set(err, ETIMEDOUT, "the sandbox did not answer");
        }
        ssize_t n = nsbox_proto_recv(p->ctl, &st, sizeof(st), fds, err);
        for (int i = 0; n > 0 && i < 3; i++)
            close_fd(&fds[i]);
        if (n <= 0) {
            close_fd(&p->ctl);
            return n == 0 ? nsbox_err_set(err, EPIPE, "the sandbox died (its init is gone)") : -1;
        }
        if ((size_t)n != sizeof(st) || st.id != p->id)
            continue;
        if (st.type == NSBOX_MSG_ADOPTED && st.pid == pid)
            return 0;
        if (st.type == NSBOX_MSG_ERROR) {
            close_fd(&p->ctl);
            return nsbox_err_set(err, st.err_code ? st.err_code : ESRCH, "sandbox: %.*s",
                                 NSBOX_PROTO_ERR_MAX, st.err);
        }
    }
}

int nsbox_proc_signal(struct nsbox_proc *p, int sig, struct nsbox_err *err)
{
    struct nsbox_msg_signal m = {.type = NSBOX_MSG_SIGNAL, .sig = sig, .id = p->id};
    if (p->ctl < 0 || p->exited)
        return nsbox_err_set(err, ESRCH, "the process has exited");
    return nsbox_proto_send(p->ctl, &m, sizeof(m), NULL, 0, err);
}

int nsbox_proc_wait(struct nsbox_proc *p, int timeout_ms, struct nsbox_err *err)
{
    while (!p->exited) {
        struct pollfd pfd = {.fd = p->ctl, .events = POLLIN};
        int r = p->ctl < 0 ? -1 : poll(&pfd, 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return nsbox_err_sys(err, "poll");
        if (r == 0)
            return 0;
        struct nsbox_msg_status m;
        int fds[3];
        ssize_t n = nsbox_proto_recv(p->ctl, &m, sizeof(m), fds, err);
        for (int i = 0; n >= 0 && i < 3; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        if (n <= 0)
            return n == 0 ? nsbox_err_set(err, EPIPE, "the sandbox died (its init is gone)") : -1;
        if ((size_t)n != sizeof(m) || m.id != p->id)
            continue;
        if (m.type == NSBOX_MSG_ERROR) {
            p->exited = true;
            p->wait_status = 127 << 8;
            return nsbox_err_set(err, m.err_code, "sandbox: %.*s", NSBOX_PROTO_ERR_MAX, m.err);
        }
        if (m.type != NSBOX_MSG_EXITED)
            continue;
        p->exited = true;
        p->wait_status = m.wait_status;
        p->cpu_us = m.utime_us + m.stime_us;
        p->maxrss_bytes = m.maxrss_kb * 1024;
    }
    return 1;
}

void nsbox_proc_close(struct nsbox_proc *p)
{
    struct nsbox_err ignored;
    if (p->ctl >= 0 && !p->exited)
        nsbox_proc_signal(p, SIGKILL, &ignored);
    /* init kills what a closed connection started, too. */
    close_fd(&p->ctl);
    close_fd(&p->chan);
    close_fd(&p->out);
    close_fd(&p->err);
    close_fd(&p->pty);
}
