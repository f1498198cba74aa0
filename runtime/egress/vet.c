/* Which addresses the broker may connect to for a name rule (inspect.h).
 *
 * The sandbox never sees a real address: the broker resolves a name
 * itself and connects to what it vetted here, so a name that resolves to
 * the host's loopback, a LAN or a cloud metadata service (DNS rebinding)
 * gets nothing.  IPv6 is checked as an allow-list (global unicast
 * 2000::/3 only, minus the ranges below) so that a range forgotten here
 * fails closed. */
#include "inspect.h"

#include <arpa/inet.h>
#include <string.h>

struct v4_range {
    uint32_t net;
    uint8_t bits;
    const char *why;
};

#define V4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (d))

/* RFC 6890 and its updates: every special-purpose v4 block that is not
 * the public internet. */
static const struct v4_range v4_refused[] = {
    {V4(0, 0, 0, 0), 8, "'this network' (0.0.0.0/8)"},
    {V4(10, 0, 0, 0), 8, "a private address (10.0.0.0/8)"},
    {V4(100, 64, 0, 0), 10, "a shared carrier-grade NAT address (100.64.0.0/10)"},
    {V4(127, 0, 0, 0), 8, "a loopback address (127.0.0.0/8)"},
    {V4(169, 254, 0, 0), 16, "a link-local or cloud metadata address (169.254.0.0/16)"},
    {V4(172, 16, 0, 0), 12, "a private address (172.16.0.0/12)"},
    {V4(192, 0, 0, 0), 24, "an IETF protocol address (192.0.0.0/24)"},
    {V4(192, 0, 2, 0), 24, "a documentation address (192.0.2.0/24)"},
    {V4(192, 88, 99, 0), 24, "a 6to4 relay address (192.88.99.0/24)"},
    {V4(192, 168, 0, 0), 16, "a private address (192.168.0.0/16)"},
    {V4(198, 18, 0, 0), 15, "a benchmarking or nsbox fake address (198.18.0.0/15)"},
    {V4(198, 51, 100, 0), 24, "a documentation address (198.51.100.0/24)"},
    {V4(203, 0, 113, 0), 24, "a documentation address (203.0.113.0/24)"},
    {V4(224, 0, 0, 0), 3, "a multicast, reserved or broadcast address (224.0.0.0/3)"},
};

struct v6_range {
    uint8_t net[16];
    uint8_t bits;
    const char *why;
};

/* Inside 2000::/3, the blocks that are not one public host: they carry
 * another address inside (NAT64, 6to4, Teredo) that could be private, or
 * are documentation and benchmarking space. */
static const struct v6_range v6_refused[] = {
    {{0x20, 0x01, 0x00, 0x00}, 32, "a Teredo address (2001::/32)"},
    {{0x20, 0x01, 0x00, 0x02}, 48, "a benchmarking address (2001:2::/48)"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "a documentation address (2001:db8::/32)"},
    {{0x20, 0x02}, 16, "a 6to4 address (2002::/16)"},
    {{0x3f, 0xff, 0xf0, 0x00}, 20, "a documentation address (3fff::/20)"},
};

static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
    unsigned bytes = bits / 8, rest = bits % 8;
    if (memcmp(a, b, bytes) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[bytes] & mask) == (b[bytes] & mask);
}

static bool v4_public(uint32_t host_order, const char **why)
{
    for (size_t i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++) {
        uint32_t mask = 0xffffffffu << (32 - v4_refused[i].bits);
        if ((host_order & mask) == v4_refused[i].net) {
            *why = v4_refused[i].why;
            return false;
        }
    }
    return true;
}

static uint32_t v4_at(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* The v6 ranges named in inspect.h, checked before the allow-list so the
 * refusal says which one it was. */
static const char *v6_named(const struct in6_addr *a)
{
    static const uint8_t nat64[16] = {0x00, 0x64, 0xff, 0x9b};
    static const uint8_t nat64_local[16] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
    if (IN6_IS_ADDR_UNSPECIFIED(a))
        return "the unspecified address (::)";
    if (IN6_IS_ADDR_LOOPBACK(a))
        return "the loopback address (::1)";
    if (prefix_equal(a->s6_addr, nat64, 96))
        return "a NAT64 address (64:ff9b::/96)";
    if (prefix_equal(a->s6_addr, nat64_local, 48))
        return "a local NAT64 address (64:ff9b:1::/48)";
    if ((a->s6_addr[0] & 0xfe) == 0xfc)
        return "a unique local address (fc00::/7)";
    if (IN6_IS_ADDR_LINKLOCAL(a))
        return "a link-local address (fe80::/10)";
    if (IN6_IS_ADDR_SITELOCAL(a))
        return "a site-local address (fec0::/10)";
    if (IN6_IS_ADDR_MULTICAST(a))
        return "a multicast address (ff00::/8)";
    return NULL;
}

static bool v6_public(const struct in6_addr *a, const char **why)
{
    /* A v4-mapped address reaches the v4 one on a dual-stack socket. */
    if (IN6_IS_ADDR_V4MAPPED(a))
        return v4_public(v4_at(&a->s6_addr[12]), why);
    if ((*why = v6_named(a)) != NULL)
        return false;
    if ((a->s6_addr[0] & 0xe0) != 0x20) {
        *why = "not a global unicast IPv6 address (2000::/3)";
        return false;
    }
    for (size_t i = 0; i < sizeof(v6_refused) / sizeof(v6_refused[0]); i++)
        if (prefix_equal(a->s6_addr, v6_refused[i].net, v6_refused[i].bits)) {
            *why = v6_refused[i].why;
            return false;
        }
    return true;
}

bool egress_addr_public(const struct sockaddr *sa, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    *why = NULL;
    if (sa->sa_family == AF_INET)
        return v4_public(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr), why);
    if (sa->sa_family == AF_INET6)
        return v6_public(&((const struct sockaddr_in6 *)sa)->sin6_addr, why);
    *why = "not an IP address";
    return false;
}

bool egress_addr_fake(const struct sockaddr *sa, uint32_t *index)
{
    uint32_t a;
    if (sa->sa_family == AF_INET) {
        a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    } else if (sa->sa_family == AF_INET6 &&
               IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
        a = v4_at(&((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr[12]);
    } else {
        return false;
    }
    if ((a & 0xfffe0000u) != V4(198, 18, 0, 0))
        return false;
    if (index)
        *index = a - V4(198, 18, 0, 0);
    return true;
}
