/* The broker's connections: each accepted connection of the sandbox is
 * matched to a rule by its destination (getsockname: the fake address of
 * a name, or a literal for an operator's IP:PORT rule), inspected when it
 * is a name's (the TLS ClientHello's server name, or every HTTP request
 * head), connected upstream to an address the broker resolved and vetted
 * itself, and relayed both ways.  Anything else is refused with a reset
 * (an HTTP refusal with a 403 saying why), and audited.  A connection to
 * a host:port that has method and path rules or a secret bound to it is
 * connected upstream the same way, then handed to nsbox-tls (TLS after its
 * SNI check, plain HTTP at its first bytes: broker_tls.c), which reads
 * every request. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker_internal.h"

#define PIPE_BYTES 65536 /* a pipe's default capacity: 16 pages */
/* The download direction's pipe: bigger moves fewer, larger chunks per
 * wakeup (the default when the user's pipe budget refuses it). */
#define PIPE_BYTES_DOWN (1 << 20)

static void update_events(struct broker *b, struct conn *c);

static size_t conn_idx(const struct broker *b, const struct conn *c)
{
    return (size_t)(c - b->conns);
}

static struct conn *conn_new(struct broker *b, int cfd)
{
    if (b->n_conns >= BROKER_MAX_CONNS)
        return NULL;
    for (size_t i = 0; i < BROKER_MAX_CONNS; i++) {
        struct conn *c = &b->conns[i];
        if (c->state != C_FREE)
            continue;
        uint32_t gen = c->gen + 1;
        memset(c, 0, sizeof(*c));
        c->gen = gen;
        c->cbuf = malloc(BROKER_BUF);
        c->ubuf = malloc(BROKER_BUF);
        if (c->cbuf == NULL || c->ubuf == NULL) {
            free(c->cbuf), free(c->ubuf);
            c->cbuf = c->ubuf = NULL;
            return NULL;
        }
        c->cfd = cfd;
        c->ufd = -1;
        c->cpipe[0] = c->cpipe[1] = c->upipe[0] = c->upipe[1] = -1;
        c->audit = -1;
        c->last = time(NULL);
        c->state = C_SNIFF;
        b->n_conns++;
        broker_watch(b, cfd, 0, BROKER_TAG(TAG_CLIENT, i));
        return c;
    }
    return NULL;
}

static void reset_close(int fd)
{
    /* SO_LINGER 0: close sends RST, so the sandbox's connect or read fails
     * at once (ECONNRESET) instead of looking like an empty answer. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

void broker_conn_close(struct broker *b, struct conn *c, bool rst)
{
    if (c->state == C_FREE)
        return;
    broker_unwatch(b, c->cfd);
    if (rst)
        reset_close(c->cfd);
    else
        close(c->cfd);
    if (c->ufd >= 0) {
        broker_unwatch(b, c->ufd);
        close(c->ufd);
    }
    for (int i = 0; i < 2; i++) {
        if (c->cpipe[i] >= 0)
            close(c->cpipe[i]);
        if (c->upipe[i] >= 0)
            close(c->upipe[i]);
    }
    free(c->cbuf), free(c->ubuf);
    c->cbuf = c->ubuf = NULL;
    c->state = C_FREE;
    b->n_conns--;
}

static void refuse(struct broker *b, struct conn *c, const char *why)
{
    broker_audit_add(b, broker_audit(b, c->host, c->port, false, why), 0, 0, 1);
    broker_conn_close(b, c, true);
}

/* An HTTP request refused: a 403 that says why (the model reads it), then
 * the connection closes; nothing of the request went upstream. */
static void refuse_http(struct broker *b, struct conn *c, const char *why)
{
    char msg[512], resp[768];
    int n = snprintf(msg, sizeof(msg), "nsbox egress: refused: %s\n", why);
    int m = snprintf(resp, sizeof(resp),
                     "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                     "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
                     n, msg);
    if (m > 0 && (size_t)m < sizeof(resp))
        send(c->cfd, resp, (size_t)m, MSG_DONTWAIT | MSG_NOSIGNAL);
    broker_audit_add(b, broker_audit(b, c->host, c->port, false, why), 0, 0, 1);
    shutdown(c->cfd, SHUT_WR);
    broker_conn_close(b, c, false);
}

/* v4-mapped v6 (the listeners take v4 on a v6 socket) as plain v4, so a
 * literal matches its IP:PORT rule and prints as the sandbox wrote it. */
static void normalize(struct sockaddr_storage *ss)
{
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))
        return;
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = a6->sin6_port};
    memcpy(&a4.sin_addr, &a6->sin6_addr.s6_addr[12], 4);
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, &a4, sizeof(a4));
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                          : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t size)
{
    const void *a = ss->ss_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (inet_ntop(ss->ss_family, a, buf, (socklen_t)size) == NULL)
        snprintf(buf, size, "?");
}

