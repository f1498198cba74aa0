/* A run's output as notifications/progress (stream.h). */
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/clock.h"
#include "../../common/utf8.h"
#include "../tasks/tasks.h"

static const char *const names[2] = {"stdout", "stderr"};

void mcp_stream_init(struct mcp_stream *st, struct mcp_session *s, struct mcp_call *call)
{
    *st = (struct mcp_stream){.s = s, .call = call, .started_ms = nsbox_now_ms()};
}

/* The newest lines of output, for a task's statusMessage (a human
 * watching a long run). */
static void tail_lines(const char *buf, size_t len, char *out, size_t size)
{
    size_t start = len, lines = 0;
    while (start > 0 && lines < 3 && len - start < size - 1)
        if (buf[--start] == '\n' && start != len - 1)
            lines++;
    if (start < len && buf[start] == '\n')
        start++;
    snprintf(out, size, "%.*s", (int)(len - start), buf + start);
}

static uint64_t next_progress(struct mcp_stream *st)
{
    uint64_t ms = (uint64_t)(nsbox_now_ms() - st->started_ms);
    st->last_progress = ms > st->last_progress ? ms : st->last_progress + 1;
    return st->last_progress;
}

/* Sends buf[sent..upto) of stream i (a copy repaired: '?' for each byte
 * of an invalid sequence). */
static void send_text(struct mcp_stream *st, int i, const char *buf, size_t upto,
                      const char *status)
{
    size_t n = upto - st->sent[i];
    char *text = malloc(n + 1);
    if (text == NULL)
        return; /* sent with the next one */
    memcpy(text, buf + st->sent[i], n);
    text[n] = '\0';
    nsbox_utf8_repair(text, n);
    struct mcp_progress p = {.progress = next_progress(st),
                             .message = text,
                             .message_len = n,
                             .stream = names[i],
                             .offset = st->sent[i],
                             .status = status};
    mcp_call_progress(st->s, st->call, &p);
    free(text);
    st->sent[i] = upto;
    st->any_output = true;
    st->last_send_ms = nsbox_now_ms();
}

/* Sends what is new in each stream: up to the last whole character, or
 * (finish) all of it. */
static bool send_new(struct mcp_stream *st, const char *const buf[2], const size_t len[2],
                     bool finish)
{
    char status[512];
    bool sent = false;
    const char *b = len[0] ? buf[0] : buf[1];
    tail_lines(b ? b : "", len[0] ? len[0] : len[1], status, sizeof(status));
    nsbox_utf8_repair(status, strlen(status));
    for (int i = 0; i < 2; i++) {
        if (buf[i] == NULL || len[i] <= st->sent[i])
            continue;
        size_t upto = finish ? len[i]
                             : st->sent[i] +
                                   nsbox_utf8_whole(buf[i] + st->sent[i], len[i] - st->sent[i]);
        if (upto > st->sent[i]) {
            send_text(st, i, buf[i], upto, status);
            sent = true;
        }
    }
    return sent;
}

void mcp_stream_progress(void *arg, uint64_t elapsed_ms, const char *out, size_t out_len,
                         const char *err, size_t err_len)
{
    struct mcp_stream *st = arg;
    int64_t now = nsbox_now_ms();
    int64_t since = now - (st->last_send_ms ? st->last_send_ms : st->started_ms);
    const char *buf[2] = {out, err};
    size_t len[2] = {out_len, err_len};
    (void)elapsed_ms; /* the call's own clock: it started before the run */

    /* The first output once the run is MCP_STREAM_FIRST_MS old; then a
     * burst is coalesced. */
    bool due = st->any_output ? since >= MCP_STREAM_TICK_MS
                              : now - st->started_ms >= MCP_STREAM_FIRST_MS;
    if (due && send_new(st, buf, len, false))
        return;
    if (since < MCP_STREAM_HEARTBEAT_MS)
        return;
    struct mcp_progress p = {.progress = next_progress(st), .message = "", .message_len = 0};
    mcp_call_progress(st->s, st->call, &p);
    st->last_send_ms = now;
}

void mcp_stream_finish(struct mcp_stream *st, const struct nsbox_exec_result *res)
{
    if (!st->any_output)
        return; /* a short run: the record has it all */
    const char *buf[2] = {res->out, res->err};
    size_t len[2] = {res->out_len, res->err_len};
    send_new(st, buf, len, true);
}
