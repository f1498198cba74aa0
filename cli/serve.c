/* nsbox serve: the MCP server, on stdio or (--http) Streamable HTTP. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/hostcheck.h"
#include "../common/log.h"
#include "../mcp/config.h"
#include "../mcp/http/transport.h"
#include "../mcp/preview/preview.h"
#include "../mcp/protocol/dispatch.h"
#include "../mcp/tools/languages.h"
#include "../mcp/transport_stdio.h"
#include "cli.h"

/* SIGINT/SIGTERM end the HTTP server: the handler only writes the signal
 * to a pipe the main thread reads (handlers are reset on exec, so
 * sandboxes keep the default dispositions). */
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;
    if (write(signal_pipe[1], &c, 1) < 0) {
        /* nothing to do: the pipe is full, a signal is already pending */
    }
    errno = saved;
}

static int catch_stop_signals(struct nsbox_err *err)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return nsbox_err_sys(err, "pipe2");
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
        return nsbox_err_sys(err, "sigaction");
    return 0;
}

static int wait_stop_signal(void)
{
    struct pollfd p = {.fd = signal_pipe[0], .events = POLLIN};
    char c = 0;
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    if (read(signal_pipe[0], &c, 1) < 0)
        c = 0;
    return c;
}

/* Once stopping: a second signal, or a stop that takes longer than the
 * drain's grace and STOP_GRACE_S more (a sandbox that never finishes its
 * setup), ends the process at once.  Nothing is left behind: every
 * sandbox's init dies with nsbox. */
#define STOP_GRACE_S 120

static void *stop_watchdog(void *arg)
{
    struct pollfd p = {.fd = signal_pipe[0], .events = POLLIN};
    size_t grace_s = *(const size_t *)arg;
    int n = poll(&p, 1, (int)(grace_s + STOP_GRACE_S) * 1000);
    fprintf(stderr, "nsbox: %s: exiting without a clean stop\n",
            n > 0 ? "second signal" : "the HTTP server did not stop in time");
    _exit(CLI_EXIT_FAILURE);
}

/* The preview proxy (mcp/preview/preview.h): a listener of its own, so
 * that sandbox pages never share an origin with /mcp or /files/. */
static struct preview *start_preview(struct mcp_server *s, const struct mcp_config *c,
                                     const char *http_host, struct nsbox_err *err)
{
    struct preview_options po = {.host = http_host,
                                 .url = c->preview_url,
                                 .domain = c->preview_domain,
                                 .ttl_s = c->preview_ttl_s,
                                 .max_conns = (unsigned)MIN(c->max_preview_conns, 65536)};
    char buf[256];
    if (c->preview_listen != NULL) {
        struct mcp_http_options lo = {0};
        if (mcp_http_parse_address(c->preview_listen, buf, sizeof(buf), &lo, err) < 0) {
            nsbox_err_prefix(err, "--preview-listen");
            return NULL;
        }
        po.host = lo.host;
        po.port = lo.port;
    }
    struct preview *pv = preview_start(&po, err);
    s->preview = pv; /* before the first call can expose a port */
    return pv;
}

