/* nsbox_sandbox_create (sandbox.h): the record made ready, then the
 * backend of the isolation asked for (spawn.h), as the cgroup code picks
 * its backend (cgroup_backend.h):
 *   namespaces  namespaces_spawn.c: new namespaces, an overlay root, a
 *               cgroup
 *   landlock    landlock_spawn.c: fork under Landlock, seccomp and rlimits,
 *               where namespaces are not to be had (docs/isolation.md) */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "landlock.h"
#include "sandbox.h"
#include "spawn.h"

typedef int (*create_fn)(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                         struct nsbox_err *err);

static const create_fn backends[] = {
    [NSBOX_ISOLATION_NAMESPACES] = nsbox_namespaces_create,
    [NSBOX_ISOLATION_LANDLOCK] = nsbox_landlock_create,
};

/* Anything but landlock is the namespaces backend, as it always was. */
static create_fn backend_for(enum nsbox_isolation isolation)
{
    if ((unsigned)isolation >= sizeof(backends) / sizeof(backends[0]) || !backends[isolation])
        return nsbox_namespaces_create;
    return backends[isolation];
}

int nsbox_sandbox_create(const struct nsbox_sandbox_config *cfg, struct nsbox_sandbox *out,
                         struct nsbox_err *err)
{
    memset(out, 0, sizeof(*out));
    out->ctl = out->pidfd = out->disk.fd = -1;
    out->rootless = cfg->rootless_map != NULL;
    if (out->rootless)
        out->idmap = *cfg->rootless_map;
    if ((cfg->workdir && strlen(cfg->workdir) >= sizeof(out->workdir)) ||
        (cfg->workspace && strlen(cfg->workspace) >= sizeof(out->workspace)))
        return nsbox_err_set(err, ENAMETOOLONG, "the %s path is longer than %d bytes",
                             cfg->workspace && strlen(cfg->workspace) >= sizeof(out->workspace)
                                 ? "workspace"
                                 : "workdir",
                             NSBOX_SANDBOX_PATH_MAX - 1);
    /* For the state file: where a run's files live (nsbox_changes_take). */
    snprintf(out->workdir, sizeof(out->workdir), "%s", cfg->workdir ? cfg->workdir : "");
    snprintf(out->workspace, sizeof(out->workspace), "%s", cfg->workspace ? cfg->workspace : "");
    if (cfg->seccomp == NULL)
        return nsbox_err_set(err, EINVAL, "a sandbox needs a seccomp profile");
    return backend_for(cfg->isolation)(cfg, out, err);
}
