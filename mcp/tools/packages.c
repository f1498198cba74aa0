/* install_packages, and sandbox_create's `packages`: the package managers
 * run with only their registry reachable, then the sandbox is sealed
 * again; a pristine sandbox's install is cached as an image that later
 * sandboxes start from without any network (boxes/packages.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../boxes/packages.h"
#include "../../boxes/usage.h"
#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../pool.h"
#include "../sandboxes.h"
#include "args.h"
#include "packages.h"
#include "tools.h"

/* The install's longest run unless the call says: installs take longer
 * than the server's 30 s per call. */
#define INSTALL_TIMEOUT_S 300

static int allowed(const struct mcp_server *cfg, enum box_pkg_manager m, struct nsbox_err *err)
{
    if (cfg->installs & MCP_INSTALL_BIT(m))
        return 0;
    return nsbox_err_set(err, EPERM,
                         "installing with %s is turned off on this server (the operator allows "
                         "it with serve --install)",
                         box_pkg_manager_name(m));
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void request(const struct mcp_server *cfg, const struct mcp_pkg_args *a, double timeout_s,
                    struct box_pkg_request *rq)
{
    *rq = (struct box_pkg_request){.manager = a->manager,
                                   .packages = a->packages,
                                   .n_packages = a->n_packages,
                                   .requirements_file = a->requirements_file,
                                   .timeout_s = timeout_s,
                                   .cache_max = cfg->max_package_caches};
}

/* The result record of an install (res's network is moved into it). */
static json_t *result_json(const struct mcp_pkg_args *a, struct box_pkg_result *res)
{
    json_t *pk = json_array();
    for (size_t i = 0; i < a->n_packages; i++)
        json_array_append_new(pk, json_string(a->packages[i]));
    json_t *j = json_pack("{s:s,s:o,s:s?,s:s,s:i,s:s,s:o,s:b,s:s,s:I,s:I}", "manager",
                          box_pkg_manager_name(a->manager), "packages", pk, "requirements_file",
                          a->requirements_file, "status", res->status ? res->status : "error",
                          "exit_code", res->exit_code, "output", res->output ? res->output : "",
                          "network", res->network ? res->network : json_array(), "cached",
                          res->cached, "cache_key", res->key, "install_ms",
                          (json_int_t)res->install_ms, "commit_ms", (json_int_t)res->commit_ms);
    res->network = NULL;
    if (j != NULL && res->cached)
        json_object_set_new(j, "cache_image", json_string(res->image));
    if (j != NULL && res->not_cached != NULL)
        json_object_set_new(j, "not_cached", json_string(res->not_cached));
    return j;
}

int mcp_tool_install_packages(struct mcp_session *s, struct mcp_call *call, json_t *args,
                              struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_install_args a;
    struct box_pkg_request rq;
    struct box_pkg_result res;

    if (mcp_args_install_packages(s->cfg, args, &a, err) < 0 ||
        allowed(s->cfg, a.packages.manager, err) < 0)
        return -1;
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        request(s->cfg, &a.packages, a.timeout_s, &rq);
        mcp_call_log(s, call, "info", "sandbox %s: installing with %s", m->id,
                     box_pkg_manager_name(rq.manager));
        r = box_install(&m->box, &s->cfg->registries, &rq, -1, &call->cancel, &res, err);
        struct nsbox_err merr;
        if (box_measure(&m->box, &merr) < 0)
            nsbox_warn("sandbox %s: %s", m->box.sb.id, merr.msg);
        mcp_op_end(s, call, m);
    }
    mcp_sandbox_put(s, m);
    if (r < 0)
        return -1;
    out->structured = result_json(&a.packages, &res);
    box_pkg_result_free(&res);
    return 0;
}

/* A sandbox of the cache image for a, when there is one: lock_fd then
 * holds nothing; else the lock of its key is in *lock_fd (or -1: the
 * specification is a file, looked at once the sandbox runs).  NULL with
 * err->code 0 when there is no cache image, else with err. */
