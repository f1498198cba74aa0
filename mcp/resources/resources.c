/* resources/read and resources/templates/list (resources.h), and the
 * resource links tools add to their results. */
#include "resources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../../common/log.h"
#include "../../common/mime.h"
#include "../../common/utf8.h"
#include "../../boxes/files.h"
#include "../call.h"
#include "../jsonrpc.h"
#include "../tools/args.h"
#include "../tools/tools.h"
#include "mime.h"
#include "uri.h"

#define RESOURCE_NOT_FOUND_LEGACY (-32002) /* MCP before 2026-07-28 */

int mcp_resource_link(struct mcp_result *out, const char *id, const char *path, int64_t size,
                      const char *mime, const char *description, char *uri)
{
    char buf[MCP_URI_MAX + 1];
    struct nsbox_err ignored;
    if (mcp_uri_format(id, path, buf, sizeof(buf)) < 0)
        return -1;
    const char *name = strrchr(path, '/') + 1; /* canonical: absolute, no trailing '/' */
    if (mcp_result_add_link(out, buf, name, mime ? mime : mcp_mime_by_name(path), size, description,
                            &ignored) < 0)
        return -1;
    if (uri != NULL)
        memcpy(uri, buf, strlen(buf) + 1);
    return 0;
}

json_t *mcp_resources_cacheable(const struct mcp_req *rq, json_t *res, long ttl_ms)
{
    mcp_cacheable(rq, res, ttl_ms, "private"); /* a session's own files */
    return res;
}

/* The template never changes: an hour's freshness. */
void mcp_handle_resources_templates(const struct mcp_req *rq)
{
    mcp_reply(rq, mcp_resources_cacheable(
                      rq,
                      json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "resourceTemplates", "uriTemplate",
                                MCP_URI_TEMPLATE, "name", "sandbox-file", "title",
                                "A file in one of this session's sandboxes", "description",
                                "Any regular file of a sandbox this session made (sandbox_create), "
                                "by its absolute path without the leading slash, percent-encoded "
                                "(RFC 3986, '/' kept): the files of a run's results come as "
                                "resource_link items with these URIs."),
                      3600000));
}

void mcp_resources_not_found(const struct mcp_req *rq, const char *uri, const char *why)
{
    char msg[1200];
    snprintf(msg, sizeof(msg), "Resource not found%s%s", why ? ": " : "", why ? why : "");
    int code = rq->era == MCP_ERA_MODERN ? JSONRPC_INVALID_PARAMS : RESOURCE_NOT_FOUND_LEGACY;
    mcp_reply_error_data(rq, code, msg, json_pack("{s:s}", "uri", uri));
}

/* Failures of nsbox itself, not of the file: internal errors. */
static bool internal(int code)
{
    return code == ETIMEDOUT || code == ECANCELED || code == EINTR || code == EPROTO ||
           code == ENOMEM || code == EIO || code == EAGAIN;
}

/* The contents item: text when the bytes are UTF-8 of a textual type (an
 * unknown type that is UTF-8 reads as text/plain), else a base64 blob. */
static json_t *contents_json(const char *uri, const char *path, const struct nsbox_file_data *d)
{
    const char *mime = nsbox_mime_sniff(d->data, d->len, path);
    if (mime == NULL)
        mime = mcp_mime_by_name(path);
    bool utf8 = nsbox_utf8_valid((const char *)d->data, d->len);
    if (utf8 && strcmp(mime, MCP_MIME_UNKNOWN) == 0)
        mime = "text/plain";
    if (utf8 && mcp_mime_textual(mime))
        return json_pack("{s:[{s:s,s:s,s:s%}]}", "contents", "uri", uri, "mimeType", mime, "text",
                         (const char *)d->data, d->len);
    _cleanup_free_ char *b64 = mcp_base64_encode(d->data, d->len);
    if (b64 == NULL)
        return NULL;
    return json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", mime, "blob", b64);
}

