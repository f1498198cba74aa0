/* Running a command in a live sandbox (the host side).
 *
 * The request goes to the sandbox's init with the command's stdio fds
 * attached; init forks it inside every namespace the sandbox already has,
 * so an exec costs a fork and an execve.  Here we feed stdin, collect
 * stdout and stderr (capped, with a truncated flag, still draining so the
 * command never blocks on a full pipe), enforce the wall-clock timeout and
 * read the cgroup's OOM counter.
 *
 * The command only ever gets pipes (or /dev/null), never the caller's own
 * descriptors, even when its output streams to the caller's terminal or
 * file: a descriptor names a host file, and through /proc/self/fd/N the
 * sandbox could reopen it with new flags (read a log it was only meant to
 * append to, read keystrokes from a terminal, change its modes), or keep
 * writing to it after the command ended (CVE-2024-21626 class: nothing of
 * the host's reaches the sandbox as a descriptor).  We relay instead. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/cancel.h"
#include "../common/sink.h"
#include "internal.h"
#include "proto.h"
#include "sandbox.h"

#define DRAIN_AFTER_EXIT_MS 200

/* Streaming stdin: the caller's fd is read only when the pipe to the
 * command has room, through a buffer of our own; the caller's file status
 * flags (a shared terminal's) are never changed. */
struct relay {
    int from; /* the caller's stdin, -1 once at EOF */
    char buf[16384];
    size_t len, off;
};

struct run {
    struct nsbox_sandbox *sb;
    const struct nsbox_exec_opts *o;
    struct nsbox_exec_result *res;
    uint64_t id;
    struct nsbox_sink out, err; /* ../common/sink.h */
    int stdin_w;
    size_t stdin_off;
    struct relay in;
    int timer;
    bool cancel_sent; /* opts->cancel fired and acted on */
    bool exited;
    int64_t exited_at_ms;
    struct nsbox_progress_pace pace;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static size_t count_strings(char *const *v, size_t *bytes)
{
    size_t n = 0;
    for (; v != NULL && v[n] != NULL; n++)
        *bytes += strlen(v[n]) + 1;
    return n;
}

static char *pack_strings(char *p, char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(v[i]) + 1;
        memcpy(p, v[i], l);
        p += l;
    }
    return p;
}

int nsbox_exec_send(int ctl, uint64_t id, const struct nsbox_exec_opts *o, const int fds[3],
                    struct nsbox_err *err)
{
    const char *cwd = o->cwd ? o->cwd : "/";
    size_t bytes = strlen(cwd) + 1;
    size_t n_args = count_strings(o->argv, &bytes);
    size_t n_env = count_strings(o->env, &bytes);
    size_t tail = o->tty ? sizeof(struct nsbox_msg_tty) : 0;

