/* Unit tests for runtime/egress/rules.c: rule parsing, presets, formatting,
 * matching and the operator's ceiling. */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/rules.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

/* Parses text into a fresh policy and returns its first rule's canonical
 * text in buf ("" on error). */
static const char *canon(const char *text, char *buf, size_t size)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    buf[0] = '\0';
    if (egress_policy_add(&p, text, &err) == 0)
        egress_rule_format(&p.rules[0], buf, size);
    return buf;
}

/* Parsing text fails, the policy is unchanged and the message quotes it
 * and contains want. */
static void expect_error(const char *text, const char *want)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "pypi.org", &err) == 0);
    CHECK(egress_policy_add(&p, text, &err) == -1);
    CHECK(p.n == 1);
    if (!strstr(err.msg, want) || (text[0] && !strstr(err.msg, text)))
        printf("# '%s': %s\n", text, err.msg);
    CHECK(strstr(err.msg, want) != NULL);
    CHECK(text[0] == '\0' || strstr(err.msg, text) != NULL);
}

static void test_names_and_ports(void)
{
    char b[256];
    CHECK_STR(canon("pypi.org", b, sizeof(b)), "pypi.org:80,443");
    CHECK_STR(canon("PyPI.Org.", b, sizeof(b)), "pypi.org:80,443");
    CHECK_STR(canon("example.com:8443", b, sizeof(b)), "example.com:8443");
    CHECK_STR(canon("example.com:443,80,443", b, sizeof(b)), "example.com:80,443");
    CHECK_STR(canon("*.githubusercontent.com", b, sizeof(b)), "*.githubusercontent.com:80,443");
    CHECK_STR(canon("my_host.internal:1", b, sizeof(b)), "my_host.internal:1");
    CHECK_STR(canon("localhost", b, sizeof(b)), "localhost:80,443");

    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "*.example.com:8080,9090", &err) == 0);
    CHECK(p.n == 1 && p.rules[0].kind == EGRESS_RULE_WILDCARD);
    CHECK_STR(p.rules[0].host, "example.com");
    CHECK(p.rules[0].n_ports == 2 && p.rules[0].ports[0] == 8080 && p.rules[0].ports[1] == 9090);
    CHECK(!p.rules[0].operator_only && !p.rules[0].allow_private);
}

static void test_addresses(void)
{
    char b[256];
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "127.0.0.1:3141", &err) == 0);
    CHECK(p.rules[0].kind == EGRESS_RULE_ADDR && p.rules[0].operator_only);
    const struct sockaddr_in *a4 = (const struct sockaddr_in *)&p.rules[0].addr;
    CHECK(a4->sin_family == AF_INET && ntohs(a4->sin_port) == 3141);
    CHECK(a4->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
    CHECK(p.rules[0].ports[0] == 3141 && p.rules[0].n_ports == 1);

    CHECK(egress_policy_add(&p, "[::1]:8080", &err) == 0);
    CHECK(p.rules[1].kind == EGRESS_RULE_ADDR && p.rules[1].operator_only);
    CHECK(p.rules[1].addr.ss_family == AF_INET6);

    CHECK(egress_policy_add(&p, "Devpi.Test=127.0.0.1:3141", &err) == 0);
    CHECK(p.rules[2].kind == EGRESS_RULE_MAPPED && p.rules[2].operator_only);
    CHECK_STR(p.rules[2].host, "devpi.test");
    CHECK(p.rules[2].ports[0] == 3141 && p.rules[2].n_ports == 1);

    CHECK_STR(canon("[0:0:0:0:0:0:0:1]:80", b, sizeof(b)), "[::1]:80");
    CHECK_STR(canon("reg.test=[::1]:4873", b, sizeof(b)), "reg.test=[::1]:4873");
    CHECK_STR(canon("10.0.0.1:22", b, sizeof(b)), "10.0.0.1:22");
}

