#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "internal.h"
#include "proto.h"

/* Sends one request built in buf and waits for its acknowledgement, so
 * that a failure is reported, not assumed. */
static int rtnl_request(char *buf, struct nlmsghdr *nlh, const char *what, struct nsbox_err *err)
{
    int r = -1;
    struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
    if (nl == NULL)
        return nsbox_err_sys(err, "cannot open rtnetlink socket");
    nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = (unsigned int)time(NULL);
    if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        nsbox_err_sys(err, "cannot bind rtnetlink socket");
        goto out;
    }
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
        nsbox_err_sys(err, "cannot send rtnetlink request");
        goto out;
    }
    ssize_t n = mnl_socket_recvfrom(nl, buf, MNL_SOCKET_BUFFER_SIZE);
    if (n < 0) {
        nsbox_err_sys(err, "no rtnetlink answer");
        goto out;
    }
    if (mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(nl), NULL, NULL) < 0) {
        nsbox_err_sys(err, "cannot %s", what);
        goto out;
    }
    r = 0;
out:
    mnl_socket_close(nl);
    return r;
}

/* RTM_NEWLINK on "lo" with IFF_UP: the same request `ip link set lo up`
 * sends. */
int nsbox_net_loopback_up(struct nsbox_err *err)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];

    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWLINK;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
    ifm->ifi_family = AF_UNSPEC;
    ifm->ifi_index = (int)if_nametoindex("lo");
    ifm->ifi_flags = IFF_UP;
    ifm->ifi_change = IFF_UP;
    if (ifm->ifi_index == 0)
        return nsbox_err_sys(err, "no loopback interface");
    return rtnl_request(buf, nlh, "bring loopback up", err);
}

/* `ip route add local default dev lo table local` (and -6): every
 * destination is then local to this namespace, so a connect to any
 * address lands on a listener here or is refused -- never ENETUNREACH,
 * never the host's.  Without it nothing leaves either (no route), but the
 * broker's listeners could not catch a connect to a fake or literal
 * address. */
static int local_default(int family, int ifindex, struct nsbox_err *err)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];

    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWROUTE;
    nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
    struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
    rtm->rtm_family = (unsigned char)family;
    rtm->rtm_dst_len = 0;
    rtm->rtm_table = RT_TABLE_LOCAL;
    rtm->rtm_protocol = RTPROT_BOOT;
    rtm->rtm_scope = RT_SCOPE_HOST;
    rtm->rtm_type = RTN_LOCAL;
    mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
    return rtnl_request(buf, nlh,
                        family == AF_INET ? "add the IPv4 local default route"
                                          : "add the IPv6 local default route",
                        err);
}

int nsbox_net_capture_routes(struct nsbox_err *err)
{
    int lo = (int)if_nametoindex("lo");
    if (lo == 0)
        return nsbox_err_sys(err, "no loopback interface");
    if (local_default(AF_INET, lo, err) < 0)
        return -1;
    /* A kernel without IPv6 (ipv6.disable=1) has no v6 to capture. */
    if (local_default(AF_INET6, lo, err) < 0 && err->code != EAFNOSUPPORT)
        return -1;
    return 0;
}

int nsbox_net_write_etc(int dfd, const char *hostname, struct nsbox_err *err)
{
    /* ndots:0, one attempt: a name the broker does not know is refused at
     * once (NXDOMAIN), and a sealed sandbox's resolver gives up fast. */
    static const char resolv[] = "nameserver 127.0.0.1\noptions ndots:0 attempts:1 timeout:2\n";
    char hosts[512];
    int n = snprintf(hosts, sizeof(hosts),
                     "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                     "127.0.1.1\t%s\n",
                     hostname);
    if (nsbox_write_file_replace(dfd, NSBOX_NET_RESOLV, resolv, sizeof(resolv) - 1, 0644, err) <
            0 ||
        nsbox_write_file_replace(dfd, NSBOX_NET_HOSTS, hosts, (size_t)n, 0644, err) < 0)
        return -1;
    return 0;
}

/* ---- the host side: listeners from init (internal.h) ---- */

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

/* Collects the listeners init sends (NSBOX_MSG_LISTENER, in order) until
 * its closing status.  Returns how many came, or -1 with err. */
static ssize_t collect_listeners(int c, int *fds_out, size_t want, struct nsbox_err *err)
{
    union {
        struct nsbox_msg_listener l;
        struct nsbox_msg_status s;
    } m;
    size_t got = 0;

    for (;;) {
        int fds[3];
        struct pollfd pfd = {.fd = c, .events = POLLIN};
        if (poll(&pfd, 1, 10000) != 1) {
            close_all(fds_out, got);
            return nsbox_err_set(err, ETIMEDOUT, "the sandbox's init did not answer");
        }
        ssize_t n = nsbox_proto_recv(c, &m, sizeof(m), fds, err);
        if (n >= (ssize_t)sizeof(m.l) && m.l.type == NSBOX_MSG_LISTENER && m.l.index == got &&
            got < want && fds[0] >= 0) {
            fds_out[got++] = fds[0];
            fds[0] = -1;
        }
        for (int i = 0; i < 3; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        if (n == (ssize_t)sizeof(m.s) && m.s.type == NSBOX_MSG_ERROR) {
            m.s.err[sizeof(m.s.err) - 1] = '\0';
            if (m.s.err_code == 0 && got == want)
                return (ssize_t)got;
            close_all(fds_out, got);
            return nsbox_err_set(err, m.s.err_code ? m.s.err_code : EPROTO, "%s",
                                 m.s.err[0] ? m.s.err : "init sent too few listeners");
        }
        if (n <= 0) {
            close_all(fds_out, got);
            return n < 0 ? -1 : nsbox_err_set(err, EPIPE, "the sandbox's init went away");
        }
    }
}

int nsbox_sandbox_net_listen(struct nsbox_sandbox *sb, const uint16_t *ports, size_t n, bool dns,
                             int *fds_out, struct nsbox_err *err)
{
    struct nsbox_msg_listen m = {.type = NSBOX_MSG_LISTEN, .n_ports = (uint32_t)n, .dns = dns};

    if (n > NSBOX_LISTEN_MAX_PORTS)
        return nsbox_err_set(err, EINVAL, "at most %d ports", NSBOX_LISTEN_MAX_PORTS);
    memcpy(m.ports, ports, n * sizeof(*ports));
    _cleanup_close_ int c = nsbox_sandbox_attach(sb, err);
    if (c < 0 || nsbox_proto_send(c, &m, sizeof(m), NULL, 0, err) < 0)
        return -1;
    return collect_listeners(c, fds_out, n + (dns ? 2 : 0), err) < 0 ? -1 : 0;
}
