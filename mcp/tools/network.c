/* A call's `network` argument (sandbox_create, one-shot execute_code and
 * run_command) against the operator's ceiling (serve --allow-net), and
 * the audit every result of a sandbox with network carries.
 *
 * What a model may ask for (docs/tools.md): names, wildcards and presets
 * the ceiling covers (boxes/net.h box_net_within); an address rule
 * (IP:PORT, NAME=IP:PORT: a host's service, normally unreachable) only as
 * the operator wrote it in the ceiling, since that is how an operator
 * hands out a local mirror.  A bare name that the ceiling maps
 * (NAME=IP:PORT) gets the operator's mapping: the model sees the mirror's
 * name in its instructions and need not know where it is.  Likewise a
 * bare name whose ceiling rules are all method and path rules (such as
 * "api.github.com GET PATHS") gets those rules: the model asks for the
 * host, the operator's narrowing holds (narrow below).  A granted
 * secret's hosts (tools/secrets.c) are added the same way, as the model's
 * bare names would be. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/net.h"
#include "../../boxes/secrets.h"
#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "tools.h"

/* Replaces the NAME rule at i of p with the ceiling's MAPPED rules for its
 * host, if there are any.  Returns how many rules now stand at i (0: it
 * had none, nothing changed). */
static size_t use_mapping(struct egress_policy *p, size_t i, const struct egress_policy *ceiling)
{
    struct egress_rule found[EGRESS_MAX_RULES];
    size_t n = 0;
    for (size_t k = 0; k < ceiling->n; k++)
        if (ceiling->rules[k].kind == EGRESS_RULE_MAPPED &&
            strcmp(ceiling->rules[k].host, p->rules[i].host) == 0) {
            found[n] = ceiling->rules[k];
            /* the model's own methods and paths stay (box_net_within then
             * judges them against the ceiling's) */
            if (p->rules[i].l7) {
                found[n].l7 = true;
                found[n].methods = p->rules[i].methods;
                memcpy(found[n].paths, p->rules[i].paths, sizeof(found[n].paths));
            }
            n++;
        }
    if (n == 0 || p->n - 1 + n > EGRESS_MAX_RULES)
        return 0;
    memmove(&p->rules[i + n], &p->rules[i + 1], (p->n - i - 1) * sizeof(p->rules[0]));
    memcpy(&p->rules[i], found, n * sizeof(found[0]));
    p->n += n - 1;
    return n;
}

/* Whether ceiling rule c (a name or wildcard rule) covers host on port. */
static bool covers(const struct egress_rule *c, const char *host, uint16_t port)
{
    bool ported = false;
    for (size_t k = 0; k < c->n_ports; k++)
        ported |= c->ports[k] == port;
    if (!ported)
        return false;
    if (c->kind == EGRESS_RULE_NAME)
        return strcmp(c->host, host) == 0;
    if (c->kind == EGRESS_RULE_WILDCARD) {
        size_t hl = strlen(host), sl = strlen(c->host);
        return hl > sl + 1 && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, c->host) == 0;
    }
    return false;
}

/* A model's NAME rule at i of p without methods and paths, on a host whose
 * ceiling rules are method and path rules: replaced by copies of those
 * (the requested name, the ports both have), and the ports no such rule
 * covers kept as they were asked (box_net_within then judges them).  A
 * rule within the ceiling as it is stays.  Returns how many rules now
 * stand at i (0: nothing changed). */
static size_t narrow(struct egress_policy *p, size_t i, const struct egress_policy *ceiling)
{
    const struct egress_rule r = p->rules[i];
    struct egress_rule found[EGRESS_MAX_RULES], rest = r;
    size_t n = 0;
    if (r.kind != EGRESS_RULE_NAME || r.l7 || egress_rule_within(ceiling, &r, NULL, 0))
        return 0;
    rest.n_ports = 0;
    for (size_t k = 0; k < r.n_ports; k++) {
        bool l7 = false;
        for (size_t c = 0; c < ceiling->n; c++) {
            const struct egress_rule *cr = &ceiling->rules[c];
            if (!cr->l7 || !covers(cr, r.host, r.ports[k]))
                continue;
            l7 = true;
            size_t f = 0; /* one copy per ceiling rule, with the ports both have */
            while (f < n &&
                   !(found[f].methods == cr->methods && strcmp(found[f].paths, cr->paths) == 0))
                f++;
            if (f == n) {
                if (n == EGRESS_MAX_RULES)
                    return 0;
                found[n] = r;
                found[n].n_ports = 0;
                found[n].l7 = true;
                found[n].methods = cr->methods;
                memcpy(found[n].paths, cr->paths, sizeof(found[n].paths));
                n++;
            }
            bool have = false;
            for (size_t q = 0; q < found[f].n_ports; q++)
                have |= found[f].ports[q] == r.ports[k];
            if (!have)
                found[f].ports[found[f].n_ports++] = r.ports[k];
        }
        if (!l7)
            rest.ports[rest.n_ports++] = r.ports[k];
    }
    if (n == 0)
        return 0;
    if (rest.n_ports > 0)
        found[n++] = rest;
    if (p->n - 1 + n > EGRESS_MAX_RULES)
        return 0;
    memmove(&p->rules[i + n], &p->rules[i + 1], (p->n - i - 1) * sizeof(p->rules[0]));
    memcpy(&p->rules[i], found, n * sizeof(found[0]));
    p->n += n - 1;
    return n;
}