static void test_presets(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    char b[1024];
    CHECK(egress_policy_add(&p, "pypi", &err) == 0);
    CHECK(egress_policy_add(&p, "npm", &err) == 0);
    CHECK(egress_policy_add(&p, "Debian", &err) == 0);
    CHECK(egress_policy_add(&p, "github", &err) == 0);
    CHECK(p.n == 8);
    egress_policy_format(&p, b, sizeof(b));
    CHECK_STR(b, "pypi.org:80,443,files.pythonhosted.org:80,443,registry.npmjs.org:80,443,"
                 "deb.debian.org:80,443,security.debian.org:80,443,github.com:80,443,"
                 "codeload.github.com:80,443,objects.githubusercontent.com:80,443");
    for (size_t i = 0; i < p.n; i++)
        CHECK(p.rules[i].kind == EGRESS_RULE_NAME && !p.rules[i].operator_only);
    expect_error("pypi:443", "preset takes no port");
    expect_error("PyPI.", "is a preset");
    expect_error("npm.:443", "is a preset");
}

static void test_errors(void)
{
    expect_error("", "empty network rule");
    expect_error("127.0.0.1", "needs a port");
    expect_error("[::1]", "needs a port");
    expect_error("::1:80", "brackets");
    expect_error("fe80::1", "brackets");
    expect_error("127.0.0.1:80,443", "one port");
    expect_error("127.0.0.1:0", "not a port");
    expect_error("pypi.org:65536", "not a port");
    expect_error("pypi.org:", "not a port");
    expect_error("pypi.org:80,", "not a port");
    expect_error("pypi.org:+80", "not a port");
    expect_error("pypi.org:1,2,3,4,5,6,7,8,9", "more than 8 ports");
    expect_error("127.1:80", "IP address");
    expect_error("2130706433:80", "IP address");
    expect_error("0x7f.1", "IP address");
    expect_error("1.2.3.4.5", "IP address");
    expect_error("pypi..org", "empty label");
    expect_error("-x.org", "starting with '-'");
    expect_error("py pi.org", "'pi.org' is not a method"); /* HOST METHODS */
    expect_error("user@pypi.org", "outside [a-z0-9-_.]");
    expect_error("*", "wildcard");
    expect_error("*foo.com", "wildcard");
    expect_error("*.", "empty name");
    expect_error("a.*.com", "outside");
    expect_error("x=pypi.org:80", "not an IPv4 address");
    expect_error("x=127.0.0.1", "needs a port");
    expect_error("*.x=127.0.0.1:80", "not a host name");
    expect_error("0.0.0.0:80", "not one service");
    expect_error("[::]:80", "not one service");
    expect_error("[::1%lo]:80", "not an IPv6 address");
    expect_error("a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j.k.l.m.n."
                 "o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b."
                 "c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p."
                 "q.r.s.t.u.v.w.x.y.z.com",
                 "over 253");
    expect_error("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
                 "over 63");
}

static void test_too_many_rules(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    char name[32];
    for (int i = 0; i < EGRESS_MAX_RULES - 1; i++) {
        snprintf(name, sizeof(name), "h%d.test", i);
        CHECK(egress_policy_add(&p, name, &err) == 0);
    }
    CHECK(egress_policy_add(&p, "pypi", &err) == -1); /* 2 rules: all or nothing */
    CHECK(p.n == EGRESS_MAX_RULES - 1);
    CHECK(strstr(err.msg, "more than 64 rules") != NULL);
    CHECK(egress_policy_add(&p, "last.test", &err) == 0);
    CHECK(egress_policy_add(&p, "one.more", &err) == -1);
    CHECK(p.n == EGRESS_MAX_RULES);
}

/* Every canonical text parses back to the same rule. */
static void test_round_trip(void)
{
    static const char *const texts[] = {
        "pypi.org",        "*.a.b:1,2,3",          "127.0.0.1:3141", "[::ffff:127.0.0.1]:80",
        "[2001:db8::1]:1", "x.test=10.1.2.3:8080", "y=[fd00::1]:5",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct egress_policy p = {0}, q = {0};
        struct nsbox_err err = {0};
        char b[256];
        CHECK(egress_policy_add(&p, texts[i], &err) == 0);
        egress_rule_format(&p.rules[0], b, sizeof(b));
        CHECK(egress_policy_add(&q, b, &err) == 0);
        CHECK(memcmp(&p.rules[0], &q.rules[0], sizeof(p.rules[0])) == 0);
    }
}

