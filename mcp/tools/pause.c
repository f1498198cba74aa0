/* sandbox_pause and sandbox_resume (tools.h): the arguments
 * (args_pause.c), then mcp/pause.h, which goes through boxes/pause.h. */
#include <jansson.h>

#include "../pause.h"
#include "args.h"
#include "tools.h"

int mcp_tool_sandbox_pause(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_stop_args a;

    if (mcp_args_sandbox_pause(args, false, &a, err) < 0 ||
        mcp_sandbox_pause(s, a.sandbox_id, err) < 0)
        return -1;
    (void)call;
    out->structured = json_pack("{s:s,s:s}", "sandbox_id", a.sandbox_id, "state", "paused");
    return 0;
}

int mcp_tool_sandbox_resume(struct mcp_session *s, struct mcp_call *call, json_t *args,
                            struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_stop_args a;

    if (mcp_args_sandbox_pause(args, true, &a, err) < 0 ||
        mcp_sandbox_resume(s, a.sandbox_id, err) < 0)
        return -1;
    (void)call;
    out->structured = json_pack("{s:s,s:s}", "sandbox_id", a.sandbox_id, "state", "running");
    return 0;
}
