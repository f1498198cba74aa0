/* What the operator configured: the server's record, shared by every
 * session.  mcp_server_open (config.c) fills it from `nsbox serve`'s
 * options and mcp_server_close releases it; sessions (session.h) and the
 * tools read it, the spare's fields (pool.c) change under pool_lock.
 * No functions live here: a session is session.h, a sandbox's record
 * sandbox.h, a call call.h. */
#ifndef NSBOX_MCP_SERVER_H
#define NSBOX_MCP_SERVER_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../boxes/bg.h"
#include "../boxes/box.h"
#include "../boxes/packages.h"
#include "node.h"

struct egress_secret;

#define MCP_MAX_LANGS 32

struct mcp_limits {
    uint64_t memory_mb;
    double cpus;
    uint32_t pids;
    double timeout_s;
    uint64_t disk_mb;      /* the writable layer in total (runtime/disk.h) */
    uint64_t workspace_mb; /* a persistent workspace's budget */
};

struct mcp_lang {
    char *language;
    char *ref; /* image reference or digest */
};

struct mcp_sandbox;   /* sandbox.h */
struct mcp_file_urls; /* files/urls.h */
struct mcp_terminals; /* preview/terminal.h */
struct mcp_autopause; /* pause.h */

/* What the operator configured: shared by every session. */
struct mcp_server {
    struct box_ctx boxes;           /* the store, STORE/sandboxes, mode, default seccomp */
    char node_id[MCP_NODE_MAX + 1]; /* --node-id (node.h); "" when none */
    bool opened;                    /* boxes is to be closed (mcp_server_open) */
    struct mcp_lang langs[MCP_MAX_LANGS];
    size_t n_langs;
    struct mcp_limits defaults, ceilings;
    size_t max_sandboxes; /* per session */
    size_t max_watches;   /* resources/subscribe watches per session (resources/watches.h) */
    size_t call_queue;    /* tools/calls waiting per session for a slot (docs/burst.md) */
    size_t max_total;     /* live sandboxes, all sessions and spares */
    size_t max_commits;   /* sandbox_commit's images in the store; 0: no such tool */
    /* Checkpoints (tools/checkpoint.c): per tenant; 0: no such tools. */
    size_t max_checkpoints;
    uint64_t checkpoint_mb;
    char *checkpoint_dir; /* owned */
    size_t output_cap;
    size_t max_inline_kb; /* ceiling of a call's max_inline_kb (serve --max-inline-kb) */
    /* Tasks (tasks/tasks.h): the longest TTL (0: no tasks), and how long
     * a 2026-07-28 call runs before it becomes one. */
    unsigned max_task_ttl_s, task_after_ms;
    /* Host directories copy_in/copy_out may use (serve --allow-host-dir). */
    struct {
        char *path;
        int fd;
    } host_dirs[16];
    size_t n_host_dirs;
    /* What calls may open to the network (serve --allow-net, boxes/net.h):
     * NULL when nothing (every sandbox stays sealed). */
    struct egress_policy *net_ceiling;
    /* The operator's secrets (serve --secret, boxes/secrets.h), values
     * read at start: owned, wiped at close; sandbox_create {secrets}
     * grants them by name, list_secrets names them. */
    struct egress_secret *secrets;
    size_t n_secrets;
    /* install_packages: where each manager installs from (owned copies;
     * apt_key read from --apt-key), and which may (MCP_INSTALL_*). */
    struct box_pkg_registries registries;
    unsigned installs;
    size_t max_package_caches; /* cache images kept (--max-package-caches) */
    /* Files by signed URL (mcp/files/urls.h): set by the HTTP transport
     * while it serves, NULL over stdio (no URLs, no upload_url). */
    const struct mcp_file_urls *file_urls;
    /* Background processes (boxes/bg.h, tools/processes.c): the keeper
     * thread, started by the first process_start (under pool_lock), and
     * the limits: running per sandbox, KiB per stream's ring. */
    struct box_bg_keeper *bg_keeper;
    unsigned max_processes;
    size_t process_log_kb;
    /* Terminals (preview/terminal.h): set by the HTTP transport while it
     * serves, NULL over stdio (no terminal_open). */
    struct mcp_terminals *terminals;
    /* The preview proxy (mcp/preview/preview.h): set by serve --http while
     * it serves, NULL over stdio (ports are then reached on 127.0.0.1);
     * and the most ports one sandbox may expose (--max-ports; 0: 8). */
    struct preview *preview;
    size_t max_ports;
    /* Auto-pause (mcp/pause.h): --auto-pause's seconds (0: off) and its
     * thread with the sessions it watches, NULL when off. */
    unsigned auto_pause_s;
    struct mcp_autopause *autopause;
    /* serve --allow-nested: sandbox_create may make nested sandboxes. */
    bool allow_nested;

    /* The spare sandbox for one-shot runs (pool.c). */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_idle;
    struct mcp_sandbox *spare;
    char spare_image[512];
    /* nsbox's interpreter drivers on the host (STORE/cache/drivers/...),
     * bound read-only into every kept sandbox; "" when they could not be
     * written (execute_code then runs fresh processes only). */
    char drivers_dir[PATH_MAX];
    bool draining;
    /* The node drains (serve --http's SIGTERM, mcp_node_drain_begin): no
     * new sandbox for a call.  Read and set with __atomic builtins. */
    bool node_draining;
    size_t n_freeing;
    size_t n_live;     /* under pool_lock */
    size_t n_removing; /* of n_live: being stopped now (pool.c), under pool_lock */
    /* The spares' zygotes (pool.c, docs/warm.md), under pool_lock: the
     * spares in the pool (spare is the first), at most max_spares
     * (--spares; 0: none), the count the call rate asks for, the
     * language the next one's interpreter is for (-1: none), the python
     * modules it imports (--warm-import, NULL-terminated, owned), and the
     * rate: the last take, the mean gap between takes and the mean time a
     * spare takes to make (ms).  keeper: the thread that makes and trims. */
    size_t n_spares, max_spares, spares_wanted;
    int spare_lang;
    char **warm_import;
    int64_t last_take_ms;
    double take_gap_ms, spare_build_ms;
    bool keeper, warm_reported, zygote_reported;
};

/* Bits of mcp_server.installs: a manager install_packages may run. */
#define MCP_INSTALL_BIT(m) (1u << (m)) /* m: enum box_pkg_manager */
#define MCP_INSTALL_ALL 7u

#endif
