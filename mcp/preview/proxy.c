/* The preview proxy's listener and connections (preview.h): one thread,
 * epoll, every fd non-blocking.
 *
 * Browser to sandbox, each request head is read (at most
 * PREVIEW_HEAD_MAX bytes, within PREVIEW_HEAD_TIMEOUT_S), parsed strictly
 * (head.h), its token checked (table.c), its path prefix stripped and
 * X-Forwarded-* set, then its body relayed framed (Content-Length or
 * chunked) so that the next head is found and checked the same way; an
 * Upgrade (WebSocket) turns that direction raw after its head.  Sandbox
 * to browser is raw, spliced through a pipe of PIPE_CAP bytes: a flood
 * from the sandbox only fills that pipe (backpressure), never memory.
 * The first head's connection to the box is made by a thread of its own
 * (table.c) so that a sandbox slow to accept stalls nobody else.  A later
 * head naming another exposure (a browser reusing a connection across
 * path-mode previews) closes the connection without an answer; browsers
 * retry such a request on a new one. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../common/log.h"
#include "head.h"
#include "internal.h"

#define PIPE_CAP (64 * 1024)
/* A download that keeps going (its client reads: BIG_AFTER bytes have gone
 * through) gets a pipe of BIG_CAP: a sixteenth of the wakeups and splices,
 * 1.25 times the throughput on the 2-core machine (docs/bench.md).  At
 * most BIG_MAX connections hold one at once, so clients that read a little
 * and then stop pin at most BIG_MAX * BIG_CAP of pipe memory. */
#define BIG_CAP (1024 * 1024)
#define BIG_AFTER (4u << 20)
#define BIG_MAX 32
#define OUT_MAX (PREVIEW_HEAD_MAX + 4096)
#define HOST_MAX 1024
#define CLOSING_S 2 /* after an error answer, unread input is drained this long */

enum { T_CLIENT, T_UP };
enum { ST_HEAD, ST_CONNECTING, ST_CL, ST_CHUNKED, ST_RAW, ST_ANSWER, ST_CLOSING };

struct tag {
    struct conn *c;
    int kind;
};

static struct tag wake_tag = {NULL, -1}; /* the wake-up eventfd's */

struct conn {
    struct preview *p;
    struct tag ct, ut;
    int cfd, ufd, pr, pw;
    uint32_t cev, uev; /* registered interest; 0: not registered */
    int st, after;     /* after: the state once connected */
    bool raw_after;    /* the body over, relay raw (an upgrade) */
    struct exposure *ex;
    char in[PREVIEW_HEAD_MAX];
    size_t in_len;
    char out[OUT_MAX];
    size_t out_len, out_off;
    uint64_t body_left;
    struct preview_chunked ch;
    size_t piped;
    size_t cap;    /* the pipe's size: PIPE_CAP, or BIG_CAP */
    uint64_t down; /* bytes relayed to the client */
    bool up_eof, c_eof, up_shut;
    char answer[768];
    size_t answer_len, answer_off;
    time_t head_since, active, closing_since;
    char peer[64];
    bool connecting, closed;
    bool queued; /* ST_CONNECTING, waiting for a free attempt */
    struct conn *prev, *next;
};

static time_t now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec;
}

void preview_wake(struct preview *p)
{
    uint64_t one = 1;
    if (write(p->wakefd, &one, sizeof(one)) < 0) {
        /* the counter is full: a wake-up is pending anyway */
    }
}

static int set_ev(struct conn *c, int fd, uint32_t *have, uint32_t want, struct tag *t)
{
    struct epoll_event e = {.events = want, .data.ptr = t};
    if (want == *have)
        return 0;
    int op = *have == 0 ? EPOLL_CTL_ADD : want == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    *have = want;
    return epoll_ctl(c->p->epfd, op, fd, &e);
}

static void update(struct conn *c)
{
    uint32_t ce = 0, ue = 0;
    bool answering = c->st == ST_ANSWER;
    if (!c->c_eof && (c->st == ST_CLOSING || (!answering && c->in_len < sizeof(c->in))))
        ce |= EPOLLIN;
    if (c->piped > 0 || answering)
        ce |= EPOLLOUT;
    if (c->ufd >= 0) {
        if (!c->up_eof && !answering && c->piped < c->cap)
            ue |= EPOLLIN;
        if (c->out_off < c->out_len)
            ue |= EPOLLOUT;
        set_ev(c, c->ufd, &c->uev, ue, &c->ut);
    }
    set_ev(c, c->cfd, &c->cev, ce, &c->ct);
}

