/* Unit tests for runtime/egress/sni.c: the server name of a ClientHello,
 * reassembled across records and reads, and the tricks refused (several
 * names, IP literals, ECH, SSLv2, interleaved records). */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/inspect.h"

#include <string.h>

struct hello_opts {
    const char *names[3]; /* host_names in one server_name extension */
    int n_names;
    bool second_sni; /* a second server_name extension */
    bool ech;        /* an encrypted_client_hello extension */
    bool no_ext;     /* no extensions block at all */
    size_t padding;  /* bytes of a padding extension (21) */
    uint8_t hs_type; /* 0: ClientHello */
    size_t trailing; /* bytes after the extensions, inside the body */
};

static size_t put16(uint8_t *p, size_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

static size_t sni_ext(uint8_t *p, const struct hello_opts *o)
{
    size_t n = 4 + 2, list = 0;
    for (int i = 0; i < o->n_names; i++) {
        size_t l = strlen(o->names[i]);
        p[n++] = 0;
        n += put16(p + n, l);
        memcpy(p + n, o->names[i], l);
        n += l;
        list += 3 + l;
    }
    put16(p, 0);
    put16(p + 2, list + 2);
    put16(p + 4, list);
    return n;
}

/* A handshake message: type, 24-bit length, ClientHello body. */
static size_t hello(uint8_t *out, const struct hello_opts *o)
{
    uint8_t *b = out + 4;
    size_t n = 0;
    b[n++] = 3, b[n++] = 3;
    memset(b + n, 0x5a, 32), n += 32;
    b[n++] = 32, memset(b + n, 0x11, 32), n += 32;
    n += put16(b + n, 4);
    b[n++] = 0x13, b[n++] = 0x01, b[n++] = 0x13, b[n++] = 0x02;
    b[n++] = 1, b[n++] = 0;
    if (!o->no_ext) {
        size_t ext_start = n;
        n += 2;
        static const uint8_t versions[] = {0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04};
        memcpy(b + n, versions, sizeof(versions)), n += sizeof(versions);
        if (o->n_names)
            n += sni_ext(b + n, o);
        if (o->second_sni)
            n += sni_ext(b + n, o);
        if (o->ech) {
            static const uint8_t ech[] = {0xfe, 0x0d, 0x00, 0x04, 0, 1, 2, 3};
            memcpy(b + n, ech, sizeof(ech)), n += sizeof(ech);
        }
        if (o->padding) {
            n += put16(b + n, 21);
            n += put16(b + n, o->padding);
            memset(b + n, 0, o->padding), n += o->padding;
        }
        put16(b + ext_start, n - ext_start - 2);
    }
    memset(b + n, 0, o->trailing), n += o->trailing;
    out[0] = o->hs_type ? o->hs_type : 1;
    out[1] = (uint8_t)(n >> 16), out[2] = (uint8_t)(n >> 8), out[3] = (uint8_t)n;
    return n + 4;
}

/* hs as TLS records of at most frag bytes each. */
static size_t records(uint8_t *out, const uint8_t *hs, size_t n, size_t frag)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += frag) {
        size_t l = n - i < frag ? n - i : frag;
        out[o++] = 22, out[o++] = 3, out[o++] = 1;
        o += put16(out + o, l);
        memcpy(out + o, hs + i, l), o += l;
    }
    return o;
}

static uint8_t hs_buf[70000], rec_buf[200000];

static enum egress_sni parse_opts(const struct hello_opts *o, size_t frag, char *name)
{
    size_t n = hello(hs_buf, o);
    size_t r = records(rec_buf, hs_buf, n, frag);
    return egress_sni_parse(rec_buf, r, name);
}

static void test_found(void)
{
    char name[EGRESS_NAME_MAX + 1];
    struct hello_opts o = {.names = {"PyPI.org."}, .n_names = 1};
    CHECK(parse_opts(&o, 16384, name) == EGRESS_SNI_FOUND);
    CHECK_STR(name, "pypi.org");
    o.padding = 400;
    CHECK(parse_opts(&o, 16384, name) == EGRESS_SNI_FOUND);
    CHECK_STR(name, "pypi.org");
}

/* One handshake byte per record, and the stream read one byte at a time:
 * every prefix is MORE, the whole is FOUND. */
