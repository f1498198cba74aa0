/* The broker's state and the functions its files share (broker.c: loop
 * and control; broker_relay.c: connections; broker_dns.c: the stub DNS and
 * the fake addresses; broker_resolve.c: getaddrinfo off the loop;
 * broker_audit.c: what the sandbox tried; broker_tls.c: the nsbox-tls
 * helper that inspected connections are handed to).  Internal to
 * runtime/egress. */
#ifndef NSBOX_EGRESS_BROKER_INTERNAL_H
#define NSBOX_EGRESS_BROKER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "inspect.h"
#include "rules.h"
#include "secret.h"

struct json_t;

#define BROKER_MAX_CONNS 256
#define BROKER_MAX_LISTENERS 66 /* NSBOX_LISTEN_MAX_PORTS + the two DNS sockets */
#define BROKER_MAX_CTL 8
#define BROKER_BUF 65536
#define BROKER_MAX_ADDRS 8
#define BROKER_HELLO_S 10   /* a ClientHello or a first request head: deadline */
#define BROKER_CONNECT_S 10 /* resolution and connect upstream */
#define BROKER_IDLE_S 300   /* a relay with no byte either way */
#define BROKER_AUDIT_MAX 64
#define BROKER_FAKE_MAX 131070 /* 198.18.0.1 .. 198.19.255.254 */
#define BROKER_REQ_MAX 256     /* request records of inspected connections: a ring */
#define BROKER_HANDED_MAX 1024 /* handed-off connections remembered (bytes at "closed") */
/* Bytes read before a connection is decided (its ClientHello or first
 * request head): also what a handoff's prefix carries at most. */
#define BROKER_SNIFF_MAX (EGRESS_HELLO_MAX > EGRESS_HEAD_MAX ? EGRESS_HELLO_MAX : EGRESS_HEAD_MAX)

/* epoll tags: the kind in the top byte, an index below. */
enum broker_tag {
    TAG_CTL_LISTEN = 1,
    TAG_CTL,
    TAG_PIDFD,
    TAG_RESOLVER,
    TAG_LISTENER,
    TAG_CLIENT,   /* a connection's sandbox side */
    TAG_UPSTREAM, /* its host side */
    TAG_TLS,      /* the nsbox-tls helper's socket */
};
#define BROKER_TAG(kind, idx) (((uint64_t)(kind) << 56) | (uint64_t)(idx))

enum listener_kind { L_TCP, L_DNS_UDP, L_DNS_TCP };

struct listener {
    int fd;
    enum listener_kind kind;
    uint16_t port;
};

enum conn_state {
    C_FREE,
    C_SNIFF,      /* a name's connection: waiting for the first bytes */
    C_TLS,        /* reassembling the ClientHello */
    C_RESOLVING,  /* getaddrinfo in the resolver thread */
    C_CONNECTING, /* nonblocking connect upstream */
    C_RELAY,
    C_DNS, /* DNS over TCP */
};

struct conn {
    enum conn_state state;
    uint32_t gen; /* bumped on each use of the slot (resolver answers) */
    int cfd, ufd;
    char host[EGRESS_NAME_MAX + 1]; /* the name, or the literal address */
    uint16_t port;                  /* the destination port in the sandbox */
    struct egress_rule rule;        /* the rule that allowed it */
    struct sockaddr_storage dst;    /* where the sandbox connected (v4-mapped made v4) */
    bool http;                      /* every request head inspected */
    bool inspect;                   /* handed to nsbox-tls once connected upstream */
    bool c_eof, u_eof;              /* either side finished sending */
    bool shut_c, shut_u;            /* shutdown(SHUT_WR) done on cfd, ufd */
    /* A direction with nothing left to inspect goes through a pipe with
     * splice(2), never copied into the broker: host -> sandbox always once
     * relaying; sandbox -> host past a TLS ClientHello or for an
     * operator's IP:PORT (HTTP heads are read, each one).  Pipe bytes
     * pending each way. */
    bool c_spliced, u_spliced;
    int cpipe[2], upipe[2];
    size_t cpiped, upiped;
    size_t cpcap, upcap;     /* the pipes' capacities */
    uint32_t cev, uev;       /* the epoll events asked for cfd, ufd (no call when unchanged) */
    uint8_t *cbuf, *ubuf;    /* sandbox -> host, host -> sandbox */
    size_t clen, cfwd, ulen; /* cfwd: bytes of cbuf cleared to go */
    struct sockaddr_storage addrs[BROKER_MAX_ADDRS];
    socklen_t alens[BROKER_MAX_ADDRS];
    size_t n_addrs, next_addr;
    time_t deadline; /* for the current state; 0: none */
    time_t last;     /* the last byte either way */
    int audit;       /* its audit record, or -1 */
};

