/* `nsbox serve`'s options as one table, parsed, set and printed
 * (config.h); the server is opened from them in server_open.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../boxes/net.h"
#include "../boxes/secrets.h"
#include "../common/cleanup.h"
#include "../common/fsutil.h"
#include "../common/log.h"
#include "files/urls.h"
#include "pool.h"

struct opt;
typedef int (*set_fn)(struct mcp_config *c, const struct opt *o, const char *arg,
                      struct nsbox_err *err);

/* What a numeric option's member is. */
enum num { NUM_NONE, NUM_MB, NUM_U32, NUM_SIZE, NUM_COUNT, NUM_DOUBLE, NUM_SECONDS };

/* One option: its name, argument and help, and how it is stored: set(),
 * with `field` the offset of its member in struct mcp_config (and `num`
 * its type, for set_number). */
struct opt {
    const char *name;
    const char *arg; /* NULL: takes none */
    const char *help;
    set_fn set;
    size_t field;
    bool hidden; /* not in --help */
    enum num num;
};

#define FIELD(m) offsetof(struct mcp_config, m)
#define AT(c, o, type) ((type *)((char *)(c) + (o)->field))

/* A positive number, as every numeric option takes (NUM_COUNT: 0 too, a
 * whole number), stored as its member's
 * type; clamped to what the type holds (a double past it would be
 * undefined behaviour to convert). */
static int set_number(struct mcp_config *c, const struct opt *o, const char *arg,
                      struct nsbox_err *err)
{
    char *end;
    double v = strtod(arg, &end);
    if (o->num == NUM_COUNT) {
        if (end == arg || *end != '\0' || !(v >= 0) || v != (double)(uint64_t)v)
            return nsbox_err_set(err, EINVAL, "--%s takes a whole number (0 or more), not \"%s\"",
                                 o->name, arg);
    } else if (end == arg || *end != '\0' || !(v > 0) || v != v) {
        return nsbox_err_set(err, EINVAL, "--%s takes a positive number, not \"%s\"", o->name, arg);
    }
    switch (o->num) {
    case NUM_MB: /* MiB, at most 2^40, so that the bytes fit 64 bits */
        *AT(c, o, uint64_t) = v >= 0x1p40 ? (uint64_t)1 << 40 : (uint64_t)v;
        break;
    case NUM_U32:
        *AT(c, o, uint32_t) = v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
        break;
    case NUM_SIZE:
    case NUM_COUNT:
        *AT(c, o, size_t) = v >= 0x1p32 ? (size_t)1 << 32 : (size_t)v;
        break;
    case NUM_DOUBLE:
        *AT(c, o, double) = v;
        break;
    case NUM_SECONDS: /* whole seconds, at least 1, at most a year */
        *AT(c, o, unsigned) = v < 1 ? 1 : v > 86400 * 365 ? 86400 * 365 : (unsigned)v;
        break;
    case NUM_NONE:
        return nsbox_err_set(err, EINVAL, "--%s: not a number option", o->name);
    }
    return 0;
}

static int set_string(struct mcp_config *c, const struct opt *o, const char *arg,
                      struct nsbox_err *err)
{
    *AT(c, o, const char *) = arg;
    return 0;
}

/* A DNS label (mcp/node.h): it starts every session and sandbox id. */
static int set_node_id(struct mcp_config *c, const struct opt *o, const char *arg,
                       struct nsbox_err *err)
{
    if (!mcp_node_name_ok(arg))
        return nsbox_err_set(err, EINVAL,
                             "a node id (--node-id, NSBOX_NODE_ID) is a DNS label: lower-case "
                             "letters, digits and '-', at most %d, starting and ending with a "
                             "letter or digit (e.g. nsbox-0), not \"%.80s\"",
                             MCP_NODE_MAX, arg);
    c->node_id = arg;
    return 0;
}

static int set_limits(struct mcp_config *c, const struct opt *o, const char *arg,
                      struct nsbox_err *err)
{
    if (box_parse_limits_mode(arg, &c->mode) < 0)
        return nsbox_err_set(err, EINVAL, "--limits takes strict or best-effort");
    return 0;
}

static int set_isolation(struct mcp_config *c, const struct opt *o, const char *arg,
                         struct nsbox_err *err)
{
    return box_parse_isolation(arg, &c->isolation, err);
}

