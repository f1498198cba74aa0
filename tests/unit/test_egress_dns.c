/* Unit tests for runtime/egress/dns.c: the sandbox's DNS server answers
 * allowed names with a fake address, never anything else, and refuses
 * malformed or tricky queries. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/inspect.h"

#include <arpa/inet.h>
#include <string.h>

struct lookup_ctx {
    int calls;
    char last[EGRESS_NAME_MAX + 1];
};

/* Allows pypi.org and *.example.com, with fake 198.18.0.5. */
static int lookup(void *p, const char *name, struct in_addr *fake)
{
    struct lookup_ctx *ctx = p;
    size_t n = strlen(name);
    ctx->calls++;
    snprintf(ctx->last, sizeof(ctx->last), "%s", name);
    if (strcmp(name, "pypi.org") != 0 && !(n > 12 && strcmp(name + n - 12, ".example.com") == 0))
        return 0;
    fake->s_addr = htonl(0xc6120005);
    return 1;
}

/* A query: header (id 0xbeef, RD) with qd/an/ns/ar counts, then the
 * wire-encoded name (dotted text, labels as given), type and class. */
static size_t query(uint8_t *q, const char *name, uint16_t type, uint16_t klass, uint16_t ar)
{
    uint8_t h[12] = {0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, (uint8_t)(ar >> 8), (uint8_t)ar};
    size_t n = sizeof(h);
    memcpy(q, h, n);
    while (*name) {
        size_t l = strcspn(name, ".");
        q[n++] = (uint8_t)l;
        memcpy(q + n, name, l);
        n += l;
        name += l + (name[l] == '.');
    }
    q[n++] = 0;
    q[n++] = (uint8_t)(type >> 8);
    q[n++] = (uint8_t)type;
    q[n++] = (uint8_t)(klass >> 8);
    q[n++] = (uint8_t)klass;
    return n;
}

static size_t answer(const uint8_t *q, size_t qlen, uint8_t *out, struct lookup_ctx *ctx,
                     char *name, enum egress_dns_verdict *v)
{
    return egress_dns_answer(q, qlen, out, 512, lookup, ctx, name, v);
}

static void test_a_answer(void)
{
    uint8_t q[512], r[512];
    char name[EGRESS_NAME_MAX + 1];
    enum egress_dns_verdict v;
    struct lookup_ctx ctx = {0};
    size_t qlen = query(q, "PyPI.org", 1, 1, 0);
    size_t n = answer(q, qlen, r, &ctx, name, &v);

    CHECK(v == EGRESS_DNS_ANSWERED);
    CHECK_STR(name, "pypi.org");
    CHECK_STR(ctx.last, "pypi.org");
    CHECK(n == qlen + 16);
    CHECK(r[0] == 0xbe && r[1] == 0xef);        /* ID */
    CHECK((r[2] & 0x80) && (r[2] & 0x01));      /* QR, RD */
    CHECK((r[3] & 0x80) && (r[3] & 0x0f) == 0); /* RA, NOERROR */
    CHECK(r[4] == 0 && r[5] == 1 && r[6] == 0 && r[7] == 1);
    CHECK(r[8] == 0 && r[9] == 0 && r[10] == 0 && r[11] == 0);
    CHECK(memcmp(r + 12, q + 12, qlen - 12) == 0); /* question, case kept */
    static const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 198, 18, 0, 5};
    CHECK(memcmp(r + qlen, rr, sizeof(rr)) == 0);
}