/* The rule for c's destination, or NULL with why. */
static const struct egress_rule *match(const struct broker *b, struct conn *c, char *why,
                                       size_t size)
{
    const char *name = broker_fake_name(b, (const struct sockaddr *)&c->dst);
    uint32_t idx;
    if (name != NULL) {
        snprintf(c->host, sizeof(c->host), "%s", name);
        const struct egress_rule *r = egress_policy_match_name(&b->policy, name, c->port);
        if (r == NULL)
            snprintf(why, size, "port %u of %s is not in the allow-list", c->port, name);
        return r;
    }
    addr_text(&c->dst, c->host, sizeof(c->host));
    if (egress_addr_fake((const struct sockaddr *)&c->dst, &idx)) {
        snprintf(why, size, "%s is not an address nsbox's DNS gave out", c->host);
        return NULL;
    }
    const struct egress_rule *r = egress_policy_match_addr(&b->policy,
                                                           (const struct sockaddr *)&c->dst);
    if (r == NULL)
        snprintf(why, size,
                 "no rule allows address %s port %u: connect by a name of the allow-list", c->host,
                 c->port);
    return r;
}

static void start_upstream(struct broker *b, struct conn *c);

/* A new connection: which rule, then either straight upstream (an
 * operator's IP:PORT: no inspection) or wait for its first bytes. */
static void classify(struct broker *b, struct conn *c)
{
    socklen_t len = sizeof(c->dst);
    char why[320];
    if (getsockname(c->cfd, (struct sockaddr *)&c->dst, &len) < 0) {
        broker_conn_close(b, c, true);
        return;
    }
    normalize(&c->dst);
    c->port = port_of(&c->dst);
    const struct egress_rule *r = match(b, c, why, sizeof(why));
    if (r == NULL) {
        refuse(b, c, why);
        return;
    }
    c->rule = *r;
    if (r->kind == EGRESS_RULE_ADDR) {
        start_upstream(b, c);
        return;
    }
    c->deadline = time(NULL) + BROKER_HELLO_S;
    update_events(b, c);
}

/* A relay writes what it got as it got it: without TCP_NODELAY a response
 * whose head and body come as two writes waits for the peer's delayed ACK
 * (~40 ms) before the second goes out (Nagle). */
static void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void broker_accept(struct broker *b, struct listener *l)
{
    for (int i = 0; i < 64; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (l->kind == L_TCP)
            no_delay(fd);
        struct conn *c = conn_new(b, fd);
        if (c == NULL) {
            broker_audit_add(
                b, broker_audit(b, "*", l->port, false, "too many connections at once"), 0, 0, 1);
            reset_close(fd);
            continue;
        }
        if (l->kind == L_DNS_TCP) {
            c->state = C_DNS;
            c->deadline = time(NULL) + BROKER_HELLO_S;
            update_events(b, c);
            continue;
        }
        classify(b, c);
    }
}

/* ---- upstream ---- */

static void connect_next(struct broker *b, struct conn *c)
{
    int last = 0;
    for (; c->next_addr < c->n_addrs; c->next_addr++) {
        const struct sockaddr_storage *a = &c->addrs[c->next_addr];
        int fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last = errno;
            continue;
        }
        no_delay(fd);
        if (connect(fd, (const struct sockaddr *)a, c->alens[c->next_addr]) == 0 ||
            errno == EINPROGRESS) {
            c->ufd = fd;
            c->state = C_CONNECTING;
            c->deadline = time(NULL) + BROKER_CONNECT_S;
            broker_watch(b, fd, EPOLLOUT, BROKER_TAG(TAG_UPSTREAM, conn_idx(b, c)));
            c->uev = EPOLLOUT;
            update_events(b, c);
            return;
        }
        last = errno;
        close(fd);
    }
    char why[320];
    snprintf(why, sizeof(why), "cannot connect to %s port %u: %s", c->host, c->port,
             strerror(last ? last : ECONNREFUSED));
    refuse(b, c, why);
}