static int set_image(struct mcp_config *c, const struct opt *o, const char *arg,
                     struct nsbox_err *err)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg || eq[1] == '\0')
        return nsbox_err_set(err, EINVAL, "--image takes LANG=REF");
    char *lang = strndup(arg, (size_t)(eq - arg)), *ref = strdup(eq + 1);
    if (lang == NULL || ref == NULL) {
        free(lang), free(ref);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    /* A later one for the same language (the command line after a
     * configuration file) replaces the earlier. */
    for (size_t i = 0; i < c->n_langs; i++) {
        if (strcmp(c->langs[i].language, lang) == 0) {
            free(lang);
            free(c->langs[i].ref);
            c->langs[i].ref = ref;
            return 0;
        }
    }
    if (c->n_langs == MCP_MAX_LANGS) {
        free(lang), free(ref);
        return nsbox_err_set(err, E2BIG, "at most %d --image", MCP_MAX_LANGS);
    }
    c->langs[c->n_langs++] = (struct mcp_lang){lang, ref};
    return 0;
}

static int set_host_dir(struct mcp_config *c, const struct opt *o, const char *arg,
                        struct nsbox_err *err)
{
    if (c->n_host_dirs == MCP_MAX_HOST_DIRS)
        return nsbox_err_set(err, E2BIG, "at most %d --allow-host-dir", MCP_MAX_HOST_DIRS);
    c->host_dirs[c->n_host_dirs++] = arg;
    return 0;
}

/* Checked now, so that a bad rule stops the start (a configuration
 * file's with its FILE:LINE), not the first call that asks. */