static void test_nodata_and_nxdomain(void)
{
    uint8_t q[512], r[512];
    char name[EGRESS_NAME_MAX + 1];
    enum egress_dns_verdict v;
    struct lookup_ctx ctx = {0};

    size_t qlen = query(q, "files.example.com.", 28, 1, 0); /* AAAA */
    size_t n = answer(q, qlen, r, &ctx, name, &v);
    CHECK(v == EGRESS_DNS_NODATA && n == qlen);
    CHECK_STR(name, "files.example.com");
    CHECK((r[3] & 0x0f) == 0 && r[7] == 0);

    qlen = query(q, "pypi.org", 65, 1, 0); /* HTTPS */
    n = answer(q, qlen, r, &ctx, name, &v);
    CHECK(v == EGRESS_DNS_NODATA && n == qlen && r[7] == 0);

    qlen = query(q, "evil.test", 1, 1, 0);
    n = answer(q, qlen, r, &ctx, name, &v);
    CHECK(v == EGRESS_DNS_REFUSED && n == qlen);
    CHECK_STR(name, "evil.test");
    CHECK((r[3] & 0x0f) == 3 && r[7] == 0);

    /* The suffix of a wildcard is not below it. */
    qlen = query(q, "example.com", 1, 1, 0);
    CHECK(answer(q, qlen, r, &ctx, name, &v) == qlen && v == EGRESS_DNS_REFUSED);

    /* Class CH (version.bind and the like): not allowed whatever the name. */
    ctx.calls = 0;
    qlen = query(q, "pypi.org", 1, 3, 0);
    CHECK(answer(q, qlen, r, &ctx, name, &v) == qlen && v == EGRESS_DNS_REFUSED);
    CHECK(ctx.calls == 0 && (r[3] & 0x0f) == 3);
}

/* An EDNS OPT record in the additional section is ignored; the reply has
 * none. */
static void test_edns_ignored(void)
{
    uint8_t q[512], r[512];
    char name[EGRESS_NAME_MAX + 1];
    enum egress_dns_verdict v;
    struct lookup_ctx ctx = {0};
    size_t qlen = query(q, "pypi.org", 1, 1, 1);
    static const uint8_t opt[] = {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0};
    memcpy(q + qlen, opt, sizeof(opt));
    size_t n = answer(q, qlen + sizeof(opt), r, &ctx, name, &v);
    CHECK(v == EGRESS_DNS_ANSWERED && n == qlen + 16);
    CHECK(r[10] == 0 && r[11] == 0);
}

/* Malformed queries: FORMERR with no question echoed, name "", the
 * lookup never asked. */
static void expect_formerr(const uint8_t *q, size_t qlen, uint8_t rcode)
{
    uint8_t r[512];
    char name[EGRESS_NAME_MAX + 1] = "junk";
    enum egress_dns_verdict v = EGRESS_DNS_ANSWERED;
    struct lookup_ctx ctx = {0};
    size_t n = answer(q, qlen, r, &ctx, name, &v);
    CHECK(v == EGRESS_DNS_BAD);
    CHECK_STR(name, "");
    CHECK(ctx.calls == 0);
    CHECK(n == 12);
    CHECK(r[0] == 0xbe && r[1] == 0xef && (r[2] & 0x80) && (r[3] & 0x0f) == rcode);
    CHECK(r[4] == 0 && r[5] == 0 && r[7] == 0);
}

