/* box_run: the run sequence of both front ends (run.h). */
#include "run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/base64.h"
#include "../common/cleanup.h"
#include "../common/log.h"
#include "nested.h"
#include "net.h"

/* The watch a measured workspace runs under: polled every WATCH_MS
 * (statvfs: cheap; box_workspace_watch_over). */
#define WATCH_MS 50

struct watch {
    struct box *box;
    struct box_ws_watch ws;
    struct nsbox_cancel *cancel; /* fired once over budget */
    const struct nsbox_exec_opts *caller;
    bool watched;
    uint64_t watched_ms; /* the budget, last looked at */
};

/* Called as the command's progress: when output came and every tick.  The
 * budget at most every WATCH_MS; the caller's progress every time (it
 * streams the output: mcp/tools/stream.h). */
static void on_progress(void *arg, uint64_t elapsed_ms, const char *out, size_t out_len,
                        const char *err, size_t err_len)
{
    struct watch *w = arg;
    const struct nsbox_exec_opts *c = w->caller;

    if (w->ws.active && (!w->watched || elapsed_ms - w->watched_ms >= WATCH_MS)) {
        w->watched = true;
        w->watched_ms = elapsed_ms;
        if (box_workspace_watch_over(w->box, &w->ws))
            nsbox_cancel_fire(w->cancel);
    }
    if (c->progress != NULL)
        c->progress(c->progress_ctx, elapsed_ms, out, out_len, err, err_len);
}

/* Appends "nsbox: TEXT" as a line of its own to the command's stderr. */
static void note(struct nsbox_exec_result *res, const char *text)
{
    char line[1024];
    int n = snprintf(line, sizeof(line), "%snsbox: %s\n",
                     res->err_len && res->err[res->err_len - 1] != '\n' ? "\n" : "", text);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = (int)sizeof(line) - 1;
    char *e = realloc(res->err, res->err_len + (size_t)n + 1);
    if (e != NULL) {
        memcpy(e + res->err_len, line, (size_t)n + 1);
        res->err = e;
        res->err_len += (size_t)n;
    }
}

/* A command stopped by the watch: the cancel killed it (not the caller),
 * and stderr says why. */
static void note_over_budget(struct nsbox_exec_result *res, const struct box *box)
{
    char text[512];
    snprintf(text, sizeof(text),
             "stopped: workspace \"%s\" went over its budget of %.0f MiB; commands and writes "
             "are refused until files are deleted from it (delete_path)",
             box->workspace, (double)box->ws.limit_bytes / (1 << 20));
    note(res, text);
    res->cancelled = false;
}

/* A timeout or a cancel killed every process of the box but init: a
 * nested box's Docker API too.  It is started again at once, so the next
 * command finds DOCKER_HOST answering; stderr says what happened. */
static void restart_api(struct box *box, struct nsbox_exec_result *res)
{
    struct nsbox_err err;
    char text[900];
    unsigned before = box->api_restarts;
    if (box_nested_restart(box, &err) < 0) {
        snprintf(text, sizeof(text),
                 "stopping the command stopped the Docker API with it, and it could not be "
                 "started again: %s",
                 err.msg);
        note(res, text);
    } else if (box->api_restarts != before) {
        note(res, "stopping the command stopped every process of the sandbox, the Docker API "
                  "(podman system service) and its containers too; the API was started again");
    }
}

/* What the command tried on the network, or NULL for a box that never had
 * rules: a failure to read it is logged, not the command's. */
static json_t *take_audit(struct box *box)
{
    struct nsbox_err err;
    if (!box->net_ever)
        return NULL;
    json_t *a = box_net_take_audit(box, &err);
    if (a == NULL) {
        nsbox_warn("sandbox %s: cannot read its network audit: %s", box->sb.id, err.msg);
        a = json_array();
    }
    return a;
}

static int snapshots(struct box *box, const struct box_run *rq, struct box_run_result *out,
                     struct nsbox_err *err)
{
    if (!rq->changes)
        return 0;
    /* A few KiB of paths each: off the caller's stack. */
    out->before = calloc(1, sizeof(*out->before));
    out->after = calloc(1, sizeof(*out->after));
    if (out->before == NULL || out->after == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    nsbox_changes_take(&box->sb, rq->exec.cwd, out->before);
    return 0;
}

/* The command itself, under the watch. */
static int execute(struct box *box, const struct box_run *rq, struct watch *w,
                   struct nsbox_exec_result *res, struct nsbox_err *err)
{
    struct nsbox_exec_opts eo = rq->exec;
    _cleanup_(nsbox_cancel_close) struct nsbox_cancel own = {.fd = -1};

