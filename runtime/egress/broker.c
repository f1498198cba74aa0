/* The broker process (broker.h): its event loop, its control socket and
 * the listeners it serves.  Connections are broker_relay.c's, DNS
 * broker_dns.c's. */
#include "broker.h"

#include <errno.h>
#include <grp.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/fsutil.h"
#include "../../common/syscalls.h"
#include "../internal.h"
#include "../state.h"
#include "broker_internal.h"

#define CTL_MAX (64 * 1024)
#define CTL_MAX_FDS BROKER_MAX_LISTENERS

void broker_watch(struct broker *b, int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event ev = {.events = events, .data.u64 = tag};
    epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev);
}

void broker_unwatch(struct broker *b, int fd)
{
    epoll_ctl(b->ep, EPOLL_CTL_DEL, fd, NULL);
}

/* ---- listeners ---- */

static void close_listener(struct broker *b, size_t i)
{
    broker_unwatch(b, b->listeners[i].fd);
    close(b->listeners[i].fd);
    b->listeners[i] = b->listeners[--b->n_listeners];
}

/* Sealed: every listener and every connection closed, before the answer
 * goes back (egress.h: "closes every listener and every open connection
 * before returning"). */
static void seal(struct broker *b)
{
    for (size_t i = 0; i < BROKER_MAX_CONNS; i++)
        broker_conn_close(b, &b->conns[i], true);
    while (b->n_listeners > 0)
        close_listener(b, 0);
    b->policy.n = 0;
    broker_tls_stop(b, NULL); /* and every connection it holds */
}

static bool have_listener(const struct broker *b, enum listener_kind kind, uint16_t port)
{
    for (size_t i = 0; i < b->n_listeners; i++)
        if (b->listeners[i].kind == kind && (kind != L_TCP || b->listeners[i].port == port))
            return true;
    return false;
}

/* Listeners on ports the new policy no longer has: closed. */
static void drop_unused_listeners(struct broker *b)
{
    uint16_t ports[BROKER_MAX_LISTENERS];
    size_t n = egress_policy_ports(&b->policy, ports, BROKER_MAX_LISTENERS);
    for (size_t i = b->n_listeners; i-- > 0;) {
        bool used = b->listeners[i].kind != L_TCP;
        for (size_t k = 0; k < n && !used; k++)
            used = ports[k] == b->listeners[i].port;
        if (!used)
            close_listener(b, i);
    }
}

/* The fds of a policy message, described by its "fds" array, adopted
 * (a duplicate of a listener it has is closed). */
static void adopt_listeners(struct broker *b, json_t *desc, int *fds, size_t n_fds)
{
    for (size_t i = 0; i < n_fds; i++) {
        json_t *d = json_array_get(desc, i);
        const char *kind = json_string_value(json_object_get(d, "kind"));
        json_int_t port = json_integer_value(json_object_get(d, "port"));
        enum listener_kind k = kind == NULL                   ? L_TCP
                               : strcmp(kind, "dns-udp") == 0 ? L_DNS_UDP
                               : strcmp(kind, "dns-tcp") == 0 ? L_DNS_TCP
                                                              : L_TCP;
        if (kind == NULL || (k == L_TCP && strcmp(kind, "tcp") != 0) || port < 0 || port > 65535 ||
            have_listener(b, k, (uint16_t)port) || b->n_listeners == BROKER_MAX_LISTENERS) {
            close(fds[i]);
            continue;
        }
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        size_t idx = b->n_listeners++;
        b->listeners[idx] = (struct listener){fds[i], k, k == L_TCP ? (uint16_t)port : 53};
        broker_watch(b, fds[i], EPOLLIN, BROKER_TAG(TAG_LISTENER, (uint64_t)fds[i]));
    }
}

/* ---- control ---- */

static json_t *error_reply(const char *msg)
{
    return json_pack("{s:s}", "error", msg);
}

static json_t *ports_json(const struct broker *b)
{
    json_t *a = json_array();
    for (size_t i = 0; i < b->n_listeners; i++)
        if (b->listeners[i].kind == L_TCP)
            json_array_append_new(a, json_integer(b->listeners[i].port));
    return a;
}