/* Name rules are resolved here, on the host, and every address vetted;
 * the sandbox's idea of the address (a fake one) never leaves it.  An
 * operator's IP:PORT and NAME=IP:PORT go where the rule says. */
static void start_upstream(struct broker *b, struct conn *c)
{
    if (c->rule.kind == EGRESS_RULE_ADDR || c->rule.kind == EGRESS_RULE_MAPPED) {
        c->addrs[0] = c->rule.addr;
        c->alens[0] = c->rule.addr_len;
        set_port(&c->addrs[0], c->rule.ports[0]);
        c->n_addrs = 1;
        connect_next(b, c);
        return;
    }
    c->state = C_RESOLVING;
    c->deadline = time(NULL) + BROKER_CONNECT_S;
    update_events(b, c);
    if (broker_resolve_start(b, conn_idx(b, c), c->gen, c->host, c->port) < 0)
        refuse(b, c, "cannot start a name lookup");
}

void broker_conn_resolved(struct broker *b, size_t idx, uint32_t gen,
                          const struct sockaddr_storage *addrs, const socklen_t *lens, size_t n,
                          int gai_error)
{
    struct conn *c = idx < BROKER_MAX_CONNS ? &b->conns[idx] : NULL;
    char why[320] = "";
    if (c == NULL || c->gen != gen || c->state != C_RESOLVING)
        return;
    if (gai_error != 0) {
        snprintf(why, sizeof(why), "cannot resolve %s: %s", c->host, gai_strerror(gai_error));
        refuse(b, c, why);
        return;
    }
    c->n_addrs = 0;
    for (size_t i = 0; i < n; i++) {
        const char *bad = NULL;
        if (!c->rule.allow_private &&
            !egress_addr_public((const struct sockaddr *)&addrs[i], &bad)) {
            char a[64];
            addr_text(&addrs[i], a, sizeof(a));
            snprintf(why, sizeof(why), "%s resolves to %s, not a public address (%s)", c->host, a,
                     bad ? bad : "private");
            continue;
        }
        c->addrs[c->n_addrs] = addrs[i];
        c->alens[c->n_addrs++] = lens[i];
    }
    if (c->n_addrs == 0) {
        refuse(b, c, why[0] ? why : "the name has no address");
        return;
    }
    connect_next(b, c);
}

static void connected(struct broker *b, struct conn *c)
{
    int e = 0;
    socklen_t el = sizeof(e);
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
        broker_unwatch(b, c->ufd);
        close(c->ufd);
        c->ufd = -1;
        c->next_addr++;
        errno = e;
        connect_next(b, c);
        return;
    }
    c->state = C_RELAY;
    c->deadline = 0;
    c->last = time(NULL);
    if (c->inspect) { /* audited as allowed once nsbox-tls has it */
        char why[512];
        if (broker_tls_handoff(b, c, why, sizeof(why)) == 0)
            return;
        if (c->http)
            refuse_http(b, c, why);
        else
            refuse(b, c, why);
        return;
    }
    c->audit = broker_audit(b, c->host, c->port, true, NULL);
    broker_audit_add(b, c->audit, 0, 0, 1);
    if (!c->http)
        c->cfwd = c->clen;
}

/* ---- inspection ---- */

/* Every complete request head in cbuf past cfwd: checked, and cleared to
 * go.  Returns -1 when the connection was refused (and closed). */
static int check_http(struct broker *b, struct conn *c)
{
    char why[320];
    while (c->cfwd < c->clen) {
        struct egress_http_req req;
        const char *bad = NULL;
        enum egress_http h = egress_http_parse(c->cbuf + c->cfwd, c->clen - c->cfwd, &req, &bad);
        if (h == EGRESS_HTTP_MORE && c->clen - c->cfwd < EGRESS_HEAD_MAX && !c->c_eof)
            return 0;
        if (h != EGRESS_HTTP_OK) {
            snprintf(why, sizeof(why), "HTTP request to %s: %s", c->host,
                     h == EGRESS_HTTP_MORE ? "incomplete or oversized request head"
                     : bad                 ? bad
                                           : "not an HTTP request nsbox allows");
            refuse_http(b, c, why);
            return -1;
        }
        if (strcmp(req.host, c->host) != 0 || (req.port != 0 && req.port != c->port)) {
            snprintf(why, sizeof(why), "HTTP Host %s on a connection to %s: refused", req.host,
                     c->host);
            refuse_http(b, c, why);
            return -1;
        }
        c->cfwd += req.head_len;
    }
    return 0;
}