struct audit_rec {
    char host[EGRESS_NAME_MAX + 1];
    uint16_t port;
    bool allowed;
    char reason[160];
    uint64_t bytes_out, bytes_in, connections;
    uint64_t seq; /* the broker's audit sequence at its last change */
};

/* One request of an inspected connection, as nsbox-tls decided it. */
struct req_rec {
    char host[EGRESS_NAME_MAX + 1];
    uint16_t port;
    char method[16];
    char path[1024];
    bool allowed;
    char reason[256];
    char secrets[EGRESS_SECRET_MAX][EGRESS_SECRET_NAME_MAX + 1];
    size_t n_secrets;
    uint64_t seq;
};

/* The TLS helper (broker_tls.c). */
struct broker_tls {
    int exe;           /* O_PATH of the nsbox-tls binary, or -1 (not found: missing says where) */
    int dir;           /* O_PATH of STATE/egress-tls, its working directory, or -1 */
    int fd;            /* the SOCK_SEQPACKET to the running helper, or -1 */
    pid_t pid;         /* the running helper, or 0 */
    char missing[768]; /* why exe is -1 */
    char down[256];    /* why the last helper ended ("": none ended) */
    uint64_t next_id;
    struct {
        uint64_t id;
        int audit;
    } handed[BROKER_HANDED_MAX]; /* by id % BROKER_HANDED_MAX */
};

struct broker {
    int ep;
    uid_t owner; /* the uid served on the control socket (the broker's before any drop) */
    struct egress_policy policy;
    struct listener listeners[BROKER_MAX_LISTENERS];
    size_t n_listeners;
    struct conn conns[BROKER_MAX_CONNS];
    size_t n_conns;
    char **fake; /* fake[i]: the name of 198.18.0.0 + i + 1 */
    size_t n_fake;
    struct audit_rec audit[BROKER_AUDIT_MAX];
    size_t n_audit;
    char truncated[EGRESS_NAME_MAX + 1]; /* the first host left out, or "" */
    uint64_t audit_seq;
    int ctl_listen;
    int ctl[BROKER_MAX_CTL];
    int pidfd;
    int resolver[2]; /* answers from resolver threads: pipe */
    bool quit;
    /* Secrets the sandbox may use (values: only here and in nsbox-tls). */
    struct egress_secret secrets[EGRESS_SECRET_MAX];
    size_t n_secrets;
    struct broker_tls tls;
    struct req_rec reqs[BROKER_REQ_MAX]; /* a ring: the latest BROKER_REQ_MAX */
    uint64_t n_reqs;                     /* ever recorded; reqs[n_reqs % MAX] is next */
    char state_dir[4096];
};

/* ---- broker.c ---- */
void broker_watch(struct broker *b, int fd, uint32_t events, uint64_t tag);
void broker_unwatch(struct broker *b, int fd);

/* ---- broker_dns.c ---- */
/* Answers the datagrams waiting on a DNS UDP listener. */
void broker_dns_udp(struct broker *b, int fd);
/* Reads and answers DNS over TCP on c (state C_DNS). */
void broker_dns_tcp(struct broker *b, struct conn *c);
/* The name of a fake address, or NULL. */
const char *broker_fake_name(const struct broker *b, const struct sockaddr *sa);

