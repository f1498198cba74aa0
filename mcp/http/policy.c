/* Checks on HTTP header values (see policy.h). */
#include "policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The protocol versions of mcp/protocol/ (lifecycle.c). */
static const char *const versions[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                       "2024-11-05"};

static bool is_loopback_name(const char *name, size_t n)
{
    static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (n == strlen(names[i]) && strncasecmp(name, names[i], n) == 0)
            return true;
    return false;
}

/* Splits "name[:port]" or "[v6][:port]"; *port is NULL when absent. */
static bool split_host_port(const char *s, size_t *name_len, const char **port)
{
    const char *colon;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL)
            return false;
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close[1] != '\0' && colon == NULL)
            return false;
    } else {
        colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            return false;
    }
    *name_len = colon ? (size_t)(colon - s) : strlen(s);
    *port = colon ? colon + 1 : NULL;
    if (*port &&
        (**port == '\0' || strspn(*port, "0123456789") != strlen(*port) || strlen(*port) > 5))
        return false;
    return *name_len > 0;
}

/* Compares a Host name with a configured one, bracketing IPv6 literals. */
static bool same_name(const char *name, size_t n, const char *host)
{
    char bracketed[260];
    if (strchr(host, ':') != NULL) { /* an IPv6 literal is bracketed in Host */
        snprintf(bracketed, sizeof(bracketed), "[%s]", host);
        host = bracketed;
    }
    return n == strlen(host) && strncasecmp(name, host, n) == 0;
}

/* DNS rebinding: a page in the browser reaches 127.0.0.1 under the
 * attacker's name, so the Host header must name us: a loopback name or the
 * configured host, with our port (or none when we are on port 80). */
bool http_host_allowed(const struct http_host_policy *p, const char *host)
{
    size_t n;
    const char *port;

    if (host == NULL || !split_host_port(host, &n, &port))
        return false;
    if (port ? strtoul(port, NULL, 10) != p->port : p->port != 80)
        return false;
    if (is_loopback_name(host, n))
        return true;
    for (size_t i = 0; i < p->n_names; i++)
        if (same_name(host, n, p->names[i]))
            return true;
    return false;
}

/* A browser sends Origin on cross-site requests: only pages served from
 * this machine's loopback names may talk to us (any port). */
bool http_origin_allowed(const char *origin)
{
    size_t n;
    const char *port;

    if (strncasecmp(origin, "http://", 7) == 0)
        origin += 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        origin += 8;
    else
        return false; /* "null", file://, chrome-extension://, ... */
    return split_host_port(origin, &n, &port) && is_loopback_name(origin, n);
}

/* Trims spaces and tabs at both ends, in place. */
static char *trim(char *s)
{
    s += strspn(s, " \t");
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* Whether media-range parameters say q=0 ("not acceptable"). */
static bool q_is_zero(char *params)
{
    for (char *save = NULL, *p = strtok_r(params, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        p = trim(p);
        if (strncasecmp(p, "q=", 2) == 0)
            return strtod(p + 2, NULL) == 0.0;
    }
    return false;
}

/* Whether an Accept header admits type ("text/event-stream"): listed
 * by name, or with wildcards also as "*" "/" "*" or "text/" "*"; a range
 * with q=0 admits nothing. */
bool http_accepts(const char *accept, const char *type, bool wildcards)
{
    size_t major = strcspn(type, "/");

    for (const char *p = accept; *p;) {
        size_t len = strcspn(p, ",");
        char buf[256];
        snprintf(buf, sizeof(buf), "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        char *params = strchr(buf, ';');
        if (params)
            *params++ = '\0';
        char *range = trim(buf);
        bool match = strcasecmp(range, type) == 0 ||
                     (wildcards &&
                      (strcmp(range, "*/*") == 0 ||
                       (strlen(range) == major + 2 && strncasecmp(range, type, major + 1) == 0 &&
                        range[major + 1] == '*')));
        if (match && !(params && q_is_zero(params)))
            return true;
    }
    return false;
}

bool http_content_type_json(const char *ct)
{
    if (ct == NULL)
        return false;
    size_t n = strcspn(ct, "; \t");
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

bool http_version_supported(const char *v)
{
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
        if (strcmp(v, versions[i]) == 0)
            return true;
    return false;
}

bool http_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

int http_parse_address(const char *arg, char *buf, size_t buf_size, uint16_t *port_out,
                       struct nsbox_err *err)
{
    const char *port = arg, *host = "127.0.0.1";
    size_t host_len = strlen(host);

    if (arg[0] == '[') {
        const char *close = strchr(arg, ']');
        if (close == NULL || close[1] != ':')
            return nsbox_err_set(err, EINVAL, "--http takes [IPV6]:PORT, got \"%s\"", arg);
        host = arg + 1, host_len = (size_t)(close - host), port = close + 2;
    } else if (strchr(arg, ':') != NULL) {
        const char *colon = strrchr(arg, ':');
        if (memchr(arg, ':', (size_t)(colon - arg)) != NULL)
            return nsbox_err_set(err, EINVAL, "write IPv6 addresses in brackets: [::1]:8080");
        if (colon > arg)
            host = arg, host_len = (size_t)(colon - arg);
        port = colon + 1;
    }
    char *end;
    unsigned long p = strtoul(port, &end, 10);
    if (*port == '\0' || *end != '\0' || p > 65535 || strspn(port, "0123456789") != strlen(port))
        return nsbox_err_set(err, EINVAL,
                             "--http takes HOST:PORT (e.g. 127.0.0.1:8080), got "
                             "\"%s\"",
                             arg);
    if (host_len == 0 || host_len >= buf_size)
        return nsbox_err_set(err, EINVAL, "bad host in \"%s\"", arg);
    memcpy(buf, host, host_len);
    buf[host_len] = '\0';
    *port_out = (uint16_t)p;
    return 0;
}
