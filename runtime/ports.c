/* Ports of a sandbox from the host (see ports.h). */
#include "ports.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/clock.h"
#include "proto.h"

static int landlock_refusal(const struct nsbox_sandbox *sb, struct nsbox_err *err)
{
    return nsbox_err_set(err, ENOTSUP,
                         "sandbox %s runs under --isolation landlock, which has no network "
                         "namespace of its own: its ports cannot be reached or exposed",
                         sb->id);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
    int64_t l = deadline - now_ms();
    return l < 0 ? 0 : (int)l;
}

/* init's answer on the reply socket: the socket it made, or -1. */
static int receive_socket(int reply, uint16_t port, int64_t deadline, struct nsbox_err *err)
{
    struct pollfd pfd = {.fd = reply, .events = POLLIN};
    struct nsbox_msg_status m;
    int fds[3];

    int r;
    while ((r = poll(&pfd, 1, left_ms(deadline))) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return nsbox_err_set(err, ETIMEDOUT, "the sandbox's init did not answer a connect");
    ssize_t n = nsbox_proto_recv(reply, &m, sizeof(m), fds, err);
    if (n < 0)
        return -1;
    for (int i = 1; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (n == 0)
        return nsbox_err_set(err, EPIPE, "the sandbox's init went away");
    int type;
    socklen_t tl = sizeof(type);
    bool good = (size_t)n == sizeof(m) && m.type == NSBOX_MSG_CONNECTED && fds[0] >= 0 &&
                getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM;
    if (good)
        return fds[0];
    if (fds[0] >= 0)
        close(fds[0]);
    if ((size_t)n == sizeof(m) && m.type == NSBOX_MSG_ERROR) {
        m.err[sizeof(m.err) - 1] = '\0';
        return nsbox_err_set(err, m.err_code ? m.err_code : EPROTO, "%s", m.err);
    }
    return nsbox_err_set(err, EPROTO, "the sandbox's init sent no socket for port %u", port);
}

/* Waits for fd's connect to finish; 0 or -1 with err. */
static int finish_connect(int fd, uint16_t port, int64_t deadline, struct nsbox_err *err)
{
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    int r, e = 0;
    socklen_t el = sizeof(e);

    while ((r = poll(&pfd, 1, left_ms(deadline))) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return nsbox_err_set(err, ETIMEDOUT, "connecting to port %u in the sandbox timed out",
                             port);
    if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
        return nsbox_err_sys(err, "connecting to port %u in the sandbox", port);
    if (e != 0)
        return nsbox_err_set(err, e, "cannot connect to port %u in the sandbox: %s", port,
                             strerror(e));
    return 0;
}

int nsbox_port_connect(struct nsbox_sandbox *sb, int family, uint16_t port, int timeout_ms,
                       struct nsbox_err *err)
{
    struct nsbox_msg_connect m = {
        .type = NSBOX_MSG_CONNECT, .family = family == 6 ? 6 : 4, .port = port};
    int sp[2];
    int64_t deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);

    if (sb->isolation == NSBOX_ISOLATION_LANDLOCK)
        return landlock_refusal(sb, err);
    if (port == 0)
        return nsbox_err_set(err, EINVAL, "port 0");
    if (sb->ctl < 0)
        return nsbox_err_set(err, EBADF, "sandbox %s is not connected", sb->id);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return nsbox_err_sys(err, "socketpair");
    int r = nsbox_proto_send(sb->ctl, &m, sizeof(m), &sp[1], 1, err);
    close(sp[1]);
    int fd = r < 0 ? -1 : receive_socket(sp[0], port, deadline, err);
    close(sp[0]);
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    if (finish_connect(fd, port, deadline, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One table's lines ("sl local_address rem_address st ..."): each
 * listening socket (st 0A) on the any or loopback address is passed to
 * fn with its port.  v6 tables have 32 hex digits of address. */
static int scan_table(pid_t pid, bool v6, void (*fn)(void *ctx, uint16_t port, unsigned fam),
                      void *ctx, struct nsbox_err *err)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, v6 ? "tcp6" : "tcp");
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        if (v6 && errno == ENOENT)
            return 0; /* no IPv6 in this kernel */
        return nsbox_err_sys(err, "cannot read %s", path);
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char addr[40];
        unsigned port, st;
        if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", addr, &port, &st) != 3 ||
            st != 0x0A || port == 0 || port > 65535)
            continue;
        unsigned fam = 0;
        if (!v6) {
            /* the address as the kernel's u32 in hex: host byte order */
            if (strcmp(addr, "00000000") == 0 || strcasecmp(addr, "0100007F") == 0)
                fam = NSBOX_PORT_V4;
        } else if (strcmp(addr, "00000000000000000000000000000000") == 0) {
            fam = NSBOX_PORT_V6 | NSBOX_PORT_V4; /* [::] takes v4 unless V6ONLY */
        } else if (strcasecmp(addr, "00000000000000000000000001000000") == 0) {
            fam = NSBOX_PORT_V6;
        } else if (strcasecmp(addr, "0000000000000000FFFF00000100007F") == 0) {
            fam = NSBOX_PORT_V4;
        }
        if (fam)
            fn(ctx, (uint16_t)port, fam);
    }
    fclose(f);
    return 0;
}

static int scan(const struct nsbox_sandbox *sb, void (*fn)(void *, uint16_t, unsigned), void *ctx,
                struct nsbox_err *err)
{
    if (sb->isolation == NSBOX_ISOLATION_LANDLOCK)
        return landlock_refusal(sb, err);
    if (sb->pid <= 0)
        return nsbox_err_set(err, ESRCH, "sandbox %s has no init", sb->id);
    if (scan_table(sb->pid, false, fn, ctx, err) < 0 || scan_table(sb->pid, true, fn, ctx, err) < 0)
        return -1;
    return 0;
}

struct one {
    uint16_t port;
    unsigned fam;
};

static void match_one(void *ctx, uint16_t port, unsigned fam)
{
    struct one *o = ctx;
    if (port == o->port)
        o->fam |= fam;
}

int nsbox_port_listening(const struct nsbox_sandbox *sb, uint16_t port, struct nsbox_err *err)
{
    struct one o = {.port = port};
    if (scan(sb, match_one, &o, err) < 0)
        return -1;
    return (int)o.fam;
}

struct all {
    unsigned char seen[65536 / 8];
};

static void mark(void *ctx, uint16_t port, unsigned fam)
{
    struct all *a = ctx;
    a->seen[port / 8] |= (unsigned char)(1u << (port % 8));
}

int nsbox_ports_listening(const struct nsbox_sandbox *sb, uint16_t *ports, size_t max,
                          struct nsbox_err *err)
{
    struct all a;
    memset(&a, 0, sizeof(a));
    if (scan(sb, mark, &a, err) < 0)
        return -1;
    size_t n = 0;
    for (unsigned p = 1; p < 65536; p++)
        if (a.seen[p / 8] & (1u << (p % 8))) {
            if (n < max)
                ports[n] = (uint16_t)p;
            n++;
        }
    return (int)n;
}
