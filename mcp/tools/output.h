/* The inline part of a run's output (issue #15): clients cut oversized
 * tool results themselves, so stdout and stderr come back inline up to
 * the call's max_inline_kb together (head and tail, with a marker that
 * says how much was cut and where the rest is), and in a kept sandbox the
 * whole of a cut stream (as captured: up to the server's output_cap) is
 * written to OUTPUT_DIR in the sandbox, where read_file and resources/read
 * reach it, and linked from the result.  A one-shot sandbox is removed
 * with the call, so there a cut stream is not kept (the marker says so):
 * no link ever points at nothing.  The sandbox keeps the outputs of its
 * last MCP_OUTPUT_KEEP cut streams; older ones are deleted. */
#ifndef NSBOX_MCP_TOOLS_OUTPUT_H
#define NSBOX_MCP_TOOLS_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../result.h"
#include "../sandbox.h"
#include "../server.h"
#include "../session.h"

#define MCP_OUTPUT_DIR "/tmp/nsbox-output"
#define MCP_OUTPUT_KEEP 16

/* One stream's fate. */
struct mcp_output_stream {
    bool cut;      /* more than its share of the inline budget */
    size_t bytes;  /* the whole captured size */
    char path[96]; /* where it is kept in the sandbox, "" when not */
};

struct mcp_output_kept {
    struct mcp_output_stream out, err;
};

/* Cuts res's stdout and stderr to inline_max bytes together, keeping each
 * cut stream whole in m first when m is kept (call holds m's operation:
 * between mcp_op_begin and mcp_op_end).  Never fails: a stream that could
 * not be written is cut all the same, and its marker says it was not
 * kept.  *k says what happened, for mcp_output_json. */
void mcp_output_cut(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                    struct nsbox_exec_result *res, size_t inline_max, struct mcp_output_kept *k);

/* One thing to keep whole in the sandbox. */
struct mcp_output_blob {
    const void *data;
    size_t len;
    const char *suffix; /* the file name's end: "stdout", "result-1.png" */
    char path[96];      /* filled: where it was written, "" when it was not */
};

/* Writes v[0..n) into m as MCP_OUTPUT_DIR/run-MS-N.SUFFIX (call holds m's
 * operation), first deleting the oldest kept files beyond MCP_OUTPUT_KEEP
 * - n.  Best effort: a blob that could not be written keeps path "". */
void mcp_output_keep(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                     struct mcp_output_blob *v, size_t n);

/* Adds to the result record rec, for each cut stream: stdout_cut (true),
 * stdout_bytes, and when kept stdout_path and stdout_uri, with a
 * resource_link in out (the same for stderr).  sandbox_id: m's. */
void mcp_output_json(json_t *rec, const struct mcp_output_kept *k, const char *sandbox_id,
                     struct mcp_result *out);

#endif
