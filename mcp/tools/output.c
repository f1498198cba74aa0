/* The inline part of a run's output, and the whole of it kept in the
 * sandbox (output.h). */
#include "output.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/log.h"
#include "../../boxes/files.h"
#include "../resources/resources.h"
#include "../resources/uri.h"

/* Each stream's share of the budget: one that fits in half of it keeps
 * all its bytes, the other gets the rest. */
static void shares(size_t out_len, size_t err_len, size_t max, size_t *out_max, size_t *err_max)
{
    if (out_len + err_len <= max) {
        *out_max = out_len, *err_max = err_len;
    } else if (err_len <= max / 2) {
        *err_max = err_len, *out_max = max - err_len;
    } else if (out_len <= max / 2) {
        *out_max = out_len, *err_max = max - out_len;
    } else {
        *out_max = max / 2, *err_max = max - max / 2;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct nsbox_file_entry *)a)->path,
                  ((const struct nsbox_file_entry *)b)->path);
}

/* Deletes the oldest kept outputs beyond MCP_OUTPUT_KEEP - room (names
 * sort by time: run-MS-N). */
static void prune(struct box_files *f, size_t room)
{
    struct nsbox_file_list l;
    struct nsbox_err err;
    if (box_file_list(f, MCP_OUTPUT_DIR, 1, &l, &err) < 0)
        return;
    qsort(l.v, l.n, sizeof(l.v[0]), by_name);
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++)
        n += l.v[i].type == NSBOX_FILE_REGULAR && strncmp(l.v[i].path, "run-", 4) == 0;
    for (size_t i = 0; i < l.n && n + room > MCP_OUTPUT_KEEP; i++) {
        if (l.v[i].type != NSBOX_FILE_REGULAR || strncmp(l.v[i].path, "run-", 4) != 0)
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof(p), MCP_OUTPUT_DIR "/%s", l.v[i].path);
        if (box_file_remove(f, p, false, &err) == 0)
            n--;
    }
    nsbox_file_list_free(&l);
}

void mcp_output_keep(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                     struct mcp_output_blob *v, size_t n)
{
    static atomic_uint counter;
    uint64_t most = s->cfg->output_cap + 1;
    for (size_t i = 0; i < n; i++)
        most = v[i].len + 1 > most ? v[i].len + 1 : most;
    /* The sandbox's user and env, 30 s, up to the largest blob. */
    struct box_file_opts o = {.timeout_s = 30, .write_max = most, .cancel = &call->cancel};
    struct box_files f;
    struct nsbox_err err;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long ms = (unsigned long long)now.tv_sec * 1000 +
                            (unsigned long long)now.tv_nsec / 1000000;
    unsigned k = atomic_fetch_add(&counter, 1);

    for (size_t i = 0; i < n; i++)
        v[i].path[0] = '\0';
    if (n == 0)
        return;
    if (box_files_begin(&m->box, BOX_FILE_SCRATCH, &o, &f, &err) < 0 ||
        box_file_mkdir(&f, MCP_OUTPUT_DIR, &err) < 0) {
        nsbox_warn("sandbox %s: keeping the output: %s", m->box.sb.id, err.msg);
        return;
    }
    prune(&f, n);
    for (size_t i = 0; i < n; i++) {
        char p[sizeof(v[i].path)];
        if ((size_t)snprintf(p, sizeof(p), MCP_OUTPUT_DIR "/run-%013llu-%u.%s", ms, k,
                             v[i].suffix) >= sizeof(p))
            continue;
        if (box_file_write(&f, p, v[i].data, v[i].len, false, NULL, &err) < 0)
            nsbox_warn("sandbox %s: keeping the output: %s", m->box.sb.id, err.msg);
        else
            memcpy(v[i].path, p, sizeof(p));
    }
    box_files_end(&f, 0);
}

/* Writes the cut streams of res whole into m; fills their paths. */
static void keep(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                 const struct nsbox_exec_result *res, struct mcp_output_kept *k)
{
    struct mcp_output_blob v[2];
    struct mcp_output_stream *st[2];
    size_t n = 0;
    if (k->out.cut)
        st[n] = &k->out, v[n++] = (struct mcp_output_blob){res->out, k->out.bytes, "stdout", ""};
    if (k->err.cut)
        st[n] = &k->err, v[n++] = (struct mcp_output_blob){res->err, k->err.bytes, "stderr", ""};
    mcp_output_keep(s, call, m, v, n);
    for (size_t i = 0; i < n; i++)
        memcpy(st[i]->path, v[i].path, sizeof(st[i]->path));
}

/* The start of a UTF-8 character at or after i (at most 3 bytes on). */
static size_t char_start(const char *b, size_t len, size_t i)
{
    for (int k = 0; k < 3 && i < len && ((unsigned char)b[i] & 0xC0) == 0x80; k++)
        i++;
    return i;
}