/* The first bytes of a name's connection: a TLS ClientHello whose server
 * name is the name, or HTTP heads; nothing else. */
static void sniff(struct broker *b, struct conn *c)
{
    char name[EGRESS_NAME_MAX + 1], why[320];
    if (c->clen == 0) {
        if (c->c_eof) /* closed before a byte: nothing was tried */
            broker_conn_close(b, c, false);
        return;
    }
    if (c->state == C_SNIFF && c->cbuf[0] != 0x16) {
        c->http = true;
        /* Inspected: nsbox-tls reads every request (its methods, its
         * bodies, its Host), from the first byte. */
        if (broker_tls_wants(b, c->host, c->port)) {
            c->inspect = true;
            start_upstream(b, c);
            return;
        }
        if (check_http(b, c) < 0)
            return;
        if (c->cfwd > 0)
            start_upstream(b, c);
        return;
    }
    c->state = C_TLS;
    enum egress_sni s = egress_sni_parse(c->cbuf, c->clen, name);
    if (s == EGRESS_SNI_MORE && c->clen < EGRESS_HELLO_MAX && !c->c_eof)
        return;
    if (s == EGRESS_SNI_FOUND && strcmp(name, c->host) == 0) {
        c->cfwd = c->clen;
        c->inspect = broker_tls_wants(b, c->host, c->port);
        start_upstream(b, c);
        return;
    }
    if (s == EGRESS_SNI_FOUND)
        snprintf(why, sizeof(why), "TLS server name %s on a connection to %s", name, c->host);
    else
        snprintf(why, sizeof(why), "TLS to %s: %s", c->host,
                 s == EGRESS_SNI_NONE  ? "a ClientHello without a server name"
                 : s == EGRESS_SNI_BAD ? "not a ClientHello nsbox understands (or ECH)"
                                       : "an incomplete or oversized ClientHello");
    refuse(b, c, why);
}

/* ---- relaying ---- */

static int read_into(int fd, uint8_t *buf, size_t *len, size_t max, bool *eof)
{
    if (*len >= max)
        return 0;
    ssize_t n = recv(fd, buf + *len, max - *len, MSG_DONTWAIT);
    if (n > 0)
        *len += (size_t)n;
    else if (n == 0)
        *eof = true;
    else if (errno != EAGAIN && errno != EINTR)
        return -1;
    return 0;
}

