/* The background-process tools: process_start (and run_command
 * {background: true}), process_list, process_logs, process_signal,
 * process_wait (docs/services-bg.md).
 *
 * A process lives in a kept sandbox's set (boxes/bg.h, struct
 * mcp_sandbox.bg) under the server's one keeper thread; the sandbox's
 * final stop frees the set, which kills them.  A handle is
 * "SANDBOX_ID/pN": it names its sandbox, so the tools that take one
 * need no sandbox_id, and a handle of another session's sandbox is no
 * handle here (the sandbox lookup is the session's).  Only the start
 * holds the sandbox's exec lock (the attach goes over its control
 * socket); logs, list, signal and wait take a reference only, so a
 * process_wait never blocks the sandbox's other calls. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/cleanup.h"
#include "../../common/utf8.h"
#include "../sandboxes.h"
#include "args.h"
#include "tools.h"

static void iso_time(time_t t, char buf[32])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The keeper (started once, under pool_lock) and m's set (made under
 * m's exec lock, which the caller holds). */
static struct box_bg_set *set_of(struct mcp_server *cfg, struct mcp_sandbox *m,
                                 struct nsbox_err *err)
{
    if (m->bg != NULL)
        return m->bg;
    pthread_mutex_lock(&cfg->pool_lock);
    if (cfg->bg_keeper == NULL)
        cfg->bg_keeper = box_bg_keeper_new(err);
    struct box_bg_keeper *k = cfg->bg_keeper;
    pthread_mutex_unlock(&cfg->pool_lock);
    if (k == NULL)
        return NULL;
    struct box_bg_set *set = box_bg_set_new(k, cfg->max_processes ? cfg->max_processes : 16,
                                            (cfg->process_log_kb ? cfg->process_log_kb : 1024)
                                                << 10);
    if (set == NULL)
        nsbox_err_set(err, ENOMEM, "out of memory");
    __atomic_store_n(&m->bg, set, __ATOMIC_RELEASE);
    return set;
}

static json_t *info_json(const char *sandbox_id, const struct box_bg_info *in)
{
    char handle[MCP_ID_MAX + BOX_BG_ID_MAX + 2], when[32];
    snprintf(handle, sizeof(handle), "%s/%s", sandbox_id, in->id);
    iso_time(in->started_at, when);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b,s:I,s:I}", "handle", handle, "name", in->name,
                          "command", in->command, "started_at", when, "running", in->running,
                          "stdout_bytes", (json_int_t)in->out_total, "stderr_bytes",
                          (json_int_t)in->err_total);
    if (o != NULL && !in->running) {
        json_object_set_new(o, "exit_code", json_integer(in->exit_code));
        if (in->signal)
            json_object_set_new(o, "signal", json_integer(in->signal));
        if (in->gone)
            json_object_set_new(o, "ended_with_sandbox", json_true());
    }
    return o;
}

