/* request_network (tools.h): a model asks the user, through its client
 * (MCP elicitation, ../ask.h), to open a kept sandbox to one more rule.
 *
 * Order, so that nobody is asked for what cannot be granted:
 *   1. a 2026-07-28 request: refused (that revision's input-required flow
 *      is not nsbox's yet); a call running as a task: refused;
 *   2. the sandbox must be the session's, and able to have network (not
 *      landlock isolation);
 *   3. the rule is parsed as a model's `network` rule and must lie within
 *      the operator's ceiling (tools/network.c: a mapped name gets the
 *      operator's mapping) -- else the ceiling's error, and no question;
 *   4. the client must have declared form elicitation at initialize --
 *      else an error saying so, nothing changed;
 *   5. one elicitation/create: "Allow RULES for sandbox ID? Reason: ..."
 *      with one enum field, decision: once | sandbox | no.
 * accept + sandbox: the rules join the sandbox's grant (box_net_set with
 * its rules and these); accept + once: they are kept aside (m->net_once)
 * and put in force around the sandbox's next run_command or execute_code
 * only (mcp_net_once_begin/end, called by exec.c); anything else (no,
 * decline, cancel, timeout, content that is not one of the three): nothing
 * changes.  The reason is the model's text: shown cut and without control
 * or bidirectional-override characters, so it cannot forge the prompt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/net.h"
#include "../../common/cleanup.h"
#include "../../common/cleanup_json.h"
#include "../ask.h"
#include "../sandboxes.h"
#include "args.h"
#include "tools.h"

#define REASON_SHOWN_MAX 300 /* bytes of the reason in the question */

/* The reason as the user sees it: C0/C1 controls, DEL, line separators
 * and bidirectional controls (UTF-8) as spaces, runs of spaces as one,
 * cut at REASON_SHOWN_MAX bytes on a character boundary ("..." then). */
static void clean_reason(const char *in, char *out, size_t size)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t n = 0;
    bool cut = false;

    while (*p != '\0') {
        size_t len = 1;
        bool blank = false;
        if (*p <= 0x20 || *p == 0x7f) /* a space too: runs become one */
            blank = true;
        else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            blank = true, len = 2; /* C1 */
        else if (p[0] == 0xe2 && p[1] == 0x80 &&
                 ((p[2] >= 0x8b && p[2] <= 0x8f) || (p[2] >= 0xa8 && p[2] <= 0xae)))
            blank = true, len = 3; /* zero-width, LRM/RLM, U+2028/9, embeddings/overrides */
        else if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
            blank = true, len = 3; /* isolates */
        else if (*p >= 0xc0)       /* a character's length (json strings are valid UTF-8) */
            len = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;
        if (blank) {
            if (n > 0 && out[n - 1] != ' ' && n + 1 < size)
                out[n++] = ' ';
        } else if (n + len + 4 > size || n + len > REASON_SHOWN_MAX) {
            cut = true;
            break;
        } else {
            memcpy(out + n, p, len);
            n += len;
        }
        for (size_t k = 0; k < len && *p != '\0'; k++)
            p++;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    if (cut)
        memcpy(out + n, "...", 3), n += 3;
    out[n] = '\0';
}

/* Whether p has a rule formatted as text. */
static bool has_rule(const struct egress_policy *p, const char *text)
{
    char t[EGRESS_NAME_MAX + 512];
    for (size_t i = 0; p != NULL && i < p->n; i++) {
        egress_rule_format(&p->rules[i], t, sizeof(t));
        if (strcmp(t, text) == 0)
            return true;
    }
    return false;
}

/* Adds to p each rule of add it lacks.  0, or -1 with err when full. */
static int merge(struct egress_policy *p, const struct egress_policy *add, struct nsbox_err *err)
{
    char t[EGRESS_NAME_MAX + 512];
    for (size_t i = 0; i < add->n; i++) {
        egress_rule_format(&add->rules[i], t, sizeof(t));
        if (has_rule(p, t))
            continue;
        if (p->n == EGRESS_MAX_RULES)
            return nsbox_err_set(err, ENOSPC, "the sandbox has %d network rules already",
                                 EGRESS_MAX_RULES);
        p->rules[p->n++] = add->rules[i];
    }
    return 0;
}

/* A copy of m's rules (an empty policy when it has none): malloc'ed. */
static struct egress_policy *current(const struct mcp_sandbox *m)
{
    struct egress_policy *p = calloc(1, sizeof(*p));
    if (p != NULL && m->box.net != NULL)
        *p = *m->box.net;
    return p;
}

