#include "net.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <time.h>

/* RTM_NEWLINK on ifindex 1 with IFF_UP: the same request `ip link set lo
 * up` sends, acknowledged so that a failure is reported, not assumed. */
int nsbox_net_loopback_up(struct nsbox_err *err)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];
    unsigned int seq = (unsigned int)time(NULL);
    int r = -1;

    struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
    if (nl == NULL)
        return nsbox_err_sys(err, "cannot open rtnetlink socket");
    if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        nsbox_err_sys(err, "cannot bind rtnetlink socket");
        goto out;
    }
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = seq;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
    ifm->ifi_family = AF_UNSPEC;
    ifm->ifi_index = (int)if_nametoindex("lo");
    ifm->ifi_flags = IFF_UP;
    ifm->ifi_change = IFF_UP;
    if (ifm->ifi_index == 0) {
        nsbox_err_sys(err, "no loopback interface");
        goto out;
    }
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
        nsbox_err_sys(err, "cannot send rtnetlink request");
        goto out;
    }
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
    if (n < 0) {
        nsbox_err_sys(err, "no rtnetlink answer");
        goto out;
    }
    if (mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), NULL, NULL) < 0) {
        nsbox_err_sys(err, "cannot bring loopback up");
        goto out;
    }
    r = 0;
out:
    mnl_socket_close(nl);
    return r;
}
