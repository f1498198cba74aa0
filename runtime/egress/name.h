/* Internal to runtime/egress: the one definition of a host name that
 * rules, DNS questions, SNI and Host headers all go through, so that a
 * name the broker compares is spelled the same way whatever carried it. */
#ifndef NSBOX_EGRESS_NAME_H
#define NSBOX_EGRESS_NAME_H

#include <stdbool.h>
#include <stddef.h>

#include "rules.h"

/* Copies the len bytes at in to out lower-cased, one trailing dot
 * dropped.  Returns 0, or -1 with *why (a static string) when the result
 * is not a host name: empty, over EGRESS_NAME_MAX, an empty or over-63-byte
 * label, a byte outside [a-z0-9-_.], a label starting with '-', or an IP
 * literal (a last label of digits, or anything inet_aton takes). */
int egress_name_normalize(const char *in, size_t len, char out[EGRESS_NAME_MAX + 1],
                          const char **why);

/* Whether name lies strictly below suffix (both normalized). */
bool egress_name_below(const char *name, const char *suffix);

#endif
