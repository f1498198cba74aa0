/* A box's network (net.h): the allow-list parsed, checked against the
 * operator's ceiling, put in force through runtime/egress and kept in the
 * box's record; the audit read per command.
 *
 * Contract: the policy a box holds is a copy (box->net, owned, NULL when
 * sealed); box->net_ever stays true once it had rules, so that every
 * later command's result still says what it tried (an install opens the
 * box, then seals it: the refused attempts after that are the point). */
#include "net.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cleanup.h"
#include "../runtime/egress/egress.h"
#include "../runtime/egress/rules_l7.h"
#include "box.h"
#include "internal.h"

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* One rule's text: leading and trailing blanks dropped. */
static int add_one(struct egress_policy *p, const char *s, size_t n, bool operator,
                   struct nsbox_err * err)
{
    char text[EGRESS_NAME_MAX + 640];
    while (n > 0 && isspace((unsigned char)*s))
        s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0)
        return nsbox_err_set(err, EINVAL,
                             "an empty network rule (a name such as pypi.org, "
                             "NAME:PORT, or a preset: pypi, npm, debian, github)");
    if (n >= sizeof(text))
        return nsbox_err_set(err, EINVAL, "network rule \"%.64s...\" is too long", s);
    snprintf(text, sizeof(text), "%.*s", (int)n, s);
    size_t before = p->n;
    if (egress_policy_add(p, text, err) < 0)
        return -1;
    for (size_t i = before; i < p->n && !operator; i++)
        if (p->rules[i].operator_only) {
            p->n = before;
            return nsbox_err_set(err, EPERM,
                                 "network rule \"%s\" names an address (IP:PORT or NAME=IP:PORT): "
                                 "only the operator sets those (--allow-net); ask for a host name",
                                 text);
        }
    return 0;
}

/* Whether the piece s[0..n) has a blank inside (not at its ends): a rule
 * with methods and paths ("api.github.com GET,POST PATHS"). */
static bool has_inner_blank(const char *s, size_t n)
{
    while (n > 0 && isspace((unsigned char)*s))
        s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return memchr(s, ' ', n) != NULL || memchr(s, '\t', n) != NULL;
}

/* "pypi,npm" and "pypi.org:80,443,npm": a piece of digits alone is one
 * more port of the rule before it (rules.h's NAME:PORT,PORT).  A piece
 * with methods and paths takes the rest of the text (their lists have
 * commas too): "pypi, api.github.com GET,POST PATHS". */
static int add_list(struct egress_policy *p, const char *text, bool operator,
                    struct nsbox_err * err)
{
    const char *start = text;
    while (*start != '\0') {
        const char *end = start + strcspn(start, ",");
        if (has_inner_blank(start, (size_t)(end - start)))
            return add_one(p, start, strlen(start), operator, err);
        while (*end == ',') {
            const char *next = end + 1;
            size_t len = strcspn(next, ",");
            if (!all_digits(next, len))
                break;
            end = next + len;
        }
        if (add_one(p, start, (size_t)(end - start), operator, err) < 0)
            return -1;
        start = *end == ',' ? end + 1 : end;
        if (*end == ',' && *start == '\0')
            return add_one(p, start, 0, operator, err); /* a trailing comma */
    }
    return text[0] == '\0' ? add_one(p, text, 0, operator, err) : 0;
}

int box_net_parse(struct egress_policy *p, char *const *texts, size_t n, bool operator,
                  struct nsbox_err * err)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < n; i++)
        if (add_list(p, texts[i], operator, err) < 0)
            return -1;
    return 0;
}

/* An address rule is the operator's: a request gets it only as the
 * operator wrote it (the same canonical text), never a neighbour; its
 * methods and paths may be narrower than the operator's (or the only ones,
 * where the operator's rule has none). */
