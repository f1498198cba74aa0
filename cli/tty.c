/* -t: a command with a terminal, relayed (run -t, exec -t).
 *
 * The terminal is a pty in the sandbox's own devpts, opened by its init
 * (boxes/proc.h, o->tty); we hold only its master.  The caller's terminal
 * never reaches the sandbox as a descriptor: we copy bytes between the two,
 * so TIOCSTI and every other ioctl in the sandbox act on its own pty.
 *
 * Contract: with -i the caller's stdin is relayed into the master and, when
 * it is a terminal, put in raw mode (^C, ^Z and ^\ are bytes the sandbox's
 * line discipline turns into signals for its foreground group) and restored
 * on every way out: the command's exit, an nsbox error, SIGTERM or SIGHUP.
 * Without -i nothing is read from stdin.  Output (stdout and stderr merged,
 * as the pty merges them) goes to our stdout.  SIGWINCH copies the caller's
 * size onto the master; SIGINT that reaches nsbox itself (no raw mode) is
 * passed on to the command's process group. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../boxes/proc.h"
#include "../common/fsutil.h"
#include "cli.h"

/* After the command exits, what it (or a background process still holding
 * the pty) writes is drained until the pty is quiet this long. */
#define DRAIN_MS 200

struct relay {
    struct nsbox_proc p;
    int sigfd;
    int in;  /* the caller's stdin while relayed, else -1 */
    int out; /* our stdout, -1 once its reader is gone */
    bool raw;
    struct termios saved;
    char buf[4096]; /* stdin bytes not yet in the master */
    size_t len, off;
    bool master_done; /* EOF/EIO: no process holds the slave */
    int64_t deadline_ms;
    bool timed_out;
    int stop_signal; /* SIGTERM or SIGHUP to nsbox */
    /* box_run's: its budget watch, called every progress_ms, and the
     * cancel that watch fires (then every process but init is killed). */
    const struct nsbox_exec_opts *eo;
    int64_t started_ms, last_progress_ms;
    bool cancelled;
};

/* The caller's size: from whichever of stdin and stdout is a terminal. */
static bool caller_size(struct winsize *ws)
{
    return ioctl(0, TIOCGWINSZ, ws) == 0 || ioctl(1, TIOCGWINSZ, ws) == 0;
}

static void restore_terminal(struct relay *r)
{
    if (r->raw)
        tcsetattr(0, TCSADRAIN, &r->saved);
    r->raw = false;
}

static int make_raw(struct relay *r, struct nsbox_err *err)
{
    struct termios t;
    if (tcgetattr(0, &r->saved) < 0)
        return nsbox_err_sys(err, "cannot read the terminal's modes");
    t = r->saved;
    cfmakeraw(&t);
    if (tcsetattr(0, TCSADRAIN, &t) < 0)
        return nsbox_err_sys(err, "cannot put the terminal in raw mode");
    r->raw = true;
    return 0;
}

/* The signals the relay takes as events.  Blocked before anything can
 * change the terminal, so none of them kills nsbox with the modes raw, and
 * left blocked after: a stop signal's exit status is ours to return once
 * the sandbox is cleaned up, not the default action's. */
static int block_signals(struct nsbox_err *err)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGWINCH);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return nsbox_err_sys(err, "sigprocmask");
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? nsbox_err_sys(err, "signalfd") : fd;
}

static void on_signal(struct relay *r)
{
    struct signalfd_siginfo si;
    struct nsbox_err ignored;
    while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
        struct winsize ws;
        if (si.ssi_signo == SIGWINCH && r->p.pty >= 0 && caller_size(&ws))
            ioctl(r->p.pty, TIOCSWINSZ, &ws); /* the kernel signals the sandbox */
        else if (si.ssi_signo == SIGINT)
            box_proc_signal(&r->p, SIGINT, &ignored);
        else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
            r->stop_signal = (int)si.ssi_signo;
    }
}

static void read_master(struct relay *r)
{
    char tmp[16384];
    ssize_t n = read(r->p.pty, tmp, sizeof(tmp));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) { /* EIO: the last holder of the slave closed it */
        r->master_done = true;
        return;
    }
    if (r->out >= 0 && nsbox_write_all(r->out, tmp, (size_t)n) < 0)
        r->out = -1; /* keep draining: the command must not block */
}

