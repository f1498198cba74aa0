/* execute_code and run_command: one result record for both. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/net.h"
#include "../../boxes/run.h"
#include "../../boxes/spec.h"
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
#include "contexts.h"
#include "languages.h"
#include "output.h"
#include "results.h"
#include "stream.h"
#include "tools.h"

static bool stopped(struct mcp_session *s, const struct mcp_sandbox *m)
{
    pthread_mutex_lock(&s->lock);
    bool stopping = m->stopping;
    pthread_mutex_unlock(&s->lock);
    return stopping;
}

/* What a persistent interpreter adds to the record (docs/interpreters.md):
 * the last expression's value, whether the state survived, the figures;
 * "error" is in every record (null without an interpreter). */
static void interp_fields(json_t *rec, const struct mcp_interp_info *info, bool used)
{
    json_object_set_new(rec, "interpreter", json_string(used ? "persistent" : "process"));
    mcp_results_error(rec, used ? info : NULL);
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
    const struct mcp_output_kept *kept;
    const struct mcp_results_plan *plan; /* the results' images (interpreters) */
    const struct mcp_file_urls *urls;    /* HTTP: download URLs for owner */
    const char *owner;
    bool warm; /* a one-shot's program ran in its spare's zygote */
};

/* Whether the cell's results carry a PNG: then its figures' files are
 * not sent as images a second time. */
static bool results_have_png(const struct mcp_interp_info *info)
{
    for (size_t b = 0; b < info->n_results; b++)
        for (size_t i = 0; i < info->results[b].n_images; i++)
            if (strcmp(info->results[b].images[i].key, "png") == 0)
                return true;
    return false;
}

/* Fills out with the run's result record (box_run_json: with the disk as
 * measured after it), the images it made, and links to its files and
 * kept output (a kept sandbox's: a one-shot one is gone after the call).
 * The results' images are the first content blocks (results.h). */
static void record(const struct box_run_result *res, const struct mcp_interp_info *info,
                   bool interp, const struct run_facts *f, struct mcp_result *out)
{
    const char *id = f->m->one_shot ? NULL : f->m->id;
    json_t *rec = box_run_json(&f->m->box, res);
    size_t image_bytes = 0;
    interp_fields(rec, info, interp);
    if (f->m->one_shot) /* docs/warm.md */
        json_object_set_new(rec, "warm", json_boolean(f->warm));
    if (interp)
        image_bytes = mcp_results_json(rec, info, f->plan, id, out);
    mcp_output_json(rec, f->kept, id, out);
    /* Links and download URLs for a kept sandbox's files (a one-shot
     * one is gone when the client would follow them). */
    struct mcp_file_links links = {
        .urls = f->urls,
        .owner = f->owner,
        .sandbox_id = id,
        .cwd = f->cwd,
        .image_bytes = image_bytes,
        .no_image = interp && results_have_png(info) ? info->figures : NULL,
    };
    mcp_changes_link(json_object_get(rec, "files"), res, &links, out);
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
    /* A context's own language is found under the operation lock
     * (interp_exec); any interpreter language stands for it here. */
    return rq->context != NULL ? MCP_INTERP_PYTHON : mcp_interp_lang(rq->language);
}

/* box_run's executor for a persistent interpreter (interp.h). */
struct interp_exec {
    struct mcp_sandbox *m;
    enum mcp_interp_lang lang;
    const char *context; /* a code context's id (contexts.h), or NULL: lang's default */
    const char *code;
    bool restart; /* a fresh interpreter first */
    struct mcp_interp_info *info;
    json_t *env; /* the cell's own environment {NAME: VALUE}, or NULL */
};

static int interp_exec(void *arg, struct box *box, const struct nsbox_exec_opts *eo,
                       struct nsbox_exec_result *res, struct nsbox_err *err)
{
    struct interp_exec *x = arg;
    struct mcp_context_slot slot = {&x->m->interp[x->lang], x->lang, NULL};
    struct nsbox_exec_opts o = *eo;

    /* Found under the operation lock, which the list is under too. */
    if (x->context != NULL) {
        if (mcp_context_slot(x->m, x->context, &slot, err) < 0)
            return -1;
        if (slot.cwd != NULL)
            o.cwd = slot.cwd;
    }
    if (x->restart) {
        mcp_interp_free(*slot.interp);
        *slot.interp = NULL;
    }
    return mcp_interp_run(slot.interp, box, slot.lang, x->code, x->env, &o, res, x->info, err);
}