/* ---- broker_relay.c ---- */
/* Accepts every pending connection of listener l. */
void broker_accept(struct broker *b, struct listener *l);
/* Progress on conn idx: the sandbox's side (upstream false) or the host's. */
void broker_conn_event(struct broker *b, size_t idx, bool upstream, uint32_t events);
/* Closes conn c (rst: with a reset, SO_LINGER 0). */
void broker_conn_close(struct broker *b, struct conn *c, bool rst);
/* Deadlines and idle timeouts, about once a second. */
void broker_conn_tick(struct broker *b, time_t now);
/* After a policy change: closes connections it no longer allows. */
void broker_conn_recheck(struct broker *b);
/* The resolver's answer for conn idx of generation gen. */
void broker_conn_resolved(struct broker *b, size_t idx, uint32_t gen,
                          const struct sockaddr_storage *addrs, const socklen_t *lens, size_t n,
                          int gai_error);

/* ---- broker_resolve.c ---- */
/* Starts resolving name:port for conn idx in a thread; the answer comes
 * back on b->resolver.  Returns 0 or -1 (errno). */
int broker_resolve_start(struct broker *b, size_t idx, uint32_t gen, const char *name,
                         uint16_t port);
/* Reads the resolver's answers and hands them to broker_conn_resolved. */
void broker_resolve_drain(struct broker *b);

/* ---- broker_tls.c ---- */
/* Before privileges are dropped: finds the nsbox-tls binary beside
 * realpath(/proc/self/exe) (else ../libexec/nsbox/), makes STATE/egress-tls
 * (the helper's working directory, owned by the uid the broker goes on
 * as).  Never fails: a missing helper is said when a policy needs it. */
void broker_tls_init(struct broker *b, const char *state_dir);
/* The policy op's part, once b->policy is the new one: the secrets of req
 * (absent: kept; []: none) and the helper.  When b->policy inspects any
 * host or there are secrets, the helper runs (started if not) with the
 * new config, and answer gets "ca" (its path) and "ca_pem" (the
 * certificate); a helper running already gets the config either way; a
 * seal (no rules) stops it.  Returns 0, or -1 with why. */
int broker_tls_policy(struct broker *b, struct json_t *req, struct json_t *answer, char *why,
                      size_t why_size);
/* Whether host:port's connections are handed to the helper (a method and
 * path rule, or a secret bound there). */
bool broker_tls_wants(const struct broker *b, const char *host, uint16_t port);
/* Hands connected c (both fds, its bytes so far) to the helper and frees
 * the slot.  Returns 0, or -1 with why (c untouched: refuse it). */
int broker_tls_handoff(struct broker *b, struct conn *c, char *why, size_t why_size);
/* The helper's socket is readable: its records, or its end. */
void broker_tls_event(struct broker *b, uint32_t events);
/* Ends the helper (and every connection it holds). */
void broker_tls_stop(struct broker *b, const char *why);
/* Request records with seq > since appended to a. */
void broker_tls_audit_json(const struct broker *b, uint64_t since, struct json_t *a);

/* ---- broker_audit.c ---- */
/* The record of (host, port, allowed), made when new.  Returns its index,
 * or -1 past BROKER_AUDIT_MAX (then noted as truncated). */
int broker_audit(struct broker *b, const char *host, uint16_t port, bool allowed,
                 const char *reason);
/* Adds bytes (and a connection) to record i (-1: nothing). */
void broker_audit_add(struct broker *b, int i, uint64_t out, uint64_t in, uint64_t conns);
/* Records changed since cursor, as a JSON array; *next gets the cursor to
 * give next time.  A new reference, or NULL. */
struct json_t *broker_audit_json(const struct broker *b, uint64_t since, uint64_t *next);

#endif
