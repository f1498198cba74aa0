/* Egress rules: what a sandbox may reach (docs/network.md).
 *
 * Contract: pure parsing and matching, no I/O, no allocation but the
 * policy's array.  A rule's text is one of
 *   NAME[:PORT[,PORT...]]        pypi.org, pypi.org:443
 *   *.SUFFIX[:PORT...]           *.githubusercontent.com: any name below
 *                                SUFFIX (not SUFFIX itself)
 *   IP:PORT                      127.0.0.1:3141, [::1]:3141: that one
 *                                service of the host, at the same address
 *                                inside the sandbox (operator only)
 *   NAME=IP:PORT                 devpi.test=127.0.0.1:3141: NAME:PORT in
 *                                the sandbox reaches IP:PORT (operator only)
 *   pypi | npm | debian | github a preset, expanded to its name rules
 * A NAME, *.SUFFIX or NAME=IP:PORT rule may add " METHODS [PATHS]"
 * (rules_l7.c), as in "api.github.com GET,POST /repos/ORG/ANY,/user"
 * (ANY being two stars, a segment of its own); METHODS is
 * '*' or a comma list of GET HEAD POST PUT PATCH DELETE OPTIONS, PATHS up
 * to 4 globs ('*' within a segment, a whole "**" segment: any number of
 * segments; default: every path).
 * Ports default to 80 and 443.  Names are lower-cased, a trailing dot
 * dropped; an IP literal is never a NAME.  A name rule's addresses are
 * resolved by the broker and must be public (vet.h) unless the rule has
 * allow_private (set only for rules the operator wrote as a mirror URL). */
#ifndef NSBOX_EGRESS_RULES_H
#define NSBOX_EGRESS_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../../common/err.h"

#define EGRESS_NAME_MAX 253
#define EGRESS_MAX_PORTS 8
#define EGRESS_MAX_RULES 64
#define EGRESS_RULE_TEXT_MAX 640 /* a buffer egress_rule_format never truncates */

enum egress_rule_kind {
    EGRESS_RULE_NAME,     /* host name, resolved by the broker */
    EGRESS_RULE_WILDCARD, /* any name ending in "." + host */
    EGRESS_RULE_ADDR,     /* an address of the host's, same inside */
    EGRESS_RULE_MAPPED,   /* host name inside -> addr outside */
};

struct egress_rule {
    enum egress_rule_kind kind;
    char host[EGRESS_NAME_MAX + 1]; /* NAME, MAPPED: the name; WILDCARD: the suffix */
    uint16_t ports[EGRESS_MAX_PORTS];
    size_t n_ports;
    struct sockaddr_storage addr; /* ADDR, MAPPED: where to connect (port in ports[0]) */
    socklen_t addr_len;
    bool allow_private; /* a NAME rule may resolve to a private address */
    bool operator_only; /* ADDR and MAPPED: never from a model's request */
    /* Method and path rules (docs/secrets.md: "api.github.com GET,POST
     * PATHS"): the host's requests are read (TLS terminated), each decided. */
    bool l7;
    uint8_t methods; /* EGRESS_M_* bits */
    char paths[256]; /* canonical comma-separated globs (default: every path) */
};

enum {
    EGRESS_M_GET = 1 << 0,
    EGRESS_M_HEAD = 1 << 1,
    EGRESS_M_POST = 1 << 2,
    EGRESS_M_PUT = 1 << 3,
    EGRESS_M_PATCH = 1 << 4,
    EGRESS_M_DELETE = 1 << 5,
    EGRESS_M_OPTIONS = 1 << 6,
    EGRESS_M_ALL = (1 << 7) - 1,
};

struct egress_policy {
    struct egress_rule rules[EGRESS_MAX_RULES];
    size_t n;
};

/* Parses text (one rule or a preset) and appends its rules to p.  Returns
 * 0, or -1 with err quoting text and saying what is wrong (unknown preset,
 * bad port, IP literal without a port, too many rules...). */
int egress_policy_add(struct egress_policy *p, const char *text, struct nsbox_err *err);

/* The rule as text that egress_policy_add parses back to the same rule
 * (canonical: lower-case, ports listed, brackets around v6). */
void egress_rule_format(const struct egress_rule *r, char *buf, size_t size);

/* Whether every (name, port) that r allows is allowed by some rule of
 * ceiling.  On false, why (may be NULL) says which part is outside. */
bool egress_rule_within(const struct egress_policy *ceiling, const struct egress_rule *r, char *why,
                        size_t why_size);

/* The rule of p that allows name (lower-case, no trailing dot) on port,
 * or NULL.  port 0: any port (a DNS question). */
const struct egress_rule *egress_policy_match_name(const struct egress_policy *p, const char *name,
                                                   uint16_t port);

/* The ADDR rule of p for this destination (address and port), or NULL. */
const struct egress_rule *egress_policy_match_addr(const struct egress_policy *p,
                                                   const struct sockaddr *sa);

/* Every distinct port p allows, sorted, into ports (up to max); returns
 * how many. */
size_t egress_policy_ports(const struct egress_policy *p, uint16_t *ports, size_t max);

/* ---- method and path rules (docs/secrets.md) ---- */

/* Whether r (an l7 rule) allows method on path (a cleaned path). */
bool egress_rule_l7_allows(const struct egress_rule *r, const char *method, const char *path);

/* The request-target's path into path (origin-form, or absolute-form's
 * path; query and fragment dropped), or -1 and *why when ambiguous:
 * %2f %5c %2e (any case), a backslash, an empty segment, a "." or ".."
 * segment, a control, space or non-ASCII byte, or "*". */
int egress_path_clean(const char *target, char *path, size_t size, const char **why);

/* Whether some rule of p matching host:port has method and path rules. */
bool egress_policy_inspects(const struct egress_policy *p, const char *host, uint16_t port);

/* Whether p allows the request: some rule matching host:port has no
 * method and path rules, or one that has allows method on path. */
bool egress_policy_allows_request(const struct egress_policy *p, const char *host, uint16_t port,
                                  const char *method, const char *path, char *why, size_t why_size);

/* The policy as one comma-separated line of egress_rule_format texts. */
void egress_policy_format(const struct egress_policy *p, char *buf, size_t size);

#endif