static void test_split_byte_by_byte(void)
{
    char name[EGRESS_NAME_MAX + 1];
    struct hello_opts o = {.names = {"files.pythonhosted.org"}, .n_names = 1};
    size_t n = hello(hs_buf, &o);
    size_t r = records(rec_buf, hs_buf, n, 1);
    CHECK(r == n * 6);
    bool all_more = true;
    for (size_t i = 0; i < r; i++) {
        enum egress_sni v = egress_sni_parse(rec_buf, i, name);
        if (v != EGRESS_SNI_MORE && all_more)
            printf("# prefix %zu of %zu: %d\n", i, r, v);
        all_more &= v == EGRESS_SNI_MORE && name[0] == '\0';
    }
    CHECK(all_more);
    CHECK(egress_sni_parse(rec_buf, r, name) == EGRESS_SNI_FOUND);
    CHECK_STR(name, "files.pythonhosted.org");

    /* One record, short reads. */
    r = records(rec_buf, hs_buf, n, 16384);
    for (size_t i = 0; i < r; i++)
        CHECK(egress_sni_parse(rec_buf, i, name) == EGRESS_SNI_MORE);
    CHECK(egress_sni_parse(rec_buf, r, name) == EGRESS_SNI_FOUND);

    /* Records after the hello (TLS 1.3 middlebox compatibility's
     * change_cipher_spec) are not the hello's business. */
    static const uint8_t ccs[] = {20, 3, 3, 0, 1, 1};
    memcpy(rec_buf + r, ccs, sizeof(ccs));
    CHECK(egress_sni_parse(rec_buf, r + sizeof(ccs), name) == EGRESS_SNI_FOUND);
}

static void test_none(void)
{
    char name[EGRESS_NAME_MAX + 1];
    struct hello_opts o = {0};
    CHECK(parse_opts(&o, 16384, name) == EGRESS_SNI_NONE);
    CHECK_STR(name, "");
    o.no_ext = true;
    CHECK(parse_opts(&o, 16384, name) == EGRESS_SNI_NONE);
}

static void expect_bad(const struct hello_opts *o, size_t frag)
{
    char name[EGRESS_NAME_MAX + 1] = "junk";
    CHECK(parse_opts(o, frag, name) == EGRESS_SNI_BAD);
    CHECK_STR(name, "");
}

static void test_bad_names(void)
{
    struct hello_opts two = {.names = {"pypi.org", "evil.test"}, .n_names = 2};
    expect_bad(&two, 16384);
    struct hello_opts twice = {.names = {"pypi.org"}, .n_names = 1, .second_sni = true};
    expect_bad(&twice, 16384);
    static const char *const bad[] = {"127.0.0.1", "::1",       "[::1]",   "",
                                      "a..b",      "py pi.org", "x/y.org", "a.b\xc3\xa9"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct hello_opts o = {.names = {bad[i]}, .n_names = 1};
        expect_bad(&o, 16384);
    }
}

static void test_ech_and_shape(void)
{
    struct hello_opts ech = {.names = {"public.example.com"}, .n_names = 1, .ech = true};
    expect_bad(&ech, 16384);
    expect_bad(&ech, 7);
    struct hello_opts server_hello = {.names = {"pypi.org"}, .n_names = 1, .hs_type = 2};
    expect_bad(&server_hello, 16384);
    struct hello_opts trailing = {.names = {"pypi.org"}, .n_names = 1, .trailing = 3};
    expect_bad(&trailing, 16384);
    struct hello_opts no_ext_trailing = {.no_ext = true, .trailing = 1};
    expect_bad(&no_ext_trailing, 16384);
}