static int set_allow_net(struct mcp_config *c, const struct opt *o, const char *arg,
                         struct nsbox_err *err)
{
    if (c->n_allow_net == MCP_MAX_ALLOW_NET)
        return nsbox_err_set(err, E2BIG, "at most %d --allow-net", MCP_MAX_ALLOW_NET);
    _cleanup_free_ struct egress_policy *p = malloc(sizeof(*p));
    char *texts[] = {(char *)arg};
    if (p == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (box_net_parse(p, texts, 1, true, err) < 0)
        return nsbox_err_prefix(err, "--allow-net");
    c->allow_net[c->n_allow_net++] = arg;
    return 0;
}

/* Read now, so that a missing or bad FILE stops the start; a later one of
 * the same name (the command line after a configuration file) replaces
 * the earlier.  Errors name the secret and its FILE, never quote arg (a
 * value typed where @FILE belongs would be printed). */
static int set_secret(struct mcp_config *c, const struct opt *o, const char *arg,
                      struct nsbox_err *err)
{
    struct egress_secret *one = calloc(1, sizeof(*one));
    if (one == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (egress_secret_parse(arg, one, err) < 0) {
        explicit_bzero(one, sizeof(*one));
        free(one);
        return nsbox_err_prefix(err, "--secret");
    }
    size_t i = 0;
    while (i < c->n_secrets && strcmp(c->secrets[i].name, one->name) != 0)
        i++;
    if (i == MCP_MAX_SECRETS) {
        explicit_bzero(one, sizeof(*one));
        free(one);
        return nsbox_err_set(err, E2BIG, "at most %d --secret", MCP_MAX_SECRETS);
    }
    if (c->secrets == NULL && (c->secrets = calloc(MCP_MAX_SECRETS, sizeof(*one))) == NULL) {
        explicit_bzero(one, sizeof(*one));
        free(one);
        return nsbox_err_set(err, ENOMEM, "out of memory");
    }
    c->secrets[i] = *one;
    c->secret_specs[i] = arg;
    if (i == c->n_secrets)
        c->n_secrets++;
    explicit_bzero(one, sizeof(*one));
    free(one);
    return 0;
}

static int set_allow_host(struct mcp_config *c, const struct opt *o, const char *arg,
                          struct nsbox_err *err)
{
    if (c->n_allowed_hosts == MCP_HTTP_MAX_ALLOWED_HOSTS)
        return nsbox_err_set(err, E2BIG, "at most %d --allow-host", MCP_HTTP_MAX_ALLOWED_HOSTS);
    c->allowed_hosts[c->n_allowed_hosts++] = arg;
    return 0;
}

/* http:// or https://, a host, no query or fragment: it prefixes every
 * file URL. */
static int set_public_url(struct mcp_config *c, const struct opt *o, const char *arg,
                          struct nsbox_err *err)
{
    bool scheme = strncmp(arg, "http://", 7) == 0 || strncmp(arg, "https://", 8) == 0;
    const char *host = scheme ? strstr(arg, "://") + 3 : arg;
    if (!scheme || *host == '\0' || *host == '/' || strpbrk(arg, "?# \t\r\n\"") != NULL ||
        strlen(arg) > 400)
        return nsbox_err_set(err, EINVAL,
                             "--%s takes http://HOST[:PORT][/PREFIX] or https://..., "
                             "not \"%s\"",
                             o->name, arg);
    *AT(c, o, const char *) = arg;
    return 0;
}

/* A registry URL: checked now (box_pkg_policy), so a typo fails the start. */
static int set_registry(struct mcp_config *c, const struct opt *o, const char *arg,
                        struct nsbox_err *err)
{
    struct box_pkg_registries r = {0};
    enum box_pkg_manager m = strcmp(o->name, "pip-index") == 0      ? BOX_PKG_PIP
                             : strcmp(o->name, "npm-registry") == 0 ? BOX_PKG_NPM
                                                                    : BOX_PKG_APT;
    _cleanup_free_ struct egress_policy *p = malloc(sizeof(*p));
    r.pip_index = r.npm_registry = r.apt_mirror = arg;
    if (p == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    if (box_pkg_policy(m, &r, p, err) < 0)
        return nsbox_err_prefix(err, "--%s", o->name);
    *AT(c, o, const char *) = arg;
    return 0;
}

/* --install none | all | a comma list of pip, npm, apt. */
static int set_install(struct mcp_config *c, const struct opt *o, const char *arg,
                       struct nsbox_err *err)
{
    char copy[64];
    unsigned bits = 0;
    snprintf(copy, sizeof(copy), "%s", arg);
    if (strcmp(arg, "all") == 0)
        bits = MCP_INSTALL_ALL;
    else if (strcmp(arg, "none") != 0)
        for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            enum box_pkg_manager m;
            if (box_pkg_manager_parse(t, &m) < 0)
                return nsbox_err_set(err, EINVAL,
                                     "--install takes none, all, or a comma list of pip, npm, "
                                     "apt, not \"%s\"",
                                     arg);
            bits |= MCP_INSTALL_BIT(m);
        }
    c->installs = bits;
    return 0;
}

static int set_help(struct mcp_config *c, const struct opt *o, const char *arg,
                    struct nsbox_err *err)
{
    c->help = true;
    return 0;
}

static int set_print(struct mcp_config *c, const struct opt *o, const char *arg,
                     struct nsbox_err *err)
{
    c->print_config = true;
    return 0;
}

/* A switch: on the command line it takes no value (on), in a file
 * "true" or "false". */
static int set_flag(struct mcp_config *c, const struct opt *o, const char *arg,
                    struct nsbox_err *err)
{
    bool on = arg == NULL || strcmp(arg, "true") == 0;
    if (!on && strcmp(arg, "false") != 0)
        return nsbox_err_set(err, EINVAL, "%s takes true or false, not \"%s\"", o->name, arg);
    *AT(c, o, bool) = on;
    return 0;
}

static const struct opt opts[] = {
    {"image", "LANG=REF", "the image for a language (else: images labelled sandbox.language)",
     set_image, 0, false, NUM_NONE},
    {"limits", "MODE", "strict (default: refuse without a usable cgroup) or best-effort",
     set_limits, 0, false, NUM_NONE},
    {"isolation", "MODE",
     "namespaces (default) or landlock: for hosts without user namespaces, weaker, never chosen "
     "for you (the host's userland confined by Landlock, seccomp and rlimits; no image, no "
     "network, no workspaces; docs/isolation.md)",
     set_isolation, 0, false, NUM_NONE},
    {"memory", "MB", "default memory limit per sandbox (512)", set_number,
     FIELD(defaults.memory_mb), false, NUM_MB},
    {"cpus", "N", "default CPU limit (1)", set_number, FIELD(defaults.cpus), false, NUM_DOUBLE},
    {"pids", "N", "default process and thread limit (256)", set_number, FIELD(defaults.pids), false,
     NUM_U32},
    {"timeout", "S", "default wall-clock limit of a call (30)", set_number,
     FIELD(defaults.timeout_s), false, NUM_DOUBLE},
    {"disk", "MB",
     "default size of a sandbox's writable layer: /workspace and every writable path but /tmp "
     "and /dev/shm, in total (1024)",
     set_number, FIELD(defaults.disk_mb), false, NUM_MB},
    {"workspace-size", "MB", "default budget of a persistent workspace (1024)", set_number,
     FIELD(defaults.workspace_mb), false, NUM_MB},
    {"max-memory", "MB", "the most memory a call may ask for (4096)", set_number,
     FIELD(ceilings.memory_mb), false, NUM_MB},
    {"max-cpus", "N", "the most CPUs a call may ask for (4)", set_number, FIELD(ceilings.cpus),
     false, NUM_DOUBLE},
    {"max-pids", "N", "the most processes a call may ask for (4096)", set_number,
     FIELD(ceilings.pids), false, NUM_U32},
    {"max-disk", "MB", "the largest disk_mb a call may ask for (8192)", set_number,
     FIELD(ceilings.disk_mb), false, NUM_MB},
    {"max-workspace", "MB", "the largest workspace_mb a call may ask for (8192)", set_number,
     FIELD(ceilings.workspace_mb), false, NUM_MB},
    {"max-timeout", "S", "the longest timeout a call may ask for (600)", set_number,
     FIELD(ceilings.timeout_s), false, NUM_DOUBLE},
    {"max-sandboxes", "N", "kept sandboxes per session (16)", set_number, FIELD(max_sandboxes),
     false, NUM_SIZE},
    {"max-watches", "N", "files and directories a session may watch with resources/subscribe (64)",
     set_number, FIELD(max_watches), false, NUM_SIZE},
    {"call-queue", "N",
     "tools/calls a session may have waiting, beyond the 64 it runs at once, for a slot "
     "(64; 0: refuse at once, as before); docs/burst.md",
     set_number, FIELD(call_queue), false, NUM_COUNT},
    {"max-total-sandboxes", "N", "live sandboxes in the whole server (128)", set_number,
     FIELD(max_total), false, NUM_SIZE},
    {"spares", "N",
     "one-shot sandboxes kept ready, each with its interpreter started: up to N as the call "
     "rate asks (1; 0: none; docs/warm.md)",
     set_number, FIELD(spares), false, NUM_COUNT},
    {"warm-import", "M,M",
     "python modules the spares import before a call (e.g. numpy,pandas; docs/warm.md)", set_string,
     FIELD(warm_import), false, NUM_NONE},
    {"max-commits", "N",
     "images sandbox_commit may keep in the store (16; 0: no sandbox_commit tool)", set_number,
     FIELD(max_commits), false, NUM_COUNT},
    {"max-checkpoints", "N",
     "checkpoints (sandbox_checkpoint) each tenant may keep (16; 0: no checkpoint tools)",
     set_number, FIELD(max_checkpoints), false, NUM_COUNT},
    {"checkpoint-mb", "MB", "the disk each tenant's checkpoints may take in total, in MiB (4096)",
     set_number, FIELD(checkpoint_mb), false, NUM_MB},
    {"checkpoint-dir", "DIR", "where checkpoints are kept (STORE/checkpoints)", set_string,
     FIELD(checkpoint_dir), false, NUM_NONE},
    {"max-inline-kb", "KB",
     "the most output (stdout and stderr, in KiB) a call may ask to get inline with "
     "max_inline_kb (1024); the default is 32 KiB or this, whichever is less",
     set_number, FIELD(max_inline_kb), false, NUM_SIZE},
    {"max-processes", "N", "background processes running at once per sandbox (16)", set_number,
     FIELD(max_processes), false, NUM_SIZE},
    {"process-log-kb", "KB",
     "the ring of each background process's stdout and of its stderr, in KiB (1024; at most "
     "65536): older output is dropped, and process_logs says how much",
     set_number, FIELD(process_log_kb), false, NUM_SIZE},
    {"allow-host-dir", "DIR", "a host directory copy_in/copy_out may use (repeatable)",
     set_host_dir, 0, false, NUM_NONE},
    {"allow-net", "RULE",
     "what sandboxes may reach when a call asks (network): a host (pypi.org), *.SUFFIX, either "
     "with :PORT[,PORT] (80 and 443), a preset (pypi, npm, debian, github), IP:PORT or "
     "NAME=IP:PORT for a local mirror (repeatable, comma-separated; default: none, no network); "
     "a name rule may add METHODS [PATHS] (api.github.com GET,POST /repos/ORG/**: that host's "
     "requests are decided one by one)",
     set_allow_net, 0, false, NUM_NONE},
    {"allow-nested", NULL,
     "let sandbox_create {nested: true} make sandboxes that run containers inside (rootless "
     "podman and its Docker API; a wider kernel surface: docs/nested.md); off by default",
     set_flag, FIELD(allow_nested), false, NUM_NONE},
    {"secret", "SPEC",
     "a secret sandboxes may use without seeing it (repeatable): "
     "NAME=@FILE;hosts=H[:PORTS][,H...][;header=HEADER: TEMPLATE][;basic[=USER]][;env=VAR]; "
     "FILE read at start; sandbox_create {secrets} grants it (docs/secrets.md)",
     set_secret, 0, false, NUM_NONE},
    {"install", "MANAGERS",
     "which package managers install_packages may run: all (default), none, or a comma list "
     "of pip, npm, apt",
     set_install, 0, false, NUM_NONE},
    {"max-package-caches", "N",
     "package caches (installed sets, each a whole image on disk) the store may hold (16; 0: "
     "installs are never cached)",
     set_number, FIELD(max_package_caches), false, NUM_COUNT},
    {"pip-index", "URL",
     "the PyPI index (PEP 503 simple) pip installs from, and the only one it may reach "
     "(default: the pypi preset, pypi.org)",
     set_registry, FIELD(pip_index), false, NUM_NONE},
    {"npm-registry", "URL", "the npm registry npm installs from (default: registry.npmjs.org)",
     set_registry, FIELD(npm_registry), false, NUM_NONE},
    {"apt-mirror", "URL",
     "the Debian archive apt installs from (default: deb.debian.org); checked with the "
     "image's keys unless --apt-key",
     set_registry, FIELD(apt_mirror), false, NUM_NONE},
    {"apt-key", "FILE", "the OpenPGP key (armored or binary) that signs --apt-mirror", set_string,
     FIELD(apt_key), false, NUM_NONE},
    {"max-task-ttl", "S",
     "the longest a task (a long run a client polls) and its result are kept (3600; 0: no "
     "tasks)",
     set_number, FIELD(max_task_ttl_s), false, NUM_COUNT},
    {"task-after", "S",
     "a run from a 2026-07-28 client that declared the tasks extension becomes a task after "
     "this long (5; 0: at once)",
     set_number, FIELD(task_after_s), false, NUM_COUNT},
    {"http", "HOST:PORT", "serve MCP over HTTP at http://HOST:PORT/mcp instead of stdio",
     set_string, FIELD(address), false, NUM_NONE},
    {"token-file", "FILE",
     "HTTP: the bearer tokens, one per line, each a tenant (\"TOKEN\" or \"NAME TOKEN\"; "
     "blank lines and # comments skipped; else NSBOX_TOKEN, one tenant)",
     set_string, FIELD(token_file), false, NUM_NONE},
    {"max-sandboxes-per-tenant", "N",
     "HTTP: kept sandboxes of one tenant (token), its sessions and stateless clients together "
     "(default: no bound beyond --max-sandboxes per session and --max-total-sandboxes)",
     set_number, FIELD(max_per_tenant), false, NUM_SIZE},
    {"stateless-idle-timeout", "S",
     "HTTP: stop a sandbox of a client without a session (2026-07-28) unused this long (1800)",
     set_number, FIELD(stateless_idle_s), false, NUM_SECONDS},
    {"reconnect-idle", "S",
     "HTTP: a kept sandbox outlives the session that made it, stopped once unused this long, "
     "and any session of the same tenant (token) reaches it by id (default 0: off; a session's "
     "end stops its sandboxes)",
     set_number, FIELD(reconnect_idle_s), false, NUM_SECONDS},
    {"allow-host", "NAME", "HTTP: another name the Host header may carry (repeatable)",
     set_allow_host, 0, false, NUM_NONE},
    {"session-timeout", "S", "HTTP: end a session idle this long (3600)", set_number,
     FIELD(session_timeout_s), false, NUM_SECONDS},
    {"public-url", "URL",
     "HTTP: the base of the file URLs handed out, as clients reach this server (default "
     "http://HOST:PORT of --http; set it when binding 0.0.0.0 or behind a proxy)",
     set_public_url, FIELD(public_url), false, NUM_NONE},
    {"file-url-ttl", "S", "HTTP: how long a file URL works (900, at most 86400)", set_number,
     FIELD(file_url_ttl_s), false, NUM_SECONDS},
    {"max-upload-mb", "MB", "HTTP: the largest upload by URL (1024)", set_number,
     FIELD(max_upload_mb), false, NUM_MB},
    {"terminal-ttl", "S",
     "HTTP: how long a terminal URL waits for its one connection (default --file-url-ttl)",
     set_number, FIELD(terminal_ttl_s), false, NUM_SECONDS},
    {"max-terminals", "N", "HTTP: terminals open at once per session (4)", set_number,
     FIELD(max_terminals), false, NUM_SIZE},
    {"node-id", "NAME",
     "HTTP: this server's name in a fleet: every session and sandbox id it hands out starts "
     "with \"NAME.\", for a router to route on (default: NSBOX_NODE_ID, else none)",
     set_node_id, FIELD(node_id), false, NUM_NONE},
    {"shutdown-grace", "S",
     "HTTP: after SIGTERM, how long running calls and calls on existing sandboxes go on "
     "before they are cancelled and every sandbox stops (30; 0: at once)",
     set_number, FIELD(shutdown_grace_s), false, NUM_COUNT},
    {"max-sessions", "N", "HTTP: sessions at once (64)", set_number, FIELD(max_sessions), false,
     NUM_SIZE},
    {"max-connections", "N", "HTTP: open connections at once (256)", set_number,
     FIELD(max_connections), false, NUM_SIZE},
    {"max-connections-per-ip", "N",
     "HTTP: open connections from one address (64; behind a router every client comes from "
     "the router's address: raise it to --max-connections)",
     set_number, FIELD(max_per_ip), false, NUM_SIZE},
    {"preview-listen", "HOST:PORT",
     "HTTP: where the preview proxy (exposed ports' URLs, an origin apart from /mcp) listens "
     "(default: the --http host, a free port)",
     set_string, FIELD(preview_listen), false, NUM_NONE},
    {"preview-url", "URL",
     "HTTP: the base of the preview URLs handed out, as browsers reach the proxy (default "
     "http://HOST:PORT of --preview-listen)",
     set_public_url, FIELD(preview_url), false, NUM_NONE},
    {"preview-domain", "DOMAIN",
     "HTTP: host-mode previews at http://PORT-TOKEN.DOMAIN/ (a wildcard DNS name pointing at "
     "the proxy) instead of /p/TOKEN/ paths",
     set_string, FIELD(preview_domain), false, NUM_NONE},
    {"preview-ttl", "S", "HTTP: how long a preview URL works (3600)", set_number,
     FIELD(preview_ttl_s), false, NUM_SECONDS},
    {"max-preview-connections", "N", "HTTP: connections at once to the preview proxy (512)",
     set_number, FIELD(max_preview_conns), false, NUM_SIZE},
    {"max-ports", "N", "ports one sandbox may expose at once (port_expose; 8)", set_number,
     FIELD(max_ports), false, NUM_SIZE},
    {"auto-pause", "S",
     "pause (freeze) a kept sandbox idle for S seconds: no call, no CPU, no open connection or "
     "terminal; the next use resumes it (docs/pause.md; off by default)",
     set_number, FIELD(auto_pause_s), false, NUM_SECONDS},
    /* Lets tests (tests/load) see a silent connection closed without
     * waiting the documented 60 s. */
    {"idle-timeout", "S", NULL, set_number, FIELD(idle_timeout_s), true, NUM_SECONDS},
    {"print-config", NULL,
     "print the settings in effect (configuration files and options) as a [serve] section, and "
     "exit",
     set_print, 0, false, NUM_NONE},
    {"help", NULL, "this text", set_help, 0, false, NUM_NONE},
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

void mcp_config_init(struct mcp_config *c)
{
    const struct box_limits *d = &box_defaults.limits;
    *c = (struct mcp_config){
        .mode = box_limits_mode_from_env(),
        /* The policy's, but a call times out after 30 s unless it asks. */
        .defaults = {.memory_mb = d->memory_bytes >> 20,
                     .cpus = d->cpus,
                     .pids = d->pids,
                     .timeout_s = 30,
                     .disk_mb = box_defaults.disk_bytes >> 20,
                     .workspace_mb = box_defaults.workspace_bytes >> 20},
        .ceilings = {.memory_mb = 4096,
                     .cpus = 4,
                     .pids = 4096,
                     .timeout_s = 600,
                     .disk_mb = 8192,
                     .workspace_mb = 8192},
        .max_sandboxes = 16,
        .max_watches = 64,
        .call_queue = 64,
        .max_total = 128,
        .spares = 1,
        .max_commits = 16,
        .max_checkpoints = 16,
        .checkpoint_mb = 4096,
        .max_inline_kb = 1024,
        .max_processes = 16,
        .process_log_kb = 1024,
        .installs = MCP_INSTALL_ALL,
        .max_package_caches = 16,
        .max_upload_mb = MCP_UPLOAD_MB_DEFAULT,
        .preview_ttl_s = 3600,
        .max_preview_conns = 512,
        .max_ports = 8,
        .max_task_ttl_s = 3600,
        .task_after_s = 5,
        .shutdown_grace_s = 30,
    };
}

int mcp_config_parse(struct mcp_config *c, int argc, char **argv, struct nsbox_err *err)
{
    struct option long_opts[N_OPTS + 1];
    for (size_t i = 0; i < N_OPTS; i++)
        long_opts[i] = (struct option){opts[i].name, opts[i].arg ? required_argument : no_argument,
                                       NULL, (int)(256 + i)};
    long_opts[N_OPTS] = (struct option){0};
    int ch;
    const char *node = getenv("NSBOX_NODE_ID"); /* a file's key < the environment < a flag */
    if (node != NULL && *node != '\0' && set_node_id(c, NULL, node, err) < 0)
        return nsbox_err_prefix(err, "NSBOX_NODE_ID");
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        if (ch < 256 || ch >= 256 + (int)N_OPTS)
            return nsbox_err_set(err, EINVAL, "unknown option or missing value: %s",
                                 argv[optind - 1]);
        const struct opt *o = &opts[ch - 256];
        if (o->set(c, o, optarg, err) < 0)
            return -1;
    }
    if (optind != argc)
        return nsbox_err_set(err, EINVAL, "unexpected argument \"%s\"", argv[optind]);
    if (c->address == NULL &&
        (c->token_file != NULL || c->n_allowed_hosts > 0 || c->session_timeout_s > 0 ||
         c->idle_timeout_s > 0 || c->public_url || c->file_url_ttl_s || c->max_per_tenant > 0 ||
         c->stateless_idle_s > 0 || c->reconnect_idle_s > 0 || c->max_sessions > 0 ||
         c->max_connections > 0 || c->max_per_ip > 0 || c->terminal_ttl_s > 0 ||
         c->max_terminals > 0))
        return nsbox_err_set(err, EINVAL,
                             "--token-file, --allow-host, --session-timeout, --public-url, "
                             "--file-url-ttl, --max-sandboxes-per-tenant, "
                             "--stateless-idle-timeout, --reconnect-idle, --max-sessions, "
                             "--terminal-ttl, --max-terminals and --max-connections"
                             "[-per-ip] go with --http");
    if (c->process_log_kb > (BOX_BG_RING_MAX >> 10) || c->process_log_kb < (BOX_BG_RING_MIN >> 10))
        return nsbox_err_set(err, EINVAL, "--process-log-kb is at least %u and at most %u",
                             BOX_BG_RING_MIN >> 10, BOX_BG_RING_MAX >> 10);
    if (c->file_url_ttl_s > MCP_FILE_TTL_MAX)
        return nsbox_err_set(err, EINVAL, "--file-url-ttl is at most %d seconds (a day)",
                             MCP_FILE_TTL_MAX);
    return 0;
}

int mcp_config_set(struct mcp_config *c, const char *name, const char *value, struct nsbox_err *err)
{
    for (size_t i = 0; i < N_OPTS; i++) {
        if (strcmp(opts[i].name, name) != 0)
            continue;
        if (opts[i].arg == NULL && opts[i].set != set_flag)
            return nsbox_err_set(err, EINVAL, "%s is a command-line option only", name);
        return opts[i].set(c, &opts[i], value, err);
    }
    return nsbox_err_set(err, EINVAL, "unknown key (the keys are `nsbox serve --help`'s options)");
}

/* One option's value as a configuration file would set it. */
static void print_opt(FILE *f, const struct mcp_config *c, const struct opt *o)
{
    if (o->set == set_number) {
        switch (o->num) {
        case NUM_MB:
            fprintf(f, "%s = %llu\n", o->name, (unsigned long long)*AT(c, o, uint64_t));
            break;
        case NUM_U32:
            fprintf(f, "%s = %u\n", o->name, *AT(c, o, uint32_t));
            break;
        case NUM_SIZE:
        case NUM_COUNT:
            fprintf(f, "%s = %zu\n", o->name, *AT(c, o, size_t));
            break;
        case NUM_DOUBLE:
            fprintf(f, "%s = %g\n", o->name, *AT(c, o, double));
            break;
        case NUM_SECONDS:
            if (*AT(c, o, unsigned) > 0)
                fprintf(f, "%s = %u\n", o->name, *AT(c, o, unsigned));
            break;
        case NUM_NONE:
            break;
        }
    } else if (o->set == set_string || o->set == set_public_url || o->set == set_node_id) {
        if (*AT(c, o, const char *) != NULL)
            fprintf(f, "%s = %s\n", o->name, *AT(c, o, const char *));
    } else if (o->set == set_limits) {
        fprintf(f, "limits = %s\n", c->mode == NSBOX_LIMITS_BEST_EFFORT ? "best-effort" : "strict");
    } else if (o->set == set_isolation) {
        fprintf(f, "isolation = %s\n", box_isolation_name(c->isolation));
    } else if (o->set == set_image) {
        for (size_t i = 0; i < c->n_langs; i++)
            fprintf(f, "image = %s=%s\n", c->langs[i].language, c->langs[i].ref);
    } else if (o->set == set_host_dir) {
        for (size_t i = 0; i < c->n_host_dirs; i++)
            fprintf(f, "allow-host-dir = %s\n", c->host_dirs[i]);
    } else if (o->set == set_registry) {
        if (*AT(c, o, const char *) != NULL)
            fprintf(f, "%s = %s\n", o->name, *AT(c, o, const char *));
    } else if (o->set == set_install) {
        fprintf(f, "install = ");
        if (c->installs == 0)
            fprintf(f, "none");
        for (int m = 0, first = 1; m < 3; m++)
            if (c->installs & MCP_INSTALL_BIT(m)) {
                fprintf(f, "%s%s", first ? "" : ",", box_pkg_manager_name((enum box_pkg_manager)m));
                first = 0;
            }
        fprintf(f, "\n");
    } else if (o->set == set_allow_net) {
        for (size_t i = 0; i < c->n_allow_net; i++)
            fprintf(f, "allow-net = %s\n", c->allow_net[i]);
    } else if (o->set == set_secret) {
        /* The SPEC as given: it names the FILE, never holds the value. */
        for (size_t i = 0; i < c->n_secrets; i++)
            fprintf(f, "secret = %s\n", c->secret_specs[i]);
    } else if (o->set == set_flag) {
        if (*AT(c, o, bool))
            fprintf(f, "%s = true\n", o->name);
    } else if (o->set == set_allow_host) {
        for (size_t i = 0; i < c->n_allowed_hosts; i++)
            fprintf(f, "allow-host = %s\n", c->allowed_hosts[i]);
    }
}

void mcp_config_print(FILE *f, const struct mcp_config *c)
{
    fprintf(f, "[serve]\n");
    for (size_t i = 0; i < N_OPTS; i++)
        if (!opts[i].hidden && (opts[i].arg != NULL || opts[i].set == set_flag))
            print_opt(f, c, &opts[i]);
}

void mcp_config_usage(FILE *f)
{
    fprintf(f, "usage: nsbox [--store DIR] serve [OPTIONS]\n\n"
               "An MCP server on stdin/stdout (newline-delimited JSON-RPC); logs on stderr.\n"
               "With --http, MCP Streamable HTTP at http://HOST:PORT/mcp instead (port 0: any\n"
               "free one; the address is printed on stderr), one session per client, until\n"
               "SIGINT or SIGTERM.  A bearer token (--token-file, or NSBOX_TOKEN) is required\n"
               "on addresses other than loopback; --allow-host adds a name the Host header\n"
               "may carry (besides localhost, 127.0.0.1, [::1] and HOST).\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char left[64];
        if (opts[i].hidden)
            continue;
        snprintf(left, sizeof(left), "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
                 opts[i].arg ? opts[i].arg : "");
        fprintf(f, "  %-28s %s\n", left, opts[i].help);
    }
}

void mcp_config_free(struct mcp_config *c)
{
    for (size_t i = 0; i < c->n_langs; i++) {
        free(c->langs[i].language);
        free(c->langs[i].ref);
    }
    c->n_langs = 0;
    if (c->secrets != NULL)
        explicit_bzero(c->secrets, MCP_MAX_SECRETS * sizeof(*c->secrets));
    free(c->secrets);
    c->secrets = NULL;
    c->n_secrets = 0;
}
