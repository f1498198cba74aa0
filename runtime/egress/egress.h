/* A sandbox's network: closed, or open to an allow-list through nsbox's
 * broker (docs/network.md).
 *
 * Contract: every sandbox's network namespace holds only `lo`, with
 * `local default` routes (v4 and v6) so that a connect to any address
 * lands in that namespace; /etc/resolv.conf names 127.0.0.1.  Closed (the
 * default), nothing listens there: every connect is refused, every DNS
 * query unanswered.  nsbox_sandbox_net_set with rules asks the sandbox's
 * init for listeners on the rules' ports (TCP, v4 and v6) and on DNS
 * (127.0.0.1:53, UDP and TCP), made inside the sandbox's namespace and
 * passed out over the control socket, and hands them to the sandbox's
 * broker: a process of nsbox's own in the host's network namespace
 * (started then, ending with the sandbox) that answers DNS with fake
 * addresses, checks name, port, TLS SNI and HTTP Host, resolves names
 * itself, vets the addresses and relays.  Setting no rules closes every
 * listener and every open connection before returning: the sandbox is
 * sealed again.  What the sandbox tried is kept by the broker (bounded)
 * and read with nsbox_sandbox_net_audit.
 *
 * Hosts with method and path rules, or with a secret bound to them
 * (secret.h), are inspected: the broker hands their connections to its
 * nsbox-tls helper, which terminates TLS with a CA of the sandbox's own
 * (its key never leaves the helper) and reads every request.  Then
 * nsbox_sandbox_net_set installs that CA's certificate inside the
 * sandbox: /etc/nsbox/ca.pem, /etc/nsbox/ca-bundle.pem (the image's
 * /etc/ssl/certs/ca-certificates.crt, if any, and the CA) and appended to
 * that bundle when it exists; sb->egress_ca says so. */
#ifndef NSBOX_RUNTIME_EGRESS_H
#define NSBOX_RUNTIME_EGRESS_H

#include <stdint.h>

#include "../../common/err.h"
#include "../sandbox.h"
#include "rules.h"
#include "secret.h"

struct json_t;

/* Puts p in force for sb (NULL or empty: seal), with the sandbox's
 * secrets (values included: they go only to the broker over its 0600
 * socket; NULL: the broker keeps those it has; n_secrets 0: none).
 * Returns once the broker has it (connections it no longer allows are
 * closed) and, when it inspects a host, the CA is installed inside.
 * Returns 0, or -1 with err (and the sandbox sealed): "nsbox-tls not
 * found next to nsbox (...)" when inspection needs the helper and it is
 * not installed. */
int nsbox_sandbox_net_set(struct nsbox_sandbox *sb, const struct egress_policy *p,
                          const struct egress_secret *secrets, size_t n_secrets,
                          struct nsbox_err *err);

/* What the sandbox tried since *cursor (0: since it started), as a JSON
 * array of {"host", "port", "verdict": "allowed"|"refused", "reason"
 * (refused only), "bytes_out", "bytes_in", "connections"}, one entry per
 * (host, port, verdict), at most 64 (then one {"host": "...", "verdict":
 * "truncated"}); a DNS question refused is {host, "port": 53, ...}.  Then
 * one entry per request of an inspected connection (the latest 256):
 * {"host", "port", "method", "path", "verdict", "reason" (refused only),
 * "secrets": [NAME, ...] (the secrets put in it; never a value)}.
 * *cursor is advanced.  A sandbox that never had rules: an empty array.
 * Returns a new reference, or NULL with err. */
struct json_t *nsbox_sandbox_net_audit(struct nsbox_sandbox *sb, uint64_t *cursor,
                                       struct nsbox_err *err);

/* For main(): when argv asks for the broker (argv[1] is
 * NSBOX_EGRESS_BROKER_ARG), runs it and never returns; otherwise returns.
 * The broker is /proc/self/exe started so, so every program linking the
 * runtime calls this first. */
void nsbox_egress_main_hook(int argc, char **argv);

#define NSBOX_EGRESS_BROKER_ARG "__nsbox-egress-broker"

#endif
