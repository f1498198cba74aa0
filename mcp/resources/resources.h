/* MCP resources: the files in a session's sandboxes, named by URIs of
 * uri.h (nsbox://sandboxes/{sandbox_id}/files/{+path}).
 *
 * - resources/templates/list: that one template.
 * - resources/read: any regular file of any of the session's own kept
 *   sandboxes, read exactly as read_file reads it (inside the sandbox, as
 *   its user, symlinks resolved there; ../tools/tools.h mcp_file_read),
 *   up to MCP_READ_MAX bytes: text when it is UTF-8 of a textual type,
 *   else a base64 blob.  A URI that is not ours, a sandbox the session
 *   does not have (another session's looks the same) and a path that is
 *   no readable regular file are all "resource not found": -32602 for a
 *   2026-07-28 request (SEP-2164), -32002 before, with data.uri.
 * - resources/list: the files the session's results linked (the files a
 *   run created or changed, kept outputs), newest first, at most
 *   MCP_REPORTED_MAX, in pages of MCP_LIST_PAGE with a cursor; those of
 *   sandboxes since stopped are left out.  A session that ran nothing in
 *   a kept sandbox lists nothing. */
#ifndef NSBOX_MCP_RESOURCES_RESOURCES_H
#define NSBOX_MCP_RESOURCES_RESOURCES_H

#include <stdint.h>

#include "../protocol/request.h"
#include "../result.h"
#include "uri.h"

struct mcp_call;

#define MCP_REPORTED_MAX 256 /* links resources/list remembers per session */
#define MCP_LIST_PAGE 50

/* The handlers (protocol/methods.c). */
void mcp_handle_resources_list(const struct mcp_req *rq);
void mcp_handle_resources_read(const struct mcp_req *rq);
void mcp_handle_resources_templates(const struct mcp_req *rq);

/* "Resource not found" (with why, when not NULL) for uri, as the era
 * words it. */
void mcp_resources_not_found(const struct mcp_req *rq, const char *uri, const char *why);

/* A request on a sandbox's file that runs on a thread of its own, in a
 * slot of the session's calls like a tools/call (resources/read and
 * resources/subscribe: they wait for the sandbox's running command;
 * notifications/cancelled and the session's end cancel them, and the
 * session is not freed under them). */
struct mcp_resource_job {
    struct mcp_req *rq; /* held */
    size_t slot;
    char id[MCP_URI_ID_MAX + 1];
    char path[MCP_URI_MAX + 2];
};

/* Parses rq's uri into a job (not found: answered with why, else what the
 * caller gave as its reason) and runs run(job, call) on a thread of its
 * own in a call slot, unless the call is cancelled first.  Every failure
 * is answered here. */
void mcp_resources_spawn(const struct mcp_req *rq, const char *method, const char *why_not_ours,
                         void (*run)(const struct mcp_resource_job *, struct mcp_call *));

/* For a 2026-07-28 request (SEP-2549, CacheableResult): sets res's ttlMs
 * and cacheScope "private" (a session's sandboxes are its own) unless the
 * result has them.  Returns res. */
json_t *mcp_resources_cacheable(const struct mcp_req *rq, json_t *res, long ttl_ms);

/* Adds a resource_link to out for the file path (absolute) of the kept
 * sandbox id: its URI, its base name, mime (NULL: by its name), size (-1
 * unknown), description (may be NULL).  Writes the URI to uri (size
 * MCP_URI_MAX + 1) when uri is not NULL.  Returns 0, or -1 when the path
 * has no URI (not canonical, too long) or out of memory (nothing added). */
int mcp_resource_link(struct mcp_result *out, const char *id, const char *path, int64_t size,
                      const char *mime, const char *description, char *uri);

/* Remembers the resource links of r for resources/list (the newest of a
 * URI replaces an older one).  Best effort: out of memory forgets. */
void mcp_resources_note(struct mcp_session *s, const struct mcp_result *r);

/* Frees what s remembers (at the session's end). */
void mcp_resources_forget(struct mcp_session *s);

#endif
