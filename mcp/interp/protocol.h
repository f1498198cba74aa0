/* The host's side of the driver protocol (docs/interpreters.md), pure:
 * no I/O, no processes, so the fuzzer and the unit tests call it directly.
 *
 * Contract: every byte given here comes from the driver, which the code in
 * the sandbox controls, and is treated as hostile.  A line is at most
 * MCP_INTERP_LINE_MAX bytes; it must be one strict JSON object (no
 * duplicate keys, no NUL in strings) or it is garbage.  A "done" becomes
 * the result's fields one by one: a field of the wrong type is ignored,
 * texts are capped and valid UTF-8 (or replaced by a note), figures are at
 * most MCP_INTERP_FIGURES_MAX absolute paths, results at most
 * MCP_INTERP_RESULTS_MAX bundles, each checked key by key (bundle.h).  Nothing here aborts,
 * whatever the input; allocation failures lose a field, never memory. */
#ifndef NSBOX_MCP_INTERP_PROTOCOL_H
#define NSBOX_MCP_INTERP_PROTOCOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp.h"

#define MCP_INTERP_LINE_MAX (16u << 20) /* one protocol line */
#define MCP_INTERP_RESULT_MAX (64u << 10)
#define MCP_INTERP_ERROR_TYPE_MAX 256
#define MCP_INTERP_ERROR_VALUE_MAX (16u << 10) /* the message, as str(exception) */
#define MCP_INTERP_TRACEBACK_MAX (256u << 10)
#define MCP_INTERP_PATH_MAX 4096
#define MCP_INTERP_FIGURES_MAX 32
#define MCP_INTERP_RESULTS_MAX 64 /* bundles of one "done" */

/* What came on the channel and is not a whole line yet. */
struct mcp_interp_lines {
    char *buf;
    size_t off;  /* where the pending bytes start (consumed lines before) */
    size_t scan; /* pending bytes already searched for '\n' */
    size_t len, cap;
};

/* Room to read into: at least 64 KiB free at the returned pointer (*room
 * bytes).  Returns NULL when the pending bytes have outgrown
 * MCP_INTERP_LINE_MAX (a line without its end) or memory ran out: the
 * channel is garbage. */
char *mcp_interp_lines_room(struct mcp_interp_lines *lines, size_t *room);

/* Takes n bytes just read into the room. */
void mcp_interp_lines_add(struct mcp_interp_lines *lines, size_t n);

/* The next whole line, parsed (the caller owns it), or NULL: none complete
 * yet, or *bad set when a line was no strict JSON object (it is consumed)
 * or the pending bytes passed MCP_INTERP_LINE_MAX without a newline. */
json_t *mcp_interp_lines_next(struct mcp_interp_lines *lines, bool *bad);

/* Frees the buffer; lines is empty afterwards. */
void mcp_interp_lines_free(struct mcp_interp_lines *lines);

/* text[0..n) as one protocol message: a new JSON object, or NULL. */
json_t *mcp_interp_parse_line(const char *text, size_t n);

/* The message's "op" when it is a string, else "". */
const char *mcp_interp_msg_op(const json_t *msg);

/* Whether msg is the "done" for the run with this id. */
bool mcp_interp_is_done(const json_t *msg, uint64_t id);
/* Whether msg is the driver's "got" for run id (it took the cell). */
bool mcp_interp_is_got(const json_t *msg, uint64_t id);

/* The result fields of a "done": *exit_code 0 for status "ok", else 1;
 * info's result, error_type, error_value, error_traceback (the error's
 * "name", "value", "traceback", else its older "type" and "message"),
 * execution_count (a positive integer, else 0), interrupted, figures and
 * results (info's memory is new, freed by mcp_interp_info_free; figures is
 * NULL-terminated, or NULL when out of memory). */
void mcp_interp_take_done(const json_t *done, int *exit_code, struct mcp_interp_info *info);

#endif
