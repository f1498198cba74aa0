/* libFuzzer target: egress rules (runtime/egress/rules.c) and address
 * vetting (vet.c).  The input's lines are rule texts added to one policy.
 * Beyond memory safety it checks: a refusal says why and leaves the policy
 * unchanged; an accepted rule's canonical text parses back to the same
 * rule; every rule is within its own policy and matches its own names;
 * names are normalized; ADDR and MAPPED are operator_only; a method and
 * path rule allows a path of each of its globs, and its host is inspected.  The first 16
 * bytes, as an IPv6 and an IPv4 address, go through egress_addr_public
 * and egress_addr_fake: a fake address is never public, and a v4-mapped
 * address gets the same verdict as its v4. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/egress/inspect.h"
#include "../../runtime/egress/name.h"
#include "../../runtime/egress/rules.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "fuzz-egress: rules: %s\n", what);                                         \
        abort();                                                                                   \
    } while (0)

/* An l7 rule allows a path made from each of its globs ('*' as "x", a
 * "**" segment dropped), for each of its methods, and its host inspects. */
static void check_l7(const struct egress_policy *p, const struct egress_rule *r)
{
    static const char *const methods[] = {"GET",   "HEAD",   "POST",   "PUT",
                                          "PATCH", "DELETE", "OPTIONS"};
    if (!r->l7)
        return;
    if (r->methods == 0 || (r->methods & ~EGRESS_M_ALL) || r->paths[0] != '/')
        FAIL("an l7 rule without methods or paths");
    for (const char *g = r->paths; *g;) {
        size_t n = strcspn(g, ","), o = 0;
        char path[600], clean[1024];
        const char *why;
        for (size_t i = 0; i < n; i++) {
            if (g[i] == '/' && i + 3 <= n && g[i + 1] == '*' && g[i + 2] == '*' &&
                (i + 3 == n || g[i + 3] == '/')) {
                i += 2;
                continue;
            }
            path[o++] = g[i] == '*' ? 'x' : g[i];
        }
        if (o == 0)
            path[o++] = '/';
        path[o] = '\0';
        if (egress_path_clean(path, clean, sizeof(clean), &why) < 0)
            FAIL("a path made from a glob is not clean");
        for (size_t m = 0; m < 7; m++)
            if ((r->methods & (1 << m)) && !egress_rule_l7_allows(r, methods[m], clean))
                FAIL("an l7 rule does not allow a path of its own glob");
        g += n + (g[n] == ',');
    }
    if (r->kind != EGRESS_RULE_WILDCARD && !egress_policy_inspects(p, r->host, r->ports[0]))
        FAIL("an l7 rule's host is not inspected");
}

static void check_rule(const struct egress_policy *p, const struct egress_rule *r)
{
    char text[1024], again[EGRESS_NAME_MAX + 1], why[256];
    struct egress_policy q = {0};
    struct nsbox_err err = {0};
    egress_rule_format(r, text, sizeof(text));
    if (egress_policy_add(&q, text, &err) != 0 || q.n != 1 ||
        memcmp(&q.rules[0], r, sizeof(*r)) != 0)
        FAIL("a canonical text does not parse back to its rule");
    if (r->n_ports == 0 || r->n_ports > EGRESS_MAX_PORTS)
        FAIL("a rule without ports");
    if ((r->kind == EGRESS_RULE_ADDR || r->kind == EGRESS_RULE_MAPPED) != r->operator_only)
        FAIL("operator_only is not exactly ADDR and MAPPED");
    if (r->kind != EGRESS_RULE_ADDR &&
        (egress_name_normalize(r->host, strlen(r->host), again, NULL) < 0 ||
         strcmp(again, r->host) != 0))
        FAIL("a rule's name is not normalized");
    if (!egress_rule_within(p, r, why, sizeof(why)))
        FAIL("a rule is not within its own policy");
    if ((r->kind == EGRESS_RULE_NAME || r->kind == EGRESS_RULE_MAPPED) &&
        !egress_policy_match_name(p, r->host, r->ports[0]))
        FAIL("a name rule does not match its name");
    if (r->kind == EGRESS_RULE_ADDR &&
        egress_policy_match_addr(p, (const struct sockaddr *)&r->addr) == NULL)
        FAIL("an ADDR rule does not match its address");
    check_l7(p, r);
}

static void add_lines(struct egress_policy *p, const char *s)
{
    while (*s) {
        char line[600];
        size_t n = strcspn(s, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), s);
        size_t before = p->n;
        struct nsbox_err err = {0};
        if (egress_policy_add(p, line, &err) != 0) {
            if (!err.msg[0] || p->n != before)
                FAIL("a refusal without a reason, or with rules added");
        } else {
            for (size_t i = before; i < p->n; i++)
                check_rule(p, &p->rules[i]);
        }
        s += n + (s[n] == '\n');
    }
}

static void check_addresses(const uint8_t *data, size_t size)
{
    if (size < 16)
        return;
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    memcpy(&a6.sin6_addr, data, 16);
    memcpy(&a4.sin_addr, data + 12, 4);
    uint32_t index;
    const char *why = NULL;
    for (int i = 0; i < 2; i++) {
        const struct sockaddr *sa = i ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6;
        bool pub = egress_addr_public(sa, &why);
        if (!pub && !why)
            FAIL("an address refused without a reason");
        if (egress_addr_fake(sa, &index) && (pub || index >= 131072))
            FAIL("a fake address is public or out of range");
    }
    if (IN6_IS_ADDR_V4MAPPED(&a6.sin6_addr) && egress_addr_public((struct sockaddr *)&a6, NULL) !=
                                                   egress_addr_public((struct sockaddr *)&a4, NULL))
        FAIL("v4-mapped and v4 disagree");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct egress_policy *p = calloc(1, sizeof(*p));
    if (!p) {
        free(s);
        return 0;
    }
    add_lines(p, s);
    char small[64], big[EGRESS_MAX_RULES * 600];
    egress_policy_format(p, small, sizeof(small));
    egress_policy_format(p, big, sizeof(big));
    if (strlen(small) >= sizeof(small) || strncmp(small, big, strlen(small)) != 0)
        FAIL("a truncated policy text is not a prefix of the whole");
    uint16_t ports[EGRESS_MAX_RULES * EGRESS_MAX_PORTS];
    size_t n = egress_policy_ports(p, ports, sizeof(ports) / sizeof(ports[0]));
    for (size_t i = 1; i < n; i++)
        if (ports[i] <= ports[i - 1])
            FAIL("ports not sorted and distinct");
    check_addresses(data, size);
    free(p);
    free(s);
    return 0;
}
