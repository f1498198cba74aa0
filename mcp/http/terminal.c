/* GET /t/TOKEN: a terminal's WebSocket (mcp/preview/terminal.h,
 * docs/services-terminal.md).
 *
 * The handshake (RFC 6455 4.2): GET with Upgrade: websocket, Connection:
 * upgrade, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key of 16 bytes;
 * the token is claimed only once all of that is right, so that a
 * malformed request does not use it up.  Then 101 with
 * Sec-WebSocket-Accept, and the socket goes to the terminal's thread.
 *
 * Who may connect: whoever holds the URL.  No bearer token (a browser's
 * WebSocket cannot send one), and any Origin: the URL is a single-use
 * capability that expires, and no cookie or other ambient credential is
 * ever read, so a cross-site page gains nothing it did not already hold
 * (the cross-site WebSocket hijacking attack needs an ambient credential).
 * The Host check stays (DNS rebinding). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../preview/terminal.h"
#include "../preview/ws.h"
#include "core.h"
#include "terminal.h"

static enum http_result refuse(struct MHD_Connection *c, unsigned status, const char *msg,
                               struct http_header h)
{
    char *body = NULL;
    if (asprintf(&body, "{\"error\":\"%s\"}", msg) < 0)
        body = NULL;
    return http_reply(c, status, body, (struct http_header){"Cache-Control", "no-store"}, h);
}

/* Whether the comma-separated header value has token (case-insensitive). */
static bool has_token(const char *value, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = value; p != NULL && *p;) {
        p += strspn(p, " \t,");
        size_t len = strcspn(p, ",");
        size_t end = len;
        while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        if (end == n && strncasecmp(p, token, n) == 0)
            return true;
        p += len;
    }
    return false;
}

static void close_upgraded(void *u)
{
    http_upgraded_close(u);
}

static void on_socket(void *cls, int sock, const char *extra, size_t n, struct http_upgraded *u)
{
    mcp_terminal_attach(cls, sock, extra, n, close_upgraded, u);
}

static enum http_result handle(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    struct mcp_terminals *tab = *(struct mcp_terminals **)ctx;
    const char *token = rq->url + strlen(MCP_TERMINAL_PATH);
    const char *key = http_header_value(c, "Sec-WebSocket-Key");
    const char *version = http_header_value(c, "Sec-WebSocket-Version");
    char accept[29];

    if (tab == NULL)
        return refuse(c, HTTP_NOT_FOUND, "no terminals on this server", HTTP_NO_HEADER);
    if (!has_token(http_header_value(c, "Upgrade"), "websocket") ||
        !has_token(http_header_value(c, "Connection"), "upgrade"))
        return refuse(c, 426, "a terminal URL takes a WebSocket (Upgrade: websocket)",
                      (struct http_header){"Upgrade", "websocket"});
    if (version == NULL || strcmp(version, "13") != 0)
        return refuse(c, 426, "WebSocket version 13 only",
                      (struct http_header){"Sec-WebSocket-Version", "13"});
    if (ws_accept_key(key, accept) < 0)
        return refuse(c, HTTP_BAD_REQUEST, "Sec-WebSocket-Key is not 16 bytes of base64",
                      HTTP_NO_HEADER);
    const char *why;
    struct mcp_terminal *term = mcp_terminal_claim(tab, token, strlen(token), &why);
    if (term == NULL)
        return refuse(c,
                      strcmp(why, "used") == 0   ? HTTP_CONFLICT
                      : strcmp(why, "gone") == 0 ? HTTP_NOT_FOUND
                                                 : HTTP_FORBIDDEN,
                      strcmp(why, "used") == 0   ? "this terminal URL was used already"
                      : strcmp(why, "gone") == 0 ? "this terminal has ended"
                                                 : "refused",
                      HTTP_NO_HEADER);
    const struct http_header headers[] = {{"Upgrade", "websocket"},
                                          {"Connection", "Upgrade"},
                                          {"Sec-WebSocket-Accept", accept},
                                          {NULL, NULL}};
    return http_reply_upgrade(c, headers, on_socket, term);
}

int http_terminal_register(struct http_server *srv, struct mcp_terminals **tab,
                           struct nsbox_err *err)
{
    static const struct http_route route = {
        .path = MCP_TERMINAL_PATH,
        .prefix = true,
        .no_bearer = true,
        .any_origin = true,
        .methods = "GET",
        .method_hint = "method not allowed: a terminal URL takes a WebSocket (GET, Upgrade)",
        .handle = handle,
    };
    struct http_route r = route;
    r.ctx = tab;
    return http_server_route(srv, &r, err);
}