/* Freed after the current batch of events (a later event of the batch
 * may name it): p->graveyard. */
static void bury(struct preview *p, struct conn *c)
{
    if (c->ex)
        exposure_put(p, c->ex);
    c->ex = NULL;
    c->next = p->graveyard;
    p->graveyard = c;
}

static void close_conn(struct conn *c)
{
    struct preview *p = c->p;
    if (c->closed)
        return;
    c->closed = true;
    if (c->cev)
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
    if (c->ufd >= 0 && c->uev)
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
    close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    if (c->pr >= 0)
        close(c->pr), close(c->pw);
    if (c->cap == BIG_CAP)
        p->n_big--;
    if (c->prev)
        c->prev->next = c->next;
    else
        p->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    p->n_conns--;
    if (!c->connecting) /* else its job buries it */
        bury(p, c);
}

/* A small answer, then the connection ends (after what the sandbox
 * already sent has gone out). */
static void answer(struct conn *c, int status, const char *extra)
{
    static const struct {
        int status;
        const char *text, *body;
    } texts[] = {
        {400, "Bad Request", "bad request\n"},
        {403, "Forbidden", "forbidden\n"},
        {404, "Not Found", "not found\n"},
        {408, "Request Timeout", "request timeout\n"},
        {308, "Permanent Redirect", "redirect\n"},
        {502, "Bad Gateway", "nothing listens on that port in the sandbox\n"},
        {503, "Service Unavailable", "busy: too many connections\n"},
    };
    size_t i = 0;
    while (i + 1 < sizeof(texts) / sizeof(texts[0]) && texts[i].status != status)
        i++;
    int n = snprintf(c->answer, sizeof(c->answer),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\nCache-Control: no-store\r\n"
                     "%s\r\n%s",
                     texts[i].status, texts[i].text, strlen(texts[i].body), extra ? extra : "",
                     texts[i].body);
    c->answer_len = n > 0 && (size_t)n < sizeof(c->answer) ? (size_t)n : 0;
    c->answer_off = 0;
    c->st = ST_ANSWER;
}

/* The exposure a head names, by host (host mode) or path; *prefix_len:
 * the bytes of the target to strip ("/p/TOKEN").  NULL after answering. */
static struct exposure *route(struct conn *c, const struct preview_head *h, size_t *prefix_len)
{
    struct preview *p = c->p;
    const char *tok = NULL;
    size_t tlen = 0;
    uint16_t want_port = 0;
    int status;

    *prefix_len = 0;
    if (h->host.n > HOST_MAX)
        return answer(c, 400, NULL), NULL;
    size_t dlen = strlen(p->domain), hn = h->host.n;
    const char *colon = memrchr(h->host.s, ':', hn);
    if (colon != NULL && memchr(h->host.s, ']', hn) == NULL)
        hn = (size_t)(colon - h->host.s);
    if (dlen > 0 && hn > dlen + 1 && h->host.s[hn - dlen - 1] == '.' &&
        strncasecmp(h->host.s + hn - dlen, p->domain, dlen) == 0) {
        /* PORT-TOKEN.DOMAIN: the label is the whole exposure */
        const char *l = h->host.s;
        size_t ln = hn - dlen - 1, d = 0;
        unsigned port = 0;
        while (d < ln && d < 5 && l[d] >= '0' && l[d] <= '9')
            port = port * 10 + (unsigned)(l[d++] - '0');
        if (d == 0 || d >= ln || l[d] != '-' || port == 0 || port > 65535)
            return answer(c, 403, NULL), NULL;
        tok = l + d + 1;
        tlen = ln - d - 1;
        want_port = (uint16_t)port;
    } else {
        size_t plen = strlen(PREVIEW_PREFIX);
        const char *t = h->target.s;
        if (h->target.n < plen || memcmp(t, PREVIEW_PREFIX, plen) != 0)
            return answer(c, 404, NULL), NULL;
        tok = t + plen;
        while (tlen < h->target.n - plen && tok[tlen] != '/' && tok[tlen] != '?')
            tlen++;
        *prefix_len = plen + tlen;
        if (*prefix_len == h->target.n || t[*prefix_len] == '?') {
            /* /p/TOKEN: to /p/TOKEN/, so that relative links resolve */
            struct exposure *ex = exposure_find(p, tok, tlen, 0, &status);
            if (ex == NULL)
                return answer(c, status, NULL), NULL;
            exposure_put(p, ex);
            char loc[PREVIEW_TOKEN_LEN + 300];
            int n = snprintf(loc, sizeof(loc), "Location: %.*s/%.*s\r\n", (int)*prefix_len, t,
                             (int)(h->target.n - *prefix_len > 200 ? 0 : h->target.n - *prefix_len),
                             t + *prefix_len);
            return answer(c, 308, n > 0 ? loc : NULL), NULL;
        }
    }
    struct exposure *ex = exposure_find(p, tok, tlen, want_port, &status);
    if (ex == NULL)
        answer(c, status, NULL);
    return ex;
}