/* The operator's mappings and narrowings applied to p's bare names, then
 * p checked against the ceiling. */
static int fit(const struct mcp_server *cfg, struct egress_policy *p, struct nsbox_err *err)
{
    for (size_t i = 0; cfg->net_ceiling != NULL && i < p->n; i++) {
        if (p->rules[i].kind != EGRESS_RULE_NAME)
            continue;
        size_t used = use_mapping(p, i, cfg->net_ceiling);
        if (used == 0)
            used = narrow(p, i, cfg->net_ceiling);
        i += used > 0 ? used - 1 : 0;
    }
    return box_net_within(cfg->net_ceiling, p, err);
}

int mcp_network_request(const struct mcp_server *cfg, json_t *network, struct egress_policy **out,
                        struct nsbox_err *err)
{
    char *texts[EGRESS_MAX_RULES];
    size_t n = 0, i;
    json_t *e;

    *out = NULL;
    json_array_foreach (network, i, e)
        if (n < EGRESS_MAX_RULES)
            texts[n++] = (char *)json_string_value(e);
    if (n == 0)
        return 0;
    _cleanup_free_ struct egress_policy *p = malloc(sizeof(*p));
    if (p == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    /* As the operator's: an address rule parses, and box_net_within then
     * takes it only when the ceiling has that very rule. */
    if (box_net_parse(p, texts, n, true, err) < 0 || fit(cfg, p, err) < 0)
        return -1;
    *out = TAKE_PTR(p);
    return 0;
}

int mcp_network_add_secrets(const struct mcp_server *cfg, const struct egress_secret *secrets,
                            size_t n, struct egress_policy **net, struct nsbox_err *err)
{
    _cleanup_free_ struct egress_policy *one = malloc(sizeof(*one));
    if (one == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        for (size_t h = 0; h < secrets[i].n_hosts; h++) {
            const struct egress_secret_host *sh = &secrets[i].hosts[h];
            char text[EGRESS_NAME_MAX + 64];
            int len = snprintf(text, sizeof(text), "%s:", sh->host), start = len;
            /* A port the call's network already covers keeps the call's
             * rule (a model's own method and path rule stays as narrow). */
            for (size_t k = 0; k < sh->n_ports; k++)
                if (*net == NULL || egress_policy_match_name(*net, sh->host, sh->ports[k]) == NULL)
                    len += snprintf(text + len, sizeof(text) - (size_t)len, "%s%u",
                                    len > start ? "," : "", sh->ports[k]);
            if (len == start)
                continue;
            char *texts[] = {text};
            /* A bare name as a model would ask for it. */
            if (box_net_parse(one, texts, 1, false, err) < 0 || fit(cfg, one, err) < 0)
                return nsbox_err_prefix(err,
                                        "secret \"%s\" is bound to %s, which this server's "
                                        "network allow-list does not give",
                                        secrets[i].name, text);
            if (*net == NULL && (*net = calloc(1, sizeof(**net))) == NULL)
                return nsbox_err_set(err, ENOMEM, "out of memory");
            for (size_t r = 0; r < one->n; r++) {
                if ((*net)->n == EGRESS_MAX_RULES)
                    return nsbox_err_set(err, E2BIG,
                                         "more than %d network rules with the "
                                         "secrets' hosts",
                                         EGRESS_MAX_RULES);
                (*net)->rules[(*net)->n++] = one->rules[r];
            }
        }
    }
    return 0;
}
