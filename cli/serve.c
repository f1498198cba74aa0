/* nsbox serve: the MCP server, on stdio or (--http) Streamable HTTP. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/cleanup.h"
#include "../common/log.h"
#include "../mcp/transport_http.h"
#include "../mcp/transport_stdio.h"
#include "../boxes/box.h"
#include "cli.h"

extern const char nsbox_default_profile[];
extern const char nsbox_default_profile_end[];

static void serve_usage(FILE *f)
{
    fprintf(f,
            "usage: nsbox [--store DIR] serve [--image LANG=REF]... [--limits=best-effort]\n"
            "             [--memory MB] [--cpus N] [--pids N] [--timeout S]      (defaults)\n"
            "             [--max-memory MB] [--max-cpus N] [--max-pids N] [--max-timeout S]\n"
            "             [--max-sandboxes N] [--max-total-sandboxes N (128)]\n"
            "             [--allow-host-dir DIR]...  (enables copy_in/copy_out)\n"
            "             [--http HOST:PORT [--token-file FILE] [--allow-host NAME]...\n"
            "                               [--session-timeout S]]\n\n"
            "An MCP server on stdin/stdout (newline-delimited JSON-RPC); logs on stderr.\n"
            "With --http, MCP Streamable HTTP at http://HOST:PORT/mcp instead (port 0: any\n"
            "free one; the address is printed on stderr), one session per client, until\n"
            "SIGINT or SIGTERM.  A bearer token (--token-file, or NSBOX_TOKEN) is required\n"
            "on addresses other than loopback; --allow-host adds a name the Host header\n"
            "may carry (besides localhost, 127.0.0.1, [::1] and HOST).  A session with no\n"
            "request, open stream or running call for --session-timeout seconds (default\n"
            "3600) ends, and its sandboxes stop.\n"
            "Languages come from the sandbox.language label of images in the store and\n"
            "from --image (e.g. --image python=localhost/nsbox-python).\n");
}

enum { O_MAXTOTAL = 298, O_HOSTDIR = 299, O_IMAGE = 300, O_LIMITS, O_MEM, O_CPUS, O_PIDS, O_TIMEOUT, O_MAXMEM, O_MAXCPUS,
       O_MAXPIDS, O_MAXTIMEOUT, O_MAXSB, O_HELP, O_HTTP, O_TOKEN_FILE, O_ALLOW_HOST,
       O_SESSION_TIMEOUT, O_IDLE_TIMEOUT };

/* What --http and friends asked for. */
struct serve_http {
    const char *address;    /* NULL: stdio */
    const char *token_file;
    const char *allowed_hosts[MCP_HTTP_MAX_ALLOWED_HOSTS];
    size_t n_allowed_hosts;
    unsigned session_timeout_s;
    unsigned idle_timeout_s;
};

