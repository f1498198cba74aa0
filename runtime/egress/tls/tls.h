/* nsbox-tls's internals (docs/secrets.md, "TLS termination"): the helper
 * process the egress broker starts for a sandbox whose policy inspects
 * requests (method and path rules) or carries secrets.
 *
 *   main.c    the process: hardening, fd 3 (the broker's SOCK_SEQPACKET
 *             socket), config and conn messages, request and closed records
 *   ca.c      the sandbox's CA (key in memory only) and the leaf per host
 *   conn.c    one handed-over connection: a thread, TLS to the sandbox
 *             (with the CA's leaf) and to the real host (verified), the
 *             request stream (runtime/egress/l7.h) between them
 *   resp.c    where each response ends (the scrub's holdback is flushed
 *             there, or kept-alive responses would wait for their end)
 *   sess.c    the hosts' TLS sessions, kept for resumption
 *   bio.c     the socket BIO that first gives back the bytes the broker
 *             already read (the ClientHello)
 *
 * Contract: the CA key and the secrets' values live only in this
 * process's memory (not dumpable, no core, never written, never logged);
 * every connection is bounded in time and in number; bad input from the
 * broker, the sandbox or the host ends at most that connection. */
#ifndef NSBOX_EGRESS_TLS_H
#define NSBOX_EGRESS_TLS_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../l7.h"
#include "../rules.h"
#include "../secret.h"

#define TLS_MAX_CONNS 128    /* connections at once; past it the new one is closed */
#define TLS_MSG_MAX 65536    /* a message on fd 3 */
#define TLS_HANDSHAKE_S 10   /* each TLS handshake, and a refused connection's last words */
#define TLS_IDLE_S 300       /* a connection with no byte either way */
#define TLS_LEAF_CACHE 256   /* leaves kept (one per host) */
#define TLS_PREFIX_MAX 16384 /* bytes the broker read before handing over (EGRESS_HELLO_MAX) */

/* ---- main.c ---- */

/* The policy and secrets in force: immutable once published, shared by
 * reference (a connection keeps the one it started with). */
struct tls_config {
    int refs; /* atomic */
    struct egress_policy policy;
    struct egress_secret secrets[EGRESS_SECRET_MAX];
    size_t n_secrets;
};

/* A reference to the config in force (never NULL once a config came). */
struct tls_config *tls_config_get(void);
void tls_config_put(struct tls_config *c);

/* One request decided (method and path "" when none was read). */
void tls_record_request(uint64_t id, const char *host, uint16_t port, const char *method,
                        const char *path, bool allowed, const char *reason,
                        const char (*secrets)[EGRESS_SECRET_NAME_MAX + 1], size_t n_secrets);
/* A connection ended, with its plaintext bytes each way. */
void tls_record_closed(uint64_t id, uint64_t bytes_out, uint64_t bytes_in);

/* ---- ca.c ---- */

/* Makes the CA (once) and writes its certificate, 0644 and atomically, to
 * STATE_DIR/egress-ca.pem; path gets that path.  0, or -1 and why. */
int tls_ca_init(const char *state_dir, char *path, size_t path_size, char *why, size_t why_size);
/* The leaf for host (made and cached on first use): new references to its
 * certificate and key.  0, or -1 and why. */
int tls_leaf_get(const char *host, X509 **cert, EVP_PKEY **key, char *why, size_t why_size);

/* ---- conn.c ---- */

/* The two contexts (server: the sandbox's side; client: the host's).
 * 0, or -1 and why. */
int tls_ctx_init(char *why, size_t why_size);

struct tls_conn_req {
    uint64_t id;
    char host[EGRESS_NAME_MAX + 1];
    uint16_t port;
    bool tls;
    int cfd, ufd;    /* the sandbox's socket, the host's (connected) */
    uint8_t *prefix; /* malloc'ed: what the broker already read from cfd */
    size_t prefix_len;
};

/* Takes over r (its fds and prefix, even on failure) and serves it in a
 * thread of its own.  Past TLS_MAX_CONNS the connection is closed with a
 * refused record saying why. */
void tls_conn_start(struct tls_conn_req *r);

/* ---- resp.c ---- */

#define TLS_RESP_HEAD_MAX 32768

struct tls_resp {
    int st;
    char head[TLS_RESP_HEAD_MAX + 1];
    size_t head_len;
    uint64_t remaining; /* body or chunk bytes left */
    char line[1024];    /* a chunk-size or trailer line */
    size_t line_len;
    bool q_head[32]; /* the requests sent and not answered yet: HEAD or not */
    size_t q_first, q_len;
    bool ended;
};

void tls_resp_init(struct tls_resp *r);
/* A request went to the host (its response has no body when HEAD). */
void tls_resp_request(struct tls_resp *r, const char *method);
/* How many bytes of in[0..len) belong to the response being read; *end:
 * it ends there (the next bytes start another). */
size_t tls_resp_scan(struct tls_resp *r, const uint8_t *in, size_t len, bool *end);

/* ---- sess.c ---- */

/* Keeps s (takes the caller's reference) for host:port. */
void tls_sess_store(const char *host, uint16_t port, SSL_SESSION *s);
/* A new reference to host:port's resumable session, or NULL. */
SSL_SESSION *tls_sess_get(const char *host, uint16_t port);

/* ---- bio.c ---- */

/* A BIO over fd (nonblocking: retry flags on EAGAIN; send with
 * MSG_NOSIGNAL) that first reads the len bytes of prefix (copied).  NULL
 * on ENOMEM.  fd stays the caller's. */
BIO *tls_bio_new(int fd, const uint8_t *prefix, size_t len);

/* "what OpenSSL said" for the errors queued on this thread (cleared). */
void tls_ssl_errors(char *buf, size_t size);

#endif
