/* The preview proxy's listening socket and the URLs made from it
 * (internal.h): bound by preview_start (proxy.c), read by table.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

/* More descriptors: each relayed connection holds four. */
static void raise_nofile(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max > 65536 ? 65536 : r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

static int listen_on(struct preview *p, const char *host, uint16_t port, struct nsbox_err *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai;
    char service[8];
    snprintf(service, sizeof(service), "%u", port);
    int e = getaddrinfo(host, service, &hints, &ai);
    if (e != 0)
        return nsbox_err_set(err, EINVAL, "--preview-listen %s: %s", host, gai_strerror(e));
    p->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (p->lfd >= 0)
        setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (p->lfd < 0 || bind(p->lfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(p->lfd, 1024) < 0) {
        freeaddrinfo(ai);
        return nsbox_err_sys(err, "the preview listener on %s:%u", host, port);
    }
    freeaddrinfo(ai);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);
    getsockname(p->lfd, (struct sockaddr *)&sa, &sl);
    p->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                             : ((struct sockaddr_in *)&sa)->sin_port);
    return 0;
}

/* The public base, its scheme, and host mode's ":PORT". */
static void make_urls(struct preview *p, const struct preview_options *o)
{
    bool v6 = strchr(o->host, ':') != NULL;
    if (o->url)
        snprintf(p->base, sizeof(p->base), "%s", o->url);
    else
        snprintf(p->base, sizeof(p->base), "http://%s%s%s:%u", v6 ? "[" : "", o->host,
                 v6 ? "]" : "", p->port);
    size_t n = strlen(p->base);
    while (n > 0 && p->base[n - 1] == '/')
        p->base[--n] = '\0';
    snprintf(p->scheme, sizeof(p->scheme), "%s",
             strncmp(p->base, "https:", 6) == 0 ? "https" : "http");
    if (o->domain == NULL)
        return;
    snprintf(p->domain, sizeof(p->domain), "%s", o->domain);
    for (char *d = p->domain; *d; d++)
        if (*d >= 'A' && *d <= 'Z')
            *d = (char)(*d - 'A' + 'a');
    if (o->url == NULL) {
        snprintf(p->host_port, sizeof(p->host_port), ":%u", p->port);
        return;
    }
    /* the port of --preview-url's authority, if it names one */
    const char *a = strstr(p->base, "://");
    a = a ? a + 3 : p->base;
    const char *slash = strchr(a, '/'), *end = slash ? slash : a + strlen(a);
    const char *colon = NULL;
    for (const char *q = a; q < end; q++)
        if (*q == ':')
            colon = q;
        else if (*q == ']')
            colon = NULL;
    if (colon && end - colon < (long)sizeof(p->host_port))
        snprintf(p->host_port, sizeof(p->host_port), "%.*s", (int)(end - colon), colon);
}

int preview_listen(struct preview *p, const struct preview_options *o, struct nsbox_err *err)
{
    raise_nofile();
    if (listen_on(p, o->host, o->port, err) < 0)
        return -1;
    make_urls(p, o);
    return 0;
}

uint16_t preview_port(const struct preview *p)
{
    return p->port;
}

const char *preview_base(const struct preview *p)
{
    return p->base;
}

bool preview_host_mode(const struct preview *p)
{
    return p->domain[0] != '\0';
}

uint64_t preview_connections(const struct preview *p)
{
    return __atomic_load_n(&p->n_relayed, __ATOMIC_RELAXED);
}
