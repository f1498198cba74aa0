/* The MCP protocol layer: one request being answered (struct mcp_req),
 * how it is answered (mcp_reply*), and the method table the dispatcher
 * (dispatch.c) looks methods up in.
 *
 * Eras (MCP 2026-07-28, "Versioning"): a *legacy* request (2024-11-05 ..
 * 2025-11-25) belongs to a session that said `initialize`; a *modern* one
 * (2026-07-28) carries its protocol version, client capabilities and log
 * level in params._meta and needs no handshake.  dispatch.c decides the
 * era of each request and fills struct mcp_req; a handler reads it and
 * answers through mcp_reply, which shapes the result for the era (a
 * modern result carries resultType and the server's identity in _meta).
 *
 * A new method is a handler in a file of its own (resources/, tasks/,
 * ...) and one line in methods.c.  Handlers run on the transport's
 * thread: one that blocks (tools/call) hands its work to a thread of its
 * own with a held copy of the request (mcp_req_hold). */
#ifndef NSBOX_MCP_PROTOCOL_REQUEST_H
#define NSBOX_MCP_PROTOCOL_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../session.h"

enum mcp_era {
    MCP_ERA_LEGACY, /* initialize-based: 2024-11-05 .. 2025-11-25 */
    MCP_ERA_MODERN, /* per-request _meta: 2026-07-28 */
};

/* One request (or notification) being answered. */
struct mcp_req {
    struct mcp_session *s;
    json_t *id;         /* the request id; NULL for a notification */
    const char *method; /* the method name */
    json_t *params;     /* may be NULL */
    json_t *meta;       /* params._meta, or NULL */
    enum mcp_era era;
    char version[16]; /* the protocol version it is served under */
    /* The lowest level of notifications/message this request may cause
     * (an index into mcp_log_levels), or -1 for none: the session's
     * logging/setLevel for a legacy request, _meta's
     * io.modelcontextprotocol/logLevel for a modern one. */
    int log_level;
    /* A modern request's _meta io.modelcontextprotocol/clientCapabilities
     * (borrowed from meta), or NULL: what the client can do, for this
     * request only. */
    json_t *client_caps;
    bool held; /* a heap copy (mcp_req_hold): id, params and meta are references */
};

/* The per-request _meta keys of 2026-07-28 ("basic/index", _meta). */
#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* The error codes 2026-07-28 defines (-32020..-32099 are the spec's). */
enum {
    MCP_HEADER_MISMATCH = -32020,
    MCP_MISSING_CLIENT_CAPABILITY = -32021,
    MCP_UNSUPPORTED_PROTOCOL_VERSION = -32022,
};

/* ---- eras and versions (era.c) ---- */

/* Every protocol version nsbox serves, newest first: the modern ones per
 * request (_meta), the legacy ones through initialize. */
extern const char *const mcp_versions[];
extern const size_t mcp_n_versions;
/* Whether v is a version served per request (2026-07-28), resp. through
 * initialize (2024-11-05 .. 2025-11-25).  NULL: neither. */
bool mcp_version_modern(const char *v);
bool mcp_version_legacy(const char *v);
/* mcp_versions as a JSON array (new reference). */
json_t *mcp_versions_json(void);

/* Decides rq's era from its _meta (and rq->s->modern_only, and whether its
 * method exists in the legacy era) and fills rq->era, version, log_level
 * and client_caps.  A request is modern when its _meta carries any of the
 * per-request keys, its session serves only modern ones, or its method
 * (server/discover, subscriptions/listen) exists only there; a modern one
 * must carry a supported protocolVersion, a clientCapabilities object and
 * (if any) a known logLevel.  Returns 0, or the JSON-RPC error code to
 * answer with: *why is a static message and *data (a new reference, or
 * NULL) the error's data. */
int mcp_era_decide(struct mcp_req *rq, const char **why, json_t **data);

/* Sends result (stolen) as the response to rq, shaped for its era: a
 * modern result gets resultType "complete" (unless it has one) and the
 * server's identity in _meta (io.modelcontextprotocol/serverInfo); a
 * legacy one goes as it is. */
void mcp_reply(const struct mcp_req *rq, json_t *result);

/* Sends a JSON-RPC error response to rq; data (stolen) may be NULL. */
void mcp_reply_error(const struct mcp_req *rq, int code, const char *message);
void mcp_reply_error_data(const struct mcp_req *rq, int code, const char *message, json_t *data);

/* A heap copy of rq that outlives the message it came from (for work on
 * another thread), or NULL when out of memory; free with mcp_req_release. */
struct mcp_req *mcp_req_hold(const struct mcp_req *rq);
void mcp_req_release(struct mcp_req *rq);

/* Marks a result of rq cacheable (2026-07-28 "Caching": tools/list,
 * resources/list, resources/read, resources/templates/list,
 * server/discover): ttlMs (>= 0; a negative one counts as 0) and
 * cacheScope ("public": the same for every caller; "private": for this
 * caller's authorization only).  Nothing for a legacy request, whose
 * revision has no such fields. */
void mcp_cacheable(const struct mcp_req *rq, json_t *result, long ttl_ms, const char *scope);

/* The level of notifications/message a call answering rq takes
 * (struct mcp_call.log_level, ../call.h): a modern request's own, the
 * session's (MCP_LOG_SESSION) for a legacy one. */
int mcp_req_call_log_level(const struct mcp_req *rq);

/* The server's identity, for initialize and modern results. */
json_t *mcp_server_info(void);

/* Which requests a method serves (mcp_method.flags). */
enum {
    MCP_M_LEGACY = 1, /* in an initialized legacy session */
    MCP_M_MODERN = 2, /* as a modern (2026-07-28) request */
    MCP_M_BOTH = 3,
    MCP_M_BEFORE_INIT = 4, /* legacy: also before initialize (initialize, ping) */
};

struct mcp_method {
    const char *name;
    void (*handle)(const struct mcp_req *rq);
    unsigned flags; /* MCP_M_* */
};

/* The methods (methods.c), looked up by name. */
extern const struct mcp_method mcp_methods[];
extern const size_t mcp_n_methods;
const struct mcp_method *mcp_method_find(const char *name);

/* The handlers of methods.c, by file. */
/* lifecycle.c */
void mcp_handle_initialize(const struct mcp_req *rq);
void mcp_handle_ping(const struct mcp_req *rq);
void mcp_handle_set_level(const struct mcp_req *rq);
/* tools_call.c */
void mcp_handle_tools_list(const struct mcp_req *rq);
void mcp_handle_tools_call(const struct mcp_req *rq);
/* notifications/cancelled (tools_call.c): cancels the call rq names. */
void mcp_handle_cancelled(const struct mcp_req *rq);

/* How long a client may keep tools/list and server/discover (ms): they
 * change only with the server's configuration, that is on a restart. */
#define MCP_LIST_TTL_MS 300000L

extern const char *const mcp_instructions; /* lifecycle.c */
/* The ServerCapabilities nsbox declares to rq (new reference): the one
 * place both initialize and server/discover take them from (lifecycle.c).
 * A feature that adds a capability or an extension (capabilities.
 * extensions, modern only) adds it here, for the era and version it
 * exists in. */
json_t *mcp_server_capabilities(const struct mcp_req *rq);

/* modern.c: the methods only 2026-07-28 has. */
void mcp_handle_discover(const struct mcp_req *rq);
void mcp_handle_listen(const struct mcp_req *rq);
/* Ends every subscriptions/listen of s gracefully, at shutdown: a
 * completion result for each, then notifications/cancelled naming it. */
void mcp_listens_close(struct mcp_session *s);

#endif