/* Broken records and things that are not TLS. */
static void test_bad_records(void)
{
    char name[EGRESS_NAME_MAX + 1];
    struct hello_opts o = {.names = {"pypi.org"}, .n_names = 1};
    size_t n = hello(hs_buf, &o);
    size_t r = records(rec_buf, hs_buf, n, 100);

    /* An alert between two fragments of the hello. */
    uint8_t mixed[2048];
    memcpy(mixed, rec_buf, 105);
    static const uint8_t alert[] = {21, 3, 3, 0, 2, 2, 40};
    memcpy(mixed + 105, alert, sizeof(alert));
    memcpy(mixed + 105 + sizeof(alert), rec_buf + 105, r - 105);
    CHECK(egress_sni_parse(mixed, r + sizeof(alert), name) == EGRESS_SNI_BAD);
    CHECK(egress_sni_parse(mixed, 106, name) == EGRESS_SNI_BAD); /* as soon as it shows */

    /* Extra bytes in the hello's last record. */
    r = records(rec_buf, hs_buf, n, 16384);
    rec_buf[4]++;
    rec_buf[r] = 0;
    CHECK(egress_sni_parse(rec_buf, r + 1, name) == EGRESS_SNI_BAD);
    CHECK(egress_sni_parse(rec_buf, r, name) == EGRESS_SNI_BAD); /* record still open */

    static const uint8_t empty_record[] = {22, 3, 1, 0, 0};
    CHECK(egress_sni_parse(empty_record, sizeof(empty_record), name) == EGRESS_SNI_BAD);
    static const uint8_t huge_record[] = {22, 3, 1, 0x40, 0x01};
    CHECK(egress_sni_parse(huge_record, sizeof(huge_record), name) == EGRESS_SNI_BAD);
    static const uint8_t huge_hello[] = {22, 3, 1, 0, 4, 1, 0, 0x4f, 0xff};
    CHECK(egress_sni_parse(huge_hello, sizeof(huge_hello), name) == EGRESS_SNI_BAD);
    static const uint8_t bad_version[] = {22, 4};
    CHECK(egress_sni_parse(bad_version, sizeof(bad_version), name) == EGRESS_SNI_BAD);
    /* SSLv2-compatible ClientHello (2-byte header with the high bit). */
    static const uint8_t sslv2[] = {0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00};
    CHECK(egress_sni_parse(sslv2, sizeof(sslv2), name) == EGRESS_SNI_BAD);
    CHECK(egress_sni_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name) == EGRESS_SNI_BAD);
    static const uint8_t start[] = {22};
    CHECK(egress_sni_parse(start, 1, name) == EGRESS_SNI_MORE);
    CHECK(egress_sni_parse(start, 0, name) == EGRESS_SNI_MORE);
}

/* The limit: a hello whose records take more than EGRESS_HELLO_MAX bytes
 * of stream is refused, whole or not. */
static void test_limit(void)
{
    char name[EGRESS_NAME_MAX + 1];
    struct hello_opts o = {.names = {"pypi.org"}, .n_names = 1, .padding = 3000};
    size_t n = hello(hs_buf, &o);
    size_t r = records(rec_buf, hs_buf, n, 1); /* 6 stream bytes per hello byte */
    CHECK(r > EGRESS_HELLO_MAX);
    CHECK(egress_sni_parse(rec_buf, EGRESS_HELLO_MAX - 1, name) == EGRESS_SNI_MORE);
    CHECK(egress_sni_parse(rec_buf, EGRESS_HELLO_MAX, name) == EGRESS_SNI_BAD);
    CHECK(egress_sni_parse(rec_buf, r, name) == EGRESS_SNI_BAD);

    /* Exactly at the limit: one record of EGRESS_HELLO_MAX bytes. */
    o.padding = 1;
    o.padding = 1 + EGRESS_HELLO_MAX - 5 - hello(hs_buf, &o);
    n = hello(hs_buf, &o);
    r = records(rec_buf, hs_buf, n, 16384);
    CHECK(r == EGRESS_HELLO_MAX);
    CHECK(egress_sni_parse(rec_buf, r, name) == EGRESS_SNI_FOUND);
    CHECK_STR(name, "pypi.org");
    /* One byte more does not fit. */
    o.padding++;
    n = hello(hs_buf, &o);
    r = records(rec_buf, hs_buf, n, 16384);
    CHECK(egress_sni_parse(rec_buf, r, name) == EGRESS_SNI_BAD);
}

void suite_egress_sni(void)
{
    RUN_TEST(test_found);
    RUN_TEST(test_split_byte_by_byte);
    RUN_TEST(test_none);
    RUN_TEST(test_bad_names);
    RUN_TEST(test_ech_and_shape);
    RUN_TEST(test_bad_records);
    RUN_TEST(test_limit);
}
