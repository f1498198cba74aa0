/* Stateful interpreters (see interp.h and docs/interpreters.md). */
#include "../../common/clock.h"
#include "interp.h"
#include "interp_internal.h"
#include "protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/sink.h"

#define READY_MS 30000      /* from start to "ready", but for Java (the driver's ready_ms) */
#define START_RETRY_MS 2000 /* a start refused with EAGAIN: retried this long */

/* Each language's driver: the program named when the image lacks it, and
 * the command line.  R cannot take a socket on fd 0 as its channel, so a
 * shell moves it to fd 3 first (r_driver.R relays it with cat); the Java
 * driver is a single-file source program (java launches it compiled in
 * memory) on the jdk.jshell module, opening java.util for the cell's env
 * (JavaDriver.java), its memory sized to fit RLIMIT_AS when there is one
 * (MCP_JAVA_LIMIT_OPTS).  ready_ms, when set, is the language's own time
 * from start to "ready": the JVM compiles its driver before it answers,
 * about 1.7 s of CPU where python and node take 0.1 s, so a host whose
 * load is 15 times its cores (CI: 4 JVMs starting in sandboxes beside 3
 * test suites) takes over READY_MS to start it. */
static const struct driver {
    const char *program;
    const char *argv[12];
    int ready_ms;
} drivers[MCP_INTERP_N] = {
    [MCP_INTERP_PYTHON] = {"python3", {"python3", MCP_DRIVERS_DIR "/python.py", NULL}, 0},
    [MCP_INTERP_JAVASCRIPT] = {"node", {"node", MCP_DRIVERS_DIR "/node.js", NULL}, 0},
    [MCP_INTERP_TYPESCRIPT] = {"node",
                               {"node", MCP_DRIVERS_DIR "/node.js", "--typescript", NULL},
                               0},
    [MCP_INTERP_R] = {"Rscript",
                      {"/bin/sh", "-c",
                       "exec 3<&0 </dev/null; exec Rscript " MCP_DRIVERS_DIR "/r_driver.R", NULL},
                      0},
    [MCP_INTERP_JAVA] = {"java",
                         {"/bin/sh", "-c",
                          MCP_JAVA_LIMIT_OPTS
                          "exec java $o -XX:+UseSerialGC "
                          "-XX:TieredStopAtLevel=1 --add-modules jdk.jshell "
                          "--add-opens java.base/java.util=ALL-UNNAMED " MCP_DRIVERS_DIR
                          "/JavaDriver.java",
                          NULL},
                         120000},
};

/* One call in flight. */
struct call {
    struct mcp_interp *it;
    const struct nsbox_exec_opts *eo;
    struct nsbox_exec_result *res;
    struct mcp_interp_info *info;
    struct nsbox_sink out, err; /* output kept for the result, capped like a command's */
    uint64_t id;
    json_t *done; /* the driver's "done", once it came */
    bool got;     /* the driver took the cell ("got"): it may have run */
    bool exited;  /* the interpreter is gone (EOF, exit status) */
    bool protocol_error;
    int timer;
    int64_t grace_until_ms;          /* SIGINT sent: SIGKILL at this time; 0 none */
    struct nsbox_progress_pace pace; /* of eo->progress */
};

int mcp_interp_lang(const char *language)
{
    if (strcmp(language, "python") == 0 || strcmp(language, "python3") == 0)
        return MCP_INTERP_PYTHON;
    if (strcmp(language, "javascript") == 0 || strcmp(language, "node") == 0)
        return MCP_INTERP_JAVASCRIPT;
    if (strcmp(language, "typescript") == 0)
        return MCP_INTERP_TYPESCRIPT;
    if (strcmp(language, "r") == 0)
        return MCP_INTERP_R;
    if (strcmp(language, "java") == 0)
        return MCP_INTERP_JAVA;
    return -1;
}

void mcp_interp_free(struct mcp_interp *it)
{
    if (it == NULL)
        return;
    box_proc_close(&it->proc);
    mcp_interp_lines_free(&it->lines);
    free(it);
}

