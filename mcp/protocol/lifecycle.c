/* The legacy lifecycle (initialize, ping, logging/setLevel) and the
 * server's capabilities (both eras). */
#include <stdio.h>
#include <string.h>

#include "../ask.h"
#include "../call.h"
#include "../jsonrpc.h"
#include "../tasks/tasks.h"
#include "request.h"

const char *const mcp_instructions =
    "Run code in isolated sandboxes. execute_code runs a program "
    "(python by default, see list_languages) in a fresh sandbox, or "
    "in one made with sandbox_create (files persist there between "
    "calls, in /workspace). Results report exit status, output, "
    "time, memory, timeouts and out-of-memory kills.";

json_t *mcp_server_capabilities(const struct mcp_req *rq)
{
    /* tools never change while the server runs: no list_changed to send;
     * resources are files in sandboxes: a client may subscribe to one
     * (resources/watches.h). */
    json_t *caps = json_pack("{s:{s:b},s:{},s:{s:b}}", "tools", "listChanged", 0, "logging",
                             "resources", "subscribe", 1);
    /* Tasks: 2025-11-25's capabilities.tasks, 2026-07-28's extension. */
    mcp_tasks_capabilities(rq->era, rq->version, caps);
    return caps;
}

void mcp_handle_initialize(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    const char *asked = json_string_value(json_object_get(rq->params, "protocolVersion"));
    const char *chosen = NULL;

    if (asked == NULL) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "initialize needs protocolVersion");
        return;
    }
    /* The version asked for when nsbox serves it through initialize, else
     * the newest that is (2026-07-28 included: its clients do not say
     * initialize, so one that does is a legacy client). */
    for (size_t i = 0; i < mcp_n_versions; i++)
        if (mcp_version_legacy(mcp_versions[i]) &&
            (chosen == NULL || strcmp(asked, mcp_versions[i]) == 0))
            chosen = mcp_versions[i];
    pthread_mutex_lock(&s->lock);
    snprintf(s->protocol, sizeof(s->protocol), "%s", chosen);
    s->initialized = true;
    s->client_elicit_form = mcp_ask_client_has_form(json_object_get(rq->params, "capabilities"));
    pthread_mutex_unlock(&s->lock);
    struct mcp_req as_chosen = *rq; /* the capabilities of the version chosen */
    snprintf(as_chosen.version, sizeof(as_chosen.version), "%s", chosen);
    mcp_reply(rq, json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", chosen, "capabilities",
                            mcp_server_capabilities(&as_chosen), "serverInfo", mcp_server_info(),
                            "instructions", mcp_instructions));
}

void mcp_handle_ping(const struct mcp_req *rq)
{
    mcp_reply(rq, json_object());
}

void mcp_handle_set_level(const struct mcp_req *rq)
{
    int idx = mcp_log_level_index(json_string_value(json_object_get(rq->params, "level")));
    if (idx < 0) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS,
                        "level must be one of debug, info, notice, "
                        "warning, error, critical, alert, emergency");
        return;
    }
    rq->s->log_level = idx;
    mcp_reply(rq, json_object());
}
