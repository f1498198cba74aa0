/* The zygote (zygote.h, docs/warm.md).  Its programs are zygote.py and
 * zygote.js (built into nsbox, passed on the command line: nothing is
 * mounted into the spare), which say the channel's format. */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/clock.h"
#include "../../common/sink.h"

#define READY_MS 30000 /* from start to "ready" (warm imports included) */
#define TAKE_MS 5000   /* the program's frame written within */
#define DRAIN_MS 200   /* output read after the exit (runtime/exec.c's) */
#define LINE_MAX_ 4096

extern const char mcp_driver_zygote_py[], mcp_driver_zygote_js[];

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct mcp_zygote {
    enum mcp_interp_lang lang;
    struct nsbox_proc proc;
    char line[LINE_MAX_]; /* what came on the channel, not yet a line */
    size_t len;
};

bool mcp_zygote_supported(enum mcp_interp_lang lang)
{
    return lang == MCP_INTERP_PYTHON || lang == MCP_INTERP_JAVASCRIPT ||
           lang == MCP_INTERP_TYPESCRIPT;
}

enum mcp_interp_lang mcp_zygote_lang(const struct mcp_zygote *z)
{
    return z->lang;
}

void mcp_zygote_free(struct mcp_zygote *z)
{
    if (z == NULL)
        return;
    box_proc_close(&z->proc);
    free(z);
}

bool mcp_zygote_env_ok(char *const *env)
{
    static const char *const prefixes[] = {"PYTHON",  "NODE_",  "UV_",      "LD_",
                                           "MALLOC_", "GLIBC_", "LC_",      "OPENBLAS_",
                                           "OMP_",    "MKL_",   "NUMEXPR_", "TS_NODE_"};
    static const char *const names[] = {"LANG", "LANGUAGE", "HOME", "PATH", "TZ", "TMPDIR"};
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        const char *eq = strchr(env[i], '=');
        size_t len = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
        for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
            if (strncmp(env[i], prefixes[k], strlen(prefixes[k])) == 0)
                return false;
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
            if (len == strlen(names[k]) && strncmp(env[i], names[k], len) == 0)
                return false;
    }
    return true;
}

/* The next line from the channel into out (NUL-terminated, without the
 * newline), waiting up to ms.  Returns 1, 0 at EOF or on a line too long,
 * -1 on timeout, -2 when cancel fired. */
