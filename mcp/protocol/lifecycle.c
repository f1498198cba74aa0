/* The legacy lifecycle (initialize, ping, logging/setLevel), logging, and
 * the server's identity. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../common/log.h"
#include "../jsonrpc.h"
#include "../tasks/tasks.h"
#include "request.h"

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                              "2024-11-05"};

const char *const mcp_instructions =
    "Run code in isolated sandboxes. execute_code runs a program "
    "(python by default, see list_languages) in a fresh sandbox, or "
    "in one made with sandbox_create (files persist there between "
    "calls, in /workspace). Results report exit status, output, "
    "time, memory, timeouts and out-of-memory kills.";

json_t *mcp_server_info(void)
{
    return json_pack("{s:s,s:s,s:s}", "name", "nsbox", "title", "nsbox sandboxes", "version",
                     "0.1.0");
}

void mcp_session_log(struct mcp_session *s, const char *level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int idx = mcp_log_level_index(level);

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    nsbox_info("%s", msg);
    if (!s->initialized || idx < s->log_level)
        return;
    s->send(s, jsonrpc_notification(
                   "notifications/message",
                   json_pack("{s:s,s:s,s:s}", "level", level, "logger", "nsbox", "data", msg)));
}

void mcp_handle_initialize(const struct mcp_req *rq)
{
    struct mcp_session *s = rq->s;
    const char *asked = json_string_value(json_object_get(rq->params, "protocolVersion"));
    const char *chosen = legacy_versions[0];

    if (asked == NULL) {
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, "initialize needs protocolVersion");
        return;
    }
    for (size_t i = 0; i < sizeof(legacy_versions) / sizeof(legacy_versions[0]); i++)
        if (strcmp(asked, legacy_versions[i]) == 0)
            chosen = legacy_versions[i];
    pthread_mutex_lock(&s->lock);
    snprintf(s->protocol, sizeof(s->protocol), "%s", chosen);
    s->initialized = true;
    pthread_mutex_unlock(&s->lock);
    json_t *caps = json_pack("{s:{s:b},s:{}}", "tools", "listChanged", 0, "logging");
    mcp_tasks_capabilities(MCP_ERA_LEGACY, chosen, caps);
    mcp_reply(rq, json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", chosen, "capabilities", caps,
                            "serverInfo", mcp_server_info(), "instructions", mcp_instructions));
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