static int start(struct mcp_session *s, struct mcp_call *call, const struct mcp_process_args *a,
                 struct mcp_result *out, struct nsbox_err *err)
{
    struct box_bg_info info;
    _cleanup_(nsbox_strvfreep) char **env = NULL;
    if (a->env != NULL && (env = mcp_args_env_strings(a->env)) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    struct box_bg_opts o = {
        .command = a->command, .env = env, .workdir = a->workdir, .name = a->name};
    struct mcp_sandbox *m = mcp_sandbox_get(s, a->sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        struct box_bg_set *set = set_of(s->cfg, m, err);
        r = set == NULL ? -1 : box_bg_start(set, &m->box, &o, &info, err);
        mcp_op_end(s, call, m);
    }
    if (r == 0) {
        out->structured = info_json(m->id, &info);
        json_object_set_new(out->structured, "sandbox_id", json_string(m->id));
    }
    mcp_sandbox_put(s, m);
    return r;
}

int mcp_tool_process_start(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_process_args a;
    if (mcp_args_process_start(args, &a, err) < 0)
        return -1;
    return start(s, call, &a, out, err);
}

int mcp_process_run_background(struct mcp_session *s, struct mcp_call *call, json_t *args,
                               struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_process_args a;
    if (mcp_args_run_background(args, &a, err) < 0)
        return -1;
    return start(s, call, &a, out, err);
}

int mcp_tool_process_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_process_args a;
    (void)call;
    if (mcp_args_process_list(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = mcp_sandbox_hold(s, a.sandbox_id, err); /* not woken (logs) */
    if (m == NULL)
        return -1;
    struct box_bg_set *set = __atomic_load_n(&m->bg, __ATOMIC_ACQUIRE);
    _cleanup_free_ struct box_bg_info *all = NULL;
    size_t n = 0;
    int r = set == NULL ? 0 : box_bg_list(set, &all, &n, err);
    if (r == 0) {
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(list, info_json(m->id, &all[i]));
        out->structured = json_pack("{s:s,s:o}", "sandbox_id", m->id, "processes", list);
    }
    mcp_sandbox_unhold(s, m, false);
    return r;
}

/* The sandbox and set a handle names, with a reference (put it back).
 * wake false (reading logs): the rings are the server's, so a paused
 * sandbox is only held, not resumed (mcp/pause.h); let go of it with
 * mcp_sandbox_unhold. */
static struct mcp_sandbox *lookup_as(struct mcp_session *s, const char *handle, bool wake,
                                     struct box_bg_set **set, const char **id,
                                     struct nsbox_err *err)
{
    char sandbox_id[MCP_ID_MAX + 1];
    if (mcp_process_handle_split(handle, sandbox_id, sizeof(sandbox_id), id, err) < 0)
        return NULL;
    struct mcp_sandbox *m = wake ? mcp_sandbox_get(s, sandbox_id, err)
                                 : mcp_sandbox_hold(s, sandbox_id, err);
    if (m == NULL)
        return NULL;
    *set = __atomic_load_n(&m->bg, __ATOMIC_ACQUIRE);
    if (*set == NULL) {
        if (wake)
            mcp_sandbox_put(s, m);
        else
            mcp_sandbox_unhold(s, m, false);
        nsbox_err_set(err, ENOENT, "no background process \"%.80s\" in this session", handle);
        return NULL;
    }
    return m;
}

static struct mcp_sandbox *lookup(struct mcp_session *s, const char *handle,
                                  struct box_bg_set **set, const char **id, struct nsbox_err *err)
{
    return lookup_as(s, handle, true, set, id, err);
}

/* A stream's bytes as a JSON string: invalid UTF-8 bytes become '?' one
 * for one (positions stay exact); a character cut at the end of a read
 * that stopped short is left for the next one (the cursor steps back). */
static json_t *text_of(struct box_bg_chunk *c, bool more)
{
    size_t whole = nsbox_utf8_whole(c->data, c->len);
    if (more && whole < c->len && whole > 0) {
        c->cursor -= c->len - whole;
        c->len = whole;
    }
    nsbox_utf8_repair(c->data, c->len);
    return json_stringn(c->data, c->len);
}

static void end_fields(json_t *o, const struct box_bg_info *info)
{
    json_object_set_new(o, "running", json_boolean(info->running));
    if (!info->running) {
        json_object_set_new(o, "exit_code", json_integer(info->exit_code));
        if (info->signal)
            json_object_set_new(o, "signal", json_integer(info->signal));
    }
}

int mcp_tool_process_logs(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_process_args a;
    struct box_bg_set *set;
    const char *id;
    (void)call;
    if (mcp_args_process_logs(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = lookup_as(s, a.handle, false, &set, &id, err);
    if (m == NULL)
        return -1;
    struct box_bg_chunk o = {.cursor = a.out_cursor}, e = {.cursor = a.err_cursor};
    struct box_bg_info info;
    int r = box_bg_logs(set, id, a.streams, a.max_bytes, &o, &e, &info, err);
    mcp_sandbox_unhold(s, m, false);
    if (r < 0) {
        box_bg_chunk_free(&o);
        box_bg_chunk_free(&e);
        return -1;
    }
    char cursor[48];
    json_t *res = json_pack("{s:s}", "handle", a.handle);
    bool eof = true;
    if (a.streams & BOX_BG_STDOUT) {
        json_object_set_new(res, "stdout", text_of(&o, info.running || o.cursor < info.out_total));
        json_object_set_new(res, "stdout_dropped", json_integer((json_int_t)o.dropped));
        eof = eof && o.eof;
    }
    if (a.streams & BOX_BG_STDERR) {
        json_object_set_new(res, "stderr", text_of(&e, info.running || e.cursor < info.err_total));
        json_object_set_new(res, "stderr_dropped", json_integer((json_int_t)e.dropped));
        eof = eof && e.eof;
    }
    snprintf(cursor, sizeof(cursor), "%llu:%llu", (unsigned long long)o.cursor,
             (unsigned long long)e.cursor);
    json_object_set_new(res, "cursor", json_string(cursor));
    json_object_set_new(res, "dropped_bytes", json_integer((json_int_t)(o.dropped + e.dropped)));
    json_object_set_new(res, "eof", json_boolean(eof));
    end_fields(res, &info);
    box_bg_chunk_free(&o);
    box_bg_chunk_free(&e);
    out->structured = res;
    return 0;
}

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGTERM, "TERM"}, {SIGKILL, "KILL"}, {SIGINT, "INT"},  {SIGHUP, "HUP"},
                 {SIGQUIT, "QUIT"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].sig == sig)
            return names[i].name;
    return "?";
}

int mcp_tool_process_signal(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_process_args a;
    struct box_bg_set *set;
    const char *id;
    (void)call;
    if (mcp_args_process_signal(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = lookup(s, a.handle, &set, &id, err);
    if (m == NULL)
        return -1;
    int r = box_bg_signal(set, id, a.signal, err);
    mcp_sandbox_put(s, m);
    if (r == 0)
        out->structured = json_pack("{s:s,s:s,s:b}", "handle", a.handle, "signal",
                                    signal_name(a.signal), "sent", 1);
    return r;
}

/* Registers call on m as mcp_op_begin does, without the exec lock: a stop
 * of m then fires the call's cancel, and the wait ends at once. */
static int watch_stop(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m, bool on,
                      struct nsbox_err *err)
{
    pthread_mutex_lock(&s->lock);
    bool stopping = m->stopping, cancelled = call->cancelled;
    if (!on)
        call->sandbox = NULL;
    else if (!stopping && !cancelled)
        call->sandbox = m;
    pthread_mutex_unlock(&s->lock);
    if (!on || (!stopping && !cancelled))
        return 0;
    return stopping ? nsbox_err_set(err, ESRCH, "sandbox \"%s\" was stopped", m->id)
                    : nsbox_err_set(err, ECANCELED, "cancelled");
}

int mcp_tool_process_wait(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_process_args a;
    struct box_bg_set *set;
    struct box_bg_info info;
    const char *id;
    if (mcp_args_process_wait(s->cfg, args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = lookup(s, a.handle, &set, &id, err);
    if (m == NULL)
        return -1;
    int r = watch_stop(s, call, m, true, err);
    if (r == 0) {
        r = box_bg_wait(set, id, (int)(a.timeout_s * 1000), &call->cancel, &info, err);
        watch_stop(s, call, m, false, err);
        pthread_mutex_lock(&s->lock);
        if (r < 0 && m->stopping) /* the stop fired the cancel: say so */
            nsbox_err_set(err, ESRCH, "sandbox \"%s\" was stopped: its processes ended with it",
                          m->id);
        pthread_mutex_unlock(&s->lock);
    }
    mcp_sandbox_put(s, m);
    if (r < 0)
        return -1;
    json_t *res = json_pack("{s:s,s:I,s:I}", "handle", a.handle, "stdout_bytes",
                            (json_int_t)info.out_total, "stderr_bytes", (json_int_t)info.err_total);
    end_fields(res, &info);
    if (info.gone)
        json_object_set_new(res, "ended_with_sandbox", json_true());
    out->structured = res;
    return 0;
}