static struct mcp_sandbox *from_cache(struct mcp_session *s, const char *image,
                                      const struct mcp_create_args *a, double timeout_s,
                                      int *lock_fd, char key[BOX_PKG_KEY_LEN + 1], char *ref,
                                      size_t size, struct nsbox_err *err)
{
    struct images_image im;
    const struct mcp_pkg_args *p = &a->packages;

    *lock_fd = -1;
    err->code = 0;
    if (p->requirements_file != NULL || a->workspace != NULL)
        return NULL;
    if (images_lookup(&s->cfg->boxes.store, image, &im, err) < 0)
        return NULL;
    box_pkg_key(im.digest, a->workdir ? a->workdir : box_defaults.workdir, p->manager,
                box_pkg_registry(p->manager, &s->cfg->registries), p->packages, p->n_packages, NULL,
                0, key);
    images_image_free(&im);
    /* Held until the install is saved: a concurrent session asking for the
     * same set waits, then starts from the cache. */
    if ((*lock_fd = box_pkg_lock(&s->cfg->boxes, key, timeout_s, err)) < 0)
        return NULL;
    int c = box_pkg_cached(&s->cfg->boxes, key, ref, size, err);
    if (c == 0)
        err->code = 0; /* a miss is no error */
    if (c <= 0)
        return NULL;
    return mcp_sandbox_new(s, ref, &a->limits.limits, a->env, a->workdir, a->workspace, false, err);
}

/* Runs the install in the new sandbox m; on failure stops it. */
static int install_new(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                       const struct mcp_create_args *a, double timeout_s, int lock_fd,
                       json_t **installed, struct nsbox_err *err)
{
    struct box_pkg_request rq;
    struct box_pkg_result res;
    char id[sizeof(m->id)];
    struct nsbox_err ignored;

    snprintf(id, sizeof(id), "%s", m->id);
    request(s->cfg, &a->packages, timeout_s, &rq);
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        r = box_install(&m->box, &s->cfg->registries, &rq, lock_fd, &call->cancel, &res, err);
        mcp_op_end(s, call, m);
    }
    if (r == 0 && strcmp(res.status, "ok") != 0) {
        nsbox_err_set(err, EIO,
                      "installing the packages failed (%s, exit code %d); the sandbox "
                      "was removed. The install's output ends:\n%s",
                      res.status, res.exit_code, res.output ? res.output : "");
        box_pkg_result_free(&res);
        r = -1;
    }
    if (r < 0) {
        mcp_sandbox_put(s, m);
        mcp_sandbox_stop(s, id, &ignored);
        return -1;
    }
    *installed = result_json(&a->packages, &res);
    box_pkg_result_free(&res);
    return 0;
}

struct mcp_sandbox *mcp_packages_create(struct mcp_session *s, struct mcp_call *call,
                                        const char *image, const struct mcp_create_args *a,
                                        json_t **installed, struct nsbox_err *err)
{
    char key[BOX_PKG_KEY_LEN + 1], ref[160];
    double timeout_s = a->limits.has_timeout ? a->limits.limits.timeout_s : INSTALL_TIMEOUT_S;
    double t0 = now_ms();

    *installed = NULL;
    if (timeout_s > s->cfg->ceilings.timeout_s)
        timeout_s = s->cfg->ceilings.timeout_s;
    if (allowed(s->cfg, a->packages.manager, err) < 0)
        return NULL;
    _cleanup_close_ int lock_fd = -1;
    struct mcp_sandbox *m = from_cache(s, image, a, timeout_s, &lock_fd, key, ref, sizeof(ref),
                                       err);
    if (m != NULL) {
        /* No install, no network: the set is in the image. */
        *installed = json_pack("{s:s,s:b,s:s,s:s,s:[],s:I}", "manager",
                               box_pkg_manager_name(a->packages.manager), "cached", 1, "cache_key",
                               key, "cache_image", ref, "network", "start_ms",
                               (json_int_t)(now_ms() - t0));
        return m;
    }
    if (err->code != 0)
        return NULL;
    m = mcp_sandbox_new(s, image, &a->limits.limits, a->env, a->workdir, a->workspace, false, err);
    if (m == NULL || install_new(s, call, m, a, timeout_s, lock_fd, installed, err) < 0)
        return NULL;
    if (*installed != NULL)
        json_object_set_new(*installed, "start_ms", json_integer((json_int_t)(now_ms() - t0)));
    return m;
}