/* Whether a one-shot call's program can run in its spare's zygote
 * (docs/warm.md): execute_code in the zygote's language, without stdin
 * (the zygote's is its channel until it has the program) and without
 * an env name the interpreter reads as it starts (zygote.c says which). */
static bool zygote_fits(const struct mcp_sandbox *m, const struct mcp_run_args *rq,
                        char *const *env)
{
    if (!m->one_shot || m->zygote == NULL || rq->code == NULL || rq->stdin_data != NULL ||
        rq->language == NULL)
        return false;
    int lang = mcp_interp_lang(rq->language);
    return lang >= 0 && (enum mcp_interp_lang)lang == mcp_zygote_lang(m->zygote) &&
           mcp_zygote_env_ok(env);
}

/* box_run's executor for a zygote.  A zygote that did not take the
 * program (it died since it started) is dropped: ESTALE, and the caller
 * runs the program as a fresh process. */
struct zygote_exec {
    struct mcp_sandbox *m;
    const char *code;
    char *const *env; /* the call's own NAME=VALUE strings, or NULL */
};

static int zygote_exec(void *arg, struct box *box, const struct nsbox_exec_opts *eo,
                       struct nsbox_exec_result *res, struct nsbox_err *err)
{
    struct zygote_exec *x = arg;
    int r = mcp_zygote_run(x->m->zygote, box, x->code, x->env, eo, res, err);
    if (r == 1) {
        mcp_zygote_free(x->m->zygote);
        x->m->zygote = NULL;
        return nsbox_err_set(err, ESTALE, "the zygote did not take the program");
    }
    return r;
}

/* The request as box_run takes it: progress only where the client asked
 * for it (a progressToken) or the call may be a task. */
static void run_request(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                        const struct mcp_run_args *rq, double timeout, struct mcp_stream *st,
                        struct box_run *br)
{
    *br = (struct box_run){.changes = true};
    struct nsbox_exec_opts *eo = &br->exec;
    box_exec_defaults(&m->box, eo);
    eo->argv = rq->argv;
    eo->cwd = rq->workdir ? rq->workdir : m->box.workdir;
    eo->timeout_s = timeout;
    eo->stdin_data = rq->stdin_data;
    eo->stdin_len = rq->stdin_data ? strlen(rq->stdin_data) : 0;
    eo->capture = true;
    eo->output_cap = s->cfg->output_cap;
    eo->cancel = &call->cancel;
    if (call->progress_token != NULL || call->taskable) {
        eo->progress = mcp_stream_progress;
        eo->progress_ctx = st;
        /* Ticks often enough to send the first output when it is due
         * (stream.h); the stream coalesces, the watch keeps its period. */
        eo->progress_ms = MCP_STREAM_FIRST_MS;
    }
}

/* The call's env (rq->env) where it goes: in an interpreter, the cell's
 * message (*cell, {NAME: VALUE}); for a new process, on top of the
 * sandbox's (eo->env: the array *merged of the strings *strings).  The
 * caller frees the three.  Never logged.  Returns 0, or -1 out of memory. */
