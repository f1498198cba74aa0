/* Egress rules: parsing, formatting and matching (rules.h). */
#include "rules.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name.h"
#include "rules_l7.h"

#define RULE_TEXT_MAX EGRESS_RULE_TEXT_MAX
#define RULE_INPUT_MAX 600 /* under RULE_TEXT_MAX: the canonical text may add ports */

static const char *const pypi_names[] = {"pypi.org", "files.pythonhosted.org", NULL};
static const char *const npm_names[] = {"registry.npmjs.org", NULL};
static const char *const debian_names[] = {"deb.debian.org", "security.debian.org", NULL};
static const char *const github_names[] = {"github.com", "codeload.github.com",
                                           "objects.githubusercontent.com", NULL};

static const struct preset {
    const char *name;
    const char *const *hosts;
} presets[] = {
    {"pypi", pypi_names},
    {"npm", npm_names},
    {"debian", debian_names},
    {"github", github_names},
};

static const uint16_t default_ports[] = {80, 443};

/* ---- names ---- */

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return n > 0;
}

/* An IP literal is never a name: "127.1", "0x7f.1" and "2130706433" are
 * addresses to inet_aton (and so to getaddrinfo), and no top-level domain
 * is numeric. */
static bool looks_like_ip(const char *name)
{
    struct in_addr a;
    const char *last = strrchr(name, '.');
    last = last ? last + 1 : name;
    return inet_aton(name, &a) != 0 || all_digits(last, strlen(last));
}

static int check_labels(const char *name, const char **why)
{
    size_t label = 0;
    for (const char *c = name;; c++) {
        if (*c == '.' || *c == '\0') {
            if (label == 0) {
                *why = "an empty label";
                return -1;
            }
            if (label > 63) {
                *why = "a label over 63 bytes";
                return -1;
            }
            if (*c == '\0')
                return 0;
            label = 0;
            continue;
        }
        if (label == 0 && *c == '-') {
            *why = "a label starting with '-'";
            return -1;
        }
        label++;
    }
}

int egress_name_normalize(const char *in, size_t len, char out[EGRESS_NAME_MAX + 1],
                          const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    out[0] = '\0';
    if (len > 0 && in[len - 1] == '.')
        len--;
    if (len == 0 || len > EGRESS_NAME_MAX) {
        *why = len == 0 ? "an empty name" : "a name over 253 bytes";
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.')) {
            *why = "a byte outside [a-z0-9-_.]";
            return -1;
        }
        out[i] = c;
    }
    out[len] = '\0';
    if (check_labels(out, why) < 0) {
        out[0] = '\0';
        return -1;
    }
    if (looks_like_ip(out)) {
        *why = "an IP address, not a name";
        out[0] = '\0';
        return -1;
    }
    return 0;
}

bool egress_name_below(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s + 1 && name[n - s - 1] == '.' && memcmp(name + n - s, suffix, s) == 0;
}

/* ---- parsing ---- */

