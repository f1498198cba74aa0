/* -p [ADDR:]HOST_PORT:PORT for run and create: the host's listeners,
 * bound before the sandbox is made (a port in use fails first, nothing
 * left behind), then handed to boxes/forward.h: run forwards in its own
 * process while the command runs, create forks a detached forwarder that
 * lives as long as the sandbox.  Loopback (127.0.0.1) unless ADDR says
 * otherwise, as docker's -p; ADDR may be [IPv6]. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../boxes/box.h"
#include "../boxes/forward.h"
#include "cli.h"

static int port_of(const char *s, size_t len, uint16_t *out)
{
    char buf[8];
    char *end;
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    unsigned long v = strtoul(buf, &end, 10);
    if (*end != '\0' || buf[0] < '0' || buf[0] > '9' || v == 0 || v > 65535)
        return -1;
    *out = (uint16_t)v;
    return 0;
}

const char *cli_publish_parse(const char *arg, struct cli_publish *p)
{
    static const char *bad = "-p takes [ADDR:]HOST_PORT:PORT, ports 1-65535 (e.g. 8080:80, "
                             "0.0.0.0:8080:80, [::1]:8080:80)";
    memset(p, 0, sizeof(*p));
    p->fd = -1;
    const char *last = strrchr(arg, ':');
    if (last == NULL || port_of(last + 1, strlen(last + 1), &p->port) < 0)
        return bad;
    const char *hp = last;
    while (hp > arg && hp[-1] != ':')
        hp--;
    if (port_of(hp, (size_t)(last - hp), &p->host_port) < 0)
        return bad;
    if (hp == arg) {
        snprintf(p->addr, sizeof(p->addr), "127.0.0.1");
    } else {
        size_t alen = (size_t)(hp - 1 - arg);
        const char *a = arg;
        if (alen >= 2 && a[0] == '[' && a[alen - 1] == ']')
            a++, alen -= 2;
        if (alen == 0 || alen >= sizeof(p->addr))
            return bad;
        memcpy(p->addr, a, alen);
        p->addr[alen] = '\0';
        struct in_addr a4;
        struct in6_addr a6;
        if (inet_pton(AF_INET, p->addr, &a4) != 1 && inet_pton(AF_INET6, p->addr, &a6) != 1)
            return "-p: ADDR must be an IPv4 or [IPv6] address";
    }
    snprintf(p->label, sizeof(p->label), "%s%s%s:%u->%u", strchr(p->addr, ':') ? "[" : "", p->addr,
             strchr(p->addr, ':') ? "]" : "", p->host_port, p->port);
    return NULL;
}

static int listen_one(struct cli_publish *p, struct nsbox_err *err)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(p->host_port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(p->host_port)};
    bool v6 = inet_pton(AF_INET, p->addr, &a4.sin_addr) != 1;
    if (v6)
        inet_pton(AF_INET6, p->addr, &a6.sin6_addr);
    int one = 1;
    p->fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->fd < 0)
        return nsbox_err_sys(err, "-p %s: socket", p->label);
    setsockopt(p->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (v6)
        setsockopt(p->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    int r = v6 ? bind(p->fd, (struct sockaddr *)&a6, sizeof(a6))
               : bind(p->fd, (struct sockaddr *)&a4, sizeof(a4));
    if (r < 0 || listen(p->fd, 512) < 0) {
        int e = errno;
        close(p->fd);
        p->fd = -1;
        if (e == EADDRINUSE)
            return nsbox_err_set(err, e, "-p %s: host port %s:%u is already in use", p->label,
                                 p->addr, p->host_port);
        if (e == EACCES)
            return nsbox_err_set(err, e,
                                 "-p %s: binding host port %u needs privilege (ports below "
                                 "1024, or net.ipv4.ip_unprivileged_port_start)",
                                 p->label, p->host_port);
        return nsbox_err_set(err, e, "-p %s: cannot listen on %s:%u: %s", p->label, p->addr,
                             p->host_port, strerror(e));
    }
    return 0;
}

int cli_publish_listen(struct cli_publish *p, size_t n, struct nsbox_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (listen_one(&p[i], err) < 0) {
            cli_publish_close(p, n);
            return -1;
        }
    return 0;
}

void cli_publish_close(struct cli_publish *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i].fd >= 0)
            close(p[i].fd);
        p[i].fd = -1;
    }
}

int cli_publish_start(struct box *box, struct cli_publish *p, size_t n, struct box_forward **fw,
                      struct nsbox_err *err)
{
    if (n > 0 && box_require_namespaces(box, "publishing ports (-p)", err) < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-splice */
    for (size_t i = 0; i < n; i++) {
        fw[i] = box_forward_start(box, p[i].port, p[i].fd, CLI_PUBLISH_CONNS, 0, err);
        if (fw[i] == NULL) {
            cli_publish_stop(fw, i);
            return -1;
        }
        p[i].fd = -1; /* the forward's now */
    }
    return 0;
}

void cli_publish_stop(struct box_forward **fw, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        box_forward_stop(fw[i]);
        fw[i] = NULL;
    }
}

int cli_publish_detach(struct box *box, struct cli_publish *p, size_t n, struct nsbox_err *err)
{
    uint16_t ports[CLI_PUBLISH_MAX];
    int fds[CLI_PUBLISH_MAX];
    const char *labels[CLI_PUBLISH_MAX];
    for (size_t i = 0; i < n; i++) {
        ports[i] = p[i].port;
        fds[i] = p[i].fd;
        labels[i] = p[i].label;
    }
    fflush(NULL);
    pid_t pid = box_forward_detach(box, ports, fds, labels, n, CLI_PUBLISH_CONNS, err);
    cli_publish_close(p, n); /* the forwarder has its own */
    return pid < 0 ? -1 : 0;
}