static bool same_rule_in(const struct egress_policy *ceiling, const struct egress_rule *r)
{
    char want[EGRESS_NAME_MAX + 640], have[EGRESS_NAME_MAX + 640];
    struct egress_rule a = *r;
    a.l7 = false;
    a.methods = 0;
    a.paths[0] = '\0';
    egress_rule_format(&a, want, sizeof(want));
    for (size_t i = 0; i < ceiling->n; i++) {
        struct egress_rule c = ceiling->rules[i];
        c.l7 = false;
        c.methods = 0;
        c.paths[0] = '\0';
        egress_rule_format(&c, have, sizeof(have));
        if (strcmp(want, have) == 0 && egress_l7_within(&ceiling->rules[i], r))
            return true;
    }
    return false;
}

int box_net_within(const struct egress_policy *ceiling, const struct egress_policy *req,
                   struct nsbox_err *err)
{
    char text[EGRESS_NAME_MAX + 640], why[256] = "";
    if (req == NULL || req->n == 0)
        return 0;
    if (ceiling == NULL || ceiling->n == 0)
        return nsbox_err_set(err, EPERM,
                             "networking is off on this server; the operator "
                             "enables it with --allow-net RULE");
    for (size_t i = 0; i < req->n; i++) {
        const struct egress_rule *r = &req->rules[i];
        bool ok = r->operator_only ? same_rule_in(ceiling, r)
                                   : egress_rule_within(ceiling, r, why, sizeof(why));
        if (ok)
            continue;
        _cleanup_free_ char *list = malloc(8192);
        if (list != NULL)
            egress_policy_format(ceiling, list, 8192);
        egress_rule_format(r, text, sizeof(text));
        return nsbox_err_set(err, EPERM,
                             "network rule \"%s\" is not within the operator's allow-list "
                             "(--allow-net): %.1500s%s%s",
                             text, list ? list : "?", why[0] ? "; " : "", why);
    }
    return 0;
}

static bool has_rules(const struct egress_policy *p)
{
    return p != NULL && p->n > 0;
}

/* box->net becomes a copy of p (NULL when p has no rules). */
static int keep_policy(struct box *box, const struct egress_policy *p, struct nsbox_err *err)
{
    free(box->net);
    box->net = NULL;
    if (!has_rules(p))
        return 0;
    if ((box->net = malloc(sizeof(*box->net))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    *box->net = *p;
    box->net_ever = true;
    return 0;
}

int box_net_set(struct box *box, const struct egress_policy *p, const struct egress_secret *secrets,
                size_t n, struct nsbox_err *err)
{
    /* Never opened: sealed already, and no broker to start for it. */
    if (!has_rules(p) && box->net == NULL && !box->net_ever)
        return 0;
    if (has_rules(p) && box_require_namespaces(box, "opening the network", err) < 0)
        return -1;
    /* Failing, the runtime leaves the sandbox sealed: so says the record. */
    int r = nsbox_sandbox_net_set(&box->sb, has_rules(p) ? p : NULL, secrets, n, err);
    struct nsbox_err kerr;
    if (keep_policy(box, r == 0 ? p : NULL, r == 0 ? err : &kerr) < 0)
        r = -1;
    /* The CA is in the sandbox: every exec from now on is pointed at it. */
    if (r == 0 && box->sb.egress_ca && !box->tls_ca && box_tls_env(box) < 0)
        r = nsbox_err_set(err, ENOMEM, "out of memory");
    if (box->recorded) {
        struct nsbox_err serr;
        if (box_record_save(box, r == 0 ? err : &serr) < 0)
            r = -1;
    }
    return r;
}

json_t *box_net_take_audit(struct box *box, struct nsbox_err *err)
{
    if (!box->net_ever)
        return json_array();
    return nsbox_sandbox_net_audit(&box->sb, &box->net_cursor, err);
}

json_t *box_net_rules_json(const struct egress_policy *p)
{
    char text[EGRESS_NAME_MAX + 640];
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && p != NULL && i < p->n; i++) {
        egress_rule_format(&p->rules[i], text, sizeof(text));
        json_array_append_new(a, json_string(text));
    }
    return a;
}