static bool forwarded(const struct preview_head *h, size_t i)
{
    return preview_head_is(h, i, "x-forwarded-for") || preview_head_is(h, i, "x-forwarded-proto") ||
           preview_head_is(h, i, "x-forwarded-host") || preview_head_is(h, i, "x-forwarded-prefix");
}

/* The head as the sandbox sees it, into out (empty before). */
static int rewrite(struct conn *c, const struct preview_head *h, size_t prefix_len)
{
    char *o = c->out;
    size_t n = 0, cap = sizeof(c->out);
#define PUT(s, len)                                                                                \
    do {                                                                                           \
        if (n + (len) > cap)                                                                       \
            return -1;                                                                             \
        memcpy(o + n, (s), (len));                                                                 \
        n += (len);                                                                                \
    } while (0)
    const char *target = h->target.s + prefix_len;
    size_t tn = h->target.n - prefix_len;
    PUT(h->method.s, h->method.n);
    PUT(" ", 1);
    PUT(target, tn);
    PUT(h->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n", 11);
    for (size_t i = 0; i < h->n_lines; i++)
        if (!forwarded(h, i)) {
            PUT(h->lines[i].s, h->lines[i].n);
            PUT("\r\n", 2);
        }
    char extra[HOST_MAX + PREVIEW_TOKEN_LEN + 256];
    int e = snprintf(extra, sizeof(extra),
                     "X-Forwarded-For: %s\r\nX-Forwarded-Proto: %s\r\nX-Forwarded-Host: %.*s\r\n"
                     "X-Forwarded-Prefix: %.*s\r\n\r\n",
                     c->peer, c->p->scheme, (int)h->host.n, h->host.s,
                     prefix_len ? (int)prefix_len : 1, prefix_len ? h->target.s : "/");
    if (e < 0 || (size_t)e >= sizeof(extra))
        return -1;
    PUT(extra, (size_t)e);
#undef PUT
    c->out_len = n;
    c->out_off = 0;
    return 0;
}

/* The connection to the box, on a thread of its own; past
 * PREVIEW_CONNECTING_MAX at once to one exposure, it waits its turn
 * (queued: retried as attempts end, cut by the sweep after
 * PREVIEW_HEAD_TIMEOUT_S like a slow attempt). */
static void start_connect(struct conn *c)
{
    c->connecting = true;
    c->queued = false;
    if (exposure_connect(c->p, c, c->ex) < 0) {
        c->connecting = false;
        c->queued = true;
    }
}

/* A complete head h: routed, checked, rewritten; the body's state set. */
static void on_head(struct conn *c, const struct preview_head *h)
{
    size_t prefix_len;
    struct exposure *ex = route(c, h, &prefix_len);
    if (ex == NULL)
        return;
    if (c->ex != NULL && ex != c->ex) { /* another preview: a new connection for it */
        exposure_put(c->p, ex);
        c->st = ST_CLOSING;
        c->c_eof = true; /* closed by the caller */
        return;
    }
    if (rewrite(c, h, prefix_len) < 0) {
        exposure_put(c->p, ex);
        return answer(c, 400, NULL);
    }
    int next = h->chunked ? ST_CHUNKED : h->content_length > 0 ? ST_CL : ST_HEAD;
    c->raw_after = h->upgrade;
    if (next == ST_HEAD && h->upgrade)
        next = ST_RAW;
    c->body_left = h->content_length > 0 ? (uint64_t)h->content_length : 0;
    c->ch = (struct preview_chunked){0};
    if (c->ex != NULL) { /* the same exposure: the connection goes on */
        exposure_put(c->p, ex);
        c->st = next;
        return;
    }
    c->ex = ex;
    c->after = next;
    c->st = ST_CONNECTING;
    start_connect(c);
}

static void consume(struct conn *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

/* Moves what it can of the client's bytes along, by state. */
static void process_client(struct conn *c)
{
    for (;;) {
        size_t room = sizeof(c->out) - c->out_len, n, used;
        const char *why;
        struct preview_head *h;
        switch (c->st) {
        case ST_HEAD:
            if (c->out_off < c->out_len || c->in_len == 0)
                return;
            if (c->head_since == 0)
                c->head_since = now_s();
            h = malloc(sizeof(*h));
            if (h == NULL)
                return answer(c, 503, NULL);
            int r = preview_head_parse(c->in, c->in_len, h, &why);
            if (r == 1) {
                c->out_len = c->out_off = 0;
                on_head(c, h);
                consume(c, h->len);
                c->head_since = 0;
            } else if (r < 0) {
                answer(c, 400, NULL);
            }
            free(h);
            if (r != 1)
                return;
            continue;
        case ST_CL:
            n = c->in_len < room ? c->in_len : room;
            if (n > c->body_left)
                n = (size_t)c->body_left;
            break;
        case ST_CHUNKED:
            n = c->in_len < room ? c->in_len : room;
            r = preview_chunked_feed(&c->ch, c->in, n, &used);
            if (r < 0) {
                c->st = ST_CLOSING;
                c->c_eof = true;
                return;
            }
            n = used;
            if (r == 1) {
                memcpy(c->out + c->out_len, c->in, n);
                c->out_len += n;
                consume(c, n);
                c->st = c->raw_after ? ST_RAW : ST_HEAD;
                continue;
            }
            break;
        case ST_RAW:
            n = c->in_len < room ? c->in_len : room;
            break;
        default:
            if (c->st == ST_CLOSING)
                c->in_len = 0;
            return;
        }
        if (n == 0)
            return;
        memcpy(c->out + c->out_len, c->in, n);
        c->out_len += n;
        consume(c, n);
        if (c->st == ST_CL && (c->body_left -= n) == 0)
            c->st = c->raw_after ? ST_RAW : ST_HEAD;
    }
}

/* Returns -1 when the connection is over. */
static int flush_up(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->ufd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->out_off += (size_t)n;
        c->active = now_s();
    }
    c->out_off = c->out_len = 0;
    if (c->c_eof && !c->up_shut && c->st != ST_CONNECTING) {
        shutdown(c->ufd, SHUT_WR);
        c->up_shut = true;
    }
    return 0;
}

/* The client's input, then whatever can move: -1 when it is over. */
static int step(struct conn *c)
{
    if (c->st != ST_ANSWER && !c->c_eof && c->in_len < sizeof(c->in)) {
        ssize_t n = read(c->cfd, c->in + c->in_len, sizeof(c->in) - c->in_len);
        if (n > 0) {
            c->in_len += (size_t)n;
            c->active = now_s();
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            c->c_eof = true;
            if (c->st == ST_CLOSING || (c->ufd < 0 && c->st != ST_ANSWER && c->st != ST_CONNECTING))
                return -1;
        }
    }
    for (int i = 0; i < 8; i++) {
        size_t in = c->in_len;
        int st = c->st;
        process_client(c);
        if (c->st == ST_CLOSING && st != ST_CLOSING && c->c_eof)
            return -1; /* another exposure named, or a broken chunked body */
        if (c->ufd >= 0 && flush_up(c) < 0)
            return -1;
        if (c->in_len == in && c->st == st)
            break;
    }
    return 0;
}

static int relay_down(struct conn *c)
{
    while (c->piped < c->cap && !c->up_eof && c->st != ST_ANSWER) {
        ssize_t n = splice(c->ufd, NULL, c->pw, NULL, c->cap - c->piped,
                           SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n == 0)
            c->up_eof = true;
        else if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        else if (n < 0)
            return -1;
        else
            c->piped += (size_t)n, c->active = now_s();
    }
    while (c->piped > 0) {
        ssize_t n = splice(c->pr, NULL, c->cfd, NULL, c->piped, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0)
            return -1;
        c->piped -= (size_t)n;
        c->down += (uint64_t)n;
        c->active = now_s();
    }
    if (c->cap == PIPE_CAP && c->down >= BIG_AFTER && c->p->n_big < BIG_MAX &&
        fcntl(c->pw, F_SETPIPE_SZ, BIG_CAP) >= BIG_CAP) {
        c->cap = BIG_CAP;
        c->p->n_big++;
    }
    return c->up_eof && c->piped == 0 ? -1 : 0;
}

/* The error answer goes out once the pipe is empty; then the connection
 * closes (after a short drain of what the client still sends). */
static int send_answer(struct conn *c)
{
    while (c->answer_off < c->answer_len) {
        ssize_t n = write(c->cfd, c->answer + c->answer_off, c->answer_len - c->answer_off);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0)
            return -1;
        c->answer_off += (size_t)n;
    }
    shutdown(c->cfd, SHUT_WR);
    c->st = ST_CLOSING;
    c->closing_since = now_s();
    return 0;
}

