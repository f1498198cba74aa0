/* port_expose, port_list, port_close (ports.h).  A sandbox's exposures
 * are a list in its record (mcp_sandbox.ports), under one lock here;
 * each is a preview exposure (HTTP: mcp/preview/preview.h, a signed URL
 * that expires) or a loopback forward (stdio: boxes/forward.h, a listener
 * on the host's 127.0.0.1 that lives with the sandbox).  Exposing a port
 * already exposed (and not expired) returns the same record: the same
 * URL and expiry.  mcp_ports_sandbox_gone ends them all before the box
 * is destroyed. */
#include "ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../boxes/forward.h"
#include "../../boxes/ports.h"
#include "../files/urls.h"
#include "../preview/preview.h"
#include "../sandboxes.h"

#define LOOPBACK_CONNS 64 /* connections at once to one loopback listener */

struct mcp_port {
    uint16_t port;
    struct preview *preview; /* HTTP: the proxy it is exposed on */
    uint64_t id;             /* its exposure there */
    struct box_forward *fwd; /* stdio: the loopback listener */
    char url[640];
    int64_t expires; /* unix s; 0: with the sandbox */
    struct mcp_port *next;
};

struct mcp_ports {
    struct mcp_port *list;
};

static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;

static void end(struct mcp_port *e)
{
    if (e->preview)
        preview_unexpose(e->preview, e->id);
    box_forward_stop(e->fwd);
    free(e);
}

/* Under ports_lock: the expired entries of m move to *gone. */
static void reap_expired(struct mcp_sandbox *m, struct mcp_port **gone)
{
    time_t now = time(NULL);
    if (m->ports == NULL)
        return;
    for (struct mcp_port **pp = &m->ports->list, *e; (e = *pp) != NULL;) {
        if (e->expires != 0 && e->expires <= now) {
            *pp = e->next;
            e->next = *gone;
            *gone = e;
        } else {
            pp = &e->next;
        }
    }
}

static void end_all(struct mcp_port *e)
{
    while (e != NULL) {
        struct mcp_port *next = e->next;
        end(e);
        e = next;
    }
}

static json_t *port_json(const struct mcp_port *e)
{
    char when[32];
    if (e->expires)
        mcp_file_time_text(e->expires, when);
    return json_pack("{s:i,s:s,s:o,s:s}", "port", e->port, "url", e->url, "expires_at",
                     e->expires ? json_string(when) : json_null(), "mode",
                     e->fwd                          ? "loopback"
                     : preview_host_mode(e->preview) ? "host"
                                                     : "path");
}

/* A listener on 127.0.0.1:0 relayed to m's port. */
static int loopback(struct mcp_sandbox *m, struct mcp_port *e, struct nsbox_err *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        if (fd >= 0)
            close(fd);
        return nsbox_err_sys(err, "a listener on 127.0.0.1");
    }
    e->fwd = box_forward_start(&m->box, e->port, fd, LOOPBACK_CONNS, 0, err);
    if (e->fwd == NULL) {
        close(fd); /* still ours when it fails */
        return -1;
    }
    snprintf(e->url, sizeof(e->url), "http://127.0.0.1:%u/", ntohs(a.sin_port));
    return 0;
}

static size_t count(const struct mcp_sandbox *m)
{
    size_t n = 0;
    for (const struct mcp_port *e = m->ports ? m->ports->list : NULL; e; e = e->next)
        n++;
    return n;
}