static int parse_port(const char *s, size_t n, uint16_t *port)
{
    if (n == 0 || n > 5 || !all_digits(s, n))
        return -1;
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned long)(s[i] - '0');
    if (v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

static int cmp_port(const void *a, const void *b)
{
    return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* "80,443" into r->ports, sorted and without duplicates. */
static int parse_ports(const char *text, const char *s, struct egress_rule *r,
                       struct nsbox_err *err)
{
    r->n_ports = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        uint16_t port;
        if (parse_port(s, n, &port) < 0)
            return nsbox_err_set(err, 0, "network rule '%s': '%.*s' is not a port (1-65535)", text,
                                 (int)n, s);
        bool dup = false;
        for (size_t i = 0; i < r->n_ports; i++)
            dup |= r->ports[i] == port;
        if (!dup && r->n_ports == EGRESS_MAX_PORTS)
            return nsbox_err_set(err, 0, "network rule '%s': more than %d ports", text,
                                 EGRESS_MAX_PORTS);
        if (!dup)
            r->ports[r->n_ports++] = port;
        if (!comma)
            break;
        s = comma + 1;
    }
    qsort(r->ports, r->n_ports, sizeof(r->ports[0]), cmp_port);
    return 0;
}

static void set_default_ports(struct egress_rule *r)
{
    memcpy(r->ports, default_ports, sizeof(default_ports));
    r->n_ports = sizeof(default_ports) / sizeof(default_ports[0]);
}

/* "1.2.3.4:P" or "[v6]:P" into r->addr with r->ports = {P}. */
static int parse_addr_port(const char *text, const char *s, struct egress_rule *r,
                           struct nsbox_err *err)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon;
    bool v6 = s[0] == '[';
    if (v6) {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return nsbox_err_set(
                err, 0, "network rule '%s': an IPv6 address needs a port: [ADDR]:PORT", text);
        colon = close + 1;
        s++;
    } else {
        colon = strchr(s, ':');
        if (!colon)
            return nsbox_err_set(err, 0, "network rule '%s': an IP address needs a port (IP:PORT)",
                                 text);
    }
    size_t n = (size_t)(colon - s) - (v6 ? 1 : 0);
    if (n >= sizeof(host))
        return nsbox_err_set(err, 0, "network rule '%s': not an IP address", text);
    memcpy(host, s, n);
    host[n] = '\0';
    if (strchr(colon + 1, ','))
        return nsbox_err_set(err, 0, "network rule '%s': an address takes one port", text);
    if (parse_ports(text, colon + 1, r, err) < 0)
        return -1;
    memset(&r->addr, 0, sizeof(r->addr));
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&r->addr;
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return nsbox_err_set(err, 0, "network rule '%s': '%s' is not an IPv6 address", text,
                                 host);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(r->ports[0]);
        r->addr_len = sizeof(*a);
        if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr))
            return nsbox_err_set(
                err, 0, "network rule '%s': [::] is not one service; name its address", text);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&r->addr;
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            return nsbox_err_set(
                err, 0,
                "network rule '%s': '%s' is not an IPv4 address (IPv6 goes in brackets: [::1]:PORT)",
                text, host);
        a->sin_family = AF_INET;
        a->sin_port = htons(r->ports[0]);
        r->addr_len = sizeof(*a);
        if (a->sin_addr.s_addr == htonl(INADDR_ANY))
            return nsbox_err_set(
                err, 0, "network rule '%s': 0.0.0.0 is not one service; name its address", text);
    }
    return 0;
}

static int parse_name(const char *text, const char *s, size_t n, char *out, struct nsbox_err *err)
{
    const char *why = "";
    if (egress_name_normalize(s, n, out, &why) < 0)
        return nsbox_err_set(err, 0, "network rule '%s': '%.*s' is not a host name (%s)", text,
                             (int)n, s, why);
    return 0;
}

/* NAME=IP:PORT */
static int parse_mapped(const char *text, const char *eq, struct egress_rule *r,
                        struct nsbox_err *err)
{
    r->kind = EGRESS_RULE_MAPPED;
    r->operator_only = true;
    if (parse_name(text, text, (size_t)(eq - text), r->host, err) < 0)
        return -1;
    return parse_addr_port(text, eq + 1, r, err);
}

static const struct preset *find_preset(const char *text, size_t n)
{
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
        if (strlen(presets[i].name) == n && strncasecmp(presets[i].name, text, n) == 0)
            return &presets[i];
    return NULL;
}

/* NAME[:PORTS] or *.SUFFIX[:PORTS] */
static int parse_name_rule(const char *text, struct egress_rule *r, struct nsbox_err *err)
{
    const char *s = text;
    const char *colon = strchr(s, ':');
    if (colon && strchr(colon + 1, ':'))
        return nsbox_err_set(
            err, 0, "network rule '%s': an IPv6 address goes in brackets with a port: [ADDR]:PORT",
            text);
    r->kind = EGRESS_RULE_NAME;
    if (s[0] == '*') {
        if (s[1] != '.')
            return nsbox_err_set(err, 0, "network rule '%s': a wildcard is '*.SUFFIX'", text);
        r->kind = EGRESS_RULE_WILDCARD;
        s += 2;
    }
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    if (parse_name(text, s, n, r->host, err) < 0)
        return -1;
    /* "pypi." would be the host pypi, whose canonical text is the preset. */
    if (r->kind == EGRESS_RULE_NAME && find_preset(r->host, strlen(r->host)))
        return nsbox_err_set(
            err, 0,
            "network rule '%s': '%s' is a preset, not a host name (write it alone, without a port or dot)",
            text, r->host);
    if (!colon) {
        set_default_ports(r);
        return 0;
    }
    return parse_ports(text, colon + 1, r, err);
}

