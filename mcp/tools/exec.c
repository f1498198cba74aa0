/* execute_code and run_command: one result record for both. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/net.h"
#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../../common/log.h"
#include "../jsonrpc.h"
#include "../pool.h"
#include "../sandboxes.h"
#include "../server.h"
#include "../tasks/tasks.h"
#include "args.h"
#include "changes.h"
#include "languages.h"
#include "output.h"
#include "tools.h"

static json_t *result_record(const struct nsbox_exec_result *r)
{
    json_t *j = box_result_json(r);
    if (j != NULL)
        json_object_set_new(j, "files", json_array());
    return j;
}

static bool stopped(struct mcp_session *s, const struct mcp_sandbox *m)
{
    pthread_mutex_lock(&s->lock);
    bool stopping = m->stopping;
    pthread_mutex_unlock(&s->lock);
    return stopping;
}

/* Called while a command runs: progress for the client (with a
 * progressToken) or the call's task, and the watch over a measured
 * workspace, which stops the command once the workspace is over its
 * budget. */
struct progress_ctx {
    struct mcp_session *s;
    struct mcp_call *call;
    struct box *box;
    struct box_ws_watch watch;
    struct nsbox_cancel *cancel;
    uint64_t last_sent_ms;
};

/* The newest lines of output, for a human watching a long run. */
static void tail_lines(const char *buf, size_t len, char *out, size_t size)
{
    size_t start = len, lines = 0;
    while (start > 0 && lines < 3 && len - start < size - 1)
        if (buf[--start] == '\n' && start != len - 1)
            lines++;
    if (buf[start] == '\n')
        start++;
    snprintf(out, size, "%.*s", (int)(len - start), buf + start);
}

static void send_progress(void *arg, uint64_t elapsed_ms, const char *out, size_t out_len,
                          const char *err, size_t err_len)
{
    struct progress_ctx *p = arg;
    char msg[512];

    if (box_workspace_watch_over(p->box, &p->watch))
        nsbox_cancel_fire(p->cancel);
    if ((p->call->progress_token == NULL && !p->call->taskable) ||
        (p->last_sent_ms && elapsed_ms - p->last_sent_ms < 1000))
        return;
    p->last_sent_ms = elapsed_ms;
    tail_lines(out_len ? out : err, out_len ? out_len : err_len, msg, sizeof(msg));
    mcp_call_progress(p->s, p->call, elapsed_ms, msg);
}

/* A command stopped by the watch: the cancel killed it (not the client),
 * and stderr says why. */
static void over_budget(struct nsbox_exec_result *res, const struct box *box)
{
    char note[512];
    int n = snprintf(note, sizeof(note),
                     "%snsbox: stopped: workspace \"%s\" went over its budget of %.0f MiB; "
                     "commands and writes are refused until files are deleted from it "
                     "(delete_path)\n",
                     res->err_len && res->err[res->err_len - 1] != '\n' ? "\n" : "", box->workspace,
                     (double)box->ws.limit_bytes / (1 << 20));
    char *e = realloc(res->err, res->err_len + (size_t)n + 1);
    if (e != NULL) {
        memcpy(e + res->err_len, note, (size_t)n + 1);
        res->err = e;
        res->err_len += (size_t)n;
    }
    res->cancelled = false;
}

/* The snapshots of one run, freed on every path. */
static void snapshots_free(struct nsbox_snapshot **snaps)
{
    if (*snaps == NULL)
        return;
    nsbox_snapshot_free(&(*snaps)[0]);
    nsbox_snapshot_free(&(*snaps)[1]);
    free(*snaps);
}

/* What a persistent interpreter adds to the record (docs/interpreters.md):
 * the last expression's value, whether the state survived, the figures. */
static void interp_fields(json_t *rec, const struct mcp_interp_info *info, bool used)
{
    json_object_set_new(rec, "interpreter", json_string(used ? "persistent" : "process"));
    if (!used)
        return;
    json_object_set_new(rec, "result", info->result ? json_string(info->result) : json_null());
    json_object_set_new(rec, "state_lost", json_boolean(info->state_lost));
    if (info->state_lost)
        json_object_set_new(rec, "state_lost_reason", json_string(info->state_lost_reason));
    if (info->interrupted)
        json_object_set_new(rec, "interrupted", json_true());
    if (info->error_type)
        json_object_set_new(rec, "error_type", json_string(info->error_type));
    if (info->error_value)
        json_object_set_new(rec, "error_value", json_string(info->error_value));
    json_t *figs = json_array();
    for (size_t i = 0; info->figures && info->figures[i]; i++)
        json_array_append_new(figs, json_string(info->figures[i]));
    json_object_set_new(rec, "figures", figs);
}

