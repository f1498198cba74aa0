/* A box's network: the egress allow-list of runtime/egress at the level
 * of boxes (docs/network.md).
 *
 * Contract: a box starts closed unless box_spec.net has rules (then they
 * are in force before box_create returns, and recorded in box.json so a
 * later `nsbox exec` knows them).  Callers (cli, mcp) check a request
 * against the operator's ceiling with box_net_within before asking.
 * box_net_take_audit returns what the box tried since the last take, so
 * each command's result carries its own attempts. */
#ifndef NSBOX_BOXES_NET_H
#define NSBOX_BOXES_NET_H

#include <stdbool.h>

#include "../common/err.h"
#include "../runtime/egress/rules.h"
#include "../runtime/egress/secret.h"

struct box;
struct box_spec;
struct json_t;

/* Parses each of texts[0..n) (rules or presets) into *p (emptied first).
 * operator: ADDR and MAPPED rules are accepted (a model's request may not
 * name them; it gets an error saying so).  Returns 0 or -1 with err. */
int box_net_parse(struct egress_policy *p, char *const *texts, size_t n, bool operator,
                  struct nsbox_err * err);

/* Whether every rule of req is within ceiling; an ADDR or MAPPED rule
 * (a request parsed with operator true, as the MCP server does so that a
 * model can use the operator's local mirror) only when the ceiling has the
 * very same rule.  On false err says which
 * rule, and lists the ceiling ("not within the operator's allow-list
 * (--allow-net): pypi.org:80,443, ..."; an empty ceiling: "networking is
 * off on this server; the operator enables it with --allow-net RULE").
 * Returns 0 or -1. */
int box_net_within(const struct egress_policy *ceiling, const struct egress_policy *req,
                   struct nsbox_err *err);

/* Puts p in force for the box (NULL or empty: sealed), and records it,
 * with secrets (n of them; the box's own, box->secrets, as box_create
 * passes them; NULL: the broker keeps those it has).  When the broker
 * inspects a host (a method and path rule, a secret), the sandbox gets
 * its TLS CA and box->env the variables that point clients at it:
 * SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO
 * (/etc/nsbox/ca-bundle.pem) and NODE_EXTRA_CA_CERTS (/etc/nsbox/ca.pem),
 * each unless the box's environment sets it already.  Returns 0 or -1
 * with err. */
int box_net_set(struct box *box, const struct egress_policy *p, const struct egress_secret *secrets,
                size_t n, struct nsbox_err *err);

/* box_create's part: spec's secrets copied into box (at most
 * EGRESS_SECRET_MAX), each given a placeholder unless it has one, and
 * box->env's VAR=placeholder set.  Refused: a variable that spec->env
 * sets too, two secrets on one variable or name, a secret's host:port
 * that spec->net does not allow.  Returns 0 or -1 with err. */
int box_secrets_adopt(struct box *box, const struct box_spec *spec, struct nsbox_err *err);

/* Sets K=V in *env (a malloc'ed array of malloc'ed strings): replaced
 * when override, else only when K is not there.  Returns 0 or -1 (out of
 * memory). */
int box_env_put(char ***env, const char *key, const char *value, bool override);

/* What the box tried since the last call (runtime/egress/egress.h's
 * records), a new reference; an empty array for a box never opened;
 * NULL with err on failure. */
struct json_t *box_net_take_audit(struct box *box, struct nsbox_err *err);

/* p's rules as a JSON array of their canonical texts (egress_rule_format;
 * NULL p: empty), a new reference or NULL when out of memory. */
struct json_t *box_net_rules_json(const struct egress_policy *p);

#endif