void mcp_interp_info_free(struct mcp_interp_info *info)
{
    free(info->result);
    free(info->error_type);
    free(info->error_value);
    free(info->error_traceback);
    for (size_t i = 0; i < info->n_results; i++)
        mcp_bundle_free(&info->results[i]);
    free(info->results);
    for (size_t i = 0; info->figures && info->figures[i]; i++)
        free(info->figures[i]);
    free(info->figures);
    memset(info, 0, sizeof(*info));
}

/* ---- the channel ---- */

/* Reads what the channel has.  Returns 1 while open, 0 at EOF, -1 when a
 * line outgrows MCP_INTERP_LINE_MAX. */
int mcp_interp_chan_read(struct mcp_interp *it)
{
    size_t room;
    char *at = mcp_interp_lines_room(&it->lines, &room);
    if (at == NULL)
        return -1;
    ssize_t n = read(it->proc.chan, at, room);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 1 : 0;
    if (n == 0)
        return 0;
    mcp_interp_lines_add(&it->lines, (size_t)n);
    return 1;
}

/* The next whole line (parsed), or NULL when none is complete yet.
 * *bad: a line that is no JSON object. */
static json_t *chan_line(struct mcp_interp *it, bool *bad)
{
    return mcp_interp_lines_next(&it->lines, bad);
}