/* What a run's record is made from, beside its result. */
struct run_facts {
    const struct mcp_sandbox *m;
    const char *cwd; /* the snapshots' directory */
    const struct nsbox_snapshot *before, *after;
    json_t *network;
    const struct mcp_output_kept *kept;
    const struct mcp_file_urls *urls; /* HTTP: download URLs for owner */
    const char *owner;
};

/* Fills out with the run's result record (with the disk as measured
 * after it), the images it made, and links to its files and kept
 * output (a kept sandbox's: a one-shot one is gone after the call). */
static void record(const struct nsbox_exec_result *res, const struct mcp_interp_info *info,
                   bool interp, const struct run_facts *f, struct mcp_result *out)
{
    const struct box *box = &f->m->box;
    const char *id = f->m->one_shot ? NULL : f->m->id;
    const struct nsbox_snapshot *before = f->before, *after = f->after;
    json_t *rec = result_record(res);
    interp_fields(rec, info, interp);
    box_usage_json(box, rec);
    if (f->network != NULL)
        json_object_set(rec, "network", f->network);
    mcp_output_json(rec, f->kept, id, out);
    /* Links and download URLs for a kept sandbox's files (a one-shot
     * one is gone when the client would follow them). */
    struct mcp_file_links links = {f->urls, f->owner, id, f->cwd};
    json_t *files = mcp_changes_json(before, after, &links, out);
    json_object_set_new(rec, "files", files ? files : json_array());
    if (before->truncated || after->truncated)
        json_object_set_new(rec, "files_truncated", json_true());
    out->structured = rec;
}

/* The persistent interpreter a call runs in, or -1 for a fresh process:
 * execute_code in a kept sandbox, in python, javascript or typescript,
 * unless fresh, or stdin (the driver's is its channel), or the drivers
 * could not be written. */
static int interpreted(const struct mcp_session *s, const struct mcp_sandbox *m,
                       const struct mcp_run_args *rq)
{
    if (m->one_shot || rq->code == NULL || rq->fresh || rq->stdin_data != NULL ||
        rq->language == NULL || s->cfg->drivers_dir[0] == '\0' ||
        m->box.sb.isolation == NSBOX_ISOLATION_LANDLOCK) /* no drivers mounted (pool.c) */
        return -1;
    return mcp_interp_lang(rq->language);
}

static int exec_in(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                   const struct mcp_run_args *rq, double timeout, struct mcp_result *out,
                   struct nsbox_err *err)
{
    struct nsbox_exec_result res;
    struct nsbox_exec_opts eo = {.argv = rq->argv,
                                 .env = m->box.env,
                                 .cwd = rq->workdir ? rq->workdir : m->box.workdir,
                                 .uid = m->box.uid,
                                 .gid = m->box.gid,
                                 .timeout_s = timeout,
                                 .stdin_fd = -1,
                                 .stdin_data = rq->stdin_data,
                                 .stdin_len = rq->stdin_data ? strlen(rq->stdin_data) : 0,
                                 .capture = true,
                                 .output_cap = s->cfg->output_cap,
                                 .cancel = &call->cancel};
    struct progress_ctx pc = {s, call, &m->box, {0}, &call->cancel, 0};
    /* Progress only where the client asked for it (a progressToken) or
     * the call may be a task; a measured workspace is watched every 50 ms
     * (statvfs: cheap). */
    box_workspace_watch_begin(&m->box, &pc.watch);
    if (call->progress_token != NULL || call->taskable || pc.watch.active) {
        eo.progress = send_progress;
        eo.progress_ctx = &pc;
        eo.progress_ms = pc.watch.active ? 50 : 1000;
    }