static int parse(struct mcp_server *s, struct serve_http *h, enum nsbox_limits_mode *mode,
                 int argc, char **argv)
{
    static const struct option opts[] = {
        {"image", required_argument, NULL, O_IMAGE}, {"limits", required_argument, NULL, O_LIMITS},
        {"allow-host-dir", required_argument, NULL, O_HOSTDIR},
        {"max-total-sandboxes", required_argument, NULL, O_MAXTOTAL},
        {"memory", required_argument, NULL, O_MEM}, {"cpus", required_argument, NULL, O_CPUS},
        {"pids", required_argument, NULL, O_PIDS}, {"timeout", required_argument, NULL, O_TIMEOUT},
        {"max-memory", required_argument, NULL, O_MAXMEM},
        {"max-cpus", required_argument, NULL, O_MAXCPUS},
        {"max-pids", required_argument, NULL, O_MAXPIDS},
        {"max-timeout", required_argument, NULL, O_MAXTIMEOUT},
        {"max-sandboxes", required_argument, NULL, O_MAXSB}, {"help", no_argument, NULL, O_HELP},
        {"http", required_argument, NULL, O_HTTP},
        {"token-file", required_argument, NULL, O_TOKEN_FILE},
        {"allow-host", required_argument, NULL, O_ALLOW_HOST},
        {"session-timeout", required_argument, NULL, O_SESSION_TIMEOUT},
        /* Not in --help: lets tests (tests/load) see a silent connection
         * closed without waiting the documented 60 s. */
        {"idle-timeout", required_argument, NULL, O_IDLE_TIMEOUT}, {NULL, 0, NULL, 0}};
    int c;
    char *end;

    *mode = box_limits_mode_from_env();
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        double v = optarg ? strtod(optarg, &end) : 0;
        bool num_ok = optarg && *end == '\0' && v > 0;
        switch (c) {
        case O_HOSTDIR: {
            /* Held open by fd: copy_in/copy_out resolve beneath it, so a
             * later rename or symlink of the path itself changes nothing. */
            char *real = realpath(optarg, NULL);
            int fd = real ? open(real, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
            if (fd < 0 || s->n_host_dirs == sizeof(s->host_dirs) / sizeof(s->host_dirs[0])) {
                free(real);
                return cli_usage_error("serve", "--allow-host-dir %s: not a directory", optarg);
            }
            s->host_dirs[s->n_host_dirs].path = real;
            s->host_dirs[s->n_host_dirs++].fd = fd;
            break;
        }
        case O_IMAGE: {
            char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg || s->n_langs == MCP_MAX_LANGS)
                return cli_usage_error("serve", "--image takes LANG=REF");
            s->langs[s->n_langs++] = (struct mcp_lang){strndup(optarg, (size_t)(eq - optarg)),
                                                       strdup(eq + 1)};
            break;
        }
        case O_LIMITS:
            if (box_parse_limits_mode(optarg, mode) < 0)
                return cli_usage_error("serve", "--limits takes strict or best-effort");
            break;
        case O_HELP:
            serve_usage(stdout);
            return -1;
        case O_HTTP:
            h->address = optarg;
            break;
        case O_TOKEN_FILE:
            h->token_file = optarg;
            break;
        case O_ALLOW_HOST:
            if (h->n_allowed_hosts == MCP_HTTP_MAX_ALLOWED_HOSTS)
                return cli_usage_error("serve", "too many --allow-host");
            h->allowed_hosts[h->n_allowed_hosts++] = optarg;
            break;
        default:
            if (!num_ok)
                return cli_usage_error("serve", "bad value for an option (see --help)");
            if (c == O_MEM) s->defaults.memory_mb = (uint64_t)v;
            else if (c == O_CPUS) s->defaults.cpus = v;
            else if (c == O_PIDS) s->defaults.pids = (uint32_t)v;
            else if (c == O_TIMEOUT) s->defaults.timeout_s = v;
            else if (c == O_MAXMEM) s->ceilings.memory_mb = (uint64_t)v;
            else if (c == O_MAXCPUS) s->ceilings.cpus = v;
            else if (c == O_MAXPIDS) s->ceilings.pids = (uint32_t)v;
            else if (c == O_MAXTIMEOUT) s->ceilings.timeout_s = v;
            else if (c == O_MAXSB) s->max_sandboxes = (size_t)v;
            else if (c == O_MAXTOTAL) s->max_total = (size_t)v;
            else if (c == O_SESSION_TIMEOUT) h->session_timeout_s = v < 1 ? 1 : (unsigned)v;
            else if (c == O_IDLE_TIMEOUT) h->idle_timeout_s = v < 1 ? 1 : (unsigned)v;
            else
                return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        serve_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (h->address == NULL &&
        (h->token_file != NULL || h->n_allowed_hosts > 0 || h->session_timeout_s > 0 ||
         h->idle_timeout_s > 0))
        return cli_usage_error("serve", "--token-file, --allow-host and --session-timeout go "
                                        "with --http");
    return 0;
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
            return nsbox_err_set(err, EINVAL, "the token in %s has a space or a control or "
                                              "non-ASCII character", from);
    if (n < 16)
        return nsbox_err_set(err, EINVAL, "the token in %s is too short (%zu characters; use "
                                          "16 or more, e.g. `openssl rand -hex 32`)", from, n);
    return 0;
}

/* The bearer token from --token-file, else from NSBOX_TOKEN (empty: none),
 * else none.  *out is NULL or owned by the caller. */
static int read_token(const char *file, char **out, struct nsbox_err *err)
{
    char buf[4097];
    const char *env = getenv("NSBOX_TOKEN");

    *out = NULL;
    if (file != NULL) {
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
            n = read(fd, buf, sizeof(buf));
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return nsbox_err_sys(err, "cannot read the token file %s", file);
        if ((size_t)n == sizeof(buf))
            return nsbox_err_set(err, EINVAL, "the token file %s is too large", file);
        buf[n] = '\0';
    } else if (env != NULL && *env != '\0') {
        snprintf(buf, sizeof(buf), "%s", env);
    } else {
        return 0;
    }
    /* Sandboxes start with a clean environment anyway; keep it that way. */
    unsetenv("NSBOX_TOKEN");
    if (check_token(buf, file ? file : "NSBOX_TOKEN", err) < 0)
        return -1;
    *out = strdup(buf);
    explicit_bzero(buf, sizeof(buf));
    return *out ? 0 : nsbox_err_set(err, ENOMEM, "out of memory");
}

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

/* Once stopping: a second signal, or a stop that takes longer than
 * STOP_GRACE_S (a sandbox that never finishes its setup), ends the process
 * at once.  Nothing is left behind: every sandbox's init dies with nsbox. */
#define STOP_GRACE_S 120

static void *stop_watchdog(void *arg)
{
    struct pollfd p = {.fd = signal_pipe[0], .events = POLLIN};
    (void)arg;
    int n = poll(&p, 1, STOP_GRACE_S * 1000);
    fprintf(stderr, "nsbox: %s: exiting without a clean stop\n",
            n > 0 ? "second signal" : "the HTTP server did not stop in time");
    _exit(CLI_EXIT_FAILURE);
}

static int serve_http(struct mcp_server *s, const struct serve_http *h)
{
    struct mcp_http_options opt = {.n_allowed_hosts = h->n_allowed_hosts,
                                   .session_timeout_s = h->session_timeout_s,
                                   .idle_timeout_s = h->idle_timeout_s};
    struct nsbox_err err = {0};
    _cleanup_free_ char *token = NULL;
    char host[256];

    memcpy(opt.allowed_hosts, h->allowed_hosts, sizeof(opt.allowed_hosts));
    if (mcp_http_parse_address(h->address, host, sizeof(host), &opt, &err) < 0 ||
        read_token(h->token_file, &token, &err) < 0 || catch_stop_signals(&err) < 0)
        return cli_fail(&err);
    opt.token = token;
    struct mcp_http *srv = mcp_http_start(s, &opt, &err);
    if (srv == NULL)
        return cli_fail(&err);
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "nsbox: serving MCP on http://%s%s%s:%u/mcp (%s; store %s)\n",
            v6 ? "[" : "", host, v6 ? "]" : "", mcp_http_port(srv),
            token ? "bearer token required" : "no token: loopback only", s->boxes.store.root);
    int sig = wait_stop_signal();
    nsbox_info("%s: stopping the HTTP server", strsignal(sig));
    pthread_t watchdog;
    if (pthread_create(&watchdog, NULL, stop_watchdog, NULL) == 0)
        pthread_detach(watchdog);
    mcp_http_stop(srv);
    return 0;
}

