/* Output pipes into capped buffers, and a run's timeout (sink.h). */
#include "sink.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"

void nsbox_sink_read(struct nsbox_sink *s)
{
    char tmp[65536];
    ssize_t n = read(s->fd, tmp, sizeof(tmp));
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            if (!s->borrowed)
                close(s->fd);
            s->fd = -1;
        }
        return;
    }
    if (s->forward >= 0 && nsbox_write_all(s->forward, tmp, (size_t)n) < 0)
        s->forward = -1; /* the caller's reader is gone: keep draining */
    size_t keep = s->len < s->limit ? s->limit - s->len : 0;
    if ((size_t)n > keep)
        s->truncated = true;
    keep = keep < (size_t)n ? keep : (size_t)n;
    if (s->len + keep + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->len + keep + 1)
            cap *= 2;
        char *b = realloc(s->buf, cap);
        if (b == NULL) {
            s->truncated = true;
            return;
        }
        s->buf = b, s->cap = cap;
    }
    memcpy(s->buf + s->len, tmp, keep);
    s->len += keep;
    s->buf[s->len] = '\0';
}

void nsbox_sink_drain(struct nsbox_sink *s)
{
    for (int i = 0; i < 4096 && s->fd >= 0; i++) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 0) != 1)
            return;
        nsbox_sink_read(s);
    }
}

int nsbox_timer_start(double timeout_s, int *fd, struct nsbox_err *err)
{
    *fd = -1;
    if (timeout_s <= 0)
        return 0;
    *fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (*fd < 0)
        return nsbox_err_sys(err, "timerfd");
    double t = timeout_s;
    struct itimerspec its = {.it_value = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)}};
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
        its.it_value.tv_nsec = 1;
    return timerfd_settime(*fd, 0, &its, NULL) < 0 ? nsbox_err_sys(err, "timerfd") : 0;
}