int mcp_net_once_begin(struct mcp_sandbox *m, struct mcp_net_once *o, struct nsbox_err *err)
{
    *o = (struct mcp_net_once){0};
    if (m->net_once == NULL)
        return 0;
    _cleanup_free_ struct egress_policy *once = m->net_once;
    m->net_once = NULL; /* once: taken by this command whatever happens */
    _cleanup_free_ struct egress_policy *p = current(m);
    if (p == NULL || (m->box.net != NULL && (o->saved = current(m)) == NULL))
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (merge(p, once, err) < 0 ||
        box_net_set(&m->box, p, m->box.secrets, m->box.n_secrets, err) < 0) {
        free(o->saved);
        o->saved = NULL;
        return nsbox_err_prefix(err, "the rule granted once could not be put in force");
    }
    o->applied = true;
    return 0;
}

int mcp_net_once_end(struct mcp_sandbox *m, struct mcp_net_once *o, struct nsbox_err *err)
{
    if (!o->applied)
        return 0;
    int r = 0;
    struct nsbox_err ignored;
    if (box_net_set(&m->box, o->saved, m->box.secrets, m->box.n_secrets, err) < 0 &&
        box_net_set(&m->box, NULL, NULL, 0, &ignored) < 0) {
        /* Never leave the once rule open: nothing may run with it. */
        nsbox_sandbox_kill_all(&m->box.sb);
        r = nsbox_err_prefix(err, "the rule granted once could not be taken back (every "
                                  "process in the sandbox was killed; stop it)");
    }
    free(o->saved);
    *o = (struct mcp_net_once){0};
    return r;
}

/* The answer put in force: "sandbox" or "once" (m's exec lock taken
 * here).  0, or -1 with err. */
static int grant(struct mcp_session *s, struct mcp_call *call, const char *id, bool once,
                 const struct egress_policy *req, json_t **rules_now, struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_get(s, id, err);
    if (m == NULL)
        return nsbox_err_prefix(err, "while the user was asked");
    if (mcp_op_begin(s, call, m, err) < 0) {
        mcp_sandbox_put(s, m);
        return -1;
    }
    int r;
    if (once) {
        if (m->net_once == NULL)
            m->net_once = calloc(1, sizeof(*m->net_once));
        r = m->net_once == NULL ? nsbox_err_set(err, ENOMEM, "out of memory")
                                : merge(m->net_once, req, err);
    } else {
        _cleanup_free_ struct egress_policy *p = current(m);
        r = p == NULL ? nsbox_err_set(err, ENOMEM, "out of memory") : merge(p, req, err);
        if (r == 0)
            r = box_net_set(&m->box, p, m->box.secrets, m->box.n_secrets, err);
    }
    *rules_now = box_net_rules_json(m->box.net);
    mcp_op_end(s, call, m);
    mcp_sandbox_put(s, m);
    return r;
}

/* The question's requestedSchema: one required enum field. */
static json_t *question_schema(void)
{
    return json_pack(
        "{s:s,s:{s:{s:s,s:s,s:s,s:[sss],s:[sss]}},s:[s]}", "type", "object", "properties",
        "decision", "type", "string", "title", "Decision", "description",
        "once: for the sandbox's next command only; sandbox: until the sandbox is stopped; "
        "no: refuse",
        "enum", "once", "sandbox", "no", "enumNames", "Allow once (next command)",
        "Allow for this sandbox", "Do not allow", "required", "decision");
}

/* Whether this call can ask at all (its era, not a task); err says why
 * not. */
static int askable(const struct mcp_call *call, struct nsbox_err *err)
{
    if (call->modern)
        return nsbox_err_set(err, ENOTSUP,
                             "request_network asks the user through MCP elicitation, which nsbox "
                             "does in sessions that began with initialize (MCP 2025-06-18 to "
                             "2025-11-25); the input-required flow of this protocol revision "
                             "(2026-07-28) is not supported by nsbox yet. Nothing was changed; "
                             "the operator can widen --allow-net or the model can call "
                             "sandbox_create with network");
    if (call->task != NULL || call->taskable)
        return nsbox_err_set(err, ENOTSUP,
                             "request_network cannot run as a task: the question goes out on "
                             "the call's own stream. Nothing was changed");
    return 0;
}

/* Whether the session's client declared form elicitation; err says so
 * when not. */
static int can_ask(struct mcp_session *s, char *version, size_t size, struct nsbox_err *err)
{
    pthread_mutex_lock(&s->lock);
    bool form = s->client_elicit_form;
    snprintf(version, size, "%s", s->protocol);
    pthread_mutex_unlock(&s->lock);
    if (!form)
        return nsbox_err_set(err, ENOTSUP,
                             "this client cannot ask its user (no elicitation capability); the "
                             "operator can widen --allow-net or the model can call "
                             "sandbox_create with network. Nothing was changed");
    return 0;
}

/* Whether s has the kept sandbox id (not woken, not counted as a use)
 * and it can have network at all: nobody is asked for what its isolation
 * mode cannot give. */
