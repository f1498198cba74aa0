/* terminal_open: an interactive shell in a kept sandbox, on a pty of its
 * own devpts, reached by one WebSocket at the URL it returns
 * (mcp/preview/terminal.h; the endpoint: mcp/http/terminal.c; the
 * protocol: docs/services-terminal.md).  Offered over HTTP only: over
 * stdio there is no server for a browser to connect to. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../files/urls.h"
#include "../preview/terminal.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

/* The WebSocket URL of token on the server's public base: http → ws,
 * https → wss.  malloc'ed, or NULL. */
static char *ws_url(const char *base, const char *token)
{
    const char *rest = base;
    const char *scheme = "ws://";
    if (strncmp(base, "https://", 8) == 0)
        rest = base + 8, scheme = "wss://";
    else if (strncmp(base, "http://", 7) == 0)
        rest = base + 7;
    char *url = NULL;
    if (asprintf(&url, "%s%s%s%s", scheme, rest, MCP_TERMINAL_PATH, token) < 0)
        return NULL;
    return url;
}

int mcp_tool_terminal_open(struct mcp_session *s, struct mcp_call *call, json_t *args,
                           struct mcp_result *out, struct nsbox_err *err)
{
    struct mcp_terminals *tab = s->cfg->terminals;
    const struct mcp_file_urls *u = s->cfg->file_urls;
    struct mcp_terminal_args a;
    char token[PREVIEW_TOKEN_LEN + 1], when[32];
    uint32_t expires;

    if (tab == NULL || u == NULL)
        return nsbox_err_set(err, ENOTSUP,
                             "terminal_open needs the HTTP transport (serve --http): the "
                             "terminal is a WebSocket URL");
    if (mcp_args_terminal_open(args, &a, err) < 0)
        return -1;
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = mcp_op_begin(s, call, m, err);
    if (r == 0) {
        struct nsbox_exec_opts eo;
        box_exec_defaults(&m->box, &eo);
        r = mcp_terminal_open(tab, s, m, &m->box, &eo, a.cols, a.rows, a.command, token, &expires,
                              err);
        mcp_op_end(s, call, m);
    }
    mcp_sandbox_put(s, m);
    if (r < 0)
        return -1;
    _cleanup_free_ char *url = ws_url(u->base, token);
    if (url == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    mcp_file_time_text(expires, when);
    out->structured = json_pack("{s:s,s:s,s:s,s:i,s:i,s:s}", "url", url, "sandbox_id", a.sandbox_id,
                                "expires_at", when, "cols", (int)a.cols, "rows", (int)a.rows,
                                "protocol",
                                "WebSocket: binary or text messages are input; output comes as "
                                "binary messages; a text message "
                                "{\"type\":\"resize\",\"cols\":N,\"rows\":M} resizes");
    return 0;
}
