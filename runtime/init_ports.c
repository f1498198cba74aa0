/* init's side of exposed ports (NSBOX_MSG_CONNECT): a TCP socket made in
 * the sandbox's network namespace and connected to its own loopback, for
 * a host that relays a client to a server in the sandbox (ports.h).
 *
 * Called from init's loop (init.c) only.  Rules: init never blocks here
 * (the connect is nonblocking and the answer goes on a fresh socket of
 * its own, made nonblocking), keeps no copy of the socket, and connects
 * nowhere but 127.0.0.1 or ::1: nothing routes from the sandbox out, and
 * a socket made here reaches only what already listens inside. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "init.h"
#include "proto.h"

static void answer(int reply, int code, const char *msg, int fd)
{
    struct nsbox_msg_status m = {.type = code ? NSBOX_MSG_ERROR : NSBOX_MSG_CONNECTED,
                                 .err_code = code};
    if (msg != NULL)
        snprintf(m.err, sizeof(m.err), "%s", msg);
    nsbox_proto_send(reply, &m, sizeof(m), fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, NULL);
}

/* The socket, its connect begun (0 or EINPROGRESS), or -1 with *code. */
static int connect_loopback(uint32_t family, uint16_t port, int *code)
{
    struct sockaddr_in a4 = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 a6 = {
        .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int af = family == 6 ? AF_INET6 : AF_INET;
    int fd = socket(af, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *code = errno;
        return -1;
    }
    int r = af == AF_INET6 ? connect(fd, (const struct sockaddr *)&a6, sizeof(a6))
                           : connect(fd, (const struct sockaddr *)&a4, sizeof(a4));
    if (r < 0 && errno != EINPROGRESS) {
        *code = errno;
        close(fd);
        return -1;
    }
    return fd;
}

void nsbox_init_connect(const struct nsbox_init_config *cfg, const void *buf, size_t len,
                        int fds[3])
{
    struct nsbox_msg_connect m;
    int type, code = 0;
    socklen_t tl = sizeof(type);
    char msg[NSBOX_PROTO_ERR_MAX];

    if (fds[0] < 0 || getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
        type != SOCK_SEQPACKET)
        return; /* no way to answer: the caller closes what came */
    int reply = fds[0];
    fds[0] = -1;
    fcntl(reply, F_SETFL, O_NONBLOCK);
    memcpy(&m, buf, len < sizeof(m) ? len : sizeof(m));
    if (len != sizeof(m) || (m.family != 4 && m.family != 6) || m.port == 0 || m.port > 65535) {
        answer(reply, EINVAL, "malformed connect request", -1);
    } else if (cfg->landlock) {
        answer(reply, ENOTSUP,
               "landlock isolation has no network namespace of its own: no port to connect to", -1);
    } else {
        int fd = connect_loopback(m.family, (uint16_t)m.port, &code);
        if (fd >= 0) {
            answer(reply, 0, NULL, fd);
            close(fd);
        } else {
            snprintf(msg, sizeof(msg), "cannot connect to port %u in the sandbox: %s", m.port,
                     strerror(code));
            answer(reply, code, msg, -1);
        }
    }
    close(reply);
}
