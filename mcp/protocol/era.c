/* Eras and versions (request.h): which revision a request speaks, and
 * whether its per-request _meta is well formed.  MCP 2026-07-28
 * ("Versioning"): a request carrying its protocol version in _meta is
 * served statelessly; initialize selects a legacy revision for the
 * session.  Pure but for the session's lock (a legacy request's level). */
#include <string.h>

#include "../call.h"
#include "../jsonrpc.h"
#include "request.h"

const char *const mcp_versions[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                    "2024-11-05"};
const size_t mcp_n_versions = sizeof(mcp_versions) / sizeof(mcp_versions[0]);
#define N_MODERN 1 /* the first ones of mcp_versions */

bool mcp_version_modern(const char *v)
{
    for (size_t i = 0; v && i < N_MODERN; i++)
        if (strcmp(v, mcp_versions[i]) == 0)
            return true;
    return false;
}

bool mcp_version_legacy(const char *v)
{
    for (size_t i = N_MODERN; v && i < mcp_n_versions; i++)
        if (strcmp(v, mcp_versions[i]) == 0)
            return true;
    return false;
}

json_t *mcp_versions_json(void)
{
    json_t *a = json_array();
    for (size_t i = 0; i < mcp_n_versions; i++)
        json_array_append_new(a, json_string(mcp_versions[i]));
    return a;
}

/* The request as a legacy one: under the session's negotiated version. */
static void legacy(struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    rq->era = MCP_ERA_LEGACY;
    pthread_mutex_lock(&s->lock);
    snprintf(rq->version, sizeof(rq->version), "%s", s->protocol);
    rq->log_level = s->initialized ? s->log_level : -1;
    pthread_mutex_unlock(&s->lock);
}

/* Whether the request speaks the modern era.  Its protocolVersion in _meta
 * decides, as in the official SDK's server; so does a session that serves
 * no other, or a method no legacy revision has.  The other per-request keys
 * (clientCapabilities, clientInfo, logLevel) do not: a 2025 client may send
 * them (Mastra's MCPClient pinned to "legacy" adds logLevel to every
 * request, initialize included), and in a session that initialize opened,
 * or on initialize itself, they are unknown _meta keys, ignored.  Only
 * before any initialize, where a legacy request could not be served anyway,
 * do they mark a malformed modern request (the error then names what is
 * missing rather than "not initialized"). */
static bool is_modern(const struct mcp_req *rq)
{
    static const char *const keys[] = {MCP_META_CLIENT_CAPS, MCP_META_CLIENT_INFO,
                                       MCP_META_LOG_LEVEL};
    if (json_object_get(rq->meta, MCP_META_PROTOCOL_VERSION) != NULL || rq->s->modern_only)
        return true;
    const struct mcp_method *m = mcp_method_find(rq->method);
    if (m != NULL && !(m->flags & MCP_M_LEGACY))
        return true;
    if (strcmp(rq->method, "initialize") == 0)
        return false;
    pthread_mutex_lock(&rq->s->lock);
    bool opened = rq->s->initialized;
    pthread_mutex_unlock(&rq->s->lock);
    for (size_t i = 0; !opened && i < sizeof(keys) / sizeof(keys[0]); i++)
        if (json_object_get(rq->meta, keys[i]) != NULL)
            return true;
    return false;
}

int mcp_era_decide(struct mcp_req *rq, const char **why, json_t **data)
{
    *why = NULL;
    *data = NULL;
    rq->client_caps = NULL;
    if (!is_modern(rq)) {
        legacy(rq);
        return 0;
    }
    rq->era = MCP_ERA_MODERN;
    rq->version[0] = '\0';
    rq->log_level = -1;
    if (!json_is_object(rq->params) || !json_is_object(rq->meta)) {
        *why = "a 2026-07-28 request needs params._meta with "
               "io.modelcontextprotocol/protocolVersion and clientCapabilities";
        return JSONRPC_INVALID_PARAMS;
    }
    json_t *pv = json_object_get(rq->meta, MCP_META_PROTOCOL_VERSION);
    if (!json_is_string(pv)) {
        *why = "_meta needs io.modelcontextprotocol/protocolVersion (a string)";
        return JSONRPC_INVALID_PARAMS;
    }
    const char *v = json_string_value(pv);
    if (!mcp_version_modern(v)) {
        /* A legacy version is served too, but through initialize: the
         * data lists every version, and a client that knows only per-request
         * ones picks from those. */
        *why = mcp_version_legacy(v) ? "Unsupported protocol version: "
                                       "that version is served after initialize, not per request"
                                     : "Unsupported protocol version";
        *data = json_pack("{s:o,s:s}", "supported", mcp_versions_json(), "requested", v);
        return MCP_UNSUPPORTED_PROTOCOL_VERSION;
    }
    json_t *caps = json_object_get(rq->meta, MCP_META_CLIENT_CAPS);
    if (!json_is_object(caps)) {
        *why = "_meta needs io.modelcontextprotocol/clientCapabilities (an object)";
        return JSONRPC_INVALID_PARAMS;
    }
    json_t *lvl = json_object_get(rq->meta, MCP_META_LOG_LEVEL);
    if (lvl != NULL) {
        rq->log_level = mcp_log_level_index(json_string_value(lvl));
        if (rq->log_level < 0) {
            *why = "io.modelcontextprotocol/logLevel must be one of debug, info, notice, "
                   "warning, error, critical, alert, emergency";
            return JSONRPC_INVALID_PARAMS;
        }
    }
    snprintf(rq->version, sizeof(rq->version), "%s", v);
    rq->client_caps = caps;
    return 0;
}
