/* A run's output, streamed as notifications/progress (docs/tools.md,
 * "Progress"): execute_code and run_command, a fresh process or an
 * interpreter's cell.
 *
 * mcp_stream_progress is the run's progress callback (nsbox_exec_opts):
 * it is called with all that was captured so far, as soon as output came
 * and every MCP_STREAM_TICK_MS.  It sends what is new in each stream as
 * one notification ({message: the text, _meta: {io.nsbox/stream,
 * io.nsbox/offset}}): the first once the run is MCP_STREAM_FIRST_MS old
 * (at once for output that comes later), then at most every
 * MCP_STREAM_TICK_MS (a burst is coalesced); a character is never
 * split (an unfinished one waits for its last bytes); invalid UTF-8 goes
 * out byte for byte as '?' (as the record has it: boxes/result.c).  A run
 * that printed nothing new for MCP_STREAM_HEARTBEAT_MS gets a heartbeat
 * (an empty message, no stream).  progress is the elapsed milliseconds,
 * made strictly increasing.  mcp_stream_finish, for a run that streamed
 * anything, sends the rest from the result before the response is made:
 * per stream the texts add up to the whole captured output (up to the
 * server's output_cap).  A run over before MCP_STREAM_FIRST_MS streams
 * nothing: its record has it all, and its response need not wait the gap
 * after a progress (tools_call.c) that would cost a short cell 50 ms. */
#ifndef NSBOX_MCP_TOOLS_STREAM_H
#define NSBOX_MCP_TOOLS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../boxes/run.h"
#include "../session.h"

#define MCP_STREAM_TICK_MS 50
#define MCP_STREAM_FIRST_MS 20
#define MCP_STREAM_HEARTBEAT_MS 1000

struct mcp_stream {
    struct mcp_session *s;
    struct mcp_call *call;
    size_t sent[2];         /* stdout, stderr: the bytes sent so far */
    int64_t started_ms;     /* CLOCK_MONOTONIC */
    int64_t last_send_ms;   /* of the last notification; 0: none yet */
    bool any_output;        /* some output was sent */
    uint64_t last_progress; /* the last progress value sent */
};

void mcp_stream_init(struct mcp_stream *st, struct mcp_session *s, struct mcp_call *call);

/* nsbox_exec_opts.progress, with st as its context. */
void mcp_stream_progress(void *st, uint64_t elapsed_ms, const char *out, size_t out_len,
                         const char *err, size_t err_len);

/* The rest of res's output (as captured, before it is cut for the
 * record), unfinished characters and all. */
void mcp_stream_finish(struct mcp_stream *st, const struct nsbox_exec_result *res);

#endif