static int grantable(struct mcp_session *s, const char *id, struct nsbox_err *err)
{
    struct mcp_sandbox *m = mcp_sandbox_hold(s, id, err);
    if (m == NULL)
        return -1;
    int r = box_require_namespaces(&m->box, "opening the network", err);
    mcp_sandbox_unhold(s, m, false);
    return r < 0 ? nsbox_err_prefix(err, "nobody was asked") : 0;
}

static const char *const answers[] = {"accept", "decline", "cancel", NULL};

int mcp_tool_request_network(struct mcp_session *s, struct mcp_call *call, json_t *args,
                             struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_request_network_args a;
    char version[16];

    if (mcp_args_request_network(args, &a, err) < 0 || askable(call, err) < 0)
        return -1;
    _cleanup_free_ struct egress_policy *req = NULL;
    _cleanup_json_ json_t *texts = json_pack("[s]", a.rule);
    if (texts == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (grantable(s, a.sandbox_id, err) < 0)
        return -1;
    if (mcp_network_request(s->cfg, texts, &req, err) < 0)
        return nsbox_err_prefix(err, "nobody was asked");
    if (req == NULL || req->n == 0)
        return nsbox_err_set(err, EINVAL, "rule: no rule given");
    if (can_ask(s, version, sizeof(version), err) < 0)
        return -1;
    char shown[4096], reason[REASON_SHOWN_MAX + 8];
    egress_policy_format(req, shown, sizeof(shown));
    json_t *res = json_pack("{s:s,s:s,s:o,s:n}", "sandbox_id", a.sandbox_id, "rule", a.rule,
                            "rules", box_net_rules_json(req), "granted");
    if (res == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    out->structured = res;

    clean_reason(a.reason, reason, sizeof(reason));
    char message[sizeof(shown) + sizeof(reason) + 256];
    snprintf(message, sizeof(message), "Allow %s for sandbox %s? Reason: %s", shown, a.sandbox_id,
             reason);
    json_t *params = json_pack("{s:s,s:o}", "message", message, "requestedSchema",
                               question_schema());
    if (params != NULL && strcmp(version, "2025-11-25") >= 0) /* mode came with 2025-11-25 */
        json_object_set_new(params, "mode", json_string("form"));
    if (params == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    _cleanup_json_ json_t *answer = NULL;
    int end = mcp_ask(s, call, "elicitation/create", params, (unsigned)(a.timeout_s * 1000),
                      &answer, err);
    if (end < 0)
        return nsbox_err_prefix(err, "nothing was granted");
    if (end == MCP_ASK_CANCELLED)
        return nsbox_err_set(err, ECANCELED,
                             "the call was cancelled while the user was asked; nothing was "
                             "granted");
    if (end == MCP_ASK_ERROR) {
        const char *m = json_string_value(json_object_get(answer, "message"));
        return nsbox_err_set(err, EPROTO,
                             "the client could not ask its user (it answered with error %lld: "
                             "%.200s); nothing was granted",
                             (long long)json_integer_value(json_object_get(answer, "code")),
                             m ? m : "no message");
    }
    const char *action = end == MCP_ASK_TIMEOUT
                             ? "timeout"
                             : json_string_value(json_object_get(answer, "action"));
    const char *kind = "invalid";
    for (size_t i = 0; action != NULL && answers[i] != NULL; i++)
        if (strcmp(action, answers[i]) == 0)
            kind = answers[i];
    if (end == MCP_ASK_TIMEOUT)
        kind = "timeout";
    json_t *decision = strcmp(kind, "accept") == 0
                           ? json_object_get(json_object_get(answer, "content"), "decision")
                           : NULL;
    const char *d = json_string_value(decision);
    bool once = d != NULL && strcmp(d, "once") == 0;
    bool whole = d != NULL && strcmp(d, "sandbox") == 0;
    json_object_set_new(res, "answer", json_string(kind));
    json_object_set_new(res, "decision",
                        d != NULL && (once || whole || strcmp(d, "no") == 0) ? json_string(d)
                                                                             : json_null());
    const char *what = "nothing was granted";
    _cleanup_json_ json_t *now = NULL;
    if (once || whole) {
        if (grant(s, call, a.sandbox_id, once, req, &now, err) < 0)
            return nsbox_err_prefix(err, "the user allowed %s, but", shown);
        json_object_set_new(res, "granted", json_string(once ? "once" : "sandbox"));
        what = once ? "granted for the sandbox's next run_command or execute_code only"
                    : "granted until the sandbox stops";
    } else if (strcmp(kind, "accept") == 0 && (d == NULL || strcmp(d, "no") != 0))
        what = "the answer was not one of once, sandbox, no: nothing was granted";
    json_object_set_new(res, "message", json_string(what));
    if (now != NULL)
        json_object_set(res, "network_rules", now);
    return 0;
}
