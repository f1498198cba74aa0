/* The sandbox's DNS server (inspect.h): one question in, one answer out,
 * nothing ever forwarded, so DNS cannot carry data out of the sandbox
 * and the sandbox never learns a real address.
 *
 * Strict on purpose: exactly one question, no answer or authority
 * records, at most one additional record (an EDNS OPT, which is ignored:
 * the reply has no OPT and so is plain DNS, under 512 bytes), no
 * compression pointer in the question (the first name of a message has
 * nothing to point at), labels of [a-z0-9-_] only.  Anything else gets
 * FORMERR (or NOTIMP for another opcode) and the name "".
 *
 * The lookup is asked once for every well-formed class-IN question,
 * whatever its type (an allowed name's AAAA gets NODATA, not NXDOMAIN,
 * which resolvers would cache for the A too), so it should give a name
 * the same fake address each time rather than use up a new one. */
#include "inspect.h"

#include <string.h>

#include "name.h"

#define DNS_HEADER 12
#define DNS_WIRE_NAME_MAX 255

enum {
    TYPE_A = 1,
    CLASS_IN = 1,
    RCODE_NOERROR = 0,
    RCODE_FORMERR = 1,
    RCODE_NXDOMAIN = 3,
    RCODE_NOTIMP = 4,
};

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static bool label_byte(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* The question's name at q[*off] as dotted text; *off moves past it.
 * Returns 0, or -1 for a pointer, an extended label type, a byte outside
 * the label alphabet, a name over 255 wire bytes or past the end. */
static int read_qname(const uint8_t *q, size_t qlen, size_t *off, char *text, size_t text_size)
{
    size_t pos = *off, out = 0;
    for (;;) {
        if (pos >= qlen || pos - *off >= DNS_WIRE_NAME_MAX)
            return -1;
        uint8_t n = q[pos++];
        if (n == 0)
            break;
        if (n & 0xc0) /* 11: compression pointer; 01, 10: extended labels */
            return -1;
        if (pos + n > qlen || out + n + 2 > text_size)
            return -1;
        if (out)
            text[out++] = '.';
        for (uint8_t i = 0; i < n; i++) {
            if (!label_byte(q[pos + i]))
                return -1;
            text[out++] = (char)q[pos + i];
        }
        pos += n;
    }
    if (pos - *off > DNS_WIRE_NAME_MAX)
        return -1;
    text[out] = '\0';
    *off = pos;
    return 0;
}

/* A reply of just the header: the query's ID and RD, no records. */
static size_t header_only(const uint8_t *q, uint8_t *out, size_t out_size, uint8_t rcode)
{
    if (out_size < DNS_HEADER)
        return 0;
    memset(out, 0, DNS_HEADER);
    memcpy(out, q, 2);
    out[2] = (uint8_t)(0x80 | (q[2] & 0x01)); /* QR, RD copied */
    out[3] = (uint8_t)(0x80 | rcode);         /* RA */
    return DNS_HEADER;
}

/* Checks the header and reads the one question.  Returns 0 with the
 * question's end in *qend, else the rcode to refuse with. */
static int read_question(const uint8_t *q, size_t qlen, char *text, size_t text_size, size_t *qend)
{
    if (((q[2] >> 3) & 0x0f) != 0)
        return RCODE_NOTIMP;
    if (be16(q + 4) != 1 || be16(q + 6) != 0 || be16(q + 8) != 0 || be16(q + 10) > 1)
        return RCODE_FORMERR;
    size_t off = DNS_HEADER;
    if (read_qname(q, qlen, &off, text, text_size) < 0 || off + 4 > qlen)
        return RCODE_FORMERR;
    off += 4;
    /* Bytes after the question only as the additional record. */
    if (be16(q + 10) == 0 && off != qlen)
        return RCODE_FORMERR;
    *qend = off;
    return 0;
}

/* The reply: header, the question as asked (case kept: resolvers that
 * randomize it check the echo), and for A an answer pointing back at the
 * question's name (offset 12), TTL 1 so nothing caches a fake address. */
static size_t build_reply(const uint8_t *q, size_t qend, uint8_t *out, size_t out_size,
                          uint8_t rcode, const struct in_addr *a)
{
    size_t need = qend + (a ? 16 : 0);
    if (header_only(q, out, out_size, rcode) == 0 || need > out_size)
        return 0;
    out[2] |= 0x04; /* AA: nsbox is the authority for what the sandbox sees */
    put16(out + 4, 1);
    put16(out + 6, a ? 1 : 0);
    memcpy(out + DNS_HEADER, q + DNS_HEADER, qend - DNS_HEADER);
    if (!a)
        return qend;
    uint8_t *rr = out + qend;
    put16(rr, 0xc000 | DNS_HEADER);
    put16(rr + 2, TYPE_A);
    put16(rr + 4, CLASS_IN);
    put16(rr + 6, 0);
    put16(rr + 8, 1); /* TTL */
    put16(rr + 10, 4);
    memcpy(rr + 12, &a->s_addr, 4);
    return need;
}

size_t egress_dns_answer(const uint8_t *q, size_t qlen, uint8_t *out, size_t out_size,
                         egress_dns_lookup_fn lookup, void *ctx, char name[EGRESS_NAME_MAX + 1],
                         enum egress_dns_verdict *verdict)
{
    char text[DNS_WIRE_NAME_MAX + 1];
    size_t qend = 0;
    name[0] = '\0';
    *verdict = EGRESS_DNS_BAD;
    /* Too short to answer, or a response: answering those could loop. */
    if (qlen < DNS_HEADER || (q[2] & 0x80))
        return 0;
    int rcode = read_question(q, qlen, text, sizeof(text), &qend);
    if (rcode != 0)
        return header_only(q, out, out_size, (uint8_t)rcode);
    if (egress_name_normalize(text, strlen(text), name, NULL) < 0)
        return header_only(q, out, out_size, RCODE_FORMERR);
    uint16_t qtype = be16(q + qend - 4), qclass = be16(q + qend - 2);
    struct in_addr fake = {0};
    if (qclass != CLASS_IN || lookup(ctx, name, &fake) != 1) {
        *verdict = EGRESS_DNS_REFUSED;
        return build_reply(q, qend, out, out_size, RCODE_NXDOMAIN, NULL);
    }
    *verdict = qtype == TYPE_A ? EGRESS_DNS_ANSWERED : EGRESS_DNS_NODATA;
    return build_reply(q, qend, out, out_size, RCODE_NOERROR, qtype == TYPE_A ? &fake : NULL);
}