/* The end of the last whole UTF-8 character at or before i. */
static size_t char_end(const char *b, size_t i)
{
    for (int k = 0; k < 3 && i > 0 && ((unsigned char)b[i] & 0xC0) == 0x80; k++)
        i--;
    return i;
}

/* Cuts *buf (len bytes) to head + marker + tail of max bytes in all but
 * the marker. */
static void cut_stream(char **buf, size_t *len, size_t max, const char *name,
                       const struct mcp_output_stream *st, const char *sandbox_id)
{
    size_t head = char_end(*buf, max / 2);
    size_t tail = char_start(*buf, *len, *len - (max - max / 2));
    char where[MCP_URI_MAX + 256];
    char uri[MCP_URI_MAX + 1];
    if (st->path[0] != '\0' && sandbox_id != NULL &&
        mcp_uri_format(sandbox_id, st->path, uri, sizeof(uri)) > 0)
        snprintf(where, sizeof(where),
                 "the whole %s is kept in the sandbox at %s (%s: resources/read, or read_file "
                 "with offset and length)",
                 name, st->path, uri);
    else if (sandbox_id == NULL)
        snprintf(where, sizeof(where),
                 "not kept: a one-shot run's sandbox is removed with the call (run it in a "
                 "sandbox from sandbox_create to keep the whole output, or ask for more with "
                 "max_inline_kb)");
    else
        snprintf(where, sizeof(where), "it could not be kept in the sandbox");
    char marker[sizeof(where) + 128];
    int mn = snprintf(marker, sizeof(marker), "\n[nsbox: %zu of %zu bytes of %s cut here; %s]\n",
                      tail - head, *len, name, where);
    char *nb = malloc(head + (size_t)mn + (*len - tail) + 1);
    if (nb == NULL)
        return; /* out of memory: left whole */
    memcpy(nb, *buf, head);
    memcpy(nb + head, marker, (size_t)mn);
    memcpy(nb + head + mn, *buf + tail, *len - tail);
    nb[head + (size_t)mn + (*len - tail)] = '\0';
    free(*buf);
    *buf = nb;
    *len = head + (size_t)mn + (*len - tail);
}

void mcp_output_cut(struct mcp_session *s, struct mcp_call *call, struct mcp_sandbox *m,
                    struct nsbox_exec_result *res, size_t inline_max, struct mcp_output_kept *k)
{
    size_t out_max, err_max;
    *k = (struct mcp_output_kept){0};
    shares(res->out_len, res->err_len, inline_max, &out_max, &err_max);
    k->out = (struct mcp_output_stream){.cut = res->out_len > out_max, .bytes = res->out_len};
    k->err = (struct mcp_output_stream){.cut = res->err_len > err_max, .bytes = res->err_len};
    if (!k->out.cut && !k->err.cut)
        return;
    const char *id = m->one_shot ? NULL : m->id;
    if (id != NULL)
        keep(s, call, m, res, k);
    if (k->out.cut && res->out != NULL)
        cut_stream(&res->out, &res->out_len, out_max, "stdout", &k->out, id);
    if (k->err.cut && res->err != NULL)
        cut_stream(&res->err, &res->err_len, err_max, "stderr", &k->err, id);
}

static void stream_json(json_t *rec, const struct mcp_output_stream *st, const char *name,
                        const char *sandbox_id, struct mcp_result *out)
{
    char key[32], uri[MCP_URI_MAX + 1], desc[128];
    if (!st->cut)
        return;
    snprintf(key, sizeof(key), "%s_cut", name);
    json_object_set_new(rec, key, json_true());
    snprintf(key, sizeof(key), "%s_bytes", name);
    json_object_set_new(rec, key, json_integer((json_int_t)st->bytes));
    snprintf(desc, sizeof(desc), "the whole %s of the run (%zu bytes)", name, st->bytes);
    if (st->path[0] == '\0' || sandbox_id == NULL ||
        mcp_resource_link(out, sandbox_id, st->path, (int64_t)st->bytes, "text/plain", desc, uri) <
            0)
        return;
    snprintf(key, sizeof(key), "%s_path", name);
    json_object_set_new(rec, key, json_string(st->path));
    snprintf(key, sizeof(key), "%s_uri", name);
    json_object_set_new(rec, key, json_string(uri));
}

void mcp_output_json(json_t *rec, const struct mcp_output_kept *k, const char *sandbox_id,
                     struct mcp_result *out)
{
    stream_json(rec, &k->out, "stdout", sandbox_id, out);
    stream_json(rec, &k->err, "stderr", sandbox_id, out);
}