static int run_env(const struct mcp_run_args *rq, bool interp, struct nsbox_exec_opts *eo,
                   json_t **cell, char ***strings, char ***merged, struct nsbox_err *err)
{
    if (rq->env == NULL)
        return 0;
    if (interp)
        *cell = mcp_args_env_object(rq->env);
    else if ((*strings = mcp_args_env_strings(rq->env)) != NULL &&
             (*merged = box_merge_env((char **)eo->env, *strings)) != NULL)
        eo->env = *merged;
    if (interp ? *cell == NULL : *merged == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    return 0;
}

static int exec_in(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                   const struct mcp_run_args *rq, double timeout, struct mcp_result *out,
                   struct nsbox_err *err)
{
    struct mcp_stream st;
    struct mcp_interp_info info = {0};
    struct box_run br;
    _cleanup_(box_run_result_free) struct box_run_result res = {0};
    _cleanup_strv_ char **env_strings = NULL;
    _cleanup_free_ char **env = NULL;
    _cleanup_(json_decrefp) json_t *cell_env = NULL;
    mcp_stream_init(&st, s, call);
    run_request(s, call, m, rq, timeout, &st, &br);
    int lang = interpreted(s, m, rq);
    if (rq->context != NULL && lang < 0)
        return nsbox_err_set(err, ENOTSUP,
                             "code contexts are persistent interpreters, which this sandbox "
                             "cannot run (its isolation mode mounts no drivers)");
    if (run_env(rq, lang >= 0, &br.exec, &cell_env, &env_strings, &env, err) < 0)
        return -1;
    struct interp_exec x = {.m = m,
                            .lang = (enum mcp_interp_lang)(lang >= 0 ? lang : 0),
                            .context = rq->context,
                            .code = rq->code,
                            .restart = rq->restart,
                            .info = &info,
                            .env = cell_env};
    if (lang >= 0) {
        br.exec_fn = interp_exec;
        br.exec_ctx = &x;
    }
    /* Only the call's own variables: the sandbox's are the zygote's already. */
    struct zygote_exec zx = {.m = m, .code = rq->code, .env = env_strings};
    bool warm = lang < 0 && zygote_fits(m, rq, env_strings);
    if (warm) {
        br.exec_fn = zygote_exec;
        br.exec_ctx = &zx;
    }

    /* A one-shot sandbox is the call's alone: nothing else can stop it. */
    if (!m->one_shot && mcp_op_begin(s, call, m, err) < 0)
        return -1;
    /* A rule the user granted once (request_network.c): for this run only. */
    struct mcp_net_once once = {0};
    if (!m->one_shot && mcp_net_once_begin(m, &once, err) < 0) {
        mcp_op_end(s, call, m);
        return -1;
    }
    int r = box_run(&m->box, &br, &res, err);
    if (r < 0 && warm && err->code == ESTALE) {
        /* Its zygote was gone: a fresh process, as without one. */
        warm = false;
        br.exec_fn = NULL;
        br.exec_ctx = NULL;
        memset(err, 0, sizeof(*err));
        r = box_run(&m->box, &br, &res, err);
    }
    /* Cut to the inline budget, the whole kept, while the operation is
     * still this call's. */
    struct mcp_output_kept kept = {0};
    struct mcp_results_plan *plan = NULL;
    /* The rest of the streamed output, before the record cuts it. */
    if (r == 0 && br.exec.progress != NULL)
        mcp_stream_finish(&st, &res.exec);
    if (r == 0)
        mcp_output_cut(s, call, m, &res.exec, rq->inline_max, &kept);
    if (r == 0 && lang >= 0)
        plan = mcp_results_keep(s, call, m, &info);
    struct nsbox_err oerr;
    if (mcp_net_once_end(m, &once, &oerr) < 0 && r == 0) {
        r = -1;
        *err = oerr;
    }
    if (!m->one_shot)
        mcp_op_end(s, call, m);
    /* A stop cancels the call: during the command, or before it, while
     * its interpreter was starting (ECANCELED): either way, say so. */
    if (((r == 0 && res.exec.cancelled) || (r < 0 && err->code == ECANCELED)) && stopped(s, m))
        r = nsbox_err_set(err, ESRCH, "sandbox \"%s\" was stopped while this ran", m->id);
    if (r == 0) {
        struct run_facts facts = {m, br.exec.cwd, &kept, plan, s->cfg->file_urls, s->id, warm};
        record(&res, &info, lang >= 0, &facts, out);
    }
    mcp_results_plan_free(plan);
    mcp_interp_info_free(&info);
    return r;
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
    int lang = rq->code != NULL && rq->language != NULL ? mcp_interp_lang(rq->language) : -1;
    struct mcp_sandbox *m = defaults ? mcp_pool_take(s->cfg, image, lang) : NULL;
    if (m == NULL) {
        announce_import(s, call, image);
        m = mcp_sandbox_new(s, image, l, NULL, NULL, NULL, true, err);
    }
    if (m == NULL)
        return -1;
    /* The spare is this call's from here on and never goes back: a sandbox
     * once opened to the network is removed with the call. */
    int r = net != NULL ? box_net_set(&m->box, net, NULL, 0, err) : 0;
    if (r == 0)
        r = exec_in(s, call, m, rq, l->timeout_s, out, err);
    mcp_sandbox_free_detached(s->cfg, m);
    return r;
}

int mcp_tool_execute_code(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_run_args rq;

    if (mcp_args_execute_code(s->cfg, args, &rq, err) < 0)
        return -1;
    return run(s, call, &rq, out, err);
}

int mcp_tool_run_command(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_run_args rq;

    if (json_is_true(json_object_get(args, "background")))
        return mcp_process_run_background(s, call, args, out, err); /* processes.c */
    if (mcp_args_run_command(s->cfg, args, &rq, err) < 0)
        return -1;
    /* One-shot commands run in the shell image, else in python's. */
    rq.language = mcp_image_for_language(s, "sh") ? "sh" : "python";
    return run(s, call, &rq, out, err);
}
