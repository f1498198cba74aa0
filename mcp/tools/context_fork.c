/* context_fork {sandbox_id, context_id, reseed?} (docs/context-fork.md):
 * a new code context whose python interpreter is a copy-on-write fork of
 * the source context's (mcp/interp/fork.c), with its variables, imports
 * and working directory; after the fork neither sees the other's changes.
 *
 * Contract.  The source is a made (or forked) context of the session's
 * own sandbox, or the default "python" one (started first if it never
 * ran: the fork is then a fresh interpreter).  It runs as one operation
 * of the sandbox (mcp_context_op): a cell running in the sandbox is
 * waited for, as every operation waits, so the fork copies the state the
 * cell left.  The fork is a made context: it counts against
 * MCP_MAX_CONTEXTS, lives in the sandbox's cgroup (its pids and memory),
 * is listed with forked_from, and context_remove kills it.  Only python:
 * node (javascript, typescript) and the JVM run threads a fork() does not
 * copy, and R's driver is a shell pipeline; those are refused with the
 * reason, as is landlock isolation (no process group of its own). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../common/cleanup.h"
#include "../sandboxes.h"
#include "contexts.h"
#include "tools.h"

struct fork_req {
    const char *context_id;
    bool reseed;
};

static int refuse_lang(enum mcp_interp_lang lang, const char *id, struct nsbox_err *err)
{
    if (lang == MCP_INTERP_JAVASCRIPT || lang == MCP_INTERP_TYPESCRIPT)
        return nsbox_err_set(err, ENOTSUP,
                             "context \"%s\" is %s: only python contexts can be forked. Its "
                             "interpreter is node, whose V8 runs helper threads (compiler, "
                             "garbage collector) that fork() does not copy, so a forked node "
                             "would hang or crash; make another context with context_create",
                             id, mcp_context_lang_name(lang));
    return nsbox_err_set(err, ENOTSUP,
                         "context \"%s\" is %s: only python contexts can be forked (the %s "
                         "runtime is not forked safely); make another context with "
                         "context_create",
                         id, mcp_context_lang_name(lang), mcp_context_lang_name(lang));
}

static int64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int fork_one(struct mcp_session *s, struct mcp_sandbox *m, void *arg, struct mcp_result *out,
                    struct nsbox_err *err)
{
    struct fork_req *rq = arg;
    struct mcp_context_slot slot;
    (void)s;
    if (mcp_context_slot(m, rq->context_id, &slot, err) < 0)
        return -1;
    if (slot.lang != MCP_INTERP_PYTHON)
        return refuse_lang(slot.lang, rq->context_id, err);
    if (box_require_namespaces(&m->box, "context_fork", err) < 0)
        return -1;
    const char *cwd = slot.cwd ? slot.cwd : m->box.workdir;
    _cleanup_free_ struct mcp_context *c = mcp_context_new(m, slot.lang, cwd, err);
    if (c == NULL)
        return -1;
    if (*slot.interp == NULL && mcp_context_start(m, slot.interp, slot.lang, cwd, err) < 0)
        return -1;
    struct mcp_interp_fork_info fi;
    int64_t t0 = now_us();
    if (mcp_interp_fork(*slot.interp, &m->box, rq->reseed, &c->interp, &fi, err) < 0)
        return -1;
    int64_t took = now_us() - t0;
    if (fi.cwd[0] != '\0')
        snprintf(c->cwd, sizeof(c->cwd), "%s", fi.cwd);
    snprintf(c->forked_from, sizeof(c->forked_from), "%s", rq->context_id);
    mcp_context_add(m, TAKE_PTR(c), out);
    json_t *reseeded = json_array();
    if (fi.reseeded[0])
        json_array_append_new(reseeded, json_string("random"));
    if (fi.reseeded[1])
        json_array_append_new(reseeded, json_string("numpy.random"));
    json_object_set_new(out->structured, "reseeded", reseeded);
    json_object_set_new(out->structured, "fork_ms", json_real((double)took / 1000.0));
    return 0;
}

int mcp_tool_context_fork(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_context_fork_args a;
    if (mcp_args_context_fork(args, &a, err) < 0)
        return -1;
    struct fork_req rq = {a.context_id, a.reseed};
    return mcp_context_op(s, call, a.sandbox_id, fork_one, &rq, out, err);
}