static void on_connected(struct preview *p, struct job *j)
{
    struct conn *c = j->c;
    c->connecting = false;
    if (c->closed) {
        if (j->fd >= 0)
            close(j->fd);
        return bury(p, c);
    }
    int pp[2];
    if (j->fd < 0 || __atomic_load_n(&c->ex->dead, __ATOMIC_ACQUIRE) ||
        pipe2(pp, O_NONBLOCK | O_CLOEXEC) < 0) {
        if (j->fd >= 0)
            close(j->fd);
        answer(c, j->fd < 0 && j->err != ECONNREFUSED && j->err != ENOTSUP ? 503 : 502, NULL);
        c->out_len = c->out_off = 0;
        update(c);
        return;
    }
    c->pr = pp[0];
    c->pw = pp[1];
    c->cap = PIPE_CAP;
    c->ufd = j->fd;
    c->st = c->after;
    c->active = now_s();
    __atomic_add_fetch(&p->n_relayed, 1, __ATOMIC_RELAXED);
    if (step(c) < 0)
        return close_conn(c);
    update(c);
}

static void on_event(struct tag *t, uint32_t ev)
{
    struct conn *c = t->c;
    int r = 0;
    if (c->closed)
        return;
    if (t->kind == T_CLIENT) {
        if ((ev & EPOLLERR) || ((ev & EPOLLHUP) && c->ufd < 0 && c->st != ST_CONNECTING))
            return close_conn(c);
        if (ev & EPOLLOUT) {
            if (c->piped > 0)
                r = relay_down(c);
            else if (c->st == ST_ANSWER)
                r = send_answer(c);
        }
        if (r == 0 && (ev & (EPOLLIN | EPOLLHUP)))
            r = step(c);
    } else {
        if (ev & EPOLLOUT)
            r = step(c);
        if (r == 0 && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
            r = relay_down(c);
    }
    if (r == 0 && c->st == ST_ANSWER && c->piped == 0)
        r = send_answer(c);
    if (r < 0)
        return close_conn(c);
    update(c);
}

static void on_accept(struct preview *p)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof(sa);
        int fd = accept4(p->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                epoll_ctl(p->epfd, EPOLL_CTL_DEL, p->lfd, NULL); /* back in a second */
                p->accept_paused = true;
            }
            return;
        }
        struct conn *c = p->n_conns < p->max_conns ? calloc(1, sizeof(*c)) : NULL;
        if (c == NULL) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 28\r\n"
                                       "Connection: close\r\n\r\nbusy: too many connections\r\n";
            if (write(fd, busy, sizeof(busy) - 1) < 0) {
                /* it goes anyway */
            }
            close(fd);
            continue;
        }
        *c = (struct conn){.p = p, .cfd = fd, .ufd = -1, .pr = -1, .pw = -1, .st = ST_HEAD};
        c->ct = (struct tag){c, T_CLIENT};
        c->ut = (struct tag){c, T_UP};
        c->active = c->head_since = now_s();
        char host[INET6_ADDRSTRLEN] = "unknown";
        getnameinfo((struct sockaddr *)&sa, sl, host, sizeof(host), NULL, 0, NI_NUMERICHOST);
        snprintf(c->peer, sizeof(c->peer), "%s", host);
        c->next = p->conns;
        if (p->conns)
            p->conns->prev = c;
        p->conns = c;
        p->n_conns++;
        update(c);
    }
}