/* Under ports_lock: m's record of port, made when there is none. */
static struct mcp_port *expose(struct mcp_session *s, struct mcp_sandbox *m, uint16_t port,
                               struct nsbox_err *err)
{
    struct mcp_port *e;
    for (e = m->ports ? m->ports->list : NULL; e; e = e->next)
        if (e->port == port)
            return e;
    size_t max = s->cfg->max_ports ? s->cfg->max_ports : PREVIEW_PORTS_DEFAULT;
    if (count(m) >= max)
        return nsbox_err_set(err, E2BIG,
                             "sandbox %s has %zu exposed ports, the most this server allows "
                             "(--max-ports): port_close one first",
                             m->id, max),
               NULL;
    if (m->ports == NULL && (m->ports = calloc(1, sizeof(*m->ports))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory"), NULL;
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory"), NULL;
    e->port = port;
    struct preview *p = s->cfg->preview;
    if (p != NULL) {
        struct preview_grant g;
        if (preview_expose(p, &m->box, port, &g, err) < 0) {
            free(e);
            return NULL;
        }
        e->preview = p;
        e->id = g.id;
        e->expires = g.expires;
        snprintf(e->url, sizeof(e->url), "%s", g.url);
    } else if (loopback(m, e, err) < 0) {
        free(e);
        return NULL;
    }
    e->next = m->ports->list;
    m->ports->list = e;
    return e;
}

int mcp_tool_port_expose(struct mcp_session *s, struct mcp_call *call, json_t *args,
                         struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_port_args a;
    struct mcp_port *gone = NULL;

    if (mcp_args_port_expose(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = -1;
    if (a.wait_s > 0) {
        if (box_port_wait(&m->box, a.port, (int)a.wait_s * 1000, &call->cancel, err) < 0) {
            if (err->code == ETIMEDOUT)
                nsbox_err_set(err, ETIMEDOUT,
                              "nothing listens on port %u in sandbox %s after %u s (start the "
                              "server first, e.g. with run_command and `nohup ... &`, and "
                              "listen on 127.0.0.1 or 0.0.0.0)",
                              a.port, m->id, a.wait_s);
            goto done;
        }
    }
    pthread_mutex_lock(&ports_lock);
    reap_expired(m, &gone);
    /* Held (mcp_sandbox_get): a stop waits for this call, then ends
     * what it added (mcp_ports_sandbox_gone). */
    struct mcp_port *e = expose(s, m, a.port, err);
    if (e != NULL) {
        out->structured = port_json(e);
        json_object_set_new(out->structured, "sandbox_id", json_string(m->id));
        r = 0;
    }
    pthread_mutex_unlock(&ports_lock);
done:
    mcp_sandbox_put(s, m);
    end_all(gone);
    return r;
}

int mcp_tool_port_list(struct mcp_session *s, struct mcp_call *call, json_t *args,
                       struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_port_args a;
    struct mcp_port *gone = NULL;
    uint16_t listening[1024]; /* the first of them, in order */

    (void)call;
    if (mcp_args_port_list(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    struct nsbox_err lerr = {0};
    int nl = box_ports_listening(&m->box, listening, 1024, &lerr);
    if (nl > 1024) /* the number of them all: only 1024 were stored */
        nl = 1024;
    json_t *ports = json_array(), *ls = json_array();
    for (int i = 0; i < nl; i++)
        json_array_append_new(ls, json_integer(listening[i]));
    pthread_mutex_lock(&ports_lock);
    reap_expired(m, &gone);
    for (struct mcp_port *e = m->ports ? m->ports->list : NULL; e; e = e->next)
        json_array_append_new(ports, port_json(e));
    pthread_mutex_unlock(&ports_lock);
    out->structured = json_pack("{s:s,s:o,s:o}", "sandbox_id", m->id, "ports", ports, "listening",
                                ls);
    mcp_sandbox_put(s, m);
    end_all(gone);
    return 0;
}

int mcp_tool_port_close(struct mcp_session *s, struct mcp_call *call, json_t *args,
                        struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_port_args a;
    struct mcp_port *e = NULL;

    (void)call;
    if (mcp_args_port_close(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    pthread_mutex_lock(&ports_lock);
    for (struct mcp_port **pp = m->ports ? &m->ports->list : NULL; pp && (e = *pp); pp = &e->next)
        if (e->port == a.port) {
            *pp = e->next;
            break;
        }
    pthread_mutex_unlock(&ports_lock);
    out->structured = json_pack("{s:s,s:i,s:b}", "sandbox_id", m->id, "port", a.port, "closed",
                                e != NULL);
    if (e != NULL)
        end(e);
    mcp_sandbox_put(s, m);
    return 0;
}

void mcp_ports_sandbox_gone(struct mcp_sandbox *m)
{
    pthread_mutex_lock(&ports_lock);
    struct mcp_ports *ps = m->ports;
    m->ports = NULL;
    pthread_mutex_unlock(&ports_lock);
    if (ps == NULL)
        return;
    end_all(ps->list);
    free(ps);
}

unsigned mcp_ports_open_connections(struct mcp_sandbox *m)
{
    unsigned n = 0;
    pthread_mutex_lock(&ports_lock);
    for (struct mcp_port *e = m->ports ? m->ports->list : NULL; e != NULL; e = e->next)
        n += e->preview ? preview_exposure_connections(e->preview, e->id)
                        : box_forward_open(e->fwd);
    pthread_mutex_unlock(&ports_lock);
    return n;
}
