/* Unit tests for common/relay.c: the splice relay under boxes/forward.c
 * and the preview proxy.  Real TCP connections over 127.0.0.1. */
#include "check.h"
#include "suites.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/relay.h"

/* A connected TCP pair over 127.0.0.1: *user, *relay_end.  0 or -1. */
static int tcp_pair(int *user, int *relay_end)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0)
        return -1;
    *user = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(*user, (struct sockaddr *)&a, sizeof(a)) < 0)
        return -1;
    *relay_end = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    close(l);
    return *relay_end < 0 ? -1 : 0;
}

/* Two user ends, x and y, relayed: x <-> relay <-> y. */
static int relayed(struct relay *r, uint64_t tag, int *x, int *y)
{
    int rx, ry;
    if (tcp_pair(x, &rx) < 0 || tcp_pair(y, &ry) < 0)
        return -1;
    return relay_add(r, rx, ry, tag, NULL);
}

/* Reads exactly n bytes within 5 s; the count read. */
static size_t read_n(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 5000) != 1)
            break;
        ssize_t k = read(fd, buf + got, n - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* 1 when fd reads EOF within ms, 0 when it does not, -1 on data. */
static int eof_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    if (poll(&p, 1, ms) != 1)
        return 0;
    ssize_t k = read(fd, &c, 1);
    return k == 0 || (k < 0 && errno == ECONNRESET) ? 1 : -1;
}

static struct relay *start(unsigned max, unsigned idle)
{
    struct relay_opts o = {.max_conns = max, .idle_s = idle};
    return relay_start(&o, NULL);
}

static void both_ways(void)
{
    struct relay *r = start(0, 0);
    int x, y;
    char buf[16] = "";
    CHECK(r != NULL);
    CHECK(relayed(r, 1, &x, &y) == 0);
    CHECK(write(x, "ping", 4) == 4);
    CHECK(read_n(y, buf, 4) == 4 && memcmp(buf, "ping", 4) == 0);
    CHECK(write(y, "pong!", 5) == 5);
    CHECK(read_n(x, buf, 5) == 5 && memcmp(buf, "pong!", 5) == 0);
    struct relay_stats s;
    relay_get_stats(r, &s);
    CHECK(s.added == 1 && s.active == 1 && s.bytes_ab == 4 && s.bytes_ba == 5);
    close(x), close(y);
    relay_stop(r);
}

/* x's FIN reaches y as EOF while y can still answer; then y's ends it. */
static void half_close(void)
{
    struct relay *r = start(0, 0);
    int x, y;
    char buf[8];
    CHECK(relayed(r, 1, &x, &y) == 0);
    CHECK(write(x, "req", 3) == 3);
    shutdown(x, SHUT_WR);
    CHECK(read_n(y, buf, 3) == 3);
    CHECK(eof_within(y, 2000) == 1);
    CHECK(write(y, "answer", 6) == 6);
    CHECK(read_n(x, buf, 6) == 6 && memcmp(buf, "answer", 6) == 0);
    shutdown(y, SHUT_WR);
    CHECK(eof_within(x, 2000) == 1);
    struct relay_stats s;
    for (int i = 0; i < 100; i++) {
        relay_get_stats(r, &s);
        if (s.closed == 1)
            break;
        usleep(10000);
    }
    CHECK(s.closed == 1 && s.active == 0);
    close(x), close(y);
    relay_stop(r);
}

struct writer {
    int fd;
    size_t n;
    uint32_t seed;
};