static bool ip_literal_first(const char *s)
{
    const char *end = s + strcspn(s, ":");
    struct in_addr a;
    char host[16];
    size_t n = (size_t)(end - s);
    if (s[0] == '[')
        return true;
    if (n == 0 || n >= sizeof(host))
        return false;
    memcpy(host, s, n);
    host[n] = '\0';
    return inet_pton(AF_INET, host, &a) == 1;
}

static int parse_rule(const char *text, struct egress_rule *r, struct nsbox_err *err)
{
    memset(r, 0, sizeof(*r));
    const char *eq = strchr(text, '=');
    if (eq)
        return parse_mapped(text, eq, r, err);
    if (ip_literal_first(text)) {
        r->kind = EGRESS_RULE_ADDR;
        r->operator_only = true;
        return parse_addr_port(text, text, r, err);
    }
    return parse_name_rule(text, r, err);
}

static int add_preset(struct egress_policy *p, const struct preset *ps, struct nsbox_err *err)
{
    size_t n = 0;
    while (ps->hosts[n])
        n++;
    if (p->n + n > EGRESS_MAX_RULES)
        return nsbox_err_set(err, 0, "network rule '%s': more than %d rules", ps->name,
                             EGRESS_MAX_RULES);
    for (size_t i = 0; i < n; i++) {
        struct egress_rule *r = &p->rules[p->n++];
        memset(r, 0, sizeof(*r));
        r->kind = EGRESS_RULE_NAME;
        snprintf(r->host, sizeof(r->host), "%s", ps->hosts[i]);
        set_default_ports(r);
    }
    return 0;
}

int egress_policy_add(struct egress_policy *p, const char *text, struct nsbox_err *err)
{
    size_t len = strlen(text);
    if (len == 0)
        return nsbox_err_set(err, 0,
                             "empty network rule: give a host name, *.SUFFIX, IP:PORT, "
                             "NAME=IP:PORT or a preset (pypi, npm, debian, github)");
    if (len >= RULE_INPUT_MAX)
        return nsbox_err_set(err, 0, "network rule '%.64s...': too long", text);
    /* HOSTRULE [METHODS [PATHS]] */
    char hostrule[RULE_TEXT_MAX];
    size_t hn = strcspn(text, " ");
    snprintf(hostrule, sizeof(hostrule), "%.*s", (int)hn, text);
    const char *l7 = text[hn] == ' ' ? text + hn + 1 : NULL;
    if (hn == 0)
        return nsbox_err_set(err, 0, "network rule '%s': starts with a space", text);
    const struct preset *ps = find_preset(hostrule, strcspn(hostrule, ":"));
    if (ps && hostrule[strlen(ps->name)] == ':')
        return nsbox_err_set(err, 0, "network rule '%s': a preset takes no port", text);
    if (ps && l7)
        return nsbox_err_set(err, 0,
                             "network rule '%s': methods and paths go on one host, not a preset: "
                             "name the host",
                             text);
    if (ps)
        return add_preset(p, ps, err);
    if (p->n >= EGRESS_MAX_RULES)
        return nsbox_err_set(err, 0, "network rule '%s': more than %d rules", text,
                             EGRESS_MAX_RULES);
    struct egress_rule r;
    if (parse_rule(hostrule, &r, err) < 0)
        return -1;
    if (l7 && egress_l7_parse(text, l7, &r, err) < 0)
        return -1;
    p->rules[p->n++] = r;
    return 0;
}

/* ---- formatting ---- */

static void format_addr(const struct egress_rule *r, char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (r->addr.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&r->addr)->sin6_addr, ip, sizeof(ip));
        snprintf(buf, size, "[%s]:%u", ip, r->n_ports ? r->ports[0] : 0);
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&r->addr)->sin_addr, ip, sizeof(ip));
        snprintf(buf, size, "%s:%u", ip, r->n_ports ? r->ports[0] : 0);
    }
}

