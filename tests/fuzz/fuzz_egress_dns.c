/* libFuzzer target: the sandbox's DNS server (runtime/egress/dns.c), fed
 * one query as a UDP payload.  Beyond memory safety it checks: a reply
 * never exceeds its buffer and always carries the query's ID with QR set;
 * BAD means an empty name and no question echoed; any other verdict names
 * a normalized host name that the lookup was asked about; only an allowed
 * name gets an answer, and an answer is exactly one A record pointing at
 * the question with TTL 1 and the lookup's fake address; a reply never
 * says more than what the lookup allowed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/egress/inspect.h"
#include "../../runtime/egress/name.h"

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "fuzz-egress: dns: %s\n", what);                                           \
        abort();                                                                                   \
    } while (0)

struct ctx {
    int calls;
    char asked[EGRESS_NAME_MAX + 1];
};

/* Allows names containing an 'a' (so the fuzzer easily finds both). */
static int lookup(void *p, const char *name, struct in_addr *fake)
{
    struct ctx *c = p;
    c->calls++;
    snprintf(c->asked, sizeof(c->asked), "%s", name);
    if (!strchr(name, 'a'))
        return 0;
    fake->s_addr = htonl(0xc6120000u | (uint32_t)(strlen(name) & 0xffff));
    return 1;
}

static void check_answer(const uint8_t *r, size_t n, const char *name)
{
    if (n < 12 + 16 || r[5] != 1 || r[7] != 1 || (r[3] & 0x0f) != 0)
        FAIL("ANSWERED without one A record");
    const uint8_t *rr = r + n - 16;
    static const uint8_t head[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4};
    if (memcmp(rr, head, sizeof(head)) != 0)
        FAIL("answer is not A IN TTL 1 at the question's name");
    uint32_t want = htonl(0xc6120000u | (uint32_t)(strlen(name) & 0xffff));
    if (memcmp(rr + 12, &want, 4) != 0)
        FAIL("answer is not the lookup's address");
}

static void check(const uint8_t *q, size_t qlen, const uint8_t *r, size_t n, size_t out_size,
                  const char *name, enum egress_dns_verdict v, const struct ctx *c)
{
    char again[EGRESS_NAME_MAX + 1];
    if (n > out_size)
        FAIL("reply longer than its buffer");
    if (n > 0 && (n < 12 || memcmp(r, q, 2) != 0 || !(r[2] & 0x80)))
        FAIL("reply without the query's ID or QR");
    if (v == EGRESS_DNS_BAD) {
        if (name[0] || (n > 0 && (r[5] != 0 || n != 12)))
            FAIL("BAD with a name or a question");
        return;
    }
    if (egress_name_normalize(name, strlen(name), again, NULL) < 0 || strcmp(again, name) != 0)
        FAIL("a name that is not normalized");
    if (c->calls > 1 || (c->calls == 1 && strcmp(c->asked, name) != 0))
        FAIL("lookup asked about another name");
    bool allowed = c->calls == 1 && strchr(name, 'a');
    if ((v == EGRESS_DNS_ANSWERED || v == EGRESS_DNS_NODATA) != allowed)
        FAIL("verdict disagrees with the lookup");
    if (n == 0)
        return;
    if (v == EGRESS_DNS_ANSWERED)
        check_answer(r, n, name);
    else if (r[7] != 0)
        FAIL("an answer record without ANSWERED");
    if (v == EGRESS_DNS_REFUSED && (r[3] & 0x0f) != 3)
        FAIL("REFUSED without NXDOMAIN");
    (void)qlen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t out[512];
    char name[EGRESS_NAME_MAX + 1];
    enum egress_dns_verdict v;
    /* Every buffer size from tiny to enough, picked by the input. */
    size_t out_size = size > 0 ? (size_t)data[size - 1] * 2 + 12 : sizeof(out);
    if (out_size > sizeof(out))
        out_size = sizeof(out);
    for (int pass = 0; pass < 2; pass++) {
        struct ctx c = {0};
        size_t os = pass ? sizeof(out) : out_size;
        size_t n = egress_dns_answer(data, size, out, os, lookup, &c, name, &v);
        check(data, size, out, n, os, name, v, &c);
    }
    return 0;
}