    /* Two snapshots of a few KiB of paths each: off the thread's stack. */
    _cleanup_(snapshots_free) struct nsbox_snapshot *snaps = calloc(2, sizeof(*snaps));
    if (snaps == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    struct nsbox_snapshot *before = &snaps[0], *after = &snaps[1];

    /* A one-shot sandbox is the call's alone: nothing else can stop it. */
    if (!m->one_shot && mcp_op_begin(s, call, m, err) < 0)
        return -1;
    /* A measured workspace over its budget takes no more commands. */
    if (box_workspace_check(&m->box, err) < 0) {
        if (!m->one_shot)
            mcp_op_end(s, call, m);
        return -1;
    }
    nsbox_changes_take(&m->box.sb, eo.cwd, before);
    struct mcp_interp_info info = {0};
    int lang = interpreted(s, m, rq);
    int r;
    if (lang >= 0) {
        if (rq->restart) {
            mcp_interp_free(m->interp[lang]);
            m->interp[lang] = NULL;
        }
        r = mcp_interp_run(&m->interp[lang], &m->box, (enum mcp_interp_lang)lang, rq->code, &eo,
                           &res, &info, err);
    } else {
        r = nsbox_sandbox_exec(&m->box.sb, &eo, &res, err);
    }
    nsbox_changes_take(&m->box.sb, eo.cwd, after);
    struct nsbox_err merr;
    if (box_measure(&m->box, &merr) < 0)
        nsbox_warn("sandbox %s: %s", m->box.sb.id, merr.msg);
    /* Read under the operation: the audit's cursor is the sandbox's. */
    _cleanup_json_ json_t *network = mcp_network_audit(&m->box);
    /* Cut to the inline budget, the whole kept, while the operation is
     * still this call's. */
    struct mcp_output_kept kept = {0};
    if (r == 0)
        mcp_output_cut(s, call, m, &res, rq->inline_max, &kept);
    if (!m->one_shot)
        mcp_op_end(s, call, m);
    if (r == 0 && res.cancelled && stopped(s, m)) {
        nsbox_exec_result_free(&res);
        r = nsbox_err_set(err, ESRCH, "sandbox \"%s\" was stopped while this ran", m->id);
    }
    if (r < 0) {
        mcp_interp_info_free(&info);
        return -1;
    }
    if (pc.watch.tripped)
        over_budget(&res, &m->box);
    struct run_facts facts = {m, eo.cwd, before, after, network, &kept, s->cfg->file_urls, s->id};
    record(&res, &info, lang >= 0, &facts, out);
    if (pc.watch.tripped)
        json_object_set_new(out->structured, "workspace_over_budget", json_true());
    nsbox_exec_result_free(&res);
    mcp_interp_info_free(&info);
    return 0;
}

/* An image only a shared store has is imported before its sandbox is made
 * (images/shared.c: seconds, once): said once, as a log message and to a
 * client that asked for progress, so the wait is not a silent one. */
static void announce_import(struct mcp_session *s, struct mcp_call *call, const char *image)
{
    struct images_image im;
    struct nsbox_err ignored;

    if (s->cfg->boxes.store.n_shared == 0)
        return;
    if (images_find(&s->cfg->boxes.store, image, &im, &ignored) == 0) {
        images_image_free(&im);
        return;
    }
    mcp_call_log(s, call, "info", "importing %s from a shared image store (first use)", image);
    if (call->progress_token != NULL)
        s->send(s, jsonrpc_notification(
                       "notifications/progress",
                       json_pack("{s:O,s:i,s:s}", "progressToken", call->progress_token, "progress",
                                 0, "message",
                                 "importing the image from a shared image store (first use)")));
}

static int run(struct mcp_session *s, struct mcp_call *call, const struct mcp_run_args *rq,
               struct mcp_result *out, struct nsbox_err *err)
{
    const struct mcp_limits *l = &rq->limits.limits;

    if (rq->sandbox_id != NULL) {
        struct mcp_sandbox *m = mcp_sandbox_get(s, rq->sandbox_id, err);
        if (m == NULL)
            return -1;
        double timeout = rq->limits.has_timeout ? l->timeout_s : m->box.limits.timeout_s;
        int r = exec_in(s, call, m, rq, timeout, out, err);
        mcp_sandbox_put(s, m);
        return r;
    }
    _cleanup_free_ struct egress_policy *net = NULL;
    if (mcp_network_request(s->cfg, rq->network, &net, err) < 0)
        return -1;
    const char *image = mcp_image_for_language(s, rq->language);
    if (image == NULL)
        return mcp_no_image(&s->cfg->boxes.store, rq->language, err);
    /* The spare fits when the call asks for the default limits: it was
     * made with them, its disk's size too. */
    bool defaults = !rq->limits.has_memory && !rq->limits.has_cpus && !rq->limits.has_pids &&
                    l->disk_mb == s->cfg->defaults.disk_mb;
    struct mcp_sandbox *m = defaults ? mcp_pool_take(s->cfg, image) : NULL;
    if (m == NULL) {
        announce_import(s, call, image);
        m = mcp_sandbox_new(s, image, l, NULL, NULL, NULL, true, err);
    }
    if (m == NULL)
        return -1;
    /* The spare is this call's from here on and never goes back: a sandbox
     * once opened to the network is removed with the call. */
    int r = net != NULL ? box_net_set(&m->box, net, err) : 0;
    if (r == 0)
        r = exec_in(s, call, m, rq, l->timeout_s, out, err);
    mcp_sandbox_free_detached(s->cfg, m);
    return r;
}

MCP_TOOL_FN(execute_code)
{
    struct mcp_run_args rq;

    if (mcp_args_execute_code(s->cfg, args, &rq, err) < 0)
        return -1;
    return run(s, call, &rq, out, err);
}

MCP_TOOL_FN(run_command)
{
    struct mcp_run_args rq;

    if (mcp_args_run_command(s->cfg, args, &rq, err) < 0)
        return -1;
    /* One-shot commands run in the shell image, else in python's. */
    rq.language = mcp_image_for_language(s, "sh") ? "sh" : "python";
    return run(s, call, &rq, out, err);
}
