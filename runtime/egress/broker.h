/* The broker process (internal to runtime/egress).
 *
 * Started by nsbox_sandbox_net_set as `/proc/self/exe
 * __nsbox-egress-broker STATE_DIR` (double-forked, in its own session, in
 * the host's network namespace, stdin/stdout/stderr /dev/null or a log).
 * It binds STATE_DIR/egress.sock (SOCK_SEQPACKET, 0600; only the same uid
 * is served, SO_PEERCRED), then writes one byte to fd 3 (ready) and
 * closes it.  It watches init through a pidfd of STATE_DIR's init (pid in
 * the state) and exits when init is gone, or on "quit".
 *
 * Control messages (one JSON object per datagram, up to 64 KiB, fds by
 * SCM_RIGHTS), each answered with {"ok": true, ...} or {"error": "..."}:
 *   {"op": "policy", "rules": ["TEXT", ...], "private": [false, ...],
 *     "secrets": [SECRET, ...] (optional: absent keeps the broker's),
 *     "fds": [{"kind": "tcp", "port": 443}, {"kind": "dns-udp"},
 *     {"kind": "dns-tcp"}, ...]}
 *     fds attached in that order (adds listeners; a port it already
 *     listens on: the new fd is closed).  "private"[i]: rule i's
 *     allow_private (no part of its text).  Rules replace the old ones;
 *     listeners on ports no rule has any more are closed, and connections
 *     no rule allows any more.  An empty list closes every listener and
 *     connection (sealed).  -> {"ok": true, "ports": [...], "dns": bool}
 *     and, when a rule has methods and paths or there are secrets (the
 *     nsbox-tls helper runs: broker_tls.c), "ca": PATH, "ca_pem": TEXT
 *     (the certificate of the sandbox's CA, to install inside).  A helper
 *     that cannot start fails the op: "nsbox-tls not found next to nsbox
 *     (...)".
 *   {"op": "state"} -> {"ok": true, "ports": [...], "dns": bool, "rules": N}
 *     (the TCP ports it listens on, whether it has both DNS sockets)
 *   {"op": "audit", "since": N}  -> {"ok": true, "next": M, "records": [...]}
 *     (the records changed since cursor N, with their running totals,
 *     then the inspected requests recorded since: egress.h)
 *   {"op": "quit"}
 */
#ifndef NSBOX_EGRESS_BROKER_H
#define NSBOX_EGRESS_BROKER_H

#include "secret.h"

struct json_t;

/* A secret on the wire (the policy op's "secrets", nsbox-tls's config):
 * {"name", "env", "placeholder", "value", "hosts": ["HOST:PORT", ...],
 * "header", "template"} or {..., "basic": true, "basic_user"}.  A new
 * reference (it holds the value: never logged), or NULL. */
struct json_t *egress_secret_json(const struct egress_secret *s);
/* Back: 0, or -1 when o is not that (s then holds nothing useful). */
int egress_secret_from_json(struct json_t *o, struct egress_secret *s);

/* Runs the broker for the sandbox whose state directory is state_dir.
 * Never returns. */
_Noreturn void egress_broker_main(const char *state_dir);

#endif