/* Once a second: slow heads, silent connections, closed exposures. */
static void sweep(struct preview *p, bool dead_only)
{
    time_t now = now_s();
    struct conn *c = p->conns, *next;
    for (; c != NULL; c = next) {
        next = c->next;
        bool dead = c->ex && __atomic_load_n(&c->ex->dead, __ATOMIC_ACQUIRE);
        bool slow = !dead_only && c->st == ST_HEAD && c->head_since &&
                    now - c->head_since > PREVIEW_HEAD_TIMEOUT_S;
        if (slow && !dead && c->ufd < 0) { /* the first head: say so, then close */
            answer(c, 408, NULL);
            update(c);
            continue;
        }
        if (dead || slow ||
            (!dead_only && ((c->st == ST_CLOSING && now - c->closing_since > CLOSING_S) ||
                            (c->st == ST_CONNECTING && now - c->active > PREVIEW_HEAD_TIMEOUT_S) ||
                            now - c->active > (time_t)p->idle_s)))
            close_conn(c);
    }
    if (!dead_only && p->accept_paused) {
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
        if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->lfd, &e) == 0)
            p->accept_paused = false;
    }
}

static void take_done(struct preview *p)
{
    pthread_mutex_lock(&p->lock);
    struct job *j = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->lock);
    bool any = j != NULL;
    while (j != NULL) {
        struct job *next = j->next;
        on_connected(p, j);
        free(j);
        j = next;
    }
    /* Attempts ended: the queued ones get their turn. */
    for (struct conn *c = any ? p->conns : NULL; c != NULL; c = c->next)
        if (c->queued && !c->closed)
            start_connect(c);
}