static void *write_all(void *arg)
{
    struct writer *w = arg;
    char *buf = malloc(w->n);
    uint32_t s = w->seed;
    for (size_t i = 0; i < w->n; i++)
        buf[i] = (char)((s = s * 1103515245u + 12345u) >> 16);
    for (size_t off = 0; off < w->n;) {
        ssize_t k = write(w->fd, buf + off, w->n - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    shutdown(w->fd, SHUT_WR);
    free(buf);
    return NULL;
}

/* 32 MiB each way at once, byte for byte (a slow side stalls nothing). */
static void large_both_ways(void)
{
    struct relay *r = start(0, 0);
    int x, y;
    const size_t n = 32u << 20;
    CHECK(relayed(r, 1, &x, &y) == 0);
    struct writer wx = {x, n, 1}, wy = {y, n, 2};
    pthread_t tx, ty;
    pthread_create(&tx, NULL, write_all, &wx);
    pthread_create(&ty, NULL, write_all, &wy);
    char *got_y = malloc(n + 1), *got_x = malloc(n + 1);
    size_t gy = 0, gx = 0;
    bool ey = false, ex = false;
    while (!ey || !ex) {
        struct pollfd p[2] = {{.fd = ey ? -1 : y, .events = POLLIN},
                              {.fd = ex ? -1 : x, .events = POLLIN}};
        if (poll(p, 2, 10000) <= 0)
            break;
        if (p[0].revents) {
            ssize_t k = read(y, got_y + gy, n + 1 - gy);
            if (k <= 0)
                ey = true;
            else
                gy += (size_t)k;
        }
        if (p[1].revents) {
            ssize_t k = read(x, got_x + gx, n + 1 - gx);
            if (k <= 0)
                ex = true;
            else
                gx += (size_t)k;
        }
    }
    pthread_join(tx, NULL);
    pthread_join(ty, NULL);
    CHECK(gy == n && gx == n);
    uint32_t s1 = 1, s2 = 2;
    bool same = gy == n && gx == n;
    for (size_t i = 0; same && i < n; i++) {
        same = got_y[i] == (char)((s1 = s1 * 1103515245u + 12345u) >> 16) &&
               got_x[i] == (char)((s2 = s2 * 1103515245u + 12345u) >> 16);
    }
    CHECK(same);
    free(got_x), free(got_y);
    close(x), close(y);
    relay_stop(r);
}

/* Nothing read on y: x's writes stop after the socket buffers and one
 * pipe, not at memory's end. */
static void bounded_when_not_read(void)
{
    struct relay_opts o = {.pipe_size = 65536};
    struct relay *r = relay_start(&o, NULL);
    int x, y;
    CHECK(relayed(r, 1, &x, &y) == 0);
    fcntl(x, F_SETFL, O_NONBLOCK);
    static char chunk[65536];
    size_t total = 0;
    for (int idle = 0; idle < 20 && total < (256u << 20);) {
        ssize_t k = write(x, chunk, sizeof(chunk));
        if (k > 0) {
            total += (size_t)k;
            idle = 0;
        } else {
            usleep(10000);
            idle++;
        }
    }
    CHECK(total < (64u << 20));
    close(x), close(y);
    relay_stop(r);
}

static void cap_refuses(void)
{
    struct relay *r = start(2, 0);
    int x[3], y[3];
    CHECK(relayed(r, 1, &x[0], &y[0]) == 0);
    CHECK(relayed(r, 1, &x[1], &y[1]) == 0);
    struct nsbox_err err;
    int rx = -1, ry = -1;
    CHECK(tcp_pair(&x[2], &rx) == 0 && tcp_pair(&y[2], &ry) == 0);
    CHECK(relay_add(r, rx, ry, 1, &err) == -1 && err.code == EAGAIN);
    /* the refused one's ends were closed */
    CHECK(eof_within(x[2], 2000) == 1);
    for (int i = 0; i < 3; i++)
        close(x[i]), close(y[i]);
    relay_stop(r);
}

static void close_by_tag(void)
{
    struct relay *r = start(0, 0);
    int x[3], y[3];
    CHECK(relayed(r, 7, &x[0], &y[0]) == 0);
    CHECK(relayed(r, 7, &x[1], &y[1]) == 0);
    CHECK(relayed(r, 8, &x[2], &y[2]) == 0);
    CHECK(relay_count(r, 7) == 2 && relay_count(r, 8) == 1);
    relay_close_tag(r, 7);
    CHECK(relay_count(r, 7) == 0 && relay_count(r, 8) == 1);
    CHECK(eof_within(x[0], 2000) == 1 && eof_within(y[1], 2000) == 1);
    char buf[4];
    CHECK(write(x[2], "ok", 2) == 2 && read_n(y[2], buf, 2) == 2);
    for (int i = 0; i < 3; i++)
        close(x[i]), close(y[i]);
    relay_stop(r);
}

static void idle_timeout(void)
{
    struct relay *r = start(0, 1);
    int x, y;
    CHECK(relayed(r, 1, &x, &y) == 0);
    CHECK(eof_within(x, 4000) == 1);
    struct relay_stats s;
    relay_get_stats(r, &s);
    CHECK(s.idle_closed == 1 && s.active == 0);
    close(x), close(y);
    relay_stop(r);
}

/* One side reset: the other sees its connection end. */
static void reset_ends_both(void)
{
    struct relay *r = start(0, 0);
    int x, y;
    CHECK(relayed(r, 1, &x, &y) == 0);
    struct linger lg = {1, 0};
    setsockopt(y, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(y);
    CHECK(eof_within(x, 2000) == 1);
    close(x);
    relay_stop(r);
}

void suite_relay(void)
{
    signal(SIGPIPE, SIG_IGN); /* relay.h: the process ignores it */
    RUN_TEST(both_ways);
    RUN_TEST(half_close);
    RUN_TEST(large_both_ways);
    RUN_TEST(bounded_when_not_read);
    RUN_TEST(cap_refuses);
    RUN_TEST(close_by_tag);
    RUN_TEST(idle_timeout);
    RUN_TEST(reset_ends_both);
}