/* The server's defaults: box_defaults' limits, but commands time out
 * after 30 s unless asked otherwise (the CLI's never do). */
static void server_defaults(struct mcp_server *s)
{
    const struct box_limits *d = &box_defaults.limits;
    s->defaults = (struct mcp_limits){.memory_mb = d->memory_bytes >> 20, .cpus = d->cpus,
                                      .pids = d->pids, .timeout_s = 30};
    s->ceilings = (struct mcp_limits){.memory_mb = 4096, .cpus = 4, .pids = 4096,
                                      .timeout_s = 600};
    s->max_sandboxes = 16;
    s->max_total = 128;
    s->output_cap = box_defaults.output_cap;
}

int cmd_serve(struct cli_globals *g, int argc, char **argv)
{
    static struct mcp_server s;
    static struct mcp_session session;
    struct serve_http http = {0};
    struct nsbox_err err = {0};
    struct box_ctx_opts bo = {
        .store_dir = g->store_dir, .default_profile = nsbox_default_profile,
        .default_profile_len = (size_t)(nsbox_default_profile_end - nsbox_default_profile),
        .version = NSBOX_VERSION_STRING};

    server_defaults(&s);
    int r = parse(&s, &http, &bo.mode, argc, argv);
    if (r != 0)
        return r < 0 ? 0 : r;
    mcp_session_init(&session, &s);
    pthread_mutex_init(&s.pool_lock, NULL);
    pthread_cond_init(&s.pool_idle, NULL);
    /* The default profile compiles (or loads from the cache) now, so a
     * broken one fails the start, not the first sandbox. */
    if (box_ctx_open(&s.boxes, &bo, &err) < 0 || box_ctx_default_seccomp(&s.boxes, &err) == NULL)
        return cli_fail(&err);
    if (box_ctx_gc(&s.boxes, &err) < 0)
        nsbox_warn("cleaning stale sandboxes: %s", err.msg);
    if (http.address != NULL) {
        r = serve_http(&s, &http);
    } else {
        nsbox_info("serving MCP on stdio (store %s)", s.boxes.store.root);
        mcp_stdio_run(&session);
        mcp_session_shutdown(&session);
    }
    /* The spare sandbox and removals still under way, for either transport. */
    mcp_pool_drain(&s);
    box_ctx_close(&s.boxes);
    return r;
}
