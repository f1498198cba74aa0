/* The broker's state and the functions its files share (broker.c: loop
 * and control; broker_relay.c: connections; broker_dns.c: the stub DNS and
 * the fake addresses; broker_resolve.c: getaddrinfo off the loop;
 * broker_audit.c: what the sandbox tried).  Internal to runtime/egress. */
#ifndef NSBOX_EGRESS_BROKER_INTERNAL_H
#define NSBOX_EGRESS_BROKER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "inspect.h"
#include "rules.h"

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

/* epoll tags: the kind in the top byte, an index below. */
enum broker_tag {
    TAG_CTL_LISTEN = 1,
    TAG_CTL,
    TAG_PIDFD,
    TAG_RESOLVER,
    TAG_LISTENER,
    TAG_CLIENT,   /* a connection's sandbox side */
    TAG_UPSTREAM, /* its host side */
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
    bool c_eof, u_eof;              /* either side finished sending */
    bool shut_c, shut_u;            /* shutdown(SHUT_WR) done on cfd, ufd */
    /* Nothing left to inspect (TLS past its ClientHello, an operator's
     * IP:PORT): the bytes go through pipes with splice(2), never copied
     * into the broker.  Pipe bytes pending each way. */
    bool spliced;
    int cpipe[2], upipe[2];
    size_t cpiped, upiped;
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

struct broker {
    int ep;
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