static void test_malformed(void)
{
    uint8_t q[600];
    size_t qlen = query(q, "pypi.org", 1, 1, 0);

    q[5] = 2; /* two questions */
    expect_formerr(q, qlen, 1);
    q[5] = 0;
    expect_formerr(q, qlen, 1);
    q[5] = 1;
    q[7] = 1; /* an answer in a query */
    expect_formerr(q, qlen, 1);
    q[7] = 0;
    q[9] = 1; /* authority */
    expect_formerr(q, qlen, 1);
    q[9] = 0;
    q[11] = 2; /* two additional records */
    expect_formerr(q, qlen, 1);
    q[11] = 0;
    q[2] = 0x28; /* opcode 5 (UPDATE) */
    expect_formerr(q, qlen, 4);
    q[2] = 0x01;
    expect_formerr(q, qlen - 1, 1); /* truncated class */
    expect_formerr(q, qlen + 1, 1); /* trailing byte, no additional */
    expect_formerr(q, 13, 1);       /* header and one byte */
    expect_formerr(q, 12 + 5, 1);   /* label past the end */

    /* A compression pointer as the question name (to itself: a loop). */
    static const uint8_t ptr[] = {0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1};
    expect_formerr(ptr, sizeof(ptr), 1);
    /* Extended label types 01 and 10. */
    static const uint8_t ext[] = {0xbe, 0xef, 1,    0,   0, 1, 0, 0, 0, 0,
                                  0,    0,    0x41, 'a', 0, 0, 1, 0, 1};
    expect_formerr(ext, sizeof(ext), 1);

    /* Bytes outside [a-z0-9-_] in a label, a dot inside a label, the
     * root name, an IP literal as a name. */
    static const char *const bad_names[] = {"py pi.org", "pypi.org\\", "a\001b.org", "x@y.org",
                                            "",          "1.2.3.4",    "-a.org"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        qlen = query(q, bad_names[i], 1, 1, 0);
        expect_formerr(q, qlen, 1);
    }
    static const uint8_t dot[] = {0xbe, 0xef, 1,   0,   0,   1, 0, 0, 0, 0, 0,
                                  0,    3,    'a', '.', 'b', 0, 0, 1, 0, 1};
    expect_formerr(dot, sizeof(dot), 1);
    static const uint8_t high[] = {0xbe, 0xef, 1, 0,   0,    1, 0, 0, 0, 0,
                                   0,    0,    2, 'a', 0xc3, 0, 0, 1, 0, 1};
    expect_formerr(high, sizeof(high), 1);

    /* A name over 255 wire bytes: five labels of 63. */
    char longname[5 * 64];
    for (int i = 0; i < 5; i++) {
        memset(longname + i * 64, 'a', 63);
        longname[i * 64 + 63] = i == 4 ? '\0' : '.';
    }
    qlen = query(q, longname, 1, 1, 0);
    expect_formerr(q, qlen, 1);
}

static void test_dropped(void)
{
    uint8_t q[512], r[512];
    char name[EGRESS_NAME_MAX + 1];
    enum egress_dns_verdict v;
    struct lookup_ctx ctx = {0};
    size_t qlen = query(q, "pypi.org", 1, 1, 0);

    CHECK(answer(q, 11, r, &ctx, name, &v) == 0 && v == EGRESS_DNS_BAD);
    q[2] |= 0x80; /* a response: never answered */
    CHECK(answer(q, qlen, r, &ctx, name, &v) == 0 && v == EGRESS_DNS_BAD);
    q[2] &= 0x7f;
    /* No room for the answer: nothing rather than a cut reply. */
    CHECK(egress_dns_answer(q, qlen, r, qlen + 15, lookup, &ctx, name, &v) == 0);
    CHECK(egress_dns_answer(q, qlen, r, qlen + 16, lookup, &ctx, name, &v) == qlen + 16);
    CHECK(ctx.calls == 2 && v == EGRESS_DNS_ANSWERED);
}

/* The longest name there is: 253 characters, 255 wire bytes. */
static void test_longest_name(void)
{
    uint8_t q[600], r[600];
    char longname[254], name[EGRESS_NAME_MAX + 1];
    enum egress_dns_verdict v;
    struct lookup_ctx ctx = {0};
    memset(longname, 'a', 253);
    longname[253] = '\0';
    for (int i = 63; i < 253; i += 64)
        longname[i] = '.';
    memcpy(longname + 253 - 12, ".example.com", 12);
    size_t qlen = query(q, longname, 1, 1, 0);
    CHECK(qlen == 12 + 255 + 4);
    CHECK(egress_dns_answer(q, qlen, r, sizeof(r), lookup, &ctx, name, &v) == qlen + 16);
    CHECK(v == EGRESS_DNS_ANSWERED);
    CHECK(strlen(name) == 253);
}

void suite_egress_dns(void)
{
    RUN_TEST(test_a_answer);
    RUN_TEST(test_nodata_and_nxdomain);
    RUN_TEST(test_edns_ignored);
    RUN_TEST(test_malformed);
    RUN_TEST(test_dropped);
    RUN_TEST(test_longest_name);
}