static int chan_write_all(struct mcp_interp *it, const char *s, size_t len,
                          const struct nsbox_cancel *cancel, struct nsbox_err *err)
{
    while (len > 0) {
        struct pollfd p[2] = {{.fd = it->proc.chan, .events = POLLOUT},
                              {.fd = cancel ? cancel->fd : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return nsbox_err_sys(err, "poll");
        if (p[1].revents)
            return nsbox_err_set(err, ECANCELED, "cancelled");
        if (!(p[0].revents & POLLOUT)) {
            if (p[0].revents & (POLLHUP | POLLERR))
                return nsbox_err_set(err, EPIPE, "the interpreter is gone");
            continue;
        }
        ssize_t n = write(it->proc.chan, s, len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0)
            return nsbox_err_sys(err, "cannot write to the interpreter");
        s += n, len -= (size_t)n;
    }
    return 0;
}

/* ---- output ---- */

/* ---- starting ---- */

__attribute__((format(printf, 2, 3))) static void set_reason(struct mcp_interp_info *info,
                                                             const char *fmt, ...)
{
    va_list ap;
    info->state_lost = true;
    va_start(ap, fmt);
    vsnprintf(info->state_lost_reason, sizeof(info->state_lost_reason), fmt, ap);
    va_end(ap);
}

/* Waits for "ready".  Returns 0, or -1 with err (what the interpreter said
 * on stderr when it died first: "python3: not found" and the like). */
static int await_ready(struct mcp_interp *it, const struct nsbox_exec_opts *eo,
                       struct nsbox_err *err)
{
    struct nsbox_sink e = {.fd = it->proc.err, .forward = -1, .borrowed = true, .limit = 2048};
    int ready_ms = drivers[it->lang].ready_ms ? drivers[it->lang].ready_ms : READY_MS;
    int64_t deadline = nsbox_now_ms() + ready_ms;
    int r = -1;

    for (;;) {
        bool bad;
        _cleanup_json_ json_t *j = chan_line(it, &bad);
        if (j != NULL && strcmp(mcp_interp_msg_op(j), "ready") == 0) {
            const char *e2 = json_string_value(json_object_get(j, "error"));
            if (e2 == NULL) {
                r = 0;
                break;
            }
            nsbox_err_set(err, ENOTSUP, "the %s interpreter cannot start: %.300s",
                          drivers[it->lang].program, e2);
            break;
        }
        if (bad) {
            nsbox_err_set(err, EPROTO, "the %s driver sent garbage", drivers[it->lang].program);
            break;
        }
        if (j != NULL)
            continue;
        int left = (int)(deadline - nsbox_now_ms());
        struct pollfd p[3] = {{.fd = it->proc.chan, .events = POLLIN},
                              {.fd = e.fd, .events = POLLIN},
                              {.fd = eo->cancel ? eo->cancel->fd : -1, .events = POLLIN}};
        if (left <= 0 || poll(p, 3, left) == 0) {
            nsbox_err_set(err, ETIMEDOUT, "the %s interpreter did not start within %d s",
                          drivers[it->lang].program, ready_ms / 1000);
            break;
        }
        if (p[2].revents) {
            nsbox_err_set(err, ECANCELED, "cancelled while the interpreter started");
            break;
        }
        if (p[1].revents)
            nsbox_sink_read(&e);
        if (p[0].revents && mcp_interp_chan_read(it) <= 0) {
            nsbox_sink_drain(&e);
            /* init could not start it at all (fork at the pids limit):
             * its own error, not "the image has no python3". */
            struct nsbox_err werr = {0};
            if (box_proc_wait(&it->proc, 1000, &werr) < 0 && werr.code != EPIPE) {
                nsbox_err_set(err, werr.code, "the %s interpreter cannot start: %s",
                              drivers[it->lang].program, werr.msg);
                break;
            }
            int code = it->proc.exited && WIFEXITED(it->proc.wait_status)
                           ? WEXITSTATUS(it->proc.wait_status)
                           : -1;
            nsbox_err_set(err, code == 127 ? ENOENT : EIO, "the %s interpreter cannot start%s%s%s",
                          drivers[it->lang].program, code == 127 ? " (the image has no " : "",
                          code == 127 ? drivers[it->lang].program : "", code == 127 ? ")" : "");
            if (e.len > 0) {
                size_t l = strlen(err->msg);
                snprintf(err->msg + l, sizeof(err->msg) - l, ": %.300s", e.buf);
            }
            break;
        }
    }
    free(e.buf);
    return r;
}

/* The command's environment for a long-lived interpreter, plus
 * MALLOC_ARENA_MAX=2 unless it is set: glibc reserves 64 MiB of address
 * space per thread arena, and under best-effort limits (RLIMIT_AS, the
 * memory limit) node's threads exhausted it loading TypeScript about every
 * other start.  The strings are borrowed; NULL when out of memory. */
static char **interp_env(char *const *env)
{
    size_t n = 0;
    bool has = false;
    for (; env != NULL && env[n] != NULL; n++)
        has = has || strncmp(env[n], "MALLOC_ARENA_MAX=", 17) == 0;
    char **v = calloc(n + 2, sizeof(char *));
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = env[i];
    if (!has)
        v[n] = "MALLOC_ARENA_MAX=2";
    return v;
}

static struct mcp_interp *start_once(struct box *box, enum mcp_interp_lang lang,
                                     const struct nsbox_exec_opts *eo, struct nsbox_err *err)
{
    struct mcp_interp *it = calloc(1, sizeof(*it));
    if (it == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    it->lang = lang;
    it->next_id = 1;
    struct nsbox_exec_opts o = *eo;
    o.argv = (char *const *)drivers[lang].argv;
    _cleanup_free_ char **env = interp_env(eo->env);
    o.env = env ? env : eo->env;
    if (box_proc_start(box, &o, &it->proc, err) < 0) {
        free(it);
        return NULL;
    }
    fcntl(it->proc.chan, F_SETFL, O_NONBLOCK);
    if (await_ready(it, eo, err) < 0) {
        mcp_interp_free(it);
        return NULL;
    }
    return it;
}

/* A start right after the last interpreter's process group was killed
 * (restart, timeout, a fork bomb's children) can find the pids limit
 * still taken by processes the kernel has not released yet: init's fork
 * fails with EAGAIN for a few milliseconds.  Retried for a while. */
static struct mcp_interp *start(struct box *box, enum mcp_interp_lang lang,
                                const struct nsbox_exec_opts *eo, struct nsbox_err *err)
{
    int64_t until = nsbox_now_ms() + START_RETRY_MS;
    for (;;) {
        struct mcp_interp *it = start_once(box, lang, eo, err);
        if (it != NULL || err->code != EAGAIN || nsbox_now_ms() >= until ||
            (eo->cancel && nsbox_cancel_fired(eo->cancel)))
            return it;
        nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000}, NULL);
    }
}

/* ---- between calls ---- */

/* Why an interpreter that is gone died, in lose()'s words ("oom",
 * "exit(N)", "crash (signal N)"); "gone" when init never said. */
static void death_words(const struct mcp_interp *it, struct box *box, char *buf, size_t size)
{
    uint64_t ooms = 0;
    box_stats(box, &ooms, NULL);
    const struct nsbox_proc *p = &it->proc;
    if (ooms > it->ooms_seen)
        snprintf(buf, size, "oom");
    else if (p->exited && WIFEXITED(p->wait_status))
        snprintf(buf, size, "exit(%d)", WEXITSTATUS(p->wait_status));
    else if (p->exited && WIFSIGNALED(p->wait_status))
        snprintf(buf, size, "crash (signal %d)", WTERMSIG(p->wait_status));
    else
        snprintf(buf, size, "gone");
}

/* Whether the interpreter kept from the last call died since (killed by
 * `kill -9 -1` from run_command, an OOM kill of a background thread's
 * allocation, os._exit in a thread): init has sent its exit status, or its
 * channel is at EOF (then the status is waited for, briefly, for the
 * reason).  Fills why when it did. */
bool mcp_interp_gone(struct mcp_interp *it, struct box *box, char *why, size_t size)
{
    struct nsbox_err ignored;
    bool gone = it->proc.exited || box_proc_wait(&it->proc, 0, &ignored) != 0;
    if (!gone) {
        char c;
        struct pollfd p = {.fd = it->proc.chan, .events = POLLIN};
        gone = poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR) ||
                                       recv(it->proc.chan, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0);
        if (gone)
            box_proc_wait(&it->proc, 2000, &ignored);
    }
    if (gone)
        death_words(it, box, why, size);
    return gone;
}

