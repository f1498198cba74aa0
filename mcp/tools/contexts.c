/* Code contexts: more persistent interpreters in one kept sandbox, as
 * E2B's createCodeContext gives (docs/interpreters.md, "Contexts").
 *
 * Contract.  A sandbox has three default contexts, named by their
 * language ("python", "javascript", "typescript"): the interpreters that
 * execute_code with a sandbox_id and no context has always used, started
 * on first use in the sandbox's working directory.  context_create adds
 * one of a language in a working directory of its own (default: the
 * sandbox's), started at once, so that a bad directory or a missing
 * interpreter is said by the call that asked for it; its id is "ctx-"
 * and 16 random hex digits.  All share the sandbox's files, processes,
 * limits and network; each keeps its own variables and working directory.
 * context_restart starts a context's interpreter anew (its state is
 * gone), context_remove kills and forgets a made one (the defaults cannot
 * be removed).  At most MCP_MAX_CONTEXTS made contexts per sandbox.
 *
 * Every operation runs between mcp_op_begin and mcp_op_end: the list and
 * the interpreters are the sandbox's operation lock's, like a cell. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../../common/cleanup.h"
#include "../sandboxes.h"
#include "args.h"
#include "contexts.h"
#include "tools.h"

static const char *const lang_names[MCP_INTERP_N] = {"python", "javascript", "typescript", "r",
                                                     "java"};

/* The default context named id, or -1. */
static int default_context(const char *id)
{
    for (int i = 0; i < MCP_INTERP_N; i++)
        if (strcmp(id, lang_names[i]) == 0)
            return i;
    return -1;
}

static struct mcp_context *find_made(struct mcp_sandbox *m, const char *id)
{
    for (struct mcp_context *c = m->contexts; c != NULL; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

int mcp_context_slot(struct mcp_sandbox *m, const char *id, struct mcp_context_slot *out,
                     struct nsbox_err *err)
{
    int d = default_context(id);
    if (d >= 0) {
        *out = (struct mcp_context_slot){&m->interp[d], (enum mcp_interp_lang)d, NULL};
        return 0;
    }
    struct mcp_context *c = find_made(m, id);
    if (c == NULL)
        return nsbox_err_set(err, ENOENT,
                             "sandbox \"%s\" has no code context \"%s\" (context_list lists them)",
                             m->id, id);
    *out = (struct mcp_context_slot){&c->interp, c->lang, c->cwd};
    return 0;
}

static json_t *context_json(const char *id, enum mcp_interp_lang lang, const char *cwd,
                            bool is_default)
{
    return json_pack("{s:s,s:s,s:s,s:b}", "context_id", id, "language", lang_names[lang], "cwd",
                     cwd, "default", is_default);
}

/* A made context's record (with forked_from when it is a fork). */
static json_t *made_json(const struct mcp_context *c)
{
    json_t *j = context_json(c->id, c->lang, c->cwd, false);
    if (j != NULL && c->forked_from[0] != '\0')
        json_object_set_new(j, "forked_from", json_string(c->forked_from));
    return j;
}

const char *mcp_context_lang_name(enum mcp_interp_lang lang)
{
    return lang_names[lang];
}

int mcp_context_op(struct mcp_session *s, struct mcp_call *call, const char *id, mcp_context_fn fn,
                   void *arg, struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_get(s, id, err);
    if (m == NULL)
        return -1;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        r = fn(s, m, arg, out, err);
        mcp_op_end(s, call, m);
    }
    mcp_sandbox_put(s, m);
    return r;
}

int mcp_context_start(struct mcp_sandbox *m, struct mcp_interp **interp, enum mcp_interp_lang lang,
                      const char *cwd, struct nsbox_err *err)
{
    struct nsbox_exec_opts eo;
    struct nsbox_exec_result res = {0};
    struct mcp_interp_info info = {0};

    box_exec_defaults(&m->box, &eo);
    eo.cwd = cwd;
    eo.timeout_s = 60;
    int r = mcp_interp_run(interp, &m->box, lang, "", NULL, &eo, &res, &info, err);
    if (r == 0 && (info.state_lost || res.exit_code != 0))
        r = nsbox_err_set(err, EINVAL, "the %s interpreter did not start in %s%s%.*s",
                          lang_names[lang], cwd, res.err_len ? ": " : "",
                          (int)(res.err_len > 400 ? 400 : res.err_len), res.err ? res.err : "");
    nsbox_exec_result_free(&res);
    mcp_interp_info_free(&info);
    return r;
}

static int start(struct mcp_sandbox *m, struct mcp_context *c, struct nsbox_err *err)
{
    return mcp_context_start(m, &c->interp, c->lang, c->cwd, err);
}

struct mcp_context *mcp_context_new(struct mcp_sandbox *m, enum mcp_interp_lang lang,
                                    const char *cwd, struct nsbox_err *err)
{
    unsigned char rnd[8];
    if (m->n_contexts >= MCP_MAX_CONTEXTS) {
        nsbox_err_set(err, EAGAIN,
                      "sandbox \"%s\" has %d code contexts, the most it may have; remove "
                      "one with context_remove",
                      m->id, MCP_MAX_CONTEXTS);
        return NULL;
    }
    if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
        nsbox_err_sys(err, "getrandom");
        return NULL;
    }
    struct mcp_context *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(c->id, sizeof(c->id), "ctx-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    c->lang = lang;
    snprintf(c->cwd, sizeof(c->cwd), "%s", cwd);
    return c;
}

void mcp_context_add(struct mcp_sandbox *m, struct mcp_context *c, struct mcp_result *out)
{
    struct mcp_context **tail = &m->contexts;
    while (*tail != NULL)
        tail = &(*tail)->next;
    out->structured = made_json(c);
    json_object_set_new(out->structured, "sandbox_id", json_string(m->id));
    *tail = c;
    m->n_contexts++;
}

struct create_req {
    enum mcp_interp_lang lang;
    const char *cwd;
};

static int create(struct mcp_session *s, struct mcp_sandbox *m, void *arg, struct mcp_result *out,
                  struct nsbox_err *err)
{
    struct create_req *rq = arg;
    (void)s;
    _cleanup_free_ struct mcp_context *c = mcp_context_new(m, rq->lang,
                                                           rq->cwd ? rq->cwd : m->box.workdir, err);
    if (c == NULL)
        return -1;
    if (start(m, c, err) < 0) {
        mcp_interp_free(c->interp);
        return -1;
    }
    mcp_context_add(m, TAKE_PTR(c), out);
    return 0;
}

int mcp_tool_context_create(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_context_args a;
    if (mcp_args_context_create(args, &a, err) < 0)
        return -1;
    /* Known: the schema allows only interpreter languages. */
    struct create_req rq = {
        (enum mcp_interp_lang)mcp_interp_lang(a.language ? a.language : "python"), a.cwd};
    return mcp_context_op(s, call, a.sandbox_id, create, &rq, out, err);
}

static int list(struct mcp_session *s, struct mcp_sandbox *m, void *arg, struct mcp_result *out,
                struct nsbox_err *err)
{
    json_t *a = json_array();
    (void)s, (void)arg, (void)err;
    /* R's and Java's default contexts once they ran: most images have
     * neither. */
    for (int i = 0; i < MCP_INTERP_N; i++)
        if (i <= MCP_INTERP_TYPESCRIPT || m->interp[i] != NULL)
            json_array_append_new(
                a, context_json(lang_names[i], (enum mcp_interp_lang)i, m->box.workdir, true));
    for (struct mcp_context *c = m->contexts; c != NULL; c = c->next)
        json_array_append_new(a, made_json(c));
    out->structured = json_pack("{s:s,s:o}", "sandbox_id", m->id, "contexts", a);
    return 0;
}

int mcp_tool_context_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                          struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_context_args a;
    if (mcp_args_context_list(args, &a, err) < 0)
        return -1;
    return mcp_context_op(s, call, a.sandbox_id, list, NULL, out, err);
}