static void format_ports(const struct egress_rule *r, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_ports && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%u", i ? "," : "", r->ports[i]);
}

void egress_rule_format(const struct egress_rule *r, char *buf, size_t size)
{
    char addr[INET6_ADDRSTRLEN + 16], ports[EGRESS_MAX_PORTS * 6 + 1];
    if (size == 0)
        return;
    switch (r->kind) {
    case EGRESS_RULE_ADDR:
        format_addr(r, buf, size);
        return;
    case EGRESS_RULE_MAPPED:
        format_addr(r, addr, sizeof(addr));
        snprintf(buf, size, "%s=%s", r->host, addr);
        egress_l7_format(r, buf, size);
        return;
    case EGRESS_RULE_WILDCARD:
    case EGRESS_RULE_NAME:
        format_ports(r, ports, sizeof(ports));
        snprintf(buf, size, "%s%s:%s", r->kind == EGRESS_RULE_WILDCARD ? "*." : "", r->host, ports);
        egress_l7_format(r, buf, size);
        return;
    }
    buf[0] = '\0';
}

void egress_policy_format(const struct egress_policy *p, char *buf, size_t size)
{
    size_t off = 0;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < p->n && off + 1 < size; i++) {
        if (i)
            buf[off++] = ',';
        buf[off] = '\0';
        egress_rule_format(&p->rules[i], buf + off, size - off);
        off += strlen(buf + off);
    }
}

/* ---- matching ---- */

static bool has_port(const struct egress_rule *r, uint16_t port)
{
    for (size_t i = 0; i < r->n_ports; i++)
        if (r->ports[i] == port)
            return true;
    return false;
}

/* v4-mapped v6 (what a dual-stack listener's getsockname gives for a v4
 * connection) as the v4 address, so one rule matches both spellings. */
static void unmap(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
            struct sockaddr_in *a4 = (struct sockaddr_in *)out;
            a4->sin_family = AF_INET;
            a4->sin_port = a6->sin6_port;
            memcpy(&a4->sin_addr, &a6->sin6_addr.s6_addr[12], 4);
            return;
        }
        memcpy(out, a6, sizeof(*a6));
    } else if (sa->sa_family == AF_INET) {
        memcpy(out, sa, sizeof(struct sockaddr_in));
    }
}

/* Same family, address and port. */
static bool same_addr(const struct sockaddr *x, const struct sockaddr *y)
{
    struct sockaddr_storage a, b;
    unmap(x, &a);
    unmap(y, &b);
    if (a.ss_family != b.ss_family)
        return false;
    if (a.ss_family == AF_INET) {
        const struct sockaddr_in *a4 = (void *)&a, *b4 = (void *)&b;
        return a4->sin_port == b4->sin_port && a4->sin_addr.s_addr == b4->sin_addr.s_addr;
    }
    if (a.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (void *)&a, *b6 = (void *)&b;
        return a6->sin6_port == b6->sin6_port &&
               memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) == 0;
    }
    return false;
}

static const struct egress_rule *match_kind(const struct egress_policy *p, const char *name,
                                            uint16_t port, enum egress_rule_kind kind)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct egress_rule *r = &p->rules[i];
        if (r->kind != kind || (port != 0 && !has_port(r, port)))
            continue;
        if (kind == EGRESS_RULE_WILDCARD ? egress_name_below(name, r->host)
                                         : strcmp(name, r->host) == 0)
            return r;
    }
    return NULL;
}

/* The operator's mapping first (it says where the name goes), then the
 * name itself, then the wildcards. */
const struct egress_rule *egress_policy_match_name(const struct egress_policy *p, const char *name,
                                                   uint16_t port)
{
    const struct egress_rule *r = match_kind(p, name, port, EGRESS_RULE_MAPPED);
    if (!r)
        r = match_kind(p, name, port, EGRESS_RULE_NAME);
    if (!r)
        r = match_kind(p, name, port, EGRESS_RULE_WILDCARD);
    return r;
}

const struct egress_rule *egress_policy_match_addr(const struct egress_policy *p,
                                                   const struct sockaddr *sa)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->rules[i].kind == EGRESS_RULE_ADDR &&
            same_addr((const struct sockaddr *)&p->rules[i].addr, sa))
            return &p->rules[i];
    return NULL;
}