/* ---- one cell ---- */

/* Takes what "done" says into info and res (protocol.c). */
static void take_done(struct call *c)
{
    mcp_interp_take_done(c->done, &c->res->exit_code, c->info);
}

static void handle_chan(struct call *c)
{
    int r = mcp_interp_chan_read(c->it);
    for (;;) {
        bool bad;
        json_t *j = chan_line(c->it, &bad);
        if (bad)
            c->protocol_error = true;
        if (j == NULL)
            break;
        if (mcp_interp_is_done(j, c->id) && c->done == NULL)
            c->done = j;
        else {
            c->got |= mcp_interp_is_got(j, c->id);
            json_decref(j);
        }
    }
    if (r < 0)
        c->protocol_error = true;
    if (r == 0)
        c->exited = true;
}

static void interrupt(struct call *c)
{
    struct nsbox_err ignored;
    box_proc_signal(&c->it->proc, SIGINT, &ignored);
    c->grace_until_ms = nsbox_now_ms() + MCP_INTERP_GRACE_MS;
}

static void progress(struct call *c)
{
    nsbox_progress_maybe(&c->pace, c->eo, c->out.buf, c->out.len, c->err.buf, c->err.len);
}

static int loop(struct call *c, struct nsbox_err *err)
{
    const struct nsbox_exec_opts *eo = c->eo;
    nsbox_progress_begin(&c->pace);
    while (c->done == NULL && !c->exited && !c->protocol_error) {
        int64_t now = nsbox_now_ms();
        if (c->grace_until_ms && now >= c->grace_until_ms)
            return 0; /* the caller kills it */
        int timeout = c->grace_until_ms ? (int)(c->grace_until_ms - now) : -1;
        int tick = nsbox_progress_timeout(&c->pace, eo);
        if (tick >= 0 && (timeout < 0 || timeout > tick))
            timeout = tick;
        bool cancel_armed = eo->cancel != NULL && !c->res->cancelled && !c->res->timed_out;
        struct pollfd p[5] = {
            {.fd = c->it->proc.chan, .events = POLLIN},
            {.fd = c->out.fd, .events = POLLIN},
            {.fd = c->err.fd, .events = POLLIN},
            {.fd = c->timer, .events = POLLIN},
            {.fd = cancel_armed ? eo->cancel->fd : -1, .events = POLLIN},
        };
        if (poll(p, 5, timeout) < 0) {
            if (errno == EINTR)
                continue;
            return nsbox_err_sys(err, "poll");
        }
        if (p[1].revents)
            nsbox_sink_read(&c->out);
        if (p[2].revents)
            nsbox_sink_read(&c->err);
        if (p[0].revents)
            handle_chan(c);
        if (p[3].revents) {
            c->res->timed_out = true;
            close(c->timer);
            c->timer = -1;
            interrupt(c);
        }
        if (p[4].revents) {
            c->res->cancelled = true;
            interrupt(c);
        }
        progress(c);
    }
    return 0;
}

