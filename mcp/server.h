/* The MCP server: its configuration and sessions (protocol state and the
 * session's sandboxes).  Transports (transport_stdio.c, http/) feed it
 * messages and give it a way to send; the tools are in tools/
 * (tools/tools.h), the session's sandboxes in sandboxes.h. */
#ifndef NSBOX_MCP_SERVER_H
#define NSBOX_MCP_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../boxes/box.h"
#include "../boxes/packages.h"
#include "interp/interp.h"
#include "node.h"
#include "../common/cancel.h"
#include "result.h"

#define MCP_MAX_LANGS 32
#define MCP_MAX_CALLS 64

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

/* A sandbox this session created: the box (boxes/box.h: the runtime
 * handle, image, env, user, lease, workspace, limits) and the server's own
 * bookkeeping. */
struct mcp_sandbox {
    struct box box;
    /* Its id as clients see it: "NODE.<hex>" with --node-id (node.h),
     * else box.sb.id; the runtime's own id stays box.sb.id. */
    char id[MCP_ID_MAX + 1];
    bool one_shot;
    /* Its persistent interpreters (mcp/interp/interp.h), by language;
     * used under exec_lock. */
    struct mcp_interp *interp[MCP_INTERP_N];
    pthread_mutex_t exec_lock; /* one command at a time on its socket */
    /* Ownership (sandboxes.h), under the session's lock. */
    unsigned refs;    /* calls holding it */
    bool stopping;    /* out of the list; freed once refs is 0 */
    time_t last_used; /* CLOCK_MONOTONIC seconds: made, or last let go of */
    struct mcp_sandbox *next;
};

struct mcp_task; /* tasks/tasks.h */

/* mcp_call.log_level of a legacy call: the session's logging/setLevel. */
#define MCP_LOG_SESSION (-2)

/* A tools/call in progress (or an open subscriptions/listen), for
 * notifications/cancelled. */
struct mcp_call {
    json_t *id;                  /* the request id; NULL: a free slot */
    json_t *progress_token;      /* _meta.progressToken, or NULL */
    struct mcp_sandbox *sandbox; /* the sandbox an operation of it runs in */
    struct nsbox_cancel cancel;  /* every exec of the call takes it */
    bool cancelled;
    bool taskable;         /* it may run as a task: progress is watched */
    struct mcp_task *task; /* the task it runs as, or NULL */
    /* The lowest level of notifications/message for this call (an index
     * into the syslog levels): a modern request's _meta logLevel, -1 for
     * none (a modern request without one), MCP_LOG_SESSION for a legacy
     * call. */
    int log_level;
    bool listen; /* a subscriptions/listen, not a call: no thread, no cancel fd */
};

struct mcp_file_urls;

/* What the operator configured: shared by every session. */
struct mcp_server {
    struct box_ctx boxes;           /* the store, STORE/sandboxes, mode, default seccomp */
    char node_id[MCP_NODE_MAX + 1]; /* --node-id (node.h); "" when none */
    bool opened;                    /* boxes is to be closed (mcp_server_open) */
    struct mcp_lang langs[MCP_MAX_LANGS];
    size_t n_langs;
    struct mcp_limits defaults, ceilings;
    size_t max_sandboxes; /* per session */
    size_t max_total;     /* live sandboxes, all sessions and spares */
    size_t max_commits;   /* sandbox_commit's images in the store; 0: no such tool */
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
    /* install_packages: where each manager installs from (owned copies;
     * apt_key read from --apt-key), and which may (MCP_INSTALL_*). */
    struct box_pkg_registries registries;
    unsigned installs;
    size_t max_package_caches; /* cache images kept (--max-package-caches) */
    /* Files by signed URL (mcp/files/urls.h): set by the HTTP transport
     * while it serves, NULL over stdio (no URLs, no upload_url). */
    const struct mcp_file_urls *file_urls;