/* Moves a buffer's cleared bytes to fd.  Returns -1 on a dead peer. */
static int flush_buf(int fd, uint8_t *buf, size_t *len, size_t *fwd, size_t cleared,
                     uint64_t *moved)
{
    ssize_t n = send(fd, buf, cleared, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    memmove(buf, buf + n, *len - (size_t)n);
    *len -= (size_t)n;
    if (fwd != NULL)
        *fwd -= (size_t)n;
    *moved = (uint64_t)n;
    return 0;
}

/* Pipe -> socket, as much as the socket takes.  Returns -1 on a dead
 * peer. */
static int splice_out(int pipe_r, int fd, size_t *piped, uint64_t *moved)
{
    ssize_t n = splice(pipe_r, NULL, fd, NULL, *piped, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    *piped -= (size_t)n;
    *moved = (uint64_t)n;
    return 0;
}

/* Socket -> pipe.  Returns -1 on error. */
static int splice_in(int fd, int pipe_w, size_t *piped, size_t cap, bool *eof)
{
    ssize_t n = splice(fd, NULL, pipe_w, NULL, cap - *piped, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0)
        *piped += (size_t)n;
    else if (n == 0)
        *eof = true;
    else if (errno != EAGAIN && errno != EINTR)
        return -1;
    return 0;
}

static bool make_pipe(int p[2], size_t *cap, size_t want)
{
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        return false;
    int got = want > PIPE_BYTES ? fcntl(p[1], F_SETPIPE_SZ, (int)want) : -1;
    *cap = got > 0 ? (size_t)got : PIPE_BYTES;
    return true;
}

/* A direction whose buffer is empty and that has nothing to inspect goes
 * over to splice from now on. */
static void maybe_splice(struct conn *c)
{
    if (c->state != C_RELAY)
        return;
    if (!c->u_spliced && c->ulen == 0 && make_pipe(c->upipe, &c->upcap, PIPE_BYTES_DOWN))
        c->u_spliced = true;
    if (!c->c_spliced && !c->http && c->clen == 0 && make_pipe(c->cpipe, &c->cpcap, PIPE_BYTES))
        c->c_spliced = true;
}

static size_t c2u_pending(const struct conn *c)
{
    return c->c_spliced ? c->cpiped : c->cfwd;
}

static size_t u2c_pending(const struct conn *c)
{
    return c->u_spliced ? c->upiped : c->ulen;
}

/* Sends what may go each way; half-closes follow the EOFs.  Returns -1
 * when the connection is over (closed). */
static int pump(struct broker *b, struct conn *c)
{
    uint64_t out = 0, in = 0;
    int r = 0;
    if (c->state != C_RELAY)
        return 0;
    if (c2u_pending(c) > 0)
        r = c->c_spliced ? splice_out(c->cpipe[0], c->ufd, &c->cpiped, &out)
                         : flush_buf(c->ufd, c->cbuf, &c->clen, &c->cfwd, c->cfwd, &out);
    if (r == 0 && u2c_pending(c) > 0)
        r = c->u_spliced ? splice_out(c->upipe[0], c->cfd, &c->upiped, &in)
                         : flush_buf(c->cfd, c->ubuf, &c->ulen, NULL, c->ulen, &in);
    if (r < 0) {
        broker_conn_close(b, c, true);
        return -1;
    }
    if (out || in) {
        c->last = time(NULL);
        broker_audit_add(b, c->audit, out, in, 0);
    }
    /* A half-close goes on once everything before it went. */
    if (c->c_eof && c2u_pending(c) == 0 && !c->shut_u) {
        shutdown(c->ufd, SHUT_WR);
        c->shut_u = true;
    }
    if (c->u_eof && u2c_pending(c) == 0 && !c->shut_c) {
        shutdown(c->cfd, SHUT_WR);
        c->shut_c = true;
    }
    if (c->shut_u && c->shut_c) {
        broker_conn_close(b, c, false);
        return -1;
    }
    maybe_splice(c);
    return 0;
}

static void set_events(struct broker *b, int fd, uint32_t *cur, uint32_t events, uint64_t tag)
{
    if (*cur == events)
        return;
    struct epoll_event ev = {.events = events, .data.u64 = tag};
    epoll_ctl(b->ep, EPOLL_CTL_MOD, fd, &ev);
    *cur = events;
}

static void update_events(struct broker *b, struct conn *c)
{
    bool reading = c->state == C_SNIFF || c->state == C_TLS || c->state == C_RELAY ||
                   c->state == C_DNS;
    uint32_t events = 0;
    bool room = c->c_spliced ? c->cpiped < c->cpcap : c->clen < BROKER_BUF;
    if (reading && !c->c_eof && room)
        events |= EPOLLIN;
    if (u2c_pending(c) > 0)
        events |= EPOLLOUT;
    set_events(b, c->cfd, &c->cev, events, BROKER_TAG(TAG_CLIENT, conn_idx(b, c)));
    if (c->ufd < 0)
        return;
    events = c->state == C_CONNECTING ? EPOLLOUT : 0;
    room = c->u_spliced ? c->upiped < c->upcap : c->ulen < BROKER_BUF;
    if (c->state == C_RELAY && !c->u_eof && room)
        events |= EPOLLIN;
    if (c->state == C_RELAY && c2u_pending(c) > 0)
        events |= EPOLLOUT;
    set_events(b, c->ufd, &c->uev, events, BROKER_TAG(TAG_UPSTREAM, conn_idx(b, c)));
}

static void client_event(struct broker *b, struct conn *c, uint32_t events)
{
    if ((events & EPOLLIN) && c->c_spliced) {
        if (splice_in(c->cfd, c->cpipe[1], &c->cpiped, c->cpcap, &c->c_eof) < 0) {
            broker_conn_close(b, c, true);
            return;
        }
    } else if (events & EPOLLIN) {
        /* Undecided, no more than a ClientHello or a head: all of it may
         * go to nsbox-tls as a handoff's prefix. */
        size_t max = c->state == C_SNIFF || c->state == C_TLS ? BROKER_SNIFF_MAX : BROKER_BUF;
        if (read_into(c->cfd, c->cbuf, &c->clen, max, &c->c_eof) < 0) {
            broker_conn_close(b, c, true);
            return;
        }
        if (c->state == C_SNIFF || c->state == C_TLS) {
            sniff(b, c);
            return;
        }
        if (c->http ? check_http(b, c) < 0 : (c->cfwd = c->clen, 0))
            return;
    } else if (events & (EPOLLERR | EPOLLHUP)) {
        broker_conn_close(b, c, true);
        return;
    }
    pump(b, c);
}

static void upstream_event(struct broker *b, struct conn *c, uint32_t events)
{
    if (c->state == C_CONNECTING) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            connected(b, c);
        return;
    }
    if ((events & EPOLLIN) && c->u_spliced) {
        /* A download: in and out again while both sides keep up, rather
         * than one pipeful per wakeup. */
        for (int i = 0; i < 16; i++) {
            size_t before = c->upiped;
            bool eof = c->u_eof;
            if (splice_in(c->ufd, c->upipe[1], &c->upiped, c->upcap, &c->u_eof) < 0) {
                broker_conn_close(b, c, true);
                return;
            }
            if (c->upiped == before && c->u_eof == eof)
                break;
            if (pump(b, c) < 0 || c->upiped > 0)
                return;
        }
        return;
    } else if (events & EPOLLIN) {
        if (read_into(c->ufd, c->ubuf, &c->ulen, BROKER_BUF, &c->u_eof) < 0) {
            broker_conn_close(b, c, true);
            return;
        }
    } else if (events & (EPOLLERR | EPOLLHUP)) {
        broker_conn_close(b, c, true);
        return;
    }
    pump(b, c);
}

void broker_conn_event(struct broker *b, size_t idx, bool upstream, uint32_t events)
{
    struct conn *c = &b->conns[idx];
    if (c->state == C_FREE)
        return;
    if (c->state == C_DNS) {
        if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
            broker_dns_tcp(b, c);
        return;
    }
    if (upstream)
        upstream_event(b, c, events);
    else
        client_event(b, c, events);
    if (c->state != C_FREE)
        update_events(b, c);
}

void broker_conn_tick(struct broker *b, time_t now)
{
    for (size_t i = 0; i < BROKER_MAX_CONNS; i++) {
        struct conn *c = &b->conns[i];
        if (c->state == C_FREE)
            continue;
        if (c->state == C_RELAY && now - c->last >= BROKER_IDLE_S)
            broker_conn_close(b, c, false);
        else if (c->state == C_DNS && c->deadline && now >= c->deadline)
            broker_conn_close(b, c, false);
        else if (c->deadline && now >= c->deadline)
            refuse(b, c,
                   c->state == C_SNIFF || c->state == C_TLS
                       ? "no complete TLS ClientHello or HTTP request head within 10 s"
                       : "the upstream did not answer within 10 s");
    }
}

void broker_conn_recheck(struct broker *b)
{
    char why[320];
    for (size_t i = 0; i < BROKER_MAX_CONNS; i++) {
        struct conn *c = &b->conns[i];
        if (c->state == C_FREE || c->state == C_DNS)
            continue;
        const struct egress_rule *r = match(b, c, why, sizeof(why));
        if (r == NULL) {
            broker_conn_close(b, c, true);
            continue;
        }
        c->rule = *r;
        /* Decided one way (inspected or not) and now the other: closed
         * (bytes that went uninspected cannot be taken back). */
        bool wants = r->kind != EGRESS_RULE_ADDR && broker_tls_wants(b, c->host, c->port);
        bool decided = c->state == C_RELAY || c->state == C_RESOLVING || c->state == C_CONNECTING;
        if (decided && wants != c->inspect)
            broker_conn_close(b, c, true);
    }
}