    box_workspace_watch_begin(box, &w->ws);
    w->box = box;
    w->caller = &rq->exec;
    if (w->ws.active) {
        /* The caller's cancel when it has one (the server's call): a
         * watch that fires it stops what the call runs. */
        w->cancel = (struct nsbox_cancel *)rq->exec.cancel;
        if (w->cancel == NULL) {
            if (nsbox_cancel_init(&own, err) < 0)
                return -1;
            w->cancel = &own;
            eo.cancel = &own;
        }
    }
    if (w->ws.active || rq->exec.progress != NULL) {
        eo.progress = on_progress;
        eo.progress_ctx = w;
        unsigned pm = rq->exec.progress ? (rq->exec.progress_ms ?: 1000) : WATCH_MS;
        eo.progress_ms = w->ws.active && pm > WATCH_MS ? WATCH_MS : pm;
    }
    return rq->exec_fn ? rq->exec_fn(rq->exec_ctx, box, &eo, res, err)
                       : nsbox_sandbox_exec(&box->sb, &eo, res, err);
}

int box_run(struct box *box, const struct box_run *rq, struct box_run_result *out,
            struct nsbox_err *err)
{
    struct watch w = {0};
    struct nsbox_err merr;

    memset(out, 0, sizeof(*out));
    /* A measured workspace over its budget takes no more commands. */
    if (box_workspace_check(box, err) < 0)
        return -1;
    if (snapshots(box, rq, out, err) < 0) {
        box_run_result_free(out);
        return -1;
    }
    if (execute(box, rq, &w, &out->exec, err) < 0) {
        /* Measured and audited all the same: the command may have
         * written before the sandbox failed under it, and the next run's
         * audit starts after this one's attempts. */
        if (box_measure(box, &merr) < 0)
            nsbox_warn("sandbox %s: %s", box->sb.id, merr.msg);
        json_decref(take_audit(box));
        box_run_result_free(out);
        return -1;
    }
    if (rq->changes) {
        nsbox_changes_take(&box->sb, rq->exec.cwd, out->after);
        if (nsbox_changes_diff(out->before, out->after, &out->changes, &merr) < 0)
            nsbox_warn("sandbox %s: the files it changed: %s", box->sb.id, merr.msg);
    }
    if (box_measure(box, &merr) < 0)
        nsbox_warn("sandbox %s: %s", box->sb.id, merr.msg);
    out->network = take_audit(box);
    out->over_budget = w.ws.tripped;
    /* Each of these killed every process of the box but init. */
    bool killed_all = out->exec.timed_out || out->exec.cancelled || out->over_budget;
    if (out->over_budget)
        note_over_budget(&out->exec, box);
    if (killed_all && box->docker_api)
        restart_api(box, &out->exec);
    return 0;
}

void box_run_result_free(struct box_run_result *r)
{
    nsbox_exec_result_free(&r->exec);
    nsbox_changes_free(&r->changes);
    if (r->before != NULL)
        nsbox_snapshot_free(r->before);
    if (r->after != NULL)
        nsbox_snapshot_free(r->after);
    free(r->before);
    free(r->after);
    json_decref(r->network);
    r->before = r->after = NULL;
    r->network = NULL;
}

static json_t *change_json(const struct nsbox_change *c)
{
    const char *kind = nsbox_change_kind_name(c->kind);
    json_t *f = json_pack("{s:s,s:s,s:I,s:s?}", "path", c->path, "change", kind, "size",
                          (json_int_t)c->size, "mime_type", c->mime);
    if (f != NULL)
        return f;
    /* A name that is not UTF-8 cannot be a JSON string: listed
     * base64-encoded instead. */
    _cleanup_free_ char *enc = nsbox_base64_encode((const unsigned char *)c->path, strlen(c->path));
    return json_pack("{s:s?,s:s,s:I}", "path_base64", enc, "change", kind, "size",
                     (json_int_t)c->size);
}

json_t *box_run_json(const struct box *box, const struct box_run_result *r)
{
    json_t *j = box_result_json(&r->exec);
    if (j == NULL)
        return NULL;
    box_usage_json(box, j);
    if (r->network != NULL)
        json_object_set(j, "network", r->network);
    if (r->over_budget)
        json_object_set_new(j, "workspace_over_budget", json_true());
    if (r->before == NULL)
        return j;
    json_t *files = json_array();
    for (size_t i = 0; files != NULL && i < r->changes.n; i++)
        json_array_append_new(files, change_json(&r->changes.v[i]));
    json_object_set_new(j, "files", files ? files : json_array());
    if (r->before->truncated || r->after->truncated)
        json_object_set_new(j, "files_truncated", json_true());
    return j;
}