static json_t *op_policy(struct broker *b, json_t *req, int *fds, size_t n_fds)
{
    struct egress_policy p = {.n = 0};
    struct nsbox_err err;
    json_t *rules = json_object_get(req, "rules"), *priv = json_object_get(req, "private");
    size_t i;
    json_t *r;
    char why[1024];

    json_array_foreach (rules, i, r) {
        const char *text = json_string_value(r);
        size_t before = p.n;
        if (text == NULL || egress_policy_add(&p, text, &err) < 0) {
            for (size_t k = 0; k < n_fds; k++)
                close(fds[k]);
            return error_reply(text == NULL ? "a rule is not a string" : err.msg);
        }
        /* allow_private is no part of a rule's text: said beside it. */
        for (size_t k = before; k < p.n; k++)
            p.rules[k].allow_private = json_is_true(json_array_get(priv, i));
    }
    if (p.n == 0) {
        for (size_t k = 0; k < n_fds; k++)
            close(fds[k]);
        seal(b);
        json_t *answer = json_pack("{s:b, s:o}", "ok", 1, "ports", json_array());
        if (broker_tls_policy(b, req, answer, why, sizeof(why)) < 0) {
            json_decref(answer);
            return error_reply(why);
        }
        return answer;
    }
    b->policy = p;
    json_t *answer = json_object();
    /* The helper first: which hosts are inspected decides which open
     * connections may stay. */
    if (broker_tls_policy(b, req, answer, why, sizeof(why)) < 0) {
        for (size_t k = 0; k < n_fds; k++)
            close(fds[k]);
        json_decref(answer);
        return error_reply(why);
    }
    broker_conn_recheck(b);
    drop_unused_listeners(b);
    adopt_listeners(b, json_object_get(req, "fds"), fds, n_fds);
    json_object_set_new(answer, "ok", json_true());
    json_object_set_new(answer, "ports", ports_json(b));
    json_object_set_new(
        answer, "dns",
        json_boolean(have_listener(b, L_DNS_UDP, 0) && have_listener(b, L_DNS_TCP, 0)));
    return answer;
}

static json_t *op_audit(struct broker *b, json_t *req)
{
    uint64_t next = 0;
    json_int_t since = json_integer_value(json_object_get(req, "since"));
    json_t *a = broker_audit_json(b, since > 0 ? (uint64_t)since : 0, &next);
    if (a == NULL)
        return error_reply("out of memory");
    return json_pack("{s:b, s:I, s:o}", "ok", 1, "next", (json_int_t)next, "records", a);
}

static json_t *dispatch(struct broker *b, const char *text, size_t len, int *fds, size_t n_fds)
{
    json_error_t je;
    _cleanup_json_ json_t *req = json_loadb(text, len, 0, &je);
    const char *op = json_string_value(json_object_get(req, "op"));
    if (op != NULL && strcmp(op, "policy") == 0)
        return op_policy(b, req, fds, n_fds);
    for (size_t k = 0; k < n_fds; k++)
        close(fds[k]);
    if (op != NULL && strcmp(op, "audit") == 0)
        return op_audit(b, req);
    if (op != NULL && strcmp(op, "state") == 0)
        return json_pack("{s:b, s:o, s:b, s:i}", "ok", 1, "ports", ports_json(b), "dns",
                         have_listener(b, L_DNS_UDP, 0) && have_listener(b, L_DNS_TCP, 0), "rules",
                         (int)b->policy.n);
    if (op != NULL && strcmp(op, "quit") == 0) {
        b->quit = true;
        return json_pack("{s:b}", "ok", 1);
    }
    return error_reply("unknown or malformed request");
}

/* One datagram: a request and its fds (SCM_RIGHTS, any number up to the
 * listeners' bound).  Returns its length, 0 at EOF, -1 on error. */
static ssize_t recv_request(int fd, char *buf, size_t size, int *fds, size_t *n_fds)
{
    char cbuf[CMSG_SPACE(CTL_MAX_FDS * sizeof(int))];
    struct iovec iov = {.iov_base = buf, .iov_len = size};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    *n_fds = 0;
    for (struct cmsghdr *c = n < 0 ? NULL : CMSG_FIRSTHDR(&mh); c != NULL;
         c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fds + *n_fds, CMSG_DATA(c), k * sizeof(int));
        *n_fds += k;
    }
    if (n >= 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        for (size_t k = 0; k < *n_fds; k++)
            close(fds[k]);
        *n_fds = 0;
        return -1;
    }
    return n;
}

static void drop_ctl(struct broker *b, size_t i)
{
    broker_unwatch(b, b->ctl[i]);
    close(b->ctl[i]);
    b->ctl[i] = -1;
}

static void handle_ctl(struct broker *b, size_t i)
{
    static char buf[CTL_MAX + 1];
    int fds[CTL_MAX_FDS];
    size_t n_fds;
    ssize_t n = recv_request(b->ctl[i], buf, CTL_MAX, fds, &n_fds);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop_ctl(b, i);
        return;
    }
    _cleanup_json_ json_t *reply = dispatch(b, buf, (size_t)n, fds, n_fds);
    explicit_bzero(buf, (size_t)n); /* a policy op's secrets */
    _cleanup_free_ char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
    if (text == NULL || send(b->ctl[i], text, strlen(text), MSG_NOSIGNAL) < 0)
        drop_ctl(b, i);
}

/* Only nsbox's own user is served: the socket is 0600 in a 0700 (0711
 * as root) directory, and the peer's uid is checked too. */
static void accept_ctl(struct broker *b)
{
    int fd = accept4(b->ctl_listen, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != b->owner) {
        close(fd);
        return;
    }
    for (size_t i = 0; i < BROKER_MAX_CTL; i++) {
        if (b->ctl[i] < 0) {
            b->ctl[i] = fd;
            broker_watch(b, fd, EPOLLIN, BROKER_TAG(TAG_CTL, i));
            return;
        }
    }
    close(fd);
}

/* ---- setup ---- */