/* The interpreter is gone or must go: why, into info and res. */
static void lose(struct call *c, struct box *box, uint64_t oom_before)
{
    struct nsbox_err ignored;
    struct nsbox_proc *p = &c->it->proc;
    bool killed = !c->exited;

    if (killed)
        box_proc_signal(p, SIGKILL, &ignored);
    box_proc_wait(p, 2000, &ignored);
    nsbox_sink_drain(&c->out);
    nsbox_sink_drain(&c->err);
    uint64_t oom_after = 0;
    box_stats(box, &oom_after, NULL);
    c->res->oom_killed = oom_after > oom_before;
    if (p->exited && WIFEXITED(p->wait_status)) {
        c->res->exit_code = WEXITSTATUS(p->wait_status);
    } else {
        c->res->exit_code = -1;
        c->res->signal = p->exited && WIFSIGNALED(p->wait_status) ? WTERMSIG(p->wait_status) : 9;
    }
    if (c->protocol_error)
        set_reason(c->info, "protocol");
    else if (c->res->timed_out && killed)
        set_reason(c->info, "timeout");
    else if (c->res->cancelled && killed)
        set_reason(c->info, "cancelled");
    else if (c->res->oom_killed)
        set_reason(c->info, "oom");
    else if (p->exited && WIFEXITED(p->wait_status))
        set_reason(c->info, "exit(%d)", WEXITSTATUS(p->wait_status));
    else
        set_reason(c->info, "crash (signal %d)", c->res->signal);
}

/* Sends the cell (with env, the cell's own environment, when not NULL).
 * Returns 0 (c->exited when the interpreter proved gone: EPIPE), or -1
 * (cancelled, out of memory). */
