/* Unit tests for runtime/egress/vet.c: which resolved addresses the broker
 * may connect to (DNS rebinding, metadata, NAT64 and v4-mapped tricks). */
#include "check.h"
#include "suites.h"

#include "../../runtime/egress/inspect.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/un.h>

/* Whether the literal text (v4 or v6) is public; why gets the reason. */
static bool public(const char *text, const char **why)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    *why = "(unset)";
    if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
    } else {
        CHECK(inet_pton(AF_INET6, text, &a6->sin6_addr) == 1);
        a6->sin6_family = AF_INET6;
    }
    return egress_addr_public((struct sockaddr *)&ss, why);
}

static void expect_refused(const char *text, const char *want)
{
    const char *why;
    bool ok = public(text, &why);
    if (ok || !why || !strstr(why, want))
        printf("# %s: %s, why %s\n", text, ok ? "public" : "refused", why ? why : "(null)");
    CHECK(!ok);
    CHECK(why != NULL && strstr(why, want) != NULL);
}

static void expect_public(const char *text)
{
    const char *why;
    bool ok = public(text, &why);
    if (!ok)
        printf("# %s refused: %s\n", text, why);
    CHECK(ok);
}

static void test_v4(void)
{
    expect_refused("0.0.0.0", "0.0.0.0/8");
    expect_refused("0.1.2.3", "0.0.0.0/8");
    expect_refused("10.0.0.1", "10.0.0.0/8");
    expect_refused("10.255.255.255", "10.0.0.0/8");
    expect_refused("100.64.0.1", "100.64.0.0/10");
    expect_refused("100.127.255.255", "100.64.0.0/10");
    expect_refused("127.0.0.1", "loopback");
    expect_refused("127.255.0.1", "loopback");
    expect_refused("169.254.169.254", "metadata");
    expect_refused("172.16.0.1", "172.16.0.0/12");
    expect_refused("172.31.255.255", "172.16.0.0/12");
    expect_refused("192.0.0.8", "192.0.0.0/24");
    expect_refused("192.0.2.1", "documentation");
    expect_refused("192.168.1.1", "192.168.0.0/16");
    expect_refused("198.18.0.1", "198.18.0.0/15");
    expect_refused("198.19.255.255", "198.18.0.0/15");
    expect_refused("198.51.100.7", "documentation");
    expect_refused("203.0.113.9", "documentation");
    expect_refused("224.0.0.1", "multicast");
    expect_refused("240.0.0.1", "224.0.0.0/3");
    expect_refused("255.255.255.255", "broadcast");

    expect_public("1.1.1.1");
    expect_public("8.8.8.8");
    expect_public("151.101.0.223"); /* pypi.org */
    expect_public("100.63.255.255");
    expect_public("100.128.0.0");
    expect_public("172.15.255.255");
    expect_public("172.32.0.0");
    expect_public("198.17.255.255");
    expect_public("198.20.0.0");
    expect_public("223.255.255.255");
    expect_public("192.0.1.1");
    expect_public("192.169.0.1");
}

static void test_v6(void)
{
    expect_refused("::", "unspecified");
    expect_refused("::1", "loopback");
    expect_refused("64:ff9b::7f00:1", "64:ff9b::/96");  /* NAT64 of 127.0.0.1 */
    expect_refused("64:ff9b::808:808", "64:ff9b::/96"); /* even of a public one */
    expect_refused("64:ff9b:1::1", "64:ff9b:1::/48");
    expect_refused("fc00::1", "fc00::/7");
    expect_refused("fd12:3456::1", "fc00::/7");
    expect_refused("fe80::1", "fe80::/10");
    expect_refused("febf::1", "fe80::/10");
    expect_refused("fec0::1", "site-local");
    expect_refused("ff02::1", "multicast");
    expect_refused("::127.0.0.1", "2000::/3"); /* v4-compatible, deprecated */
    expect_refused("100::1", "2000::/3");
    expect_refused("2001:db8::1", "documentation");
    expect_refused("2002:7f00:1::1", "6to4");
    expect_refused("2001:0:4136:e378::1", "Teredo");
    expect_refused("4000::1", "2000::/3");

    expect_public("2a04:4e42::223"); /* pypi.org */
    expect_public("2606:4700:4700::1111");
    expect_public("2001:4860:4860::8888");
}

/* The embedded v4 of a v4-mapped address decides. */
static void test_v4_mapped(void)
{
    expect_refused("::ffff:127.0.0.1", "loopback");
    expect_refused("::ffff:10.1.2.3", "10.0.0.0/8");
    expect_refused("::ffff:169.254.169.254", "metadata");
    expect_refused("::ffff:192.168.0.1", "192.168.0.0/16");
    expect_refused("::ffff:0.0.0.0", "0.0.0.0/8");
    expect_public("::ffff:8.8.8.8");
}

static void test_not_ip(void)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    const char *why = NULL;
    CHECK(!egress_addr_public((struct sockaddr *)&un, &why));
    CHECK(why != NULL && strstr(why, "not an IP") != NULL);
    CHECK(!egress_addr_public((struct sockaddr *)&un, NULL));
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    a4.sin_addr.s_addr = htonl(0x08080808);
    CHECK(egress_addr_public((struct sockaddr *)&a4, NULL));
}

static void test_fake(void)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    uint32_t index = 12345;

    CHECK(inet_pton(AF_INET, "198.18.0.0", &a4.sin_addr) == 1);
    CHECK(egress_addr_fake((struct sockaddr *)&a4, &index) && index == 0);
    CHECK(inet_pton(AF_INET, "198.18.1.2", &a4.sin_addr) == 1);
    CHECK(egress_addr_fake((struct sockaddr *)&a4, &index) && index == 258);
    CHECK(inet_pton(AF_INET, "198.19.255.255", &a4.sin_addr) == 1);
    CHECK(egress_addr_fake((struct sockaddr *)&a4, &index) && index == 131071);
    CHECK(egress_addr_fake((struct sockaddr *)&a4, NULL));
    CHECK(inet_pton(AF_INET, "198.20.0.0", &a4.sin_addr) == 1);
    CHECK(!egress_addr_fake((struct sockaddr *)&a4, &index));
    CHECK(inet_pton(AF_INET, "198.17.255.255", &a4.sin_addr) == 1);
    CHECK(!egress_addr_fake((struct sockaddr *)&a4, &index));
    CHECK(inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr) == 1);
    CHECK(!egress_addr_fake((struct sockaddr *)&a4, &index));

    /* What a dual-stack listener's getsockname gives for a v4 connect. */
    CHECK(inet_pton(AF_INET6, "::ffff:198.18.0.7", &a6.sin6_addr) == 1);
    CHECK(egress_addr_fake((struct sockaddr *)&a6, &index) && index == 7);
    CHECK(inet_pton(AF_INET6, "::c612:7", &a6.sin6_addr) == 1); /* v4-compatible: no */
    CHECK(!egress_addr_fake((struct sockaddr *)&a6, &index));
    CHECK(inet_pton(AF_INET6, "64:ff9b::c612:7", &a6.sin6_addr) == 1);
    CHECK(!egress_addr_fake((struct sockaddr *)&a6, &index));
}

void suite_egress_vet(void)
{
    RUN_TEST(test_v4);
    RUN_TEST(test_v6);
    RUN_TEST(test_v4_mapped);
    RUN_TEST(test_not_ip);
    RUN_TEST(test_fake);
}
