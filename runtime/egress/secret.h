/* Secrets a sandbox may use without seeing them (docs/secrets.md).
 *
 * The operator names a secret, its value (a file read once at serve
 * start), the hosts it may go to and the one place in a request it goes
 * (a header from a template, or HTTP basic auth's password).  A sandbox
 * granted it sees only a placeholder, in an environment variable; the
 * broker's TLS helper (runtime/egress/tls/) puts the value in place of
 * the placeholder only there (runtime/egress/l7.h).
 *
 * Contract: the value never appears in a log line, an error message, a
 * state file or a result; errors name the secret and its FILE only. */
#ifndef NSBOX_EGRESS_SECRET_H
#define NSBOX_EGRESS_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"
#include "rules.h"

#define EGRESS_SECRET_NAME_MAX 32
#define EGRESS_SECRET_VALUE_MAX 4096
#define EGRESS_SECRET_MAX 16 /* per sandbox */
#define EGRESS_SECRET_HOSTS_MAX 8

struct egress_secret_host {
    char host[EGRESS_NAME_MAX + 1];
    uint16_t ports[EGRESS_MAX_PORTS];
    size_t n_ports;
};

struct egress_secret {
    char name[EGRESS_SECRET_NAME_MAX + 1];
    char env[64];         /* the variable the sandbox sees */
    char placeholder[80]; /* "nsbox-secret-NAME-" + 24 base62 characters, per sandbox */
    char value[EGRESS_SECRET_VALUE_MAX + 1];
    struct egress_secret_host hosts[EGRESS_SECRET_HOSTS_MAX];
    size_t n_hosts;
    bool basic;           /* HTTP basic auth: the secret is the password */
    char basic_user[128]; /* basic: only this user ("": any) */
    char header[64];      /* a header binding: the header's name ("Authorization") */
    char template_[256];  /* with one "{}" ("Bearer {}") */
};

/* Parses the operator's SPEC
 *   NAME=@FILE;hosts=H[:PORTS][,H[:PORTS]...][;header=HEADER: TEMPLATE][;basic[=USER]][;env=VAR]
 * into *out (FILE read now; the placeholder left empty).  Returns 0, or -1
 * with err (never quoting the value). */
int egress_secret_parse(const char *spec, struct egress_secret *out, struct nsbox_err *err);

/* Fills s->placeholder with "nsbox-secret-NAME-" and fresh randomness. */
void egress_secret_placeholder(struct egress_secret *s);

/* Whether s is bound to host (lower-case) on port. */
bool egress_secret_bound(const struct egress_secret *s, const char *host, uint16_t port);

#endif
