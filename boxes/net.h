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

struct box;
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

/* Puts p in force for the box (NULL or empty: sealed), and records it.
 * Returns 0 or -1 with err. */
int box_net_set(struct box *box, const struct egress_policy *p, struct nsbox_err *err);

/* What the box tried since the last call (runtime/egress/egress.h's
 * records), a new reference; an empty array for a box never opened;
 * NULL with err on failure. */
struct json_t *box_net_take_audit(struct box *box, struct nsbox_err *err);

/* p's rules as a JSON array of their canonical texts (egress_rule_format;
 * NULL p: empty), a new reference or NULL when out of memory. */
struct json_t *box_net_rules_json(const struct egress_policy *p);

#endif