/* Reads and answers: an error for what is no file, too big, or failed. */
static void answer(const struct mcp_resource_job *job, struct mcp_call *call)
{
    const struct mcp_req *rq = job->rq;
    const char *uri = json_string_value(json_object_get(rq->params, "uri"));
    _cleanup_(nsbox_file_data_free) struct nsbox_file_data d = {0};
    struct nsbox_err err = {0};

    if (mcp_file_read(rq->s, call, job->id, job->path, 0, MCP_READ_MAX, &d, &err) < 0) {
        if (internal(err.code))
            mcp_reply_error_data(rq, JSONRPC_INTERNAL_ERROR, err.msg,
                                 json_pack("{s:s}", "uri", uri));
        else
            mcp_resources_not_found(rq, uri, err.msg);
        return;
    }
    if (d.truncated) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "the file is %lld bytes, over resources/read's cap of %u MiB: read it in parts "
                 "with read_file (offset, length)",
                 (long long)d.size, MCP_READ_MAX >> 20);
        mcp_reply_error_data(rq, JSONRPC_INVALID_PARAMS, msg,
                             json_pack("{s:s,s:I,s:I}", "uri", uri, "size", (json_int_t)d.size,
                                       "max", (json_int_t)MCP_READ_MAX));
        return;
    }
    json_t *res = contents_json(uri, job->path, &d);
    if (res == NULL)
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "out of memory");
    else /* a file changes with every run: no freshness */
        mcp_reply(rq, mcp_resources_cacheable(rq, res, 0));
}

struct spawned {
    struct mcp_resource_job job;
    void (*run)(const struct mcp_resource_job *, struct mcp_call *);
};

static void *spawned_thread(void *arg)
{
    struct spawned *sp = arg;
    struct mcp_session *s = sp->job.rq->s;
    struct mcp_call *call = &s->calls[sp->job.slot];

    pthread_mutex_lock(&s->lock);
    bool cancelled = call->cancelled;
    pthread_mutex_unlock(&s->lock);
    if (!cancelled)
        sp->run(&sp->job, call);
    mcp_call_finish(s, call);
    mcp_req_release(sp->job.rq);
    free(sp);
    return NULL;
}

/* A call slot and a thread for sp; -1 (rq answered) when either fails. */
static int spawn(const struct mcp_req *rq, struct spawned *sp)
{
    struct mcp_session *s = rq->s;
    sp->job.rq = mcp_req_hold(rq);
    pthread_mutex_lock(&s->lock);
    int n = sp->job.rq != NULL ? mcp_call_claim(s, rq->id, rq->meta, mcp_req_call_log_level(rq))
                               : -1;
    if (n >= 0) {
        sp->job.slot = (size_t)n;
        s->n_running++;
    }
    pthread_mutex_unlock(&s->lock);
    if (n < 0) {
        mcp_req_release(sp->job.rq);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "too many requests running at once");
        return -1;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, spawned_thread, sp);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_mutex_lock(&s->lock);
        mcp_call_release(&s->calls[sp->job.slot]);
        s->n_running--;
        pthread_mutex_unlock(&s->lock);
        mcp_req_release(sp->job.rq);
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "the server is out of threads");
        return -1;
    }
    return 0;
}

/* See resources.h. */
void mcp_resources_spawn(const struct mcp_req *rq, const char *method, const char *why_not_ours,
                         void (*run)(const struct mcp_resource_job *, struct mcp_call *))
{
    const char *uri = json_string_value(json_object_get(rq->params, "uri"));
    if (uri == NULL) {
        char msg[128];
        snprintf(msg, sizeof(msg), "%s needs a uri (a string)", method);
        mcp_reply_error(rq, JSONRPC_INVALID_PARAMS, msg);
        return;
    }
    struct spawned *sp = calloc(1, sizeof(*sp));
    if (sp == NULL) {
        mcp_reply_error(rq, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    sp->run = run;
    if (mcp_uri_parse(uri, sp->job.id, sp->job.path, sizeof(sp->job.path)) < 0) {
        free(sp);
        mcp_resources_not_found(rq, uri, why_not_ours);
        return;
    }
    if (spawn(rq, sp) < 0)
        free(sp);
}

void mcp_handle_resources_read(const struct mcp_req *rq)
{
    mcp_resources_spawn(rq, "resources/read", NULL, answer);
}