static int serve_http(struct mcp_server *s, const struct mcp_config *c)
{
    struct mcp_http_options opt = {.n_allowed_hosts = c->n_allowed_hosts,
                                   .max_per_tenant = c->max_per_tenant,
                                   .max_sessions = c->max_sessions,
                                   .max_connections = (unsigned)MIN(c->max_connections, 65536),
                                   .max_per_ip = (unsigned)MIN(c->max_per_ip, 65536),
                                   .stateless_idle_s = c->stateless_idle_s,
                                   .reconnect_idle_s = c->reconnect_idle_s,
                                   .token_from = c->token_file ? c->token_file : "NSBOX_TOKEN",
                                   .session_timeout_s = c->session_timeout_s,
                                   .idle_timeout_s = c->idle_timeout_s,
                                   .public_url = c->public_url,
                                   .file_url_ttl_s = c->file_url_ttl_s,
                                   .max_upload_mb = c->max_upload_mb,
                                   .terminal_ttl_s = c->terminal_ttl_s,
                                   .max_terminals = (unsigned)MIN(c->max_terminals, 1024)};
    struct nsbox_err err = {0};
    _cleanup_free_ char *token = NULL;
    char host[256];

    memcpy(opt.allowed_hosts, c->allowed_hosts, sizeof(opt.allowed_hosts));
    if (mcp_http_parse_address(c->address, host, sizeof(host), &opt, &err) < 0 ||
        mcp_config_token(c, &token, &err) < 0 || catch_stop_signals(&err) < 0)
        return cli_fail(&err);
    opt.token = token;
    struct preview *pv = start_preview(s, c, host, &err);
    if (pv == NULL)
        return cli_fail(&err);
    struct mcp_http *srv = mcp_http_start(s, &opt, &err);
    if (srv == NULL) {
        s->preview = NULL;
        preview_stop(pv);
        return cli_fail(&err);
    }
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "nsbox: serving MCP on http://%s%s%s:%u/mcp (%s; store %s)\n", v6 ? "[" : "",
            host, v6 ? "]" : "", mcp_http_port(srv),
            token ? "bearer token required" : "no token: loopback only", s->boxes.store.root);
    fprintf(stderr, "nsbox: file URLs at %s/files/ (they end with the server)\n",
            mcp_http_public_url(srv));
    if (preview_host_mode(pv))
        fprintf(stderr, "nsbox: preview proxy on port %u, URLs http://PORT-TOKEN.%s/\n",
                preview_port(pv), c->preview_domain);
    else
        fprintf(stderr, "nsbox: preview proxy at %s/p/ (port %u)\n", preview_base(pv),
                preview_port(pv));
    int sig = wait_stop_signal();
    /* Drain first (docs/tools.md "Fleet"): readiness fails, no new
     * session or sandbox, calls under way and calls on sandboxes made
     * before still served until none runs or the grace ends. */
    static size_t grace_s;
    grace_s = c->shutdown_grace_s < 86400 ? c->shutdown_grace_s : 86400;
    pthread_t watchdog;
    if (pthread_create(&watchdog, NULL, stop_watchdog, &grace_s) == 0)
        pthread_detach(watchdog);
    fprintf(stderr, "nsbox: %s: draining (at most %zu s; a second signal ends it now)\n",
            strsignal(sig), grace_s);
    bool cut = mcp_http_drain(srv, (unsigned)grace_s);
    fprintf(stderr, "nsbox: %s; stopping every sandbox\n",
            cut ? "the grace is over: cancelling the calls still running" : "no call is running");
    mcp_http_stop(srv); /* every sandbox, so every exposure, is gone */
    s->preview = NULL;
    preview_stop(pv);
    return 0;
}

/* The default profile, linked into the binary (cli/profile.S). */
extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];
extern const char nsbox_nested_profile[];
extern const char nsbox_nested_profile_end[];

/* ---- importing the default images early ----
 *
 * A user whose own store lacks the languages' images but can read root's
 * (images/shared.c) imports them on the first call that needs them, about
 * 5 s for the default image (1.2 GB unpacked; 25 s or more on a loaded
 * host).  Started with the server, the import is usually done before the
 * first call; a call that comes sooner waits for it on the image's lock.
 *
 * It runs in a child process of its own (its own process group), not a
 * thread, so that a server told to stop (stdin closed, SIGTERM) stops it
 * at once rather than waiting for the unpack to end: a client waits for
 * the server to exit.  A stopped import loses nothing: the blobs it copied
 * stay (each renamed into place once its digest matched), its staging
 * under STORE/tmp is cleaned by the store's next pull or import
 * (store_lock_for_pull), and the next start or first call imports again.
 * The child dies with the server too (PR_SET_PDEATHSIG), and its user
 * namespace helper with it (common/userns.c does the same). */

static void early_import_child(struct mcp_server *s, const char **refs, size_t n)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* The server may already be gone: then nothing is wanted. */
    if (getppid() == 1)
        _exit(0);
    setpgid(0, 0);
    /* Never the MCP stream: the client reads the server's stdout. */
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
    }
    for (size_t i = 0; i < n; i++) {
        struct images_image im;
        struct nsbox_err err = {0};
        if (images_lookup(&s->boxes.store, refs[i], &im, &err) == 0)
            images_image_free(&im);
        else if (err.code != ENOENT)
            nsbox_warn("importing %s: %s", refs[i], err.msg);
    }
    _exit(0);
}

static void add_ref(const char **refs, size_t *n, size_t max, const char *ref)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(refs[i], ref) == 0)
            return;
    if (*n < max)
        refs[(*n)++] = ref;
}

/* Whether the user's own store has an image labelled for language: then
 * the calls use it and nothing needs importing ahead of them. */
static bool own_store_serves(struct mcp_server *s, const char *language)
{
    struct images_image *v;
    size_t n;
    struct nsbox_err err;
    bool found = false;
    if (images_list(&s->boxes.store, &v, &n, &err) < 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char copy[256];
        /* A package cache or a commit serves no language (images/store.h). */
        snprintf(copy, sizeof(copy), "%s",
                 images_image_private(&v[i]) ? "" : images_image_languages(&v[i]) ?: "");
        for (char *save, *t = strtok_r(copy, ", ", &save); t && !found;
             t = strtok_r(NULL, ", ", &save))
            found = strcmp(t, language) == 0;
        images_image_free(&v[i]);
    }
    free(v);
    return found;
}

