/* The driver protocol's pure part (see protocol.h). */
#include "protocol.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/utf8.h"

#define READ_ROOM 65536u

char *mcp_interp_lines_room(struct mcp_interp_lines *lines, size_t *room)
{
    size_t pending = lines->len - lines->off;
    if (pending > MCP_INTERP_LINE_MAX)
        return NULL;
    /* Consumed lines go only here, once per read, not once per line: a
     * driver sending many short lines must not make the host memmove the
     * whole buffer for each (quadratic, on the host's CPU). */
    if (lines->off > 0 && lines->cap - lines->len < READ_ROOM) {
        memmove(lines->buf, lines->buf + lines->off, pending);
        lines->len = pending, lines->off = 0;
    }
    if (lines->cap - lines->len < READ_ROOM) {
        /* At most a whole line of the cap plus one read: a line of exactly
         * MCP_INTERP_LINE_MAX bytes still gets room for its '\n'. */
        size_t most = MCP_INTERP_LINE_MAX + READ_ROOM + 1;
        size_t cap = lines->cap ? lines->cap * 2 : 2 * READ_ROOM;
        cap = cap > most ? most : cap;
        if (cap - lines->len < READ_ROOM)
            return NULL;
        char *b = realloc(lines->buf, cap);
        if (b == NULL)
            return NULL;
        lines->buf = b, lines->cap = cap;
    }
    *room = lines->cap - lines->len;
    return lines->buf + lines->len;
}

void mcp_interp_lines_add(struct mcp_interp_lines *lines, size_t n)
{
    lines->len += n;
}

json_t *mcp_interp_lines_next(struct mcp_interp_lines *lines, bool *bad)
{
    *bad = false;
    if (lines->buf == NULL) /* nothing read yet (NULL + 0 is undefined) */
        return NULL;
    char *start = lines->buf + lines->off;
    size_t pending = lines->len - lines->off;
    char *nl = pending > lines->scan ? memchr(start + lines->scan, '\n', pending - lines->scan)
                                     : NULL;
    *bad = false;
    if (nl == NULL) {
        lines->scan = pending;
        *bad = pending > MCP_INTERP_LINE_MAX;
        return NULL;
    }
    size_t n = (size_t)(nl - start);
    lines->off += n + 1;
    lines->scan = 0;
    if (lines->off == lines->len)
        lines->off = lines->len = 0;
    json_t *j = n > MCP_INTERP_LINE_MAX ? NULL : mcp_interp_parse_line(start, n);
    *bad = j == NULL;
    return j;
}

void mcp_interp_lines_free(struct mcp_interp_lines *lines)
{
    free(lines->buf);
    memset(lines, 0, sizeof(*lines));
}

json_t *mcp_interp_parse_line(const char *text, size_t n)
{
    json_error_t je;
    /* No JSON_DECODE_ANY (an object is required) and no JSON_ALLOW_NUL:
     * strings come out NUL-free, so C strings hold all of them. */
    json_t *j = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

const char *mcp_interp_msg_op(const json_t *msg)
{
    const char *op = json_string_value(json_object_get(msg, "op"));
    return op ? op : "";
}

static bool is_op_for(const json_t *msg, const char *op, uint64_t id)
{
    json_t *jid = json_object_get(msg, "id");
    return strcmp(mcp_interp_msg_op(msg), op) == 0 && json_is_integer(jid) &&
           (uint64_t)json_integer_value(jid) == id;
}

bool mcp_interp_is_done(const json_t *msg, uint64_t id)
{
    return is_op_for(msg, "done", id);
}

bool mcp_interp_is_got(const json_t *msg, uint64_t id)
{
    return is_op_for(msg, "got", id);
}

/* A copy of s cut at max bytes, at a whole UTF-8 sequence (a cut in the
 * middle of one would make the whole text invalid). */
static char *dup_text(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    char *c = strndup(s, n);
    if (c != NULL && !nsbox_utf8_valid(c, n)) {
        free(c);
        return strdup("(the value is not valid UTF-8)");
    }
    return c;
}

static char **take_figures(const json_t *figs)
{
    size_t n = json_is_array(figs) ? json_array_size(figs) : 0;
    n = n > MCP_INTERP_FIGURES_MAX ? MCP_INTERP_FIGURES_MAX : n;
    char **out = calloc(n + 1, sizeof(char *));
    for (size_t i = 0, k = 0; out && i < n; i++) {
        const char *path = json_string_value(json_object_get(json_array_get(figs, i), "path"));
        if (path != NULL && path[0] == '/')
            out[k++] = dup_text(path, MCP_INTERP_PATH_MAX);
        if (k > 0 && out[k - 1] == NULL)
            k--; /* out of memory: keep the list NULL-terminated */
    }
    return out;
}

/* The bundles of "results", checked; at most MCP_INTERP_RESULTS_MAX. */
static void take_results(const json_t *results, struct mcp_interp_info *info)
{
    size_t n = json_is_array(results) ? json_array_size(results) : 0;
    size_t most = n > MCP_INTERP_RESULTS_MAX ? MCP_INTERP_RESULTS_MAX : n;
    info->results = most ? calloc(most, sizeof(*info->results)) : NULL;
    for (size_t i = 0; info->results && i < n; i++) {
        if (!json_is_object(json_array_get(results, i)))
            continue;
        if (info->n_results == most) {
            info->results_truncated = true;
            break;
        }
        if (mcp_bundle_take(json_array_get(results, i), &info->results[info->n_results]) == 0)
            info->n_results++;
    }
}

/* A string member of error: the new name, else the older one. */
static const char *error_text(const json_t *error, const char *key, const char *old)
{
    const char *s = json_string_value(json_object_get(error, key));
    return s ? s : json_string_value(json_object_get(error, old));
}

void mcp_interp_take_done(const json_t *done, int *exit_code, struct mcp_interp_info *info)
{
    const char *status = json_string_value(json_object_get(done, "status"));
    const char *result = json_string_value(json_object_get(done, "result"));
    json_t *error = json_object_get(done, "error");
    const char *etype = error_text(error, "name", "type");
    const char *evalue = error_text(error, "value", "message");
    const char *etrace = json_string_value(json_object_get(error, "traceback"));
    json_t *count = json_object_get(done, "execution_count");

    *exit_code = status && strcmp(status, "ok") == 0 ? 0 : 1;
    info->interrupted = json_is_true(json_object_get(done, "interrupted"));
    if (result != NULL)
        info->result = dup_text(result, MCP_INTERP_RESULT_MAX);
    if (etype != NULL)
        info->error_type = dup_text(etype, MCP_INTERP_ERROR_TYPE_MAX);
    if (etype != NULL && evalue != NULL)
        info->error_value = dup_text(evalue, MCP_INTERP_ERROR_VALUE_MAX);
    if (etype != NULL && etrace != NULL)
        info->error_traceback = dup_text(etrace, MCP_INTERP_TRACEBACK_MAX);
    if (json_is_integer(count) && json_integer_value(count) > 0)
        info->execution_count = json_integer_value(count);
    take_results(json_object_get(done, "results"), info);
    info->figures = take_figures(json_object_get(done, "figures"));
}