static void free_graveyard(struct preview *p)
{
    while (p->graveyard) {
        struct conn *c = p->graveyard;
        p->graveyard = c->next;
        free(c);
    }
}

static void *proxy_main(void *arg)
{
    struct preview *p = arg;
    struct epoll_event ev[64];
    time_t last = now_s();

    while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
        int n = epoll_wait(p->epfd, ev, 64, 1000);
        for (int i = 0; i < n; i++) {
            struct tag *t = ev[i].data.ptr;
            if (t == NULL) {
                on_accept(p);
            } else if (t == &wake_tag) {
                uint64_t v;
                if (read(p->wakefd, &v, sizeof(v)) < 0) {
                    /* nothing pending */
                }
                take_done(p);
                sweep(p, true);
            } else {
                on_event(t, ev[i].events);
            }
        }
        free_graveyard(p);
        if (now_s() != last) {
            last = now_s();
            sweep(p, false);
        }
    }
    while (p->conns)
        close_conn(p->conns);
    pthread_mutex_lock(&p->lock);
    while (p->n_threads > 0)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    take_done(p); /* buries the connections closed while connecting */
    free_graveyard(p);
    return NULL;
}

struct preview *preview_start(const struct preview_options *o, struct nsbox_err *err)
{
    struct preview *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    p->lfd = p->epfd = p->wakefd = -1;
    p->ttl_s = o->ttl_s ? o->ttl_s : PREVIEW_TTL_DEFAULT;
    p->max_conns = o->max_conns ? o->max_conns : PREVIEW_CONNS_DEFAULT;
    p->idle_s = o->idle_s ? o->idle_s : PREVIEW_IDLE_S;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (getrandom(p->key, sizeof(p->key), 0) != (ssize_t)sizeof(p->key)) {
        nsbox_err_sys(err, "getrandom (the preview key)");
        goto fail;
    }
    if (preview_listen(p, o, err) < 0)
        goto fail;
    struct epoll_event l = {.events = EPOLLIN, .data.ptr = NULL},
                       w = {.events = EPOLLIN, .data.ptr = &wake_tag};
    if ((p->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (p->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
        epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->lfd, &l) < 0 ||
        epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wakefd, &w) < 0) {
        nsbox_err_sys(err, "the preview proxy's epoll");
        goto fail;
    }
    if ((errno = pthread_create(&p->thread, NULL, proxy_main, p)) != 0) {
        nsbox_err_sys(err, "the preview proxy's thread");
        goto fail;
    }
    p->started = true;
    return p;
fail:
    preview_stop(p);
    return NULL;
}

void preview_stop(struct preview *p)
{
    if (p == NULL)
        return;
    if (p->started) {
        __atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
        preview_wake(p);
        pthread_join(p->thread, NULL);
    }
    while (p->exposures) {
        struct exposure *ex = p->exposures;
        p->exposures = ex->next;
        free(ex);
    }
    if (p->lfd >= 0)
        close(p->lfd);
    if (p->epfd >= 0)
        close(p->epfd);
    if (p->wakefd >= 0)
        close(p->wakefd);
    explicit_bzero(p->key, sizeof(p->key));
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
}
