#include "proto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int nsbox_proto_send(int sock, const void *msg, size_t len, const int *fds, size_t n_fds,
                     struct nsbox_err *err)
{
    char cbuf[CMSG_SPACE(NSBOX_PROTO_SEND_FDS * sizeof(int))];
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

    if (n_fds > NSBOX_PROTO_SEND_FDS)
        return nsbox_err_set(err, EINVAL, "too many fds");
    if (n_fds > 0) {
        memset(cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
    }
    ssize_t n;
    do
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return nsbox_err_sys(err, "cannot send to the sandbox");
    return 0;
}

ssize_t nsbox_proto_recv(int sock, void *buf, size_t size, int fds[3], struct nsbox_err *err)
{
    char cbuf[CMSG_SPACE(3 * sizeof(int))];
    struct iovec iov = {.iov_base = buf, .iov_len = size};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t n;

    for (int i = 0; i < 3; i++)
        fds[i] = -1;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return nsbox_err_sys(err, "cannot receive from the sandbox");
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *in = (int *)CMSG_DATA(c);
        for (size_t i = 0; i < k; i++) {
            if (i < 3 && fds[i] < 0)
                fds[i] = in[i];
            else
                close(in[i]);
        }
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        for (int i = 0; i < 3; i++)
            if (fds[i] >= 0)
                close(fds[i]), fds[i] = -1;
        return nsbox_err_set(err, EMSGSIZE, "oversized message from the sandbox");
    }
    return n;
}
