/* Internal to runtime/egress: the method and path part of a rule
 * (rules_l7.c), for rules.c's parse, format and ceiling. */
#ifndef NSBOX_EGRESS_RULES_L7_H
#define NSBOX_EGRESS_RULES_L7_H

#include "rules.h"

/* The EGRESS_M_* bit of method (upper-case), 0 when not one of them. */
int egress_method_bit(const char *method);

/* Parses l7 ("METHODS" or "METHODS PATHS", the text after the host rule
 * and its space) into r (whose kind is set): 0, or -1 with err quoting
 * text. */
int egress_l7_parse(const char *text, const char *l7, struct egress_rule *r, struct nsbox_err *err);

/* Appends " METHODS PATHS" to the text in buf when r has them. */
void egress_l7_format(const struct egress_rule *r, char *buf, size_t size);

/* Whether the ceiling rule c (covering r's host and port) allows every
 * method and path r does. */
bool egress_l7_within(const struct egress_rule *c, const struct egress_rule *r);

#endif
