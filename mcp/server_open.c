/* The server opened from a parsed configuration (config.h): its host
 * directories, registries, network ceiling and sandbox pool, and the
 * bearer token read from --token-file.  config.c holds the options. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../boxes/density.h"
#include "../boxes/net.h"
#include "../boxes/secrets.h"
#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "files/urls.h"
#include "pause.h"
#include "pool.h"

/* Held open by fd: copy_in/copy_out resolve beneath it, so a later rename
 * or symlink of the path itself changes nothing. */
static int open_host_dirs(struct mcp_server *s, const struct mcp_config *c, struct nsbox_err *err)
{
    for (size_t i = 0; i < c->n_host_dirs; i++) {
        char *real = realpath(c->host_dirs[i], NULL);
        int fd = real ? open(real, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        if (fd < 0) {
            free(real);
            return nsbox_err_set(err, ENOTDIR, "--allow-host-dir %s: not a directory",
                                 c->host_dirs[i]);
        }
        s->host_dirs[s->n_host_dirs].path = real;
        s->host_dirs[s->n_host_dirs++].fd = fd;
    }
    return 0;
}

/* install_packages' registries, copied, and the apt mirror's key read. */
static int open_registries(struct mcp_server *s, const struct mcp_config *c, struct nsbox_err *err)
{
    struct box_pkg_registries *r = &s->registries;
    s->installs = c->installs;
    s->max_package_caches = c->max_package_caches;
    if ((c->pip_index && !(r->pip_index = strdup(c->pip_index))) ||
        (c->npm_registry && !(r->npm_registry = strdup(c->npm_registry))) ||
        (c->apt_mirror && !(r->apt_mirror = strdup(c->apt_mirror))))
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (c->apt_key == NULL)
        return 0;
    if (c->apt_mirror == NULL)
        return nsbox_err_set(err, EINVAL, "--apt-key goes with --apt-mirror");
    size_t len;
    r->apt_key = nsbox_read_file_at(AT_FDCWD, c->apt_key, 1 << 20, &len, err);
    if (r->apt_key == NULL)
        return nsbox_err_prefix(err, "--apt-key %s", c->apt_key);
    r->apt_key_len = len;
    return 0;
}

static void close_registries(struct mcp_server *s)
{
    struct box_pkg_registries *r = &s->registries;
    free((char *)r->pip_index);
    free((char *)r->npm_registry);
    free((char *)r->apt_mirror);
    free((char *)r->apt_key);
    *r = (struct box_pkg_registries){0};
}

/* The ceiling from every --allow-net (each already checked). */
static int open_net_ceiling(struct mcp_server *s, const struct mcp_config *c, struct nsbox_err *err)
{
    if (c->n_allow_net == 0)
        return 0;
    if ((s->net_ceiling = malloc(sizeof(*s->net_ceiling))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (box_net_parse(s->net_ceiling, (char *const *)c->allow_net, c->n_allow_net, true, err) < 0)
        return nsbox_err_prefix(err, "--allow-net");
    return 0;
}

/* The server's own copy of the secrets (the configuration's is freed by
 * the front end after open). */
static int open_secrets(struct mcp_server *s, const struct mcp_config *c, struct nsbox_err *err)
{
    if (c->n_secrets == 0)
        return 0;
    if ((s->secrets = calloc(c->n_secrets, sizeof(*s->secrets))) == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    memcpy(s->secrets, c->secrets, c->n_secrets * sizeof(*s->secrets));
    s->n_secrets = c->n_secrets;
    return 0;
}

static void close_host_dirs(struct mcp_server *s)
{
    for (size_t i = 0; i < s->n_host_dirs; i++) {
        free(s->host_dirs[i].path);
        close(s->host_dirs[i].fd);
    }
    s->n_host_dirs = 0;
}

int mcp_server_open(struct mcp_server *s, const struct mcp_config *c, const struct box_ctx_opts *bo,
                    struct nsbox_err *err)
{
    struct box_ctx_opts o = *bo;
    o.mode = c->mode;
    o.isolation = c->isolation;
    *s = (struct mcp_server){
        .defaults = c->defaults,
        .ceilings = c->ceilings,
        .max_sandboxes = c->max_sandboxes,
        .max_watches = c->max_watches,
        .call_queue = c->call_queue,
        .max_total = c->max_total,
        .max_commits = c->max_commits,
        .max_checkpoints = c->max_checkpoints,
        .checkpoint_mb = c->checkpoint_mb,
        .max_inline_kb = c->max_inline_kb,
        .max_processes = (unsigned)c->max_processes,
        .process_log_kb = c->process_log_kb,
        .max_ports = c->max_ports,
        .max_spares = c->spares,
        .spare_lang = -1,
        .output_cap = box_defaults.output_cap,
        /* at most a year; a day */
        .max_task_ttl_s = (unsigned)(c->max_task_ttl_s < 86400 * 365 ? c->max_task_ttl_s
                                                                     : 86400 * 365),
        .task_after_ms = (unsigned)(c->task_after_s < 86400 ? c->task_after_s : 86400) * 1000};
    for (size_t i = 0; i < c->n_langs; i++)
        s->langs[i] = (struct mcp_lang){strdup(c->langs[i].language), strdup(c->langs[i].ref)};
    s->n_langs = c->n_langs;
    if (c->address != NULL && c->node_id != NULL) /* ids over stdio name nothing to route */
        snprintf(s->node_id, sizeof(s->node_id), "%s", c->node_id);
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_condattr_t ca; /* pool.c's waits are timed on the monotonic clock */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->pool_idle, &ca);
    pthread_condattr_destroy(&ca);
    if (open_host_dirs(s, c, err) < 0 || open_net_ceiling(s, c, err) < 0 ||
        open_secrets(s, c, err) < 0 || open_registries(s, c, err) < 0 ||
        mcp_pool_warm_parse(c->warm_import, &s->warm_import, err) < 0) {
        mcp_server_close(s);
        return -1;
    }
    /* One fd per idle sandbox (box_trim): the soft open-files limit goes
     * up to the hard one, and a cap beyond the host's limits is said. */
    box_density_raise_nofile();
    struct box_density dens;
    box_density_probe(&dens);
    if (c->max_total > dens.cap)
        nsbox_warn("--max-total-sandboxes %zu: this host's limits allow one server about %zu "
                   "sandboxes, capped by %s (fix: %s; docs/density.md)",
                   c->max_total, dens.cap, dens.limit, dens.fix);
    s->opened = true; /* box_ctx_close undoes even a failed box_ctx_open */
    if (box_ctx_open(&s->boxes, &o, err) < 0 || box_ctx_default_seccomp(&s->boxes, err) == NULL) {
        mcp_server_close(s);
        return -1;
    }
    if (c->checkpoint_dir != NULL
            ? (s->checkpoint_dir = strdup(c->checkpoint_dir)) == NULL
            : asprintf(&s->checkpoint_dir, "%s/checkpoints", s->boxes.store.root) < 0) {
        s->checkpoint_dir = NULL;
        mcp_server_close(s);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    /* Sandboxes' inits are cloned from a small process forked now, not
     * from this one once it has grown threads (docs/burst.md); without it
     * they are cloned from here, slower under a burst. */
    struct nsbox_err sp_err;
    if (box_spawner_start(&s->boxes, &sp_err) < 0)
        nsbox_warn("no spawner (sandboxes are cloned from the server): %s", sp_err.msg);
    struct nsbox_err gc_err;
    if (box_ctx_gc(&s->boxes, &gc_err) < 0)
        nsbox_warn("cleaning stale sandboxes: %s", gc_err.msg);
    /* Without the drivers, kept sandboxes still run code, as fresh
     * processes; the result says so (docs/interpreters.md). */
    struct nsbox_err drv_err;
    if (mcp_interp_drivers_dir(s->boxes.store.root, s->drivers_dir, sizeof(s->drivers_dir),
                               &drv_err) < 0) {
        nsbox_warn("no persistent interpreters: %s", drv_err.msg);
        s->drivers_dir[0] = '\0';
    }
    s->auto_pause_s = c->auto_pause_s;
    s->allow_nested = c->allow_nested;
    if (mcp_autopause_start(s, err) < 0) {
        mcp_server_close(s);
        return -1;
    }
    return 0;
}

void mcp_server_close(struct mcp_server *s)
{
    mcp_autopause_stop(s); /* every session has been forgotten by now */
    /* The spare sandbox and removals still under way. */
    mcp_pool_drain(s);
    box_spawner_stop();
    box_bg_keeper_free(s->bg_keeper); /* every sandbox's set is gone by now */
    s->bg_keeper = NULL;
    if (s->opened)
        box_ctx_close(&s->boxes);
    s->opened = false;
    close_host_dirs(s);
    free(s->checkpoint_dir);
    s->checkpoint_dir = NULL;
    free(s->net_ceiling);
    s->net_ceiling = NULL;
    if (s->secrets != NULL)
        explicit_bzero(s->secrets, s->n_secrets * sizeof(*s->secrets));
    free(s->secrets);
    s->secrets = NULL;
    s->n_secrets = 0;
    close_registries(s);
    for (size_t i = 0; i < s->n_langs; i++) {
        free(s->langs[i].language);
        free(s->langs[i].ref);
    }
    s->n_langs = 0;
    for (size_t i = 0; s->warm_import != NULL && s->warm_import[i] != NULL; i++)
        free(s->warm_import[i]);
    free(s->warm_import);
    s->warm_import = NULL;
    pthread_cond_destroy(&s->pool_idle);
    pthread_mutex_destroy(&s->pool_lock);
}

/* Strips trailing whitespace; a token is visible ASCII (it travels in an
 * HTTP header) and long enough not to be guessed. */
static int check_token(char *t, const char *from, struct nsbox_err *err)
{
    size_t n = strlen(t);
    while (n > 0 && strchr(" \t\r\n", t[n - 1]) != NULL)
        t[--n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0x21 || t[i] > 0x7e)
            return nsbox_err_set(err, EINVAL,
                                 "the token in %s has a space or a control or "
                                 "non-ASCII character",
                                 from);
    if (n < 16)
        return nsbox_err_set(err, EINVAL,
                             "the token in %s is too short (%zu characters; use "
                             "16 or more, e.g. `openssl rand -hex 32`)",
                             from, n);
    return 0;
}

static int read_token_file(const char *file, char *buf, size_t size, struct nsbox_err *err)
{
    _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    ssize_t n;
    if (fd < 0 || fstat(fd, &st) < 0)
        return nsbox_err_sys(err, "cannot read the token file %s", file);
    if (!S_ISREG(st.st_mode))
        return nsbox_err_set(err, EINVAL, "the token file %s is not a regular file", file);
    if ((st.st_mode & 077) != 0)
        nsbox_warn("the token file %s is readable by other users (chmod 600 it)", file);
    do
        n = read(fd, buf, size);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return nsbox_err_sys(err, "cannot read the token file %s", file);
    if ((size_t)n == size)
        return nsbox_err_set(err, EINVAL, "the token file %s is too large", file);
    buf[n] = '\0';
    return 0;
}

int mcp_config_token(const struct mcp_config *c, char **out, struct nsbox_err *err)
{
    char buf[32769];
    const char *env = getenv("NSBOX_TOKEN");

    *out = NULL;
    if (c->token_file != NULL) {
        if (read_token_file(c->token_file, buf, sizeof(buf), err) < 0)
            return -1;
    } else if (env != NULL && *env != '\0') {
        snprintf(buf, sizeof(buf), "%s", env);
    } else {
        return 0;
    }
    /* Sandboxes start with a clean environment anyway; keep it that way. */
    unsetenv("NSBOX_TOKEN");
    /* A file's lines are the tenants' (mcp/http/reqmeta.h checks them). */
    int r = c->token_file ? 0 : check_token(buf, "NSBOX_TOKEN", err);
    if (r == 0 && (*out = strdup(buf)) == NULL)
        r = nsbox_err_set(err, ENOMEM, "out of memory");
    explicit_bzero(buf, sizeof(buf));
    return r;
}