/* The import's pid (stop it with stop_early_import), or -1 when there is
 * nothing to import or it could not start (the first call imports then). */
static pid_t start_early_import(struct mcp_server *s)
{
    size_t n_lang, n = 0;
    const struct mcp_language *l = mcp_languages(&n_lang);
    const char *refs[MCP_MAX_LANGS + 4];

    /* Landlock isolation uses no image (runtime/landlock.h). */
    if (s->boxes.store.n_shared == 0 || s->boxes.isolation == NSBOX_ISOLATION_LANDLOCK ||
        own_store_serves(s, MCP_LANGUAGE_DEFAULT))
        return -1;
    for (size_t i = 0; i < s->n_langs; i++)
        add_ref(refs, &n, sizeof(refs) / sizeof(refs[0]), s->langs[i].ref);
    for (size_t i = 0; i < n_lang; i++)
        if (l[i].default_image != NULL)
            add_ref(refs, &n, sizeof(refs) / sizeof(refs[0]), l[i].default_image);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        early_import_child(s, refs, n);
    if (pid < 0)
        nsbox_warn("cannot start importing the default images early: %s (the first call "
                   "imports them)",
                   strerror(errno));
    else
        setpgid(pid, pid); /* as the child does: no window where a kill misses it */
    return pid;
}

/* Stops an import still running (it and its helpers: the process group)
 * and reaps it; says so, as the next start imports again. */
static void stop_early_import(pid_t pid)
{
    int status;
    pid_t r;

    if (pid <= 0)
        return;
    while ((r = waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (r == 0) {
        nsbox_info("stopping the import of the default images from the shared store (the next "
                   "start or call imports them again)");
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
}

/* Applies the configuration files' [serve] keys, then argv: flags win. */
static int parse_options(struct cli_globals *g, struct mcp_config *c, int argc, char **argv,
                         struct nsbox_err *err)
{
    for (size_t i = 0; i < g->n_serve; i++)
        if (mcp_config_set(c, g->serve[i].key, g->serve[i].value, err) < 0)
            return nsbox_err_prefix(err, "configuration %s: [serve] %s",
                                    g->serve[i].where ? g->serve[i].where : "?", g->serve[i].key);
    return mcp_config_parse(c, argc, argv, err);
}

/* The SDK clients send SIGTERM 2 s after closing stdin. */
#define STDIO_EOF_GRACE_MS 2000

int cmd_serve(struct cli_globals *g, int argc, char **argv)
{
    static struct mcp_server s;
    static struct mcp_session session;
    struct mcp_config c;
    struct nsbox_err err = {0};
    int r = 0;

    mcp_config_init(&c);
    if (parse_options(g, &c, argc, argv, &err) < 0) {
        mcp_config_free(&c);
        return cli_usage_error("serve", "%s (see --help)", err.msg);
    }
    if (c.help) {
        mcp_config_usage(stdout);
        mcp_config_free(&c);
        return 0;
    }
    if (c.print_config) {
        mcp_config_print(stdout, &c);
        mcp_config_free(&c);
        return 0;
    }
    /* A host where no sandbox can start refuses now, not at the first call. */
    if (c.isolation != NSBOX_ISOLATION_LANDLOCK && nsbox_host_refuse(&err, true) < 0) {
        mcp_config_free(&c);
        return cli_fail(&err);
    }
    struct box_ctx_opts bo = {
        .store_dir = g->store_dir,
        .store_cfg = &g->store_cfg,
        .default_profile = nsbox_default_profile,
        .default_profile_len = (size_t)(nsbox_default_profile_end - nsbox_default_profile),
        .nested_profile = nsbox_nested_profile,
        .nested_profile_len = (size_t)(nsbox_nested_profile_end - nsbox_nested_profile),
        .version = NSBOX_VERSION_STRING};
    if (mcp_server_open(&s, &c, &bo, &err) < 0) {
        mcp_config_free(&c);
        return cli_fail(&err);
    }
    pid_t early = start_early_import(&s);
    if (c.address != NULL) {
        r = serve_http(&s, &c);
    } else {
        nsbox_info("serving MCP on stdio (store %s)", s.boxes.store.root);
        mcp_session_init(&session, &s);
        mcp_stdio_run(&session);
        /* stdin closed: the client sends nothing more, but a pipe
         * (`printf ... | nsbox serve`) still wants the answers; what has
         * not finished after the grace is cancelled. */
        mcp_session_drain(&session, STDIO_EOF_GRACE_MS);
        mcp_session_shutdown(&session);
    }
    stop_early_import(early);
    mcp_server_close(&s);
    mcp_config_free(&c);
    return r;
}
