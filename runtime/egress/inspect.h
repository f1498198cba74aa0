/* What the broker reads from a sandbox's traffic before relaying it: DNS
 * questions, a TLS ClientHello's server name, HTTP request heads.
 *
 * Contract: pure functions over hostile bytes (fuzzed: tests/fuzz/
 * fuzz_egress_*.c), no I/O, no allocation, every length checked; on
 * anything they do not fully understand they say BAD, and the broker
 * refuses (fail closed).  Names come out lower-case without a trailing
 * dot, or the input is BAD. */
#ifndef NSBOX_EGRESS_INSPECT_H
#define NSBOX_EGRESS_INSPECT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rules.h"

/* ---- DNS (RFC 1035): nsbox answers every question itself ---- */

/* Decides a name: 1 and *fake filled (an address of 198.18.0.0/15 that the
 * broker maps back to name) when the policy allows it, 0 when not. */
typedef int (*egress_dns_lookup_fn)(void *ctx, const char *name, struct in_addr *fake);

enum egress_dns_verdict {
    EGRESS_DNS_ANSWERED, /* A record with the fake address, TTL 1 */
    EGRESS_DNS_NODATA,   /* allowed name, another type (AAAA, HTTPS...) */
    EGRESS_DNS_REFUSED,  /* name not allowed: NXDOMAIN */
    EGRESS_DNS_BAD,      /* not one well-formed question: FORMERR or dropped */
};

/* Answers the query q (a UDP payload, or a TCP message without its length
 * prefix) into out.  Returns the reply's length (0: no reply, drop) and
 * sets *verdict and name (the question's name, "" when BAD). */
size_t egress_dns_answer(const uint8_t *q, size_t qlen, uint8_t *out, size_t out_size,
                         egress_dns_lookup_fn lookup, void *ctx, char name[EGRESS_NAME_MAX + 1],
                         enum egress_dns_verdict *verdict);

/* ---- TLS: the server name of a ClientHello, across records ---- */

#define EGRESS_HELLO_MAX 16384 /* bytes read before giving up */

enum egress_sni {
    EGRESS_SNI_MORE,  /* a prefix of a ClientHello: read more */
    EGRESS_SNI_FOUND, /* name holds the one host_name */
    EGRESS_SNI_NONE,  /* a ClientHello without server_name */
    EGRESS_SNI_BAD,   /* not TLS, malformed, several names, or ECH */
};

enum egress_sni egress_sni_parse(const uint8_t *buf, size_t len, char name[EGRESS_NAME_MAX + 1]);

/* ---- HTTP/1.x request heads (every request of a connection) ---- */

#define EGRESS_HEAD_MAX 16384

struct egress_http_req {
    char method[16];
    char host[EGRESS_NAME_MAX + 1]; /* Host (or absolute-form URI) name */
    uint16_t port;                  /* its explicit port, 0 when none */
    size_t head_len;                /* bytes of the head, CRLFCRLF included */
};

enum egress_http {
    EGRESS_HTTP_MORE, /* no complete head yet (and under EGRESS_HEAD_MAX) */
    EGRESS_HTTP_OK,   /* a GET or HEAD without a body, one Host */
    EGRESS_HTTP_BAD,  /* anything else; *why says what */
};

/* Parses the request head at buf.  OK only for GET/HEAD/OPTIONS with
 * exactly one Host (agreeing with an absolute-form URI), no body
 * (Content-Length other than 0, Transfer-Encoding), no CONNECT, no
 * Upgrade, no HTTP/2 preface, HTTP/1.0 or 1.1. */
enum egress_http egress_http_parse(const uint8_t *buf, size_t len, struct egress_http_req *req,
                                   const char **why);

/* Whether a Connection header's value (a comma-separated list) names
 * "upgrade" (http.c; l7_head.c refuses those requests too). */
bool egress_http_names_upgrade(const char *v, size_t n);

/* ---- addresses ---- */

/* Whether sa is a public unicast address the broker may connect to for a
 * name rule: false (and *why) for 0/8, 10/8, 100.64/10, 127/8, 169.254/16,
 * 172.16/12, 192.0.0/24, 192.168/16, 198.18/15, 224/3 and the like, and
 * for ::, ::1, v4-mapped (the v4 checked), 64:ff9b::/96, fc00::/7,
 * fe80::/10, ff00::/8. */
bool egress_addr_public(const struct sockaddr *sa, const char **why);

/* Whether sa (v4 or v4-mapped v6) lies in 198.18.0.0/15, the fake range;
 * *index gets its offset in it. */
bool egress_addr_fake(const struct sockaddr *sa, uint32_t *index);

#endif
