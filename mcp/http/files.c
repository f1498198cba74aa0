/* GET and PUT /files/TOKEN (see files.h). */
#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../../common/log.h"
#include "../../common/mime.h"
#include "../../boxes/files.h"
#include "../sandboxes.h"
#include "../tools/tools.h"
#include "tenants.h"

#define PIECE (4u << 20)        /* bytes per in-sandbox operation, each way */
#define BLOCK (64u << 10)       /* MHD's reads of a download */
#define OP_TIMEOUT_S 60         /* one piece */
#define DRAIN_MAX (16ull << 20) /* past an upload's cap, bytes read before hanging up */

/* A piece's operation, but a write's (its token's max_bytes). */
static const struct box_file_opts piece_opts = {.timeout_s = OP_TIMEOUT_S};

/* ---- replies ---- */

static enum http_result refuse(struct MHD_Connection *c, unsigned status, const char *msg)
{
    json_t *j = json_pack("{s:s}", "error", msg);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return http_reply(c, status, text, (struct http_header){"Cache-Control", "no-store"},
                      HTTP_NO_HEADER);
}

static unsigned verdict_status(enum mcp_file_verdict v)
{
    return v == MCP_FILE_TOKEN_WRONG_METHOD                             ? HTTP_METHOD_NOT_ALLOWED
           : v == MCP_FILE_TOKEN_EXPIRED || v == MCP_FILE_TOKEN_BAD_MAC ? HTTP_FORBIDDEN
                                                                        : HTTP_BAD_REQUEST;
}

/* The status for a failed in-sandbox operation: what the client asked
 * for that cannot be (no such file, not a regular file) is 4xx. */
static unsigned op_status(int code)
{
    return code == ENOENT || code == ENOTDIR ? HTTP_NOT_FOUND
           : code == EINVAL || code == ELOOP || code == EISDIR || code == EACCES || code == EPERM
               ? HTTP_FORBIDDEN
           : code == EFBIG || code == EDQUOT || code == ENOSPC ? HTTP_CONTENT_TOO_LARGE
                                                               : HTTP_SERVICE_UNAVAILABLE;
}

/* ---- who may use the token ---- */

/* One piece's hold on the token's sandbox. */
struct hold {
    struct http_session *hs;
    struct mcp_sandbox *m;
    struct mcp_call call; /* not in the session's calls: only the piece's cancel */
    struct box_files f;
};

/* THE place that maps a token's owner to a sandbox.  An owner is the id
 * of the session that asked: an HTTP session's (the table) or a tenant's
 * session's (internal, tenants.h, for 2026-07-28 clients without a
 * session).  The session must still be live and hold the sandbox
 * (mcp_sandbox_get, inside mcp_file_op_begin), so a URL dies with its
 * session or its sandbox and never reaches another session's sandbox
 * even with a valid id.  On success the session is referenced and the sandbox
 * held for one operation of kind (release with let_go); else NULL with
 * *status and err set. */
static struct mcp_sandbox *take(struct http_files *ep, const struct mcp_file_token *t,
                                enum box_file_kind kind, const struct box_file_opts *o,
                                struct hold *h, unsigned *status, struct nsbox_err *err)
{
    memset(h, 0, sizeof(*h));
    /* A session of the table (initialize, /sse), or a tenant's session
     * (2026-07-28 clients without one: tenants.h). */
    h->hs = t->owner[0] ? http_session_get(ep->sessions, t->owner) : NULL;
    if (h->hs == NULL && t->owner[0] && ep->tenants != NULL)
        h->hs = http_tenants_session_by_id(ep->tenants, t->owner);
    if (h->hs == NULL) {
        *status = HTTP_NOT_FOUND;
        nsbox_err_set(err, ENOENT, "the session this URL belongs to has ended");
        return NULL;
    }
    if (nsbox_cancel_init(&h->call.cancel, err) < 0) {
        http_session_unref(h->hs);
        *status = HTTP_SERVICE_UNAVAILABLE;
        return NULL;
    }
    h->m = mcp_file_op_begin(&h->hs->s, &h->call, t->sandbox_id, kind, o, &h->f, err);
    if (h->m == NULL) { /* no such sandbox (ENOENT), stopped (ESRCH), over its budget */
        nsbox_cancel_close(&h->call.cancel);
        http_session_unref(h->hs);
        *status = err->code == ENOENT || err->code == ESRCH ? HTTP_NOT_FOUND : op_status(err->code);
        return NULL;
    }
    h->f.ctx.no_follow = true;
    return h->m;
}