static int restart(struct mcp_session *s, struct mcp_sandbox *m, void *arg, struct mcp_result *out,
                   struct nsbox_err *err)
{
    const char *id = arg;
    struct mcp_context_slot slot;
    (void)s;
    if (mcp_context_slot(m, id, &slot, err) < 0)
        return -1;
    mcp_interp_free(*slot.interp);
    *slot.interp = NULL;
    /* A made context starts again at once (as it was made); a default
     * one on its next use, as before. */
    struct mcp_context *c = find_made(m, id);
    if (c != NULL && start(m, c, err) < 0)
        return -1;
    out->structured = json_pack("{s:s,s:s,s:b}", "sandbox_id", m->id, "context_id", id, "restarted",
                                1);
    return 0;
}

int mcp_tool_context_restart(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_context_args a;
    if (mcp_args_context_restart(args, &a, err) < 0)
        return -1;
    return mcp_context_op(s, call, a.sandbox_id, restart, (void *)a.context_id, out, err);
}

static int remove_one(struct mcp_session *s, struct mcp_sandbox *m, void *arg,
                      struct mcp_result *out, struct nsbox_err *err)
{
    const char *id = arg;
    (void)s;
    if (default_context(id) >= 0)
        return nsbox_err_set(err, EINVAL,
                             "\"%s\" is a default context and cannot be removed "
                             "(context_restart starts it anew)",
                             id);
    for (struct mcp_context **p = &m->contexts; *p != NULL; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0) {
            struct mcp_context *c = *p;
            *p = c->next;
            mcp_interp_free(c->interp);
            free(c);
            m->n_contexts--;
            out->structured = json_pack("{s:s,s:s,s:b}", "sandbox_id", m->id, "context_id", id,
                                        "removed", 1);
            return 0;
        }
    return nsbox_err_set(err, ENOENT,
                         "sandbox \"%s\" has no code context \"%s\" (context_list lists them)",
                         m->id, id);
}

int mcp_tool_context_remove(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_context_args a;
    if (mcp_args_context_remove(args, &a, err) < 0)
        return -1;
    return mcp_context_op(s, call, a.sandbox_id, remove_one, (void *)a.context_id, out, err);
}
