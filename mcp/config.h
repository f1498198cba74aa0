/* The server's construction: `nsbox serve`'s options as one table, parsed
 * into a configuration, and the server opened from it and closed again.
 * The front end (cli/serve.c) only hands over argv, picks the transport
 * and handles process signals. */
#ifndef NSBOX_MCP_CONFIG_H
#define NSBOX_MCP_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "../boxes/box.h"
#include "../common/err.h"
#include "server.h"
#include "http/transport.h"

#define MCP_MAX_HOST_DIRS 16
#define MCP_MAX_ALLOW_NET 64
#define MCP_MAX_SECRETS 64

struct egress_secret;

/* What the operator asked for; strings point into argv (or are owned, see
 * mcp_config_free). */
struct mcp_config {
    enum nsbox_limits_mode mode;
    enum nsbox_isolation isolation; /* --isolation (runtime/landlock.h) */
    struct mcp_limits defaults, ceilings;
    size_t max_sandboxes, max_total, max_commits;
    size_t spares;           /* --spares: one-shot spares at most (docs/warm.md) */
    const char *warm_import; /* --warm-import M,M: python modules the spares import */
    /* Checkpoints (tools/checkpoint.c): per tenant, how many (0: no
     * checkpoint tools) and how many MiB; where (NULL: STORE/checkpoints). */
    size_t max_checkpoints;
    uint64_t checkpoint_mb;
    const char *checkpoint_dir;
    size_t max_watches;                   /* resources/subscribe per session */
    size_t call_queue;                    /* --call-queue: tools/calls waiting per session */
    size_t max_inline_kb;                 /* the most max_inline_kb a call may ask for */
    struct mcp_lang langs[MCP_MAX_LANGS]; /* --image LANG=REF, owned */
    size_t n_langs;
    const char *host_dirs[MCP_MAX_HOST_DIRS]; /* --allow-host-dir */
    size_t n_host_dirs;
    /* --allow-net RULE: the ceiling of what calls may open (boxes/net.h),
     * each checked when set */
    const char *allow_net[MCP_MAX_ALLOW_NET];
    /* install_packages (boxes/packages.h): the registries (NULL: the
     * public ones), the mirror's signing key file, and which managers may
     * install (MCP_INSTALL_* bits; --install, default all). */
    const char *pip_index, *npm_registry, *apt_mirror, *apt_key;
    unsigned installs;
    size_t max_package_caches;
    size_t n_allow_net;
    /* --secret SPEC (boxes/secrets.h): each read when set (its FILE's
     * value held here, owned, wiped by mcp_config_free); the SPEC texts
     * (which hold no value: NAME=@FILE;...) for --print-config. */
    struct egress_secret *secrets;
    const char *secret_specs[MCP_MAX_SECRETS];
    size_t n_secrets;
    /* HTTP (--http): address NULL serves stdio. */
    const char *address;
    const char *token_file;
    const char *allowed_hosts[MCP_HTTP_MAX_ALLOWED_HOSTS];
    size_t n_allowed_hosts;
    unsigned session_timeout_s, idle_timeout_s;
    /* File URLs (--public-url, --file-url-ttl, --max-upload-mb). */
    const char *public_url;
    unsigned file_url_ttl_s;
    uint64_t max_upload_mb;
    unsigned terminal_ttl_s;             /* --terminal-ttl; 0: --file-url-ttl's */
    size_t max_terminals;                /* --max-terminals; 0: 4 */
    size_t max_task_ttl_s, task_after_s; /* tasks (tasks/tasks.h) */
    size_t max_per_tenant;               /* --max-sandboxes-per-tenant; 0: --max-sandboxes */
    unsigned stateless_idle_s;           /* --stateless-idle-timeout; 0: 1800 */
    unsigned reconnect_idle_s;           /* --reconnect-idle; 0: off */
    /* HTTP bounds (--max-sessions, --max-connections[-per-ip]); 0: 64, 256, 64. */
    size_t max_sessions, max_connections, max_per_ip;
    /* A fleet (docs/tools.md "Fleet"): --node-id (or NSBOX_NODE_ID; HTTP
     * only, checked: mcp/node.h) and SIGTERM's grace (--shutdown-grace). */
    const char *node_id;
    size_t shutdown_grace_s;
    /* Background processes (boxes/bg.h): running per sandbox, KiB of each
     * stream's ring (--max-processes, --process-log-kb). */
    size_t max_processes, process_log_kb;
    /* The preview proxy (mcp/preview/preview.h): --preview-listen,
     * --preview-url, --preview-domain, --preview-ttl,
     * --max-preview-connections; and --max-ports (also over stdio). */
    const char *preview_listen, *preview_url, *preview_domain;
    unsigned preview_ttl_s;
    size_t max_preview_conns, max_ports;
    unsigned auto_pause_s; /* --auto-pause: pause sandboxes idle this long (mcp/pause.h); 0 off */
    bool allow_nested;     /* --allow-nested: sandbox_create may ask for nested (docs/nested.md) */
    bool help;
    bool print_config; /* --print-config */
};

/* The defaults (and NSBOX_LIMITS=best-effort from the environment). */
void mcp_config_init(struct mcp_config *c);

/* Parses `serve`'s options (argv[0] is "serve").  Returns 0 (c->help set
 * for --help), or -1 with err naming the option: a usage error. */
int mcp_config_parse(struct mcp_config *c, int argc, char **argv, struct nsbox_err *err);

/* Sets the option called name (a long option without "--", as a
 * configuration file's [serve] section names it) to value, exactly as the
 * command line would; value must outlive c.  Returns 0, or -1 (unknown,
 * command-line only, or a bad value). */
int mcp_config_set(struct mcp_config *c, const char *name, const char *value,
                   struct nsbox_err *err);

/* Writes the settings c holds as a [serve] section (--print-config). */
void mcp_config_print(FILE *f, const struct mcp_config *c);

/* The option list, generated from the table, for --help. */
void mcp_config_usage(FILE *f);

void mcp_config_free(struct mcp_config *c);

/* Opens the server c describes: the sandbox context (bo: the store, the
 * default seccomp profile and the version the front end links in; its
 * mode is c's), the default filter compiled or loaded from the cache now
 * (a broken profile fails the start, not the first sandbox), the allowed
 * host directories, stale sandboxes of a crashed server removed.  Returns
 * 0, or -1 with err (nothing left open). */
int mcp_server_open(struct mcp_server *s, const struct mcp_config *c, const struct box_ctx_opts *bo,
                    struct nsbox_err *err);

/* Stops the spare and pending removals, then releases what open took.
 * Every session must have been shut down. */
void mcp_server_close(struct mcp_server *s);

/* The bearer tokens: the text of c's --token-file (one tenant per line,
 * checked when the HTTP server parses it), else NSBOX_TOKEN (checked; unset
 * from the environment after), else none (*out NULL).  Returns 0 or -1. */
int mcp_config_token(const struct mcp_config *c, char **out, struct nsbox_err *err);

#endif