static int let_go(struct hold *h, int r)
{
    r = mcp_file_op_end(&h->hs->s, &h->call, h->m, &h->f, r);
    nsbox_cancel_close(&h->call.cancel);
    http_session_unref(h->hs);
    return r;
}

/* The token in rq's URL, checked for method.  NULL with the refusal
 * queued in *ret. */
static struct mcp_file_token *token_of(struct http_files *ep, struct MHD_Connection *c,
                                       struct http_request *rq, enum mcp_file_method method,
                                       enum http_result *ret)
{
    struct mcp_file_token *t = malloc(sizeof(*t));
    const char *text = rq->url + strlen(MCP_FILES_PATH);

    if (t == NULL) {
        *ret = refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory");
        return NULL;
    }
    enum mcp_file_verdict v = mcp_file_token_verify(ep->urls->key, text, strlen(text), method,
                                                    (int64_t)time(NULL), t);
    if (v == MCP_FILE_TOKEN_OK)
        return t;
    free(t);
    *ret = refuse(c, verdict_status(v), mcp_file_verdict_text(v));
    return NULL;
}

/* One piece of path at offset into d, never through a symlink at path.
 * Returns 0, -1 when the token's sandbox cannot be had, -2 when the read
 * failed; *status and err set. */
static int read_piece(struct http_files *ep, const struct mcp_file_token *t, int64_t offset,
                      struct nsbox_file_data *d, unsigned *status, struct nsbox_err *err)
{
    struct hold h;
    if (take(ep, t, BOX_FILE_READS, &piece_opts, &h, status, err) == NULL)
        return -1;
    if (let_go(&h, box_file_read(&h.f, t->path, offset, PIECE, d, err)) == 0)
        return 0;
    *status = op_status(err->code);
    return -2;
}

/* ---- GET ---- */

struct download {
    struct http_files *ep;
    struct mcp_file_token *t;
    struct nsbox_file_data d; /* the piece being sent */
    size_t off;               /* of it, sent */
    int64_t size;             /* the file's, when the first piece was read */
};

static void download_done(void *cls)
{
    struct download *dl = cls;
    nsbox_file_data_free(&dl->d);
    free(dl->t);
    free(dl);
}

/* MHD's reader: the next bytes at pos, a piece read when the last is sent.
 * A file that changed size on the way cuts the connection (the client
 * sees fewer bytes than Content-Length) rather than mixing two files. */
static ssize_t download_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct download *dl = cls;
    struct nsbox_err err;
    unsigned status;

    if ((int64_t)pos >= dl->size)
        return HTTP_READER_END;
    if (dl->off == dl->d.len) {
        nsbox_file_data_free(&dl->d);
        dl->off = 0;
        if (read_piece(dl->ep, dl->t, (int64_t)pos, &dl->d, &status, &err) < 0 ||
            dl->d.size != dl->size || dl->d.len == 0) {
            nsbox_warn("file URL %s: cut off at byte %llu: %s", dl->t->path,
                       (unsigned long long)pos,
                       dl->d.size != dl->size ? "the file changed size" : err.msg);
            return HTTP_READER_ERROR;
        }
    }
    size_t n = dl->d.len - dl->off < max ? dl->d.len - dl->off : max;
    memcpy(out, dl->d.data + dl->off, n);
    dl->off += n;
    return (ssize_t)n;
}

/* The file's name for Content-Disposition: its last component with every
 * byte but [A-Za-z0-9._-] as '_' (no quote, no header splitting), and the
 * exact name as RFC 8187 filename*. */
static void disposition(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/') + 1;
    char plain[256], ext[3 * 255 + 1];
    size_t n = 0, e = 0;

    for (const unsigned char *p = (const unsigned char *)base; *p && n < 255; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_';
        plain[n++] = ok ? (char)*p : '_';
        e += (size_t)(ok ? snprintf(ext + e, sizeof(ext) - e, "%c", *p)
                         : snprintf(ext + e, sizeof(ext) - e, "%%%02X", *p));
    }
    plain[n] = '\0';
    snprintf(buf, size, "attachment; filename=\"%s\"; filename*=UTF-8''%s", plain, ext);
}

static enum http_result handle_get(struct http_files *ep, struct MHD_Connection *c,
                                   struct http_request *rq)
{
    enum http_result ret = HTTP_NO;
    struct nsbox_err err;
    unsigned status;
    char cd[1400], length[24];