    /* The spare sandbox for one-shot runs (pool.c). */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_idle;
    struct mcp_sandbox *spare;
    char spare_image[512];
    /* nsbox's interpreter drivers on the host (STORE/cache/drivers/...),
     * bound read-only into every kept sandbox; "" when they could not be
     * written (execute_code then runs fresh processes only). */
    char drivers_dir[PATH_MAX];
    bool refilling, draining;
    /* The node drains (serve --http's SIGTERM, mcp_node_drain_begin): no
     * new sandbox for a call.  Read and set with __atomic builtins. */
    bool node_draining;
    size_t n_freeing;
    size_t n_live; /* under pool_lock */
};

/* Bits of mcp_server.installs: a manager install_packages may run. */
#define MCP_INSTALL_BIT(m) (1u << (m)) /* m: enum box_pkg_manager */
#define MCP_INSTALL_ALL 7u

/* A cap shared by several sessions (an HTTP tenant's: mcp/http/tenants.h):
 * the kept sandboxes of all of them together. */
struct mcp_quota {
    pthread_mutex_t lock;
    size_t n, max;
};

struct mcp_session;
typedef void (*mcp_send_fn)(struct mcp_session *s, json_t *msg);

/* One client: over stdio the process's, over HTTP one per Mcp-Session-Id.
 * Sandboxes belong to the session that made them. */
struct mcp_session {
    struct mcp_server *cfg;
    char id[MCP_ID_MAX + 1]; /* HTTP: the Mcp-Session-Id ("NODE.<hex>", node.h); stdio: "" */

    /* Transport: how messages reach this session's client. */
    mcp_send_fn send;
    /* Optional: sends msg, a notification that belongs to the request
     * request_id (notifications/message of a call, the acknowledgment of a
     * subscriptions/listen, which carries request_id in its _meta
     * io.modelcontextprotocol/subscriptionId), where that request's
     * response goes (HTTP: on its own stream).  NULL: log messages go
     * through send, and subscriptions/listen is an unknown method. */
    void (*send_related)(struct mcp_session *s, json_t *request_id, json_t *msg);
    void *transport;
    /* Serves 2026-07-28 requests only (HTTP's sessionless tenant
     * sessions): a request without the per-request _meta is malformed
     * (-32602), initialize is an unknown method.  Stdio serves both. */
    bool modern_only;

    /* HTTP with several tenants: the tenant's own segment below
     * localhost/nsbox-commit/ (mcp/tools/commit.c: its commits are its
     * own); "" otherwise (stdio, one tenant).  Set before the first
     * request. */
    char commit_scope[48];

    pthread_mutex_t lock;
    bool initialized;
    char protocol[16];
    int log_level; /* index into the syslog-style levels */
    struct mcp_sandbox *sandboxes;
    size_t n_sandboxes;
    /* Set by the transport before the first request: the session's own
     * cap (0: cfg->max_sandboxes) and a cap it shares (NULL: none). */
    size_t max_sandboxes;
    struct mcp_quota *quota;
    struct mcp_call calls[MCP_MAX_CALLS];
    size_t n_running;
    struct mcp_task *tasks; /* tasks/tasks.h */
    size_t n_tasks;
    pthread_cond_t idle;     /* n_running fell */
    pthread_cond_t released; /* a sandbox's refs reached 0 */

    /* What results linked, for resources/list (resources/listing.c). */
    struct mcp_reported *reported;
};

/* Initializes a session for cfg (locks, defaults).  send/transport are
 * the caller's to set. */
void mcp_session_init(struct mcp_session *s, struct mcp_server *cfg);

/* Handles one raw message (a line over stdio, a POST body over HTTP).
 * Sends responses through s->send, possibly later from a worker thread.
 * Returns true when the message was a request (a response will follow). */
bool mcp_session_handle(struct mcp_session *s, const char *text, size_t len);

/* Waits at most grace_ms for the running calls to finish on their own. */
void mcp_session_drain(struct mcp_session *s, unsigned grace_ms);

/* Cancels the running calls and waits for them, then stops every sandbox
 * of the session. */
void mcp_session_shutdown(struct mcp_session *s);

/* Logs to stderr and, when call's request asked for level (its _meta
 * logLevel; a legacy session's logging/setLevel), sends it as
 * notifications/message for that request (s->send_related). */
void mcp_call_log(struct mcp_session *s, const struct mcp_call *call, const char *level,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