static int ctl_socket(const char *state_dir)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/egress.sock", dfd);
    unlinkat(dfd, "egress.sock", 0);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    mode_t old = umask(0177);
    int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0 || listen(fd, 8) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* A pidfd of the sandbox's init, checked against its start time in the
 * state (a recycled pid is not the sandbox). */
static int init_pidfd(const char *state_dir)
{
    struct nsbox_sandbox sb = {0};
    struct nsbox_err err;
    unsigned long long start = 0;
    snprintf(sb.state_dir, sizeof(sb.state_dir), "%s", state_dir);
    if (nsbox_state_read(&sb, &start, &err) < 0 || sb.pid <= 0)
        return -1;
    int fd = nsbox_pidfd_open(sb.pid, 0);
    if (fd >= 0 && nsbox_proc_starttime(sb.pid) != start) {
        close(fd);
        return -1;
    }
    return fd;
}

/* STATE/egress.pid: "PID START" (start time, /proc/PID/stat field 22),
 * for nsbox_egress_reap. */
static void write_pid(const char *state_dir)
{
    char text[64];
    struct nsbox_err ignored;
    int n = snprintf(text, sizeof(text), "%d %llu\n", (int)getpid(),
                     nsbox_proc_starttime(getpid()));
    _cleanup_close_ int dfd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        nsbox_write_file_replace(dfd, "egress.pid", text, (size_t)n, 0600, &ignored);
}

/* Root's broker needs root for nothing past setup (its sockets are made,
 * init's pidfd held): it goes on as nobody, no groups, not dumpable, no
 * new privileges, so a bug in its parsers of hostile bytes is a bug in an
 * unprivileged process.  A user's broker is that user already. */
static int drop_privileges(void)
{
    if (geteuid() == 0 &&
        (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
         setresuid(65534, 65534, 65534) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0))
        return -1;
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static int setup(struct broker *b, const char *state_dir)
{
    b->owner = getuid();
    b->ep = epoll_create1(EPOLL_CLOEXEC);
    b->pidfd = init_pidfd(state_dir);
    b->ctl_listen = ctl_socket(state_dir);
    for (size_t i = 0; i < BROKER_MAX_CTL; i++)
        b->ctl[i] = -1;
    if (b->ep < 0 || b->pidfd < 0 || b->ctl_listen < 0 ||
        pipe2(b->resolver, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    write_pid(state_dir);
    broker_tls_init(b, state_dir);
    broker_watch(b, b->pidfd, EPOLLIN, BROKER_TAG(TAG_PIDFD, 0));
    broker_watch(b, b->ctl_listen, EPOLLIN, BROKER_TAG(TAG_CTL_LISTEN, 0));
    broker_watch(b, b->resolver[0], EPOLLIN, BROKER_TAG(TAG_RESOLVER, 0));
    return 0;
}

static struct listener *listener_by_fd(struct broker *b, int fd)
{
    for (size_t i = 0; i < b->n_listeners; i++)
        if (b->listeners[i].fd == fd)
            return &b->listeners[i];
    return NULL;
}

static void dispatch_event(struct broker *b, const struct epoll_event *ev)
{
    uint64_t idx = ev->data.u64 & ((1ull << 56) - 1);
    struct listener *l;
    switch ((enum broker_tag)(ev->data.u64 >> 56)) {
    case TAG_PIDFD:
        b->quit = true; /* init is gone: so is the sandbox */
        break;
    case TAG_CTL_LISTEN:
        accept_ctl(b);
        break;
    case TAG_CTL:
        if (b->ctl[idx] >= 0)
            handle_ctl(b, idx);
        break;
    case TAG_RESOLVER:
        broker_resolve_drain(b);
        break;
    case TAG_LISTENER:
        l = listener_by_fd(b, (int)idx);
        if (l != NULL && l->kind == L_DNS_UDP)
            broker_dns_udp(b, l->fd);
        else if (l != NULL)
            broker_accept(b, l);
        break;
    case TAG_TLS:
        broker_tls_event(b, ev->events);
        break;
    case TAG_CLIENT:
    case TAG_UPSTREAM:
        broker_conn_event(b, idx, ev->data.u64 >> 56 == TAG_UPSTREAM, ev->events);
        break;
    }
}

_Noreturn void egress_broker_main(const char *state_dir)
{
    static struct broker b;
    struct epoll_event evs[64];
    char ready = 1;

    signal(SIGPIPE, SIG_IGN);
    if (setup(&b, state_dir) < 0)
        _exit(1);
    /* Pins no directory of the caller's (a mount it may want to undo). */
    if (chdir("/") < 0 || drop_privileges() < 0)
        _exit(1);
    /* Ready: the control socket is bound, so nsbox can connect. */
    if (write(3, &ready, 1) != 1)
        _exit(1);
    close(3);
    time_t tick = time(NULL);
    while (!b.quit) {
        int n = epoll_wait(b.ep, evs, 64, 1000);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n && !b.quit; i++)
            dispatch_event(&b, &evs[i]);
        time_t now = time(NULL);
        if (now != tick)
            broker_conn_tick(&b, tick = now);
    }
    seal(&b);
    _exit(0);
}
