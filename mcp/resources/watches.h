/* File watches: resources/subscribe and resources/unsubscribe on
 * nsbox://sandboxes/{sandbox_id}/files/{+path} (uri.h), and the
 * notifications/resources/updated they cause (docs/services-watch.md).
 *
 * - A subscribe names a file or a directory of one of the session's own
 *   kept sandboxes (another session's is "resource not found", as for
 *   resources/read).  The watch is inotify inside the sandbox
 *   (boxes/watch.h): a directory fires when an entry in it is created,
 *   removed, renamed, written or changes attributes (not recursive); a
 *   file when it is written, replaced, removed or made (watched through
 *   its parent, which must exist: a file that does not exist yet may be
 *   watched, a missing directory may not).
 * - Coalesced: at most one notification per watch every
 *   MCP_WATCH_COALESCE_MS; a change inside that time is sent when it
 *   ends, so the last change is always followed by a notification.
 * - Bounded: at most cfg->max_watches per session (--max-watches); a
 *   subscribe to a URI the session already watches is a no-op.
 * - Ended by resources/unsubscribe, by the sandbox's stop
 *   (mcp_watches_sandbox_gone, silently), by the session's end
 *   (mcp_watches_session_end), and by the sandbox itself when the watched
 *   directory (or a file's parent) goes away: one last updated, then no
 *   more (the client may subscribe again).
 * - Notifications go through s->send: stdio's stdout, HTTP's standalone
 *   GET stream of the session (http/streams.c routes them there).
 * One thread (epoll over every watch) serves the whole server; a watch
 * whose sandbox floods it is read at most once per coalescing period. */
#ifndef NSBOX_MCP_RESOURCES_WATCHES_H
#define NSBOX_MCP_RESOURCES_WATCHES_H

#include "../protocol/request.h"
#include "../sandbox.h"

#define MCP_WATCH_COALESCE_MS 150
#define MCP_WATCHES_DEFAULT 64 /* per session (--max-watches) */

/* The handlers (protocol/methods.c). */
void mcp_handle_resources_subscribe(const struct mcp_req *rq);
void mcp_handle_resources_unsubscribe(const struct mcp_req *rq);

/* 2026-07-28 has no resources/subscribe: a subscriptions/listen names
 * URIs in notifications.resourceSubscriptions.  Called by the listen's
 * handler (protocol/modern.c) once its slot is taken: false when rq names
 * none (the handler acknowledges as before); true when a thread of the
 * session's calls took it over: it starts the watches (as subscribe
 * does), acknowledges with the URIs it watches, and only then lets them
 * send, each notification carrying the listen's id in _meta
 * (io.modelcontextprotocol/subscriptionId) on the listen's own stream. */
bool mcp_watches_listen(const struct mcp_req *rq);

/* The listen whose slot held listen_id (that very object) ended
 * (call.c's mcp_call_cancel, s->lock held): its watches end, silently. */
void mcp_watches_listen_end(const json_t *listen_id);

/* Ends every watch on m (sandboxes.c, as m is finally stopped). */
void mcp_watches_sandbox_gone(struct mcp_sandbox *m);

/* Ends every watch of s (its end, no call running); once it returns no
 * notification of s is being sent. */
void mcp_watches_session_end(struct mcp_session *s);

#endif
