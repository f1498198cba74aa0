/* Secrets a sandbox may use without seeing them, for the front ends
 * (docs/secrets.md): runtime/egress/secret.h re-exported, so that cli/ and
 * mcp/ never include runtime/ headers, and how a secret's binding reads.
 *
 * Contract: nothing here prints or returns a secret's value; the binding
 * text names the header and template ("header Authorization: Bearer {}")
 * or basic auth ("basic", "basic user U"), never the value. */
#ifndef NSBOX_BOXES_SECRETS_H
#define NSBOX_BOXES_SECRETS_H

#include <stdio.h>

#include "../runtime/egress/secret.h"

/* Where s goes in a request, as list_secrets and --print-config say it. */
static inline void box_secret_binding(const struct egress_secret *s, char *buf, size_t size)
{
    if (s->basic && s->basic_user[0] != '\0')
        snprintf(buf, size, "basic user %s", s->basic_user);
    else if (s->basic)
        snprintf(buf, size, "basic");
    else
        snprintf(buf, size, "header %s: %s", s->header, s->template_);
}

#endif
