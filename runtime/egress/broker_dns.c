/* The sandbox's DNS: answered here, never forwarded (a query is a way
 * out), over UDP and TCP on 127.0.0.1:53 inside the sandbox.  An allowed
 * name gets a fake address of 198.18.0.0/15 of its own (inspect.h:
 * egress_dns_answer), which the broker maps back to the name when the
 * sandbox connects to it; an address is never given to another name, so a
 * connection means what its lookup meant. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker_internal.h"

#define DNS_MAX 4096

/* The fake address of name, assigned on first use. */
static int fake_for(struct broker *b, const char *name, struct in_addr *fake)
{
    size_t i = 0;
    while (i < b->n_fake && strcmp(b->fake[i], name) != 0)
        i++;
    if (i == b->n_fake) {
        if (b->n_fake == BROKER_FAKE_MAX)
            return 0; /* the range is spent: refused rather than reused */
        char **v = realloc(b->fake, (b->n_fake + 1) * sizeof(*v));
        char *copy = strdup(name);
        if (v == NULL || copy == NULL) {
            free(copy);
            if (v != NULL)
                b->fake = v;
            return 0;
        }
        b->fake = v;
        b->fake[b->n_fake++] = copy;
    }
    fake->s_addr = htonl((198u << 24 | 18u << 16) + (uint32_t)i + 1);
    return 1;
}

static int lookup(void *ctx, const char *name, struct in_addr *fake)
{
    struct broker *b = ctx;
    if (egress_policy_match_name(&b->policy, name, 0) == NULL)
        return 0;
    return fake_for(b, name, fake);
}

const char *broker_fake_name(const struct broker *b, const struct sockaddr *sa)
{
    uint32_t idx;
    if (!egress_addr_fake(sa, &idx) || idx == 0 || idx > b->n_fake)
        return NULL;
    return b->fake[idx - 1];
}

/* Answers q into out; a refused name is audited.  Returns the reply's
 * length (0: none). */
static size_t answer(struct broker *b, const uint8_t *q, size_t len, uint8_t *out, size_t size)
{
    char name[EGRESS_NAME_MAX + 1] = "";
    enum egress_dns_verdict v = EGRESS_DNS_BAD;
    size_t n = egress_dns_answer(q, len, out, size, lookup, b, name, &v);
    if (v == EGRESS_DNS_REFUSED)
        broker_audit_add(b, broker_audit(b, name, 53, false, "the name is not in the allow-list"),
                         0, 0, 1);
    return n;
}

void broker_dns_udp(struct broker *b, int fd)
{
    uint8_t q[DNS_MAX], out[DNS_MAX];
    struct sockaddr_storage from;

    for (int i = 0; i < 64; i++) {
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(fd, q, sizeof(q), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0)
            return;
        size_t r = answer(b, q, (size_t)n, out, sizeof(out));
        if (r > 0)
            sendto(fd, out, r, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
    }
}

/* DNS over TCP: two length bytes, then the message (RFC 1035 4.2.2).
 * Replies are small and the sandbox reads them: one send each; a client
 * that does not read is dropped. */
void broker_dns_tcp(struct broker *b, struct conn *c)
{
    uint8_t out[DNS_MAX + 2];
    ssize_t n = recv(c->cfd, c->cbuf + c->clen, DNS_MAX + 2 - c->clen, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        broker_conn_close(b, c, false);
        return;
    }
    if (n > 0)
        c->clen += (size_t)n;
    while (c->clen >= 2) {
        size_t len = (size_t)c->cbuf[0] << 8 | c->cbuf[1];
        if (len > DNS_MAX) {
            broker_conn_close(b, c, true);
            return;
        }
        if (c->clen < len + 2)
            return;
        size_t r = answer(b, c->cbuf + 2, len, out + 2, DNS_MAX);
        memmove(c->cbuf, c->cbuf + len + 2, c->clen - len - 2);
        c->clen -= len + 2;
        out[0] = (uint8_t)(r >> 8), out[1] = (uint8_t)r;
        if (r > 0 && send(c->cfd, out, r + 2, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)(r + 2)) {
            broker_conn_close(b, c, false);
            return;
        }
    }
}