static int read_line(struct mcp_zygote *z, char *out, size_t size, int ms,
                     const struct nsbox_cancel *cancel)
{
    int64_t until = nsbox_now_ms() + ms;
    for (;;) {
        char *nl = memchr(z->line, '\n', z->len);
        if (nl != NULL) {
            size_t n = (size_t)(nl - z->line);
            snprintf(out, size, "%.*s", (int)n, z->line);
            memmove(z->line, nl + 1, z->len - n - 1);
            z->len -= n + 1;
            return 1;
        }
        if (z->len == sizeof(z->line))
            return 0;
        int left = (int)(until - nsbox_now_ms());
        struct pollfd p[2] = {{.fd = z->proc.chan, .events = POLLIN},
                              {.fd = cancel ? cancel->fd : -1, .events = POLLIN}};
        int r = left <= 0 ? 0 : poll(p, 2, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return -1;
        if (p[1].revents)
            return -2;
        ssize_t n = read(z->proc.chan, z->line + z->len, sizeof(z->line) - z->len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return 0;
        z->len += (size_t)n;
    }
}

static const char *const programs[MCP_INTERP_N][3] = {
    [MCP_INTERP_PYTHON] = {"python3", "-c", mcp_driver_zygote_py},
    [MCP_INTERP_JAVASCRIPT] = {"node", "-e", mcp_driver_zygote_js},
    [MCP_INTERP_TYPESCRIPT] = {"node", "-e", mcp_driver_zygote_js},
};

/* argv: the program, then "--typescript" and the warm modules. */
static char **argv_for(enum mcp_interp_lang lang, char *const *warm)
{
    size_t n = 0;
    while (lang == MCP_INTERP_PYTHON && warm != NULL && warm[n] != NULL)
        n++;
    char **v = calloc(n + 6, sizeof(char *));
    if (v == NULL)
        return NULL;
    size_t i = 0;
    for (; i < 3; i++)
        v[i] = (char *)programs[lang][i];
    if (lang == MCP_INTERP_TYPESCRIPT) {
        v[i++] = "--"; /* node would take what follows for its own options */
        v[i++] = "--typescript";
    }
    for (size_t k = 0; k < n; k++)
        v[i++] = warm[k];
    return v;
}

/* "ready" [0x1f FAILURE]...: the failures joined with "; " into *failed. */
static void take_failures(const char *line, char **failed)
{
    const char *f = strchr(line, '\x1f');
    if (f == NULL)
        return;
    *failed = strdup(f + 1);
    for (char *p = *failed; p != NULL && *p; p++)
        if (*p == '\x1f')
            *p = ';';
}

struct mcp_zygote *mcp_zygote_start(struct box *box, enum mcp_interp_lang lang, char *const *warm,
                                    char **failed, struct nsbox_err *err)
{
    *failed = NULL;
    if (!mcp_zygote_supported(lang)) {
        nsbox_err_set(err, ENOTSUP, "no zygote for this language");
        return NULL;
    }
    _cleanup_free_ char **argv = argv_for(lang, warm);
    _cleanup_free_ struct mcp_zygote *z = calloc(1, sizeof(*z));
    if (argv == NULL || z == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    z->lang = lang;
    struct nsbox_exec_opts o;
    box_exec_defaults(box, &o);
    o.argv = argv;
    if (box_proc_start(box, &o, &z->proc, err) < 0)
        return NULL;
    fcntl(z->proc.chan, F_SETFL, O_NONBLOCK);
    char line[LINE_MAX_];
    int r = read_line(z, line, sizeof(line), READY_MS, NULL);
    if (r != 1 || strncmp(line, "ready", 5) != 0 || (line[5] != '\0' && line[5] != '\x1f')) {
        struct nsbox_err ignored;
        box_proc_signal(&z->proc, SIGKILL, &ignored);
        box_proc_wait(&z->proc, 1000, &ignored);
        int code = z->proc.exited && WIFEXITED(z->proc.wait_status)
                       ? WEXITSTATUS(z->proc.wait_status)
                       : -1;
        nsbox_err_set(err, code == 127 ? ENOENT : EIO, "the %s zygote did not start%s",
                      programs[lang][0], code == 127 ? " (the image lacks it)" : "");
        box_proc_close(&z->proc);
        return NULL;
    }
    take_failures(line, failed);
    return TAKE_PTR(z);
}

bool mcp_zygote_alive(struct mcp_zygote *z)
{
    struct nsbox_err ignored;
    if (z->proc.exited || box_proc_wait(&z->proc, 0, &ignored) != 0)
        return false;
    struct pollfd p = {.fd = z->proc.chan, .events = POLLIN};
    /* It says nothing after "ready": readable means EOF, or garbage. */
    return poll(&p, 1, 0) == 0;
}

/* The program's frame: "LEN\n" CWD \0 N \0 (NAME=VALUE \0)*N CODE. */
static char *frame(const char *cwd, char *const *env, const char *code, size_t *len)
{
    size_t n = 0, body = strlen(cwd) + 1 + 24 + strlen(code);
    for (; env != NULL && env[n] != NULL; n++)
        body += strlen(env[n]) + 1;
    char *f = malloc(body + 32);
    if (f == NULL)
        return NULL;
    int head = snprintf(f + 24, 24, "%zu", n);
    char *p = f + 32;
    p += sprintf(p, "%s", cwd) + 1;
    memcpy(p, f + 24, (size_t)head + 1);
    p += head + 1;
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s", env[i]) + 1;
    size_t cl = strlen(code);
    memcpy(p, code, cl);
    p += cl;
    size_t blen = (size_t)(p - (f + 32));
    char num[24];
    int hl = snprintf(num, sizeof(num), "%zu\n", blen);
    char *start = f + 32 - hl;
    memcpy(start, num, (size_t)hl);
    memmove(f, start, blen + (size_t)hl);
    *len = blen + (size_t)hl;
    return f;
}

static int write_all(struct mcp_zygote *z, const char *s, size_t len,
                     const struct nsbox_cancel *cancel)
{
    while (len > 0) {
        struct pollfd p[2] = {{.fd = z->proc.chan, .events = POLLOUT},
                              {.fd = cancel ? cancel->fd : -1, .events = POLLIN}};
        if (poll(p, 2, TAKE_MS) <= 0 && errno != EINTR)
            return -1;
        if (p[1].revents)
            return -2;
        ssize_t n = write(z->proc.chan, s, len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0)
            return -1;
        s += n, len -= (size_t)n;
    }
    return 0;
}

/* One program's run once taken: as runtime/exec.c's event loop. */
struct run {
    struct mcp_zygote *z;
    struct box *box;
    const struct nsbox_exec_opts *eo;
    struct nsbox_exec_result *res;
    struct nsbox_sink out, err;
    struct nsbox_progress_pace pace;
    int timer;
    bool killed;
    int64_t exited_at_ms;
    /* Its "x STATUS CPU_US HWM_BYTES" (zygote.py: the program ended, its
     * output closed), taken as its exit; chan: still read. */
    bool said, chan;
    int status;
    unsigned long long cpu_us, hwm;
    /* Its "g CPU_US" (taken: the program runs; its CPU time then) or
     * "n" (refused). */
    bool taken, refused;
    unsigned long long cpu_before;
};

static bool ended(const struct run *r)
{
    return r->z->proc.exited || r->said;
}

/* What came on the channel after "taken": only the end is looked for;
 * anything else (the program can write there) is dropped. */
static void read_chan(struct run *r)
{
    struct mcp_zygote *z = r->z;
    ssize_t n = read(z->proc.chan, z->line + z->len, sizeof(z->line) - z->len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        r->chan = false;
        return;
    }
    z->len += (size_t)n;
    char *nl;
    while ((nl = memchr(z->line, '\n', z->len)) != NULL) {
        *nl = '\0';
        int st;
        unsigned long long cpu, hwm;
        char extra;
        if (!r->taken && !r->refused) {
            r->taken = sscanf(z->line, "g %llu%c", &r->cpu_before, &extra) == 1;
            r->refused = !r->taken;
        } else if (r->taken && !r->said && !r->killed &&
                   sscanf(z->line, "x %d %llu %llu%c", &st, &cpu, &hwm, &extra) == 3 && st >= 0 &&
                   st <= 255) {
            r->said = true;
            r->status = st, r->cpu_us = cpu, r->hwm = hwm;
            r->exited_at_ms = nsbox_now_ms();
        }
        size_t used = (size_t)(nl - z->line) + 1;
        memmove(z->line, nl + 1, z->len - used);
        z->len -= used;
    }
    if (z->len == sizeof(z->line))
        z->len = 0; /* a line this long is none of ours */
}

static void kill_all(struct run *r)
{
    /* Every process but init, as a fresh command's timeout does. */
    box_kill_all(r->box);
    r->killed = true;
}

static int loop(struct run *r, struct nsbox_err *err)
{
    nsbox_progress_begin(&r->pace);
    for (;;) {
        /* Not taken: refused, or its channel closed before it said so. */
        if (!r->taken && (r->refused || !r->chan))
            return 0;
        bool exited = ended(r) && r->taken;
        if (exited &&
            ((r->out.fd < 0 && r->err.fd < 0) || nsbox_now_ms() - r->exited_at_ms >= DRAIN_MS))
            return 0;
        bool cancel_armed = r->eo->cancel != NULL && !r->killed;
        struct pollfd p[6] = {
            {.fd = ended(r) ? -1 : r->z->proc.ctl, .events = POLLIN},
            {.fd = r->out.fd, .events = POLLIN},
            {.fd = r->err.fd, .events = POLLIN},
            {.fd = r->timer, .events = POLLIN},
            {.fd = cancel_armed ? r->eo->cancel->fd : -1, .events = POLLIN},
            {.fd = exited || !r->chan ? -1 : r->z->proc.chan, .events = POLLIN},
        };
        int timeout = exited ? DRAIN_MS : nsbox_progress_timeout(&r->pace, r->eo);
        if (poll(p, 6, timeout) < 0) {
            if (errno == EINTR)
                continue;
            return nsbox_err_sys(err, "poll");
        }
        if (p[5].revents)
            read_chan(r);
        if (p[0].revents) {
            if (box_proc_wait(&r->z->proc, 0, err) < 0)
                return -1;
            if (r->z->proc.exited && !r->said)
                r->exited_at_ms = nsbox_now_ms();
        }
        if (p[1].revents)
            nsbox_sink_read(&r->out);
        if (p[2].revents)
            nsbox_sink_read(&r->err);
        if (p[3].revents && !ended(r)) {
            r->res->timed_out = true;
            close(r->timer);
            r->timer = -1;
            kill_all(r);
        }
        if (p[4].revents) {
            r->res->cancelled = !ended(r);
            kill_all(r);
        }
        if (!ended(r))
            nsbox_progress_maybe(&r->pace, r->eo, r->out.buf, r->out.len, r->err.buf, r->err.len);
    }
}

static void fill(struct run *r, unsigned long long cpu_before, uint64_t oom_before, int64_t t0)
{
    struct nsbox_exec_result *res = r->res;
    int st = r->z->proc.wait_status;
    if (r->said && !r->z->proc.exited) {
        res->exit_code = r->status;
    } else if (WIFEXITED(st)) {
        res->exit_code = WEXITSTATUS(st);
    } else {
        res->exit_code = -1;
        res->signal = WTERMSIG(st);
    }
    res->wall_us = (uint64_t)(now_us() - t0);
    if (r->said && !r->z->proc.exited) {
        res->cpu_us = r->cpu_us;
        res->maxrss_bytes = r->hwm;
    } else {
        res->cpu_us = r->z->proc.cpu_us > cpu_before ? r->z->proc.cpu_us - cpu_before : 0;
        res->maxrss_bytes = r->z->proc.maxrss_bytes;
    }
    uint64_t ooms = 0, peak = 0;
    box_stats(r->box, &ooms, &peak);
    res->oom_killed = ooms > oom_before;
    res->memory_peak_bytes = peak;
    res->out = r->out.buf ? r->out.buf : strdup("");
    res->err = r->err.buf ? r->err.buf : strdup("");
    res->out_len = r->out.len, res->err_len = r->err.len;
    res->out_truncated = r->out.truncated, res->err_truncated = r->err.truncated;
}

/* Sends the program.  Returns 0, 1 (the zygote is gone: not taken), or
 * -1 (cancelled). */
static int hand_over(struct mcp_zygote *z, const char *code, char *const *env,
                     const struct nsbox_exec_opts *eo, const char *cwd, struct nsbox_err *err)
{
    size_t len;
    _cleanup_free_ char *f = frame(cwd, env, code, &len);
    if (f == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    int w = write_all(z, f, len, eo->cancel);
    /* Nothing more to say: node's zygote keeps the channel as the
     * program's stdin (zygote.js), which must read EOF. */
    if (w == 0)
        shutdown(z->proc.chan, SHUT_WR);
    if (w == -2)
        return nsbox_err_set(err, ECANCELED, "cancelled");
    return w == 0 ? 0 : 1;
}

int mcp_zygote_run(struct mcp_zygote *z, struct box *box, const char *code, char *const *env,
                   const struct nsbox_exec_opts *eo, struct nsbox_exec_result *res,
                   struct nsbox_err *err)
{
    memset(res, 0, sizeof(*res));
    if (!mcp_zygote_alive(z))
        return 1;
    uint64_t oom_before = 0;
    box_stats(box, &oom_before, NULL);
    int64_t t0 = now_us();
    const char *cwd = eo->cwd ? eo->cwd : box->workdir;
    int h = hand_over(z, code, env, eo, cwd ? cwd : "/", err);
    if (h != 0) {
        box_proc_close(&z->proc); /* nothing of the program ran */
        return h;
    }
    size_t cap = eo->output_cap ? eo->output_cap : (1u << 20);
    struct run r = {.z = z,
                    .box = box,
                    .eo = eo,
                    .res = res,
                    .out = {.fd = z->proc.out, .forward = -1, .borrowed = true, .limit = cap},
                    .err = {.fd = z->proc.err, .forward = -1, .borrowed = true, .limit = cap},
                    .timer = -1,
                    .chan = true};
    int rc = nsbox_timer_start(eo->timeout_s, &r.timer, err);
    if (rc == 0)
        rc = loop(&r, err);
    if (r.timer >= 0)
        close(r.timer);
    if (rc != 0 || !r.taken) {
        free(r.out.buf);
        free(r.err.buf);
        box_proc_close(&z->proc);
        if (rc == 0 && r.killed && r.res->cancelled) /* before it took it */
            return nsbox_err_set(err, ECANCELED, "cancelled");
        return rc < 0 ? -1 : 1;
    }
    nsbox_sink_drain(&r.out);
    nsbox_sink_drain(&r.err);
    fill(&r, r.cpu_before, oom_before, t0);
    return 0;
}
