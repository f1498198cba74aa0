/* Health probes: /healthz and /readyz (health.h). */
#include "health.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../boxes/run.h"
#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../pool.h"
#include "../tools/languages.h"
#include "../tools/tools.h"

#define CHECK_RUN_TIMEOUT_S 10.0 /* `true` that takes longer is a sick node */
#define CHECK_WAIT_MAX_S 60      /* a probe waits this long for another's check */

static time_t now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec;
}

/* ---- the store ---- */

/* The store is still the directory the server opened (not removed or
 * replaced under it), its image table reads, and a file can be made in
 * it.  0, or -1 with err. */
static int check_store(struct mcp_server *cfg, struct nsbox_err *err)
{
    struct images_store *st = &cfg->boxes.store;
    struct stat a, b;
    if (stat(st->root, &a) < 0)
        return nsbox_err_sys(err, "the store %s", st->root);
    if (fstat(st->root_fd, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return nsbox_err_set(err, ESTALE, "the store %s is not the directory the server opened",
                             st->root);
    struct images_image *v;
    size_t n;
    if (images_list(st, &v, &n, err) < 0)
        return nsbox_err_prefix(err, "the store's images");
    for (size_t i = 0; i < n; i++)
        images_image_free(&v[i]);
    free(v);
    /* An unnamed file, gone when closed: the store takes writes. */
    _cleanup_close_ int fd = openat(st->root_fd, "tmp", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return nsbox_err_sys(err, "cannot write in the store %s", st->root);
    return 0;
}

/* ---- the sandbox ---- */

/* A sandbox of the default language's image, made and destroyed, runs
 * `true`.  0, or -1 with err. */
static int check_sandbox(struct mcp_server *cfg, struct nsbox_err *err)
{
    /* The image a call without one gets; the lookup reads the server's
     * configuration only, through a session that is never used. */
    static struct mcp_session lookup; /* one check at a time uses it */
    lookup.cfg = cfg;
    const char *image = mcp_image_for_language(&lookup, MCP_LANGUAGE_DEFAULT);
    if (image == NULL)
        return mcp_no_image(&cfg->boxes.store, MCP_LANGUAGE_DEFAULT, err);
    struct mcp_sandbox *m = mcp_sandbox_build(cfg, image, &cfg->defaults, NULL, NULL, NULL, true,
                                              NULL, err);
    if (m == NULL)
        return nsbox_err_prefix(err, "making a sandbox of %s", image);
    char *argv[] = {"true", NULL};
    struct box_run rq = {0};
    struct box_run_result res = {0};
    box_exec_defaults(&m->box, &rq.exec);
    rq.exec.argv = argv;
    rq.exec.capture = true;
    rq.exec.timeout_s = CHECK_RUN_TIMEOUT_S;
    int r = box_run(&m->box, &rq, &res, err);
    if (r == 0 && box_result_exit_code(&res.exec) != 0)
        r = nsbox_err_set(err, EIO, "`true` in a sandbox of %s ended %s (exit code %d)", image,
                          box_result_status(&res.exec), box_result_exit_code(&res.exec));
    else if (r < 0)
        nsbox_err_prefix(err, "running `true` in a sandbox of %s", image);
    box_run_result_free(&res);
    mcp_sandbox_free(cfg, m);
    return r;
}

static size_t live_sandboxes(struct mcp_server *cfg)
{
    pthread_mutex_lock(&cfg->pool_lock);
    size_t n = cfg->n_live;
    pthread_mutex_unlock(&cfg->pool_lock);
    return n;
}

#define NOT_CHECKED_DRAINING "not checked: the node is draining"
#define NOT_CHECKED_STORE "not checked: the store check failed"

/* The sandbox check's verdict into out: the cached one while it is fresh
 * (or the node drains), else a new one, run by this probe or by the one
 * already running it.  A node that drains before its first check has
 * none (NOT_CHECKED_DRAINING), which fails no probe.  A broken store
 * (store_ok false) gets no new sandbox either: a check then would make
 * directories where the store was.  Nor does a node at its cap
 * (--max-total-sandboxes): it is busy, not sick, and a failed probe would
 * take it out of the router with its sandboxes; the last verdict stands
 * (or "ok": its sandboxes were made). */
static void sandbox_verdict(struct http_health *h, bool store_ok, char *out, size_t size)
{
    bool draining = mcp_node_draining(h->cfg);
    time_t deadline = now_s() + CHECK_WAIT_MAX_S;

    pthread_mutex_lock(&h->lock);
    while (h->checking && now_s() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&h->checked, &h->lock, &ts);
    }
    bool fresh = h->ever && now_s() - h->when < HTTP_HEALTH_SANDBOX_TTL_S;
    if (h->checking || fresh || (draining && h->ever)) {
        snprintf(out, size, "%s", h->checking && !h->ever ? "a check is under way" : h->verdict);
        pthread_mutex_unlock(&h->lock);
        return;
    }
    if (draining || !store_ok) { /* no new sandbox now */
        snprintf(out, size, "%s", draining ? NOT_CHECKED_DRAINING : NOT_CHECKED_STORE);
        pthread_mutex_unlock(&h->lock);
        return;
    }
    if (live_sandboxes(h->cfg) >= h->cfg->max_total) {
        snprintf(out, size, "%s", h->ever ? h->verdict : "ok");
        pthread_mutex_unlock(&h->lock);
        return;
    }
    h->checking = true;
    pthread_mutex_unlock(&h->lock);

    struct nsbox_err err = {0};
    int r = check_sandbox(h->cfg, &err);
    if (r < 0)
        nsbox_warn("health: the sandbox check failed: %s", err.msg);
    else
        nsbox_debug("health: the sandbox check passed");

    pthread_mutex_lock(&h->lock);
    snprintf(h->verdict, sizeof(h->verdict), "%s", r < 0 ? err.msg : "ok");
    h->checking = false;
    h->ever = true;
    h->when = now_s();
    snprintf(out, size, "%s", h->verdict);
    pthread_cond_broadcast(&h->checked);
    pthread_mutex_unlock(&h->lock);
}

/* ---- the probes ---- */

static enum http_result probe(struct http_health *h, struct MHD_Connection *c, bool ready)
{
    struct nsbox_err err = {0};
    char store[512] = "ok", sandbox[512];
    size_t sessions = 0;

    bool store_ok = check_store(h->cfg, &err) == 0;
    if (!store_ok)
        snprintf(store, sizeof(store), "%s", err.msg);
    sandbox_verdict(h, store_ok, sandbox, sizeof(sandbox));
    http_sessions_count(h->sessions, &sessions, NULL);
    bool draining = mcp_node_draining(h->cfg);
    bool healthy = strcmp(store, "ok") == 0 &&
                   (strcmp(sandbox, "ok") == 0 || strcmp(sandbox, NOT_CHECKED_DRAINING) == 0);
    const char *status = !healthy ? "fail" : draining ? "draining" : "ok";
    json_t *body = json_pack("{s:s,s:s?,s:b,s:I,s:I,s:{s:s,s:s}}", "status", status, "node",
                             h->cfg->node_id[0] ? h->cfg->node_id : NULL, "draining", draining,
                             "sessions", (json_int_t)sessions, "sandboxes",
                             (json_int_t)live_sandboxes(h->cfg), "checks", "store", store,
                             "sandbox", sandbox);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    unsigned code = healthy && !(ready && draining) ? HTTP_OK : HTTP_SERVICE_UNAVAILABLE;
    return http_reply(c, code, text, (struct http_header){"Cache-Control", "no-store"},
                      HTTP_NO_HEADER);
}

static enum http_result handle_health(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    (void)rq;
    return probe(ctx, c, false);
}

static enum http_result handle_ready(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    (void)rq;
    return probe(ctx, c, true);
}

int http_health_register(struct http_server *srv, struct http_health *h, struct mcp_server *cfg,
                         struct http_sessions *sessions, struct nsbox_err *err)
{
    struct http_route r = {
        .path = HTTP_HEALTH_PATH,
        .probe = true,
        .methods = "GET, HEAD",
        .method_hint = "method not allowed: use GET or HEAD",
        .handle = handle_health,
        .ctx = h,
    };
    h->cfg = cfg;
    h->sessions = sessions;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->checked, &attr);
    pthread_condattr_destroy(&attr);
    if (http_server_route(srv, &r, err) < 0)
        return -1;
    r.path = HTTP_READY_PATH;
    r.handle = handle_ready;
    return http_server_route(srv, &r, err);
}

void http_health_destroy(struct http_health *h)
{
    if (h->cfg == NULL)
        return;
    pthread_cond_destroy(&h->checked);
    pthread_mutex_destroy(&h->lock);
    h->cfg = NULL;
}
