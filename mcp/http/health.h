/* Health probes of `nsbox serve --http` (docs/tools.md "Fleet"): GET or
 * HEAD /healthz (liveness) and /readyz (readiness), for a kubelet or a
 * router.  No bearer token and any Host header (a kubelet sends the pod's
 * IP); what they show is no secret: the node's name, counts, and why a
 * check fails.  The body:
 *
 *   {"status":"ok"|"fail"|"draining","node":NAME|null,"draining":bool,
 *    "sessions":N,"sandboxes":N,"checks":{"store":"ok"|ERROR,"sandbox":"ok"|ERROR}}
 *
 * /healthz is 200 when both checks pass, else 503; draining does not fail
 * it (a liveness probe must not kill a draining pod).  /readyz is the same,
 * and 503 once the node drains.  The store check (the directory is still
 * the one opened, its image table reads, a file can be made in it) runs on
 * every probe.  The sandbox check (a sandbox of the default language's
 * image is made and runs `true`) runs at most once per
 * HTTP_HEALTH_SANDBOX_TTL_S, one at a time: a probe that finds the last
 * verdict stale runs it, probes meanwhile wait for its verdict, so a flood
 * of probes makes at most one sandbox per period.  A draining node makes no
 * new sandbox: it keeps its last verdict (none, before the first check:
 * "not checked: the node is draining", which fails no probe), and a node
 * whose store check fails makes none either. */
#ifndef NSBOX_MCP_HTTP_HEALTH_H
#define NSBOX_MCP_HTTP_HEALTH_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "../../common/err.h"
#include "../server.h"
#include "core.h"
#include "sessions.h"

#define HTTP_HEALTH_SANDBOX_TTL_S 30
#define HTTP_HEALTH_PATH "/healthz"
#define HTTP_READY_PATH "/readyz"

struct http_health {
    struct mcp_server *cfg;
    struct http_sessions *sessions;
    pthread_mutex_t lock; /* what follows */
    pthread_cond_t checked;
    bool checking;     /* a sandbox check is under way */
    bool ever;         /* one has ended */
    time_t when;       /* CLOCK_MONOTONIC seconds it ended */
    char verdict[512]; /* "ok", or why the sandbox check failed */
};

/* Registers /healthz and /readyz on srv for h (which must outlive srv),
 * initializing h for cfg and sessions.  Returns 0 or -1 with err. */
int http_health_register(struct http_server *srv, struct http_health *h, struct mcp_server *cfg,
                         struct http_sessions *sessions, struct nsbox_err *err);

/* Releases what register set up (the server stopped). */
void http_health_destroy(struct http_health *h);

#endif