static void test_match_name(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "*.example.com:443", &err) == 0);
    CHECK(egress_policy_add(&p, "pypi.org", &err) == 0);
    CHECK(egress_policy_add(&p, "api.example.com=127.0.0.1:443", &err) == 0);

    CHECK(egress_policy_match_name(&p, "pypi.org", 443) == &p.rules[1]);
    CHECK(egress_policy_match_name(&p, "pypi.org", 80) == &p.rules[1]);
    CHECK(egress_policy_match_name(&p, "pypi.org", 0) == &p.rules[1]);
    CHECK(egress_policy_match_name(&p, "pypi.org", 8080) == NULL);
    CHECK(egress_policy_match_name(&p, "evilpypi.org", 443) == NULL);
    CHECK(egress_policy_match_name(&p, "x.pypi.org", 443) == NULL);
    /* Wildcards: strictly below, never the suffix itself or a look-alike. */
    CHECK(egress_policy_match_name(&p, "a.example.com", 443) == &p.rules[0]);
    CHECK(egress_policy_match_name(&p, "a.b.example.com", 0) == &p.rules[0]);
    CHECK(egress_policy_match_name(&p, "example.com", 443) == NULL);
    CHECK(egress_policy_match_name(&p, "badexample.com", 443) == NULL);
    CHECK(egress_policy_match_name(&p, ".example.com", 443) == NULL);
    CHECK(egress_policy_match_name(&p, "a.example.com", 80) == NULL);
    /* The operator's mapping wins over the wildcard that also matches. */
    CHECK(egress_policy_match_name(&p, "api.example.com", 443) == &p.rules[2]);
}

static void test_match_addr(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&p, "127.0.0.1:3141", &err) == 0);
    CHECK(egress_policy_add(&p, "[::1]:8080", &err) == 0);
    CHECK(egress_policy_add(&p, "localhost.test=127.0.0.1:9000", &err) == 0);

    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(3141)};
    a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(egress_policy_match_addr(&p, (struct sockaddr *)&a4) == &p.rules[0]);
    a4.sin_port = htons(3142);
    CHECK(egress_policy_match_addr(&p, (struct sockaddr *)&a4) == NULL);
    /* A MAPPED rule's address is not reachable by address. */
    a4.sin_port = htons(9000);
    CHECK(egress_policy_match_addr(&p, (struct sockaddr *)&a4) == NULL);

    /* The dual-stack listener reports a v4 connection as v4-mapped. */
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(3141)};
    CHECK(inet_pton(AF_INET6, "::ffff:127.0.0.1", &a6.sin6_addr) == 1);
    CHECK(egress_policy_match_addr(&p, (struct sockaddr *)&a6) == &p.rules[0]);
    CHECK(inet_pton(AF_INET6, "::ffff:127.0.0.2", &a6.sin6_addr) == 1);
    CHECK(egress_policy_match_addr(&p, (struct sockaddr *)&a6) == NULL);
    a6.sin6_port = htons(8080);
    CHECK(inet_pton(AF_INET6, "::1", &a6.sin6_addr) == 1);
    CHECK(egress_policy_match_addr(&p, (struct sockaddr *)&a6) == &p.rules[1]);
}

static void test_ports(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    uint16_t ports[8];
    CHECK(egress_policy_add(&p, "pypi", &err) == 0);
    CHECK(egress_policy_add(&p, "x.test:8443,443", &err) == 0);
    CHECK(egress_policy_add(&p, "127.0.0.1:3141", &err) == 0);
    CHECK(egress_policy_ports(&p, ports, 8) == 4);
    CHECK(ports[0] == 80 && ports[1] == 443 && ports[2] == 3141 && ports[3] == 8443);
    CHECK(egress_policy_ports(&p, ports, 2) == 2);
    struct egress_policy empty = {0};
    CHECK(egress_policy_ports(&empty, ports, 8) == 0);
}

/* r (one rule's text) is within the ceiling (a list of texts). */
static bool within(const char *const *ceiling, const char *text, char *why, size_t size)
{
    struct egress_policy c = {0}, r = {0};
    struct nsbox_err err = {0};
    for (; *ceiling; ceiling++)
        CHECK(egress_policy_add(&c, *ceiling, &err) == 0);
    CHECK(egress_policy_add(&r, text, &err) == 0);
    why[0] = '\0';
    return egress_rule_within(&c, &r.rules[0], why, size);
}

