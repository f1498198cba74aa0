/* upload_url: a signed, expiring URL that a person or a program PUTs a
 * file to, straight into a sandbox, without the bytes going through the
 * model's context (served by mcp/http/files.c; tokens: mcp/files/).
 * Offered over HTTP only: over stdio there is no server to PUT to, and
 * copy_in with --allow-host-dir is the way in. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/cleanup.h"
#include "../../common/mime.h"
#include "../../boxes/files.h"
#include "../files/urls.h"
#include "../sandboxes.h"
#include "../server.h"
#include "args.h"
#include "tools.h"

/* ".." is refused rather than resolved: what it means depends on
 * symlinks inside the sandbox, and a URL names one file for its whole
 * life. */
int mcp_url_path(const char *workdir, const char *path, char *buf, size_t size,
                 struct nsbox_err *err)
{
    char joined[MCP_FILE_PATH_MAX + 2];
    size_t n = 0;

    if ((size_t)snprintf(joined, sizeof(joined), "%s/%s", path[0] == '/' ? "" : workdir, path) >=
        sizeof(joined))
        return nsbox_err_set(err, ENAMETOOLONG, "the path is too long");
    for (char *save = NULL, *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0)
            return nsbox_err_set(err, EINVAL,
                                 "%.200s: \"..\" is refused in an upload path (name the "
                                 "directory itself)",
                                 path);
        if (n + 1 + strlen(c) >= size)
            return nsbox_err_set(err, ENAMETOOLONG, "the path is too long");
        n += (size_t)snprintf(buf + n, size - n, "/%s", c);
    }
    if (n == 0)
        return nsbox_err_set(err, EINVAL, "%.200s names the root, not a file", path);
    return 0;
}

int mcp_tool_upload_url(struct mcp_session *s, struct mcp_call *call, json_t *args,
                        struct mcp_result *out, struct nsbox_err *err)
{
    const struct mcp_file_urls *u = s->cfg->file_urls;
    struct mcp_upload_args a;
    char path[MCP_FILE_PATH_MAX + 1], when[32];
    int64_t expires;

    if (u == NULL)
        return nsbox_err_set(err, ENOTSUP, "upload_url needs the HTTP transport (serve --http)");
    if (mcp_args_upload_url(u->max_upload, args, &a, err) < 0)
        return -1;
    /* The sandbox must be this session's now (its workdir resolves the
     * path); the URL is checked against the session again at each use. */
    struct mcp_sandbox *m = mcp_sandbox_get(s, a.sandbox_id, err);
    if (m == NULL)
        return -1;
    int r = mcp_url_path(m->box.workdir ? m->box.workdir : "/", a.path, path, sizeof(path), err);
    mcp_sandbox_put(s, m);
    if (r < 0)
        return -1;
    _cleanup_free_ char *url = mcp_file_url(u, MCP_FILE_PUT, s->id, a.sandbox_id, path, a.max_bytes,
                                            &expires);
    if (url == NULL)
        return nsbox_err_set(err, EINVAL, "no URL can name %.200s", path);
    mcp_file_time_text(expires, when);
    _cleanup_free_ char *example = NULL;
    if (asprintf(&example, "curl --upload-file FILE '%s'", url) < 0)
        example = NULL;
    out->structured = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s?}", "url", url, "method", "PUT",
                                "expires_at", when, "max_bytes", (json_int_t)a.max_bytes, "path",
                                path, "example", example);
    return 0;
}

int mcp_read_file_url(struct mcp_session *s, struct mcp_sandbox *m, const char *path,
                      const struct nsbox_file_data *d, struct mcp_result *out,
                      struct nsbox_err *err)
{
    const struct mcp_file_urls *u = s->cfg->file_urls;
    char abs[MCP_FILE_PATH_MAX + 1], when[32];
    int64_t expires;

    if (mcp_url_path(m->box.workdir ? m->box.workdir : "/", path, abs, sizeof(abs), err) < 0)
        return -1;
    _cleanup_free_ char *url = mcp_file_url(u, MCP_FILE_GET, s->id, m->id, abs, 0, &expires);
    if (url == NULL)
        return nsbox_err_set(err, EINVAL, "no URL can name %.200s", abs);
    mcp_file_time_text(expires, when);
    const char *mime = nsbox_mime_sniff(d->data, d->len, abs);
    out->structured = json_pack("{s:s,s:I,s:I,s:s,s:s,s:b,s:s,s:s,s:s?}", "path", abs, "size",
                                (json_int_t)d->size, "offset", (json_int_t)0, "encoding", "utf-8",
                                "content", "", "truncated", d->size > 0, "download_url", url,
                                "download_expires_at", when, "mime_type", mime);
    return 0;
}
