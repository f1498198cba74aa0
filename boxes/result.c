/* How a command in a box ended, in the words every front end uses.
 *
 * Contract: one classification for the CLI's --json record, its exit
 * status and the MCP server's result record.  "nsbox failed" never gets
 * here (the exec call itself failed: BOX_EXIT_NSBOX, an MCP tool error);
 * these describe the code in the sandbox.  Exit codes follow docker's:
 * the command's own status; 128+N when it died of signal N; 126/127 when
 * it could not be executed / was not found (init reports those as the
 * command's status, as a shell does).  The record itself is JSON because
 * both front ends print it so (`nsbox run --json`, the MCP result): the
 * one place outside the store's own files where the library hands out a
 * json_t. */
#include "box.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"

const char *box_result_status(const struct nsbox_exec_result *r)
{
    /* In this order: a timeout or the OOM killer end the command with
     * SIGKILL, which is the cause, not the signal. */
    if (r->timed_out)
        return "timeout";
    if (r->oom_killed)
        return "oom";
    if (r->signal)
        return "signaled";
    return r->exit_code == 0 ? "ok" : "error";
}

int box_result_exit_code(const struct nsbox_exec_result *r)
{
    return r->signal ? 128 + r->signal : r->exit_code;
}

uint64_t box_result_memory_peak(const struct nsbox_exec_result *r)
{
    return r->memory_peak_bytes ? r->memory_peak_bytes : r->maxrss_bytes;
}

/* n bytes of a command's output as a JSON string: each byte of an
 * invalid UTF-8 sequence as '?' (jansson refuses invalid UTF-8, and the
 * whole record with it), so the text keeps its length and byte offsets
 * (the server's streamed progress counts in them: mcp/tools/stream.h). */
static json_t *output_text(const char *s, size_t n)
{
    if (s == NULL)
        return json_string("");
    json_t *j = json_stringn(s, n);
    if (j != NULL)
        return j;
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, s, n);
    nsbox_utf8_repair(copy, n);
    j = json_stringn(copy, n);
    free(copy);
    return j;
}

json_t *box_result_json(const struct nsbox_exec_result *r)
{
    return json_pack("{s:s,s:i,s:i,s:o,s:o,s:b,s:b,s:b,s:b,s:I,s:I,s:I}", "status",
                     box_result_status(r), "exit_code", r->exit_code, "signal", r->signal, "stdout",
                     output_text(r->out, r->out_len), "stderr", output_text(r->err, r->err_len),
                     "stdout_truncated", r->out_truncated, "stderr_truncated", r->err_truncated,
                     "timed_out", r->timed_out, "oom_killed", r->oom_killed, "wall_ms",
                     (json_int_t)(r->wall_us / 1000), "cpu_ms", (json_int_t)(r->cpu_us / 1000),
                     "memory_peak_bytes", (json_int_t)box_result_memory_peak(r));
}

json_t *box_isolation_json(const struct nsbox_sandbox *sb)
{
    const char *missing[NSBOX_ISOLATION_MAX_MISSING];
    size_t n = nsbox_isolation_missing(sb->isolation, sb->landlock_abi, missing,
                                       NSBOX_ISOLATION_MAX_MISSING);
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < n; i++)
        json_array_append_new(list, json_string(missing[i]));
    return json_pack("{s:s,s:o*}", "mode", nsbox_isolation_name(sb->isolation), "missing", list);
}
