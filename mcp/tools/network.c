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
 * name in its instructions and need not know where it is. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../boxes/net.h"
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
            strcmp(ceiling->rules[k].host, p->rules[i].host) == 0)
            found[n++] = ceiling->rules[k];
    if (n == 0 || p->n - 1 + n > EGRESS_MAX_RULES)
        return 0;
    memmove(&p->rules[i + n], &p->rules[i + 1], (p->n - i - 1) * sizeof(p->rules[0]));
    memcpy(&p->rules[i], found, n * sizeof(found[0]));
    p->n += n - 1;
    return n;
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
    if (box_net_parse(p, texts, n, true, err) < 0)
        return -1;
    for (i = 0; cfg->net_ceiling != NULL && i < p->n; i++) {
        if (p->rules[i].kind != EGRESS_RULE_NAME)
            continue;
        size_t used = use_mapping(p, i, cfg->net_ceiling);
        i += used > 0 ? used - 1 : 0;
    }
    if (box_net_within(cfg->net_ceiling, p, err) < 0)
        return -1;
    *out = TAKE_PTR(p);
    return 0;
}