size_t egress_policy_ports(const struct egress_policy *p, uint16_t *ports, size_t max)
{
    uint16_t all[EGRESS_MAX_RULES * EGRESS_MAX_PORTS];
    size_t n = 0, out = 0;
    for (size_t i = 0; i < p->n; i++)
        for (size_t j = 0; j < p->rules[i].n_ports; j++)
            all[n++] = p->rules[i].ports[j];
    qsort(all, n, sizeof(all[0]), cmp_port);
    for (size_t i = 0; i < n && out < max; i++)
        if (i == 0 || all[i] != all[i - 1])
            ports[out++] = all[i];
    return out;
}

/* ---- within a ceiling ---- */

/* Whether c allows (r's names, port): a name or mapping of the same name,
 * or a wildcard above it; a wildcard covers a wildcard at or below its
 * suffix; addresses and mappings need the same rule.  A mapping covers a
 * name rule for its name and port: the name is all the sandbox sees. */
static bool covers(const struct egress_rule *c, const struct egress_rule *r, uint16_t port, bool l7)
{
    if (!has_port(c, port))
        return false;
    /* A rule that may resolve to private addresses reaches more than one
     * that may not: only a ceiling that allows that, or pins the address,
     * covers it. */
    if (r->allow_private && !c->allow_private && c->kind != EGRESS_RULE_MAPPED)
        return false;
    /* Method and path rules: the ceiling's bound the request's. */
    if (l7 && !egress_l7_within(c, r))
        return false;
    switch (r->kind) {
    case EGRESS_RULE_NAME:
        if (c->kind == EGRESS_RULE_WILDCARD)
            return egress_name_below(r->host, c->host);
        return (c->kind == EGRESS_RULE_NAME || c->kind == EGRESS_RULE_MAPPED) &&
               strcmp(c->host, r->host) == 0;
    case EGRESS_RULE_WILDCARD:
        return c->kind == EGRESS_RULE_WILDCARD &&
               (strcmp(c->host, r->host) == 0 || egress_name_below(r->host, c->host));
    case EGRESS_RULE_ADDR:
        return c->kind == EGRESS_RULE_ADDR &&
               same_addr((const struct sockaddr *)&c->addr, (const struct sockaddr *)&r->addr);
    case EGRESS_RULE_MAPPED:
        return c->kind == EGRESS_RULE_MAPPED && strcmp(c->host, r->host) == 0 &&
               same_addr((const struct sockaddr *)&c->addr, (const struct sockaddr *)&r->addr);
    }
    return false;
}

bool egress_rule_within(const struct egress_policy *ceiling, const struct egress_rule *r, char *why,
                        size_t why_size)
{
    for (size_t j = 0; j < r->n_ports; j++) {
        bool ok = false;
        for (size_t i = 0; i < ceiling->n && !ok; i++)
            ok = covers(&ceiling->rules[i], r, r->ports[j], true);
        if (ok)
            continue;
        const struct egress_rule *host_only = NULL;
        for (size_t i = 0; i < ceiling->n && !host_only; i++)
            if (covers(&ceiling->rules[i], r, r->ports[j], false))
                host_only = &ceiling->rules[i];
        if (why && why_size) {
            char text[RULE_TEXT_MAX];
            egress_rule_format(r, text, sizeof(text));
            if (host_only) {
                char have[RULE_TEXT_MAX];
                egress_rule_format(host_only, have, sizeof(have));
                snprintf(why, why_size,
                         "%s port %u: the methods or paths of '%s' are not allowed by the "
                         "operator, whose rule is '%s'",
                         r->host, r->ports[j], text, have);
            } else if (r->kind == EGRESS_RULE_NAME || r->kind == EGRESS_RULE_WILDCARD)
                snprintf(why, why_size, "%s%s port %u%s is not allowed by the operator",
                         r->kind == EGRESS_RULE_WILDCARD ? "*." : "", r->host, r->ports[j],
                         r->allow_private ? " (with private addresses)" : "");
            else
                snprintf(why, why_size, "%s is not allowed by the operator", text);
        }
        return false;
    }
    return true;
}
