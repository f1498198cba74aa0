/* MCP over stdio: newline-delimited JSON-RPC on stdin and stdout.  stdout
 * carries protocol messages and nothing else (logs go to stderr); writes
 * are serialized so concurrent tool calls never interleave. */
#include "transport_stdio.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fsutil.h"
#include "jsonrpc.h"
#include "protocol/dispatch.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* One message per line: jansson's compact output has no raw newline
 * (newlines inside strings are escaped), so nothing from a sandbox can
 * break the framing. */
static void stdio_send(struct mcp_session *s, json_t *msg)
{
    (void)s;
    if (msg == NULL)
        return;
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text == NULL)
        return;
    pthread_mutex_lock(&out_lock);
    (void)nsbox_write_all(STDOUT_FILENO, text, strlen(text));
    (void)nsbox_write_all(STDOUT_FILENO, "\n", 1);
    pthread_mutex_unlock(&out_lock);
    free(text);
}

/* One channel for everything: a message about a request goes out like any
 * other (the client correlates by id, or by subscriptionId). */
static void stdio_send_related(struct mcp_session *s, json_t *request_id, json_t *msg)
{
    (void)request_id;
    stdio_send(s, msg);
}

int mcp_stdio_run(struct mcp_session *s)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    bool discarding = false;

    if (buf == NULL)
        return -1;
    s->send = stdio_send;
    s->send_related = stdio_send_related;
    for (;;) {
        if (len == cap) {
            if (cap >= MCP_MESSAGE_MAX + 1) {
                /* Over the limit: answer once, drop the rest of the line. */
                if (!discarding)
                    s->send(s, jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST, "message too large"));
                discarding = true;
                len = 0;
            } else {
                cap *= 2;
                char *nb = realloc(buf, cap);
                if (nb == NULL)
                    break;
                buf = nb;
            }
        }
        ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', (size_t)(buf + len - start))) != NULL) {
            size_t line = (size_t)(nl - start);
            if (!discarding && line > 0 && !(line == 1 && start[0] == '\r'))
                mcp_session_handle(s, start, line);
            discarding = false;
            start = nl + 1;
        }
        len = (size_t)(buf + len - start);
        memmove(buf, start, len);
    }
    free(buf);
    return 0;
}