    struct download *dl = calloc(1, sizeof(*dl));
    if (dl == NULL)
        return refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory");
    dl->ep = ep;
    if ((dl->t = token_of(ep, c, rq, MCP_FILE_GET, &ret)) == NULL) {
        free(dl);
        return ret;
    }
    if (read_piece(ep, dl->t, 0, &dl->d, &status, &err) < 0) {
        ret = refuse(c, status, err.msg);
        download_done(dl);
        return ret;
    }
    dl->size = dl->d.size;
    const char *mime = nsbox_mime_sniff(dl->d.data, dl->d.len, dl->t->path);
    disposition(dl->t->path, cd, sizeof(cd));
    snprintf(length, sizeof(length), "%lld", (long long)dl->size);
    /* attachment, nosniff and a sandboxing CSP: a file the code made (an
     * SVG, an HTML page) never runs as a page of this server's origin;
     * no-referrer: the URL, a credential, stays out of Referer. */
    const struct http_header headers[] = {
        {"Content-Type", mime ? mime : "application/octet-stream"},
        {"Content-Disposition", cd},
        {"X-Content-Type-Options", "nosniff"},
        {"Content-Security-Policy", "default-src 'none'; sandbox"},
        {"Cache-Control", "no-store"},
        {"Referrer-Policy", "no-referrer"},
        {NULL, NULL},
    };
    return http_reply_body(c, HTTP_OK, (uint64_t)dl->size, BLOCK, headers, download_read,
                           download_done, dl);
}

/* ---- PUT ---- */

struct upload {
    struct mcp_file_token *t;
    char tmp[MCP_FILE_PATH_MAX + 64]; /* beside the path, hidden */
    char *buf;                        /* PIECE bytes */
    size_t len;                       /* in buf */
    uint64_t received, written;
    uint64_t failed_at; /* received when status was set */
    bool started;       /* tmp exists (a piece was written) */
    unsigned status;    /* refused once the body is in: this status, err */
    struct nsbox_err err;
};

/* Writes buf into tmp: the first piece creates it (and the parents),
 * the next append.  Appends are not measured (boxes/files.h
 * measure_later: du after every few MiB would cost more than the
 * upload); the first piece and the rename are. */
static int flush(struct http_files *ep, struct upload *u)
{
    struct hold h;
    struct box_file_opts o = {
        .timeout_s = OP_TIMEOUT_S, .write_max = u->t->max_bytes, .measure_later = u->started};
    if (take(ep, u->t, BOX_FILE_WRITES, &o, &h, &u->status, &u->err) == NULL)
        return -1;
    int r = let_go(&h, box_file_write(&h.f, u->tmp, u->buf, u->len, u->started, NULL, &u->err));
    if (r < 0) {
        u->status = op_status(u->err.code);
        return -1;
    }
    u->started = true;
    u->written += u->len;
    u->len = 0;
    return 0;
}

/* Removes tmp after a failure (best effort: the sandbox may be gone). */
static void discard(struct http_files *ep, struct upload *u)
{
    struct hold h;
    struct nsbox_err err;
    unsigned status;
    if (!u->started || take(ep, u->t, BOX_FILE_REMOVES, &piece_opts, &h, &status, &err) == NULL)
        return;
    let_go(&h, box_file_remove(&h.f, u->tmp, false, &err));
    u->started = false;
}

static void upload_free(struct upload *u)
{
    if (u == NULL)
        return;
    free(u->buf);
    free(u->t);
    free(u);
}

/* What is at the path now: refused unless nothing or a regular file (a
 * symlink, a directory, a FIFO ...), before a byte of the body is read. */
static int check_target(struct http_files *ep, struct upload *u)
{
    struct nsbox_file_data d = {0};
    unsigned status;
    int r = read_piece(ep, u->t, 0, &d, &status, &u->err);
    if (r == -1 || (r < 0 && u->err.code != ENOENT && u->err.code != EACCES)) {
        u->status = status;
        return -1;
    }
    nsbox_file_data_free(&d);
    return 0;
}

static struct upload *upload_new(struct mcp_file_token *t)
{
    struct upload *u = calloc(1, sizeof(*u));
    uint64_t r[2];
    if (u == NULL || (u->buf = malloc(PIECE)) == NULL || getrandom(r, sizeof(r), 0) != sizeof(r)) {
        upload_free(u);
        free(t);
        return NULL;
    }
    u->t = t;
    const char *slash = strrchr(t->path, '/');
    snprintf(u->tmp, sizeof(u->tmp), "%.*s/.nsbox-upload-%016llx%016llx", (int)(slash - t->path),
             t->path, (unsigned long long)r[0], (unsigned long long)r[1]);
    return u;
}