/* One step of stdin -> master: read when the buffer is empty, else write. */
static void relay_input(struct relay *r, bool readable, bool writable)
{
    if (r->off == r->len && readable) {
        ssize_t n = read(r->in, r->buf, sizeof(r->buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0)
            r->in = -1; /* EOF (a pipe with -t alone never gets here) */
        else
            r->len = (size_t)n, r->off = 0;
    }
    if (r->off < r->len && writable) {
        ssize_t n = write(r->p.pty, r->buf + r->off, r->len - r->off);
        if (n > 0)
            r->off += (size_t)n;
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            r->in = -1, r->off = r->len;
    }
}

static int poll_timeout(const struct relay *r)
{
    if (r->p.exited)
        return DRAIN_MS;
    int tick = r->eo->progress ? (int)(r->eo->progress_ms ? r->eo->progress_ms : 1000) : -1;
    if (r->deadline_ms == 0 || r->timed_out)
        return tick;
    int64_t left = r->deadline_ms - nsbox_now_ms();
    int until = left < 0 ? 0 : (int)left;
    return tick >= 0 && tick < until ? tick : until;
}

/* box_run's watch, at its pace: no output is captured (the pty's goes to
 * the caller as it comes). */
static void on_tick(struct relay *r)
{
    const struct nsbox_exec_opts *eo = r->eo;
    int64_t now = nsbox_now_ms();
    if (eo->progress == NULL || r->p.exited || now - r->last_progress_ms < (int64_t)eo->progress_ms)
        return;
    r->last_progress_ms = now;
    eo->progress(eo->progress_ctx, (uint64_t)(now - r->started_ms), "", 0, "", 0);
}

/* The cancel fired: as a timeout, every process but init. */
static void on_cancel(struct relay *r, struct box *box)
{
    if (r->cancelled || r->p.exited)
        return;
    r->cancelled = true;
    box_kill_all(box);
}

static void on_deadline(struct relay *r, struct box *box)
{
    if (r->p.exited || r->timed_out || r->deadline_ms == 0 || nsbox_now_ms() < r->deadline_ms)
        return;
    r->timed_out = true;
    /* As a timeout without a terminal: every process but init. */
    box_kill_all(box);
}

/* Until the command has exited and its output is drained, or a stop
 * signal.  Returns 0, or -1 when the sandbox failed. */
static int relay_loop(struct relay *r, struct box *box, struct nsbox_err *err)
{
    while (r->stop_signal == 0 && !(r->p.exited && r->master_done)) {
        bool pending = r->off < r->len;
        const struct nsbox_cancel *c = r->eo->cancel;
        struct pollfd p[5] = {
            {.fd = r->sigfd, .events = POLLIN},
            {.fd = r->p.exited ? -1 : r->p.ctl, .events = POLLIN},
            {.fd = r->master_done ? -1 : r->p.pty,
             .events = (short)(POLLIN | (pending ? POLLOUT : 0))},
            {.fd = pending || r->master_done ? -1 : r->in, .events = POLLIN},
            {.fd = c != NULL && !r->cancelled ? c->fd : -1, .events = POLLIN},
        };
        int n = poll(p, 5, poll_timeout(r));
        if (n < 0 && errno != EINTR)
            return nsbox_err_sys(err, "poll");
        if (n == 0 && r->p.exited)
            break; /* quiet since the exit: a background process may hold the pty */
        if (n <= 0) {
            on_deadline(r, box);
            on_tick(r);
            continue;
        }
        if (p[0].revents)
            on_signal(r);
        if (p[1].revents && box_proc_wait(&r->p, 0, err) < 0)
            return -1;
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR))
            read_master(r);
        if ((p[2].revents & POLLOUT) || (p[3].revents && !pending))
            relay_input(r, p[3].revents != 0, (p[2].revents & POLLOUT) != 0);
        if (p[4].revents)
            on_cancel(r, box);
        on_deadline(r, box);
        on_tick(r);
    }
    return 0;
}

static void fill_result(const struct relay *r, struct nsbox_exec_result *res)
{
    memset(res, 0, sizeof(*res));
    res->timed_out = r->timed_out;
    res->cancelled = r->cancelled;
    if (r->stop_signal != 0) { /* nsbox was told to stop: as docker, 128+N */
        res->exit_code = -1;
        res->signal = r->stop_signal;
    } else if (WIFEXITED(r->p.wait_status)) {
        res->exit_code = WEXITSTATUS(r->p.wait_status);
    } else {
        res->exit_code = -1;
        res->signal = WTERMSIG(r->p.wait_status);
    }
    res->cpu_us = r->p.cpu_us;
    res->maxrss_bytes = r->p.maxrss_bytes;
}

int cli_tty_exec(void *interactive_, struct box *box, const struct nsbox_exec_opts *eo,
                 struct nsbox_exec_result *res, struct nsbox_err *err)
{
    bool interactive = *(const bool *)interactive_;
    struct relay r = {.sigfd = -1, .in = -1, .out = 1, .eo = eo};
    struct nsbox_exec_opts o = *eo;
    struct winsize ws;
    uint64_t oom_before, oom_after;

    memset(res, 0, sizeof(*res));
    r.p.ctl = r.p.chan = r.p.out = r.p.err = r.p.pty = -1;
    o.tty = true;
    if (caller_size(&ws))
        o.tty_rows = ws.ws_row, o.tty_cols = ws.ws_col;
    r.sigfd = block_signals(err);
    if (r.sigfd < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    box_stats(box, &oom_before, NULL);
    int rc = box_proc_start(box, &o, &r.p, err);
    r.started_ms = r.last_progress_ms = nsbox_now_ms();
    if (rc == 0 && interactive) {
        r.in = 0;
        if (isatty(0))
            rc = make_raw(&r, err);
    }
    if (rc == 0 && o.timeout_s > 0)
        r.deadline_ms = nsbox_now_ms() + (int64_t)(o.timeout_s * 1000);
    if (rc == 0)
        rc = relay_loop(&r, box, err);
    restore_terminal(&r);
    if (rc == 0) {
        fill_result(&r, res);
        box_stats(box, &oom_after, NULL);
        res->oom_killed = oom_after > oom_before;
    }
    box_proc_close(&r.p); /* kills it if it still runs (a stop signal) */
    close(r.sigfd);
    return rc;
}