static void test_within(void)
{
    static const char *const ceiling[] = {
        "pypi", "*.example.com", "one.test:8443", "127.0.0.1:3141", "m.test=127.0.0.1:4873", NULL,
    };
    char why[256];
    CHECK(within(ceiling, "pypi.org", why, sizeof(why)));
    CHECK(within(ceiling, "pypi.org:443", why, sizeof(why)));
    CHECK(within(ceiling, "a.example.com:80", why, sizeof(why)));
    CHECK(within(ceiling, "*.example.com", why, sizeof(why)));
    CHECK(within(ceiling, "*.sub.example.com:443", why, sizeof(why)));
    CHECK(within(ceiling, "one.test:8443", why, sizeof(why)));
    CHECK(within(ceiling, "127.0.0.1:3141", why, sizeof(why)));
    CHECK(within(ceiling, "m.test=127.0.0.1:4873", why, sizeof(why)));
    CHECK(within(ceiling, "m.test:4873", why, sizeof(why)));

    CHECK(!within(ceiling, "pypi.org:8080", why, sizeof(why)));
    CHECK(strstr(why, "pypi.org port 8080") != NULL);
    CHECK(!within(ceiling, "example.com", why, sizeof(why)));
    CHECK(strstr(why, "example.com port 80") != NULL);
    CHECK(!within(ceiling, "*.com", why, sizeof(why)));
    CHECK(!within(ceiling, "one.test", why, sizeof(why)));
    CHECK(!within(ceiling, "*.one.test:8443", why, sizeof(why)));
    CHECK(!within(ceiling, "127.0.0.1:3142", why, sizeof(why)));
    CHECK(strstr(why, "127.0.0.1:3142") != NULL);
    CHECK(!within(ceiling, "127.0.0.2:3141", why, sizeof(why)));
    CHECK(!within(ceiling, "m.test=127.0.0.1:3141", why, sizeof(why)));
    CHECK(!within(ceiling, "pypi.org=127.0.0.1:443", why, sizeof(why)));
    CHECK(!within(ceiling, "x.example.com=127.0.0.1:443", why, sizeof(why)));

    struct egress_policy none = {0}, r = {0};
    struct nsbox_err err = {0};
    CHECK(egress_policy_add(&r, "pypi.org", &err) == 0);
    CHECK(!egress_rule_within(&none, &r.rules[0], NULL, 0));

    /* A rule allowed to resolve to private addresses needs a ceiling that
     * is too (or pins the address). */
    struct egress_policy c = {0};
    CHECK(egress_policy_add(&c, "pypi.org", &err) == 0);
    CHECK(egress_policy_add(&c, "*.mirror.test", &err) == 0);
    CHECK(egress_policy_add(&c, "m.test=10.0.0.1:80", &err) == 0);
    CHECK(egress_policy_add(&r, "a.mirror.test:443", &err) == 0);
    CHECK(egress_policy_add(&r, "m.test:80", &err) == 0);
    r.rules[0].allow_private = r.rules[1].allow_private = r.rules[2].allow_private = true;
    CHECK(!egress_rule_within(&c, &r.rules[0], why, sizeof(why)));
    CHECK(!egress_rule_within(&c, &r.rules[1], why, sizeof(why)));
    CHECK(egress_rule_within(&c, &r.rules[2], why, sizeof(why)));
    c.rules[0].allow_private = c.rules[1].allow_private = true;
    CHECK(egress_rule_within(&c, &r.rules[0], why, sizeof(why)));
    CHECK(egress_rule_within(&c, &r.rules[1], why, sizeof(why)));
}

static void test_format_truncates(void)
{
    struct egress_policy p = {0};
    struct nsbox_err err = {0};
    char small[10];
    CHECK(egress_policy_add(&p, "github", &err) == 0);
    memset(small, 'x', sizeof(small));
    egress_policy_format(&p, small, sizeof(small));
    CHECK(memchr(small, '\0', sizeof(small)) != NULL);
    CHECK(strncmp(small, "github.co", 9) == 0);
}

void suite_egress_rules(void)
{
    RUN_TEST(test_names_and_ports);
    RUN_TEST(test_addresses);
    RUN_TEST(test_presets);
    RUN_TEST(test_errors);
    RUN_TEST(test_too_many_rules);
    RUN_TEST(test_round_trip);
    RUN_TEST(test_match_name);
    RUN_TEST(test_match_addr);
    RUN_TEST(test_ports);
    RUN_TEST(test_within);
    RUN_TEST(test_format_truncates);
}