    if (n_args == 0)
        return nsbox_err_set(err, EINVAL, "no command to run");
    if (sizeof(struct nsbox_msg_exec) + bytes + tail > NSBOX_PROTO_MAX)
        return nsbox_err_set(err, E2BIG, "command line and environment exceed %d bytes",
                             NSBOX_PROTO_MAX);
    _cleanup_free_ struct nsbox_msg_exec *m = calloc(1, sizeof(*m) + bytes + tail);
    if (m == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    *m = (struct nsbox_msg_exec){.type = NSBOX_MSG_EXEC,
                                 .n_args = (uint32_t)n_args,
                                 .id = id,
                                 .uid = o->uid,
                                 .gid = o->gid,
                                 .rlimit_nofile = o->rlimit_nofile,
                                 .rlimit_fsize = o->rlimit_fsize,
                                 .rlimit_nproc = o->rlimit_nproc,
                                 .n_env = (uint32_t)n_env,
                                 .strings_len = (uint32_t)bytes};
    char *p = pack_strings(m->strings, o->argv, n_args);
    p = pack_strings(p, o->env, n_env);
    memcpy(p, cwd, strlen(cwd) + 1);
    if (o->tty) {
        /* No fds: init opens the terminal inside (proto.h). */
        struct nsbox_msg_tty t = {.rows = o->tty_rows ? o->tty_rows : 24,
                                  .cols = o->tty_cols ? o->tty_cols : 80};
        memcpy(m->strings + bytes, &t, sizeof(t));
        return nsbox_proto_send(ctl, m, sizeof(*m) + bytes + tail, NULL, 0, err);
    }
    return nsbox_proto_send(ctl, m, sizeof(*m) + bytes, fds, 3, err);
}

uint64_t nsbox_exec_new_id(void)
{
    uint64_t id;
    if (getrandom(&id, sizeof(id), 0) != sizeof(id) || id == 0)
        id = now_us() | 1;
    return id;
}

static void feed_stdin(struct run *r)
{
    size_t left = r->o->stdin_len - r->stdin_off;
    ssize_t n = left ? write(r->stdin_w, r->o->stdin_data + r->stdin_off, left) : 0;
    if (n > 0)
        r->stdin_off += (size_t)n;
    if (r->stdin_off >= r->o->stdin_len || (n < 0 && errno != EAGAIN)) {
        close(r->stdin_w);
        r->stdin_w = -1;
    }
}

/* One step of the stdin relay: fill the buffer from the caller when it is
 * empty, else push it into the pipe (non-blocking on our side only). */
static void relay_stdin(struct run *r, short from_events, short pipe_events)
{
    struct relay *in = &r->in;
    if (in->off == in->len && in->from >= 0 && from_events) {
        ssize_t n = read(in->from, in->buf, sizeof(in->buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        if (n <= 0)
            in->from = -1;
        else
            in->len = (size_t)n, in->off = 0;
    }
    if (in->off < in->len && pipe_events) {
        ssize_t n = write(r->stdin_w, in->buf + in->off, in->len - in->off);
        if (n > 0)
            in->off += (size_t)n;
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            in->from = -1, in->off = in->len; /* the command closed its stdin */
    }
    if (in->off == in->len && in->from < 0) {
        close(r->stdin_w);
        r->stdin_w = -1;
    }
}

/* Landlock mode (landlock.h): the host kills the session itself too.
 * init there is no pid 1 immune to the sandbox's signals: before Landlock
 * ABI 6 a command can SIGSTOP it, and a kill left to it would never come.
 * Then init is woken to reap and report. */
static void landlock_kill_all(const struct nsbox_sandbox *sb)
{
    if (sb->isolation != NSBOX_ISOLATION_LANDLOCK || sb->pid <= 0)
        return;
    nsbox_session_kill(sb->pid, sb->pid);
    kill(sb->pid, SIGCONT);
}

static void send_kill(struct run *r, uint64_t id)
{
    struct nsbox_msg_kill k = {.type = NSBOX_MSG_KILL, .id = id};
    nsbox_proto_send(r->sb->ctl, &k, sizeof(k), NULL, 0, NULL);
    if (id == 0)
        landlock_kill_all(r->sb);
}

static int handle_status(struct run *r, struct nsbox_err *err)
{
    struct nsbox_msg_status m;
    int fds[3];
    ssize_t n = nsbox_proto_recv(r->sb->ctl, &m, sizeof(m), fds, err);

    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (n <= 0)
        return n == 0 ? nsbox_err_set(err, EPIPE, "the sandbox died (its init is gone)") : -1;
    if ((size_t)n != sizeof(m) || m.id != r->id)
        return 0;
    if (m.type == NSBOX_MSG_ERROR)
        return nsbox_err_set(err, m.err_code, "sandbox: %.*s", NSBOX_PROTO_ERR_MAX, m.err);
    if (m.type != NSBOX_MSG_EXITED)
        return 0;
    r->exited = true;
    r->exited_at_ms = nsbox_now_ms();
    if (WIFEXITED(m.wait_status)) {
        r->res->exit_code = WEXITSTATUS(m.wait_status);
    } else {
        r->res->exit_code = -1;
        r->res->signal = WTERMSIG(m.wait_status);
    }
    r->res->cpu_us = m.utime_us + m.stime_us;
    r->res->maxrss_bytes = m.maxrss_kb * 1024;
    return 0;
}

static int on_timeout(struct run *r)
{
    uint64_t ticks;
    if (read(r->timer, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
        return 0;
    r->res->timed_out = true;
    /* The whole sandbox but init: daemons and double forks included. */
    send_kill(r, 0);
    close(r->timer);
    r->timer = -1;
    return 0;
}

/* The cancel fired: like a timeout, the whole sandbox but init.  The
 * kill follows our exec request on the control socket, so init has started
 * the command before it kills (or refuses to start it: it is gone). */
static void on_cancel(struct run *r)
{
    r->res->cancelled = !r->exited;
    r->cancel_sent = true;
    send_kill(r, 0);
}

static bool done(const struct run *r)
{
    if (!r->exited)
        return false;
    if (r->out.fd < 0 && r->err.fd < 0)
        return true;
    /* A background process may hold the pipes open forever. */
    return nsbox_now_ms() - r->exited_at_ms >= DRAIN_AFTER_EXIT_MS;
}

static void maybe_progress(struct run *r)
{
    /* Not once it exited: the result has the rest. */
    if (!r->exited)
        nsbox_progress_maybe(&r->pace, r->o, r->out.buf, r->out.len, r->err.buf, r->err.len);
}

static int event_loop(struct run *r, struct nsbox_err *err)
{
    nsbox_progress_begin(&r->pace);
    while (!done(r)) {
        struct pollfd p[7];
        int n = 0;
        bool relaying = r->stdin_w >= 0 && r->o->stdin_data == NULL;
        bool buffered = r->in.off < r->in.len;
        p[n++] = (struct pollfd){.fd = r->exited ? -1 : r->sb->ctl, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = r->out.fd, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = r->err.fd, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = relaying && !buffered ? -1 : r->stdin_w, .events = POLLOUT};
        p[n++] = (struct pollfd){.fd = r->timer, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = relaying && !buffered ? r->in.from : -1, .events = POLLIN};
        p[n++] = (struct pollfd){.fd = r->o->cancel && !r->cancel_sent ? r->o->cancel->fd : -1,
                                 .events = POLLIN};
        int timeout = r->exited ? DRAIN_AFTER_EXIT_MS : nsbox_progress_timeout(&r->pace, r->o);
        if (poll(p, (nfds_t)n, timeout) < 0) {
            if (errno == EINTR)
                continue;
            return nsbox_err_sys(err, "poll");
        }
        if (p[0].revents && handle_status(r, err) < 0)
            return -1;
        if (p[1].revents)
            nsbox_sink_read(&r->out);
        if (p[2].revents)
            nsbox_sink_read(&r->err);
        if (relaying && (p[3].revents || p[5].revents))
            relay_stdin(r, p[5].revents, p[3].revents);
        else if (p[3].revents)
            feed_stdin(r);
        if (p[4].revents)
            on_timeout(r);
        if (p[6].revents)
            on_cancel(r);
        maybe_progress(r);
    }
    return 0;
}

static int open_stdio(struct run *r, int fds[3], int close_after[3], struct nsbox_err *err)
{
    const struct nsbox_exec_opts *o = r->o;
    int p[2];

    if (o->stdin_data != NULL || o->stdin_fd >= 0) {
        if (pipe2(p, O_CLOEXEC) < 0)
            return nsbox_err_sys(err, "pipe");
        fds[0] = close_after[0] = p[0];
        r->stdin_w = p[1];
        r->in.from = o->stdin_data != NULL ? -1 : o->stdin_fd;
        fcntl(r->stdin_w, F_SETFL, O_NONBLOCK);
        signal(SIGPIPE, SIG_IGN);
    } else {
        fds[0] = close_after[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    struct nsbox_sink *sinks[2] = {&r->out, &r->err};
    int given[2] = {o->out_fd, o->err_fd};
    for (int i = 0; i < 2; i++) {
        if (pipe2(p, O_CLOEXEC) < 0)
            return nsbox_err_sys(err, "pipe");
        sinks[i]->fd = p[0];
        sinks[i]->forward = o->capture ? -1 : given[i];
        sinks[i]->limit = !o->capture ? 0 : o->output_cap ? o->output_cap : (1u << 20);
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        fds[i + 1] = close_after[i + 1] = p[1];
    }
    return fds[0] < 0 ? nsbox_err_sys(err, "/dev/null") : 0;
}

static void finish(struct run *r, uint64_t oom_before)
{
    uint64_t oom_after, peak;
    nsbox_cgroup_stats(&r->sb->cgroup, &oom_after, &peak);
    r->res->oom_killed = oom_after > oom_before;
    r->res->memory_peak_bytes = peak;
    r->res->out = r->out.buf ? r->out.buf : strdup("");
    r->res->err = r->err.buf ? r->err.buf : strdup("");
    r->res->out_len = r->out.len, r->res->err_len = r->err.len;
    r->res->out_truncated = r->out.truncated;
    r->res->err_truncated = r->err.truncated;
    r->out.buf = r->err.buf = NULL;
}

int nsbox_sandbox_exec(struct nsbox_sandbox *sb, const struct nsbox_exec_opts *o,
                       struct nsbox_exec_result *res, struct nsbox_err *err)
{
    struct run r = {.sb = sb,
                    .o = o,
                    .res = res,
                    .out = {.fd = -1, .forward = -1},
                    .err = {.fd = -1, .forward = -1},
                    .stdin_w = -1,
                    .timer = -1,
                    .in = {.from = -1}};
    int fds[3] = {-1, -1, -1}, close_after[3] = {-1, -1, -1};
    uint64_t oom_before;

    memset(res, 0, sizeof(*res));
    if (o->tty)
        return nsbox_err_set(err, EINVAL,
                             "a command with a terminal runs through nsbox_proc_start");
    if (sb->ctl < 0)
        return nsbox_err_set(err, EBADF, "sandbox %s is not connected", sb->id);
    r.id = nsbox_exec_new_id();
    nsbox_cgroup_stats(&sb->cgroup, &oom_before, NULL);
    uint64_t t0 = now_us();
    int rc = open_stdio(&r, fds, close_after, err);
    if (rc == 0)
        rc = nsbox_exec_send(sb->ctl, r.id, o, fds, err);
    /* The command holds its ends now; ours must go so EOF can happen. */
    for (int i = 0; i < 3; i++)
        if (close_after[i] >= 0)
            close(close_after[i]);
    if (rc == 0)
        rc = nsbox_timer_start(o->timeout_s, &r.timer, err);
    if (rc == 0)
        rc = event_loop(&r, err);
    res->wall_us = now_us() - t0;
    if (rc == 0)
        finish(&r, oom_before);
    if (r.out.fd >= 0)
        close(r.out.fd);
    if (r.err.fd >= 0)
        close(r.err.fd);
    if (r.stdin_w >= 0)
        close(r.stdin_w);
    if (r.timer >= 0)
        close(r.timer);
    free(r.out.buf);
    free(r.err.buf);
    return rc;
}

void nsbox_exec_result_free(struct nsbox_exec_result *res)
{
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}

void nsbox_sandbox_kill_all(struct nsbox_sandbox *sb)
{
    struct nsbox_msg_kill k = {.type = NSBOX_MSG_KILL, .id = 0};
    /* Through init (kill(-1) from pid 1): cgroup.kill would take init too. */
    if (sb->ctl >= 0)
        nsbox_proto_send(sb->ctl, &k, sizeof(k), NULL, 0, NULL);
    landlock_kill_all(sb);
}