/* PUT, before the body: the token, the declared size, the path. */
static enum http_result check(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    struct http_files *ep = ctx;
    enum http_result ret = HTTP_NO;

    if (strcmp(rq->method, "PUT") != 0)
        return HTTP_READ_ON;
    struct mcp_file_token *t = token_of(ep, c, rq, MCP_FILE_PUT, &ret);
    if (t == NULL)
        return ret;
    const char *length = http_header_value(c, "Content-Length");
    if (length && strtoull(length, NULL, 10) > t->max_bytes) {
        char msg[96];
        snprintf(msg, sizeof(msg), "too large: this URL takes at most %llu bytes",
                 (unsigned long long)t->max_bytes);
        free(t);
        return refuse(c, HTTP_CONTENT_TOO_LARGE, msg);
    }
    struct upload *u = upload_new(t);
    if (u == NULL)
        return refuse(c, HTTP_SERVICE_UNAVAILABLE, "out of memory");
    if (check_target(ep, u) < 0) {
        ret = refuse(c, u->status, u->err.msg);
        upload_free(u);
        return ret;
    }
    rq->state = u;
    return HTTP_READ_ON;
}

/* A piece of the body: into buf, flushed into the sandbox when full.
 * Past the cap (a body without Content-Length) nothing more is written;
 * the client is read a while longer so that it sees the 413. */
static enum http_result piece(void *ctx, struct http_request *rq, const char *data, size_t len)
{
    struct upload *u = rq->state;

    if (u == NULL) /* a GET with a body */
        return HTTP_YES;
    u->received += len;
    if (u->received > u->t->max_bytes && u->status == 0) {
        u->status = HTTP_CONTENT_TOO_LARGE;
        u->failed_at = u->received;
        nsbox_err_set(&u->err, EFBIG, "too large: this URL takes at most %llu bytes",
                      (unsigned long long)u->t->max_bytes);
    }
    if (u->status != 0)
        return u->received > u->failed_at + DRAIN_MAX ? HTTP_NO : HTTP_YES;
    while (len > 0) {
        size_t n = PIECE - u->len < len ? PIECE - u->len : len;
        memcpy(u->buf + u->len, data, n);
        u->len += n, data += n, len -= n;
        if (u->len == PIECE && flush(ctx, u) < 0) {
            u->failed_at = u->received;
            break;
        }
    }
    return HTTP_YES;
}

static enum http_result handle_put(struct http_files *ep, struct MHD_Connection *c,
                                   struct http_request *rq)
{
    struct upload *u = rq->state;
    struct hold h;

    if (u == NULL)
        return refuse(c, HTTP_BAD_REQUEST, "no upload");
    if (u->status == 0 && (u->len > 0 || !u->started))
        flush(ep, u);
    if (u->status == 0 &&
        take(ep, u->t, BOX_FILE_WRITES, &piece_opts, &h, &u->status, &u->err) != NULL &&
        let_go(&h, box_file_rename(&h.f, u->tmp, u->t->path, &u->err)) < 0)
        u->status = op_status(u->err.code);
    if (u->status != 0) {
        discard(ep, u);
        return refuse(c, u->status, u->err.msg);
    }
    u->started = false; /* it is the path now */
    json_t *j = json_pack("{s:s,s:I}", "path", u->t->path, "bytes", (json_int_t)u->written);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return http_reply(c, 201, text, HTTP_NO_HEADER, HTTP_NO_HEADER);
}

/* The request is over: an upload cut off midway leaves no hidden file. */
static void end(void *ctx, struct http_request *rq, bool completed)
{
    struct upload *u = rq->state;
    (void)completed;
    if (u == NULL)
        return;
    discard(ctx, u);
    upload_free(u);
    rq->state = NULL;
}

static enum http_result handle(void *ctx, struct MHD_Connection *c, struct http_request *rq)
{
    return strcmp(rq->method, "GET") == 0 ? handle_get(ctx, c, rq) : handle_put(ctx, c, rq);
}

int http_files_register(struct http_server *srv, struct http_files *ep, struct nsbox_err *err)
{
    static const struct http_route route = {
        .path = MCP_FILES_PATH,
        .prefix = true,
        .no_bearer = true,
        .methods = "GET, PUT",
        .method_hint = "method not allowed: GET downloads a file, PUT uploads one",
        .check = check,
        .handle = handle,
        .piece = piece,
        .end = end,
    };
    struct http_route r = route;
    r.ctx = ep;
    return http_server_route(srv, &r, err);
}