static int send_cell(struct call *c, const char *code, const json_t *env, struct nsbox_err *err)
{
    _cleanup_json_ json_t *req = json_pack("{s:s,s:I,s:s}", "op", "run", "id", (json_int_t)c->id,
                                           "code", code);
    if (req != NULL && env != NULL && json_object_set(req, "env", (json_t *)env) < 0)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    _cleanup_free_ char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    if (line == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    size_t n = strlen(line);
    line[n] = '\n'; /* json_dumps' NUL: the buffer has room for it */
    int r = chan_write_all(c->it, line, n + 1, c->eo->cancel, err);
    line[n] = '\0';
    if (r < 0 && err->code != ECANCELED) {
        c->exited = true; /* gone: reported as this call's loss */
        memset(err, 0, sizeof(*err));
        r = 0;
    }
    return r;
}

/* The interpreter for this call: the kept one, unless it is another
 * language's or died since the last call (then *earlier says why: the
 * state the client built is gone, and the code runs in a new one), else a
 * new one.  NULL when none could start. */
static struct mcp_interp *interp_for_call(struct mcp_interp **slot, struct box *box,
                                          enum mcp_interp_lang lang,
                                          const struct nsbox_exec_opts *eo, char *earlier,
                                          size_t size, struct nsbox_err *err)
{
    if (*slot != NULL && (*slot)->lang != lang) {
        mcp_interp_free(*slot);
        *slot = NULL;
    }
    if (*slot != NULL && mcp_interp_gone(*slot, box, earlier, size)) {
        mcp_interp_free(*slot);
        *slot = NULL;
    }
    if (*slot == NULL)
        *slot = start(box, lang, eo, err);
    if (*slot != NULL)
        box_stats(box, &(*slot)->ooms_seen, NULL);
    return *slot;
}

/* The state lost before the call (earlier) into info, after what the call
 * itself says: "between calls: oom", or "timeout; between calls: oom". */
static void note_earlier_loss(struct mcp_interp_info *info, const char *earlier)
{
    if (earlier[0] == '\0')
        return;
    if (!info->state_lost) {
        set_reason(info, "between calls: %s", earlier);
        return;
    }
    size_t l = strlen(info->state_lost_reason);
    snprintf(info->state_lost_reason + l, sizeof(info->state_lost_reason) - l,
             "; between calls: %s", earlier);
}

/* Waits for the cell's "done", or the interpreter's end (lose()).  Returns
 * 0, or -1 (the sandbox is gone, poll failed). */
static int run_cell(struct call *c, struct mcp_interp **slot, struct box *box, const char *code,
                    const json_t *env, struct nsbox_err *err)
{
    uint64_t oom_before = 0;
    box_stats(box, &oom_before, NULL);
    int r = send_cell(c, code, env, err);
    if (r == 0)
        r = nsbox_timer_start(c->eo->timeout_s, &c->timer, err);
    if (r == 0)
        r = loop(c, err);
    if (c->timer >= 0)
        close(c->timer);
    if (r == 0 && c->done != NULL && !c->protocol_error) {
        nsbox_sink_drain(&c->out);
        nsbox_sink_drain(&c->err);
        take_done(c);
        box_stats(box, &(*slot)->ooms_seen, NULL);
    } else if (r == 0) {
        lose(c, box, oom_before);
        mcp_interp_free(*slot);
        *slot = NULL;
    }
    return r;
}

static void call_init(struct call *c, struct mcp_interp *it, const struct nsbox_exec_opts *eo,
                      struct nsbox_exec_result *res, struct mcp_interp_info *info)
{
    *c = (struct call){.it = it,
                       .eo = eo,
                       .res = res,
                       .info = info,
                       .out = {.fd = it->proc.out,
                               .forward = -1,
                               .borrowed = true, /* the proc's: closed with it */
                               .limit = eo->output_cap ?: (1u << 20)},
                       .err = {.fd = it->proc.err,
                               .forward = -1,
                               .borrowed = true,
                               .limit = eo->output_cap ?: (1u << 20)},
                       .id = it->next_id++,
                       .timer = -1};
}

int mcp_interp_run(struct mcp_interp **slot, struct box *box, enum mcp_interp_lang lang,
                   const char *code, const json_t *env, const struct nsbox_exec_opts *eo,
                   struct nsbox_exec_result *res, struct mcp_interp_info *info,
                   struct nsbox_err *err)
{
    struct timespec t0;
    char earlier[48] = "";
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(res, 0, sizeof(*res));
    memset(info, 0, sizeof(*info));
    struct call c;
    bool kept = *slot != NULL;
    if (interp_for_call(slot, box, lang, eo, earlier, sizeof(earlier), err) == NULL)
        return -1;
    call_init(&c, *slot, eo, res, info);
    int r = run_cell(&c, slot, box, code, env, err);
    /* A kept interpreter that died before it took the cell (a kill from a
     * command racing this call: init had not said so yet) never ran it:
     * it runs once more, in a new interpreter, and the loss is reported
     * as one between calls. */
    if (r == 0 && kept && !c.got && c.done == NULL && !c.protocol_error && !res->timed_out &&
        !res->cancelled && *slot == NULL && earlier[0] == '\0') {
        snprintf(earlier, sizeof(earlier), "%s", info->state_lost_reason);
        json_decref(c.done);
        free(c.out.buf);
        free(c.err.buf);
        memset(res, 0, sizeof(*res));
        mcp_interp_info_free(info);
        memset(info, 0, sizeof(*info));
        if ((*slot = start(box, lang, eo, err)) == NULL)
            return -1;
        box_stats(box, &(*slot)->ooms_seen, NULL);
        call_init(&c, *slot, eo, res, info);
        r = run_cell(&c, slot, box, code, env, err);
    }
    note_earlier_loss(info, earlier);
    json_decref(c.done);
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    res->wall_us = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
    uint64_t ooms = 0, peak = 0;
    box_stats(box, &ooms, &peak);
    res->memory_peak_bytes = peak;
    res->out = c.out.buf ? c.out.buf : strdup("");
    res->err = c.err.buf ? c.err.buf : strdup("");
    res->out_len = c.out.len, res->err_len = c.err.len;
    res->out_truncated = c.out.truncated, res->err_truncated = c.err.truncated;
    if (r < 0)
        nsbox_exec_result_free(res);
    return r;
}
