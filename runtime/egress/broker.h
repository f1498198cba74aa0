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
 *     "fds": [{"kind": "tcp", "port": 443}, {"kind": "dns-udp"},
 *     {"kind": "dns-tcp"}, ...]}
 *     fds attached in that order (adds listeners; a port it already
 *     listens on: the new fd is closed).  "private"[i]: rule i's
 *     allow_private (no part of its text).  Rules replace the old ones;
 *     listeners on ports no rule has any more are closed, and connections
 *     no rule allows any more.  An empty list closes every listener and
 *     connection (sealed).  -> {"ok": true, "ports": [...], "dns": bool}
 *   {"op": "state"} -> {"ok": true, "ports": [...], "dns": bool, "rules": N}
 *     (the TCP ports it listens on, whether it has both DNS sockets)
 *   {"op": "audit", "since": N}  -> {"ok": true, "next": M, "records": [...]}
 *     (the records changed since cursor N, with their running totals)
 *   {"op": "quit"}
 */
#ifndef NSBOX_EGRESS_BROKER_H
#define NSBOX_EGRESS_BROKER_H

/* Runs the broker for the sandbox whose state directory is state_dir.
 * Never returns. */
_Noreturn void egress_broker_main(const char *state_dir);

#endif
